"""The rules of Spectacular Bid: pure Python, no Django, no I/O, no clock reads.

``apply(state, seat, command, now_ms) -> (state, events)`` is the only way a match changes;
``view(state, seat)`` is what a seat (or, with None, a spectator) may know.
"""

from .bots import BOTS, GreedyBot, RandomBot
from .clock import ClockConfig
from .errors import IllegalCommand
from .legal import legal_commands, legal_decisions, legal_plays
from .record import add_events, add_round, iso_timestamp, new_record, status_of
from .replay import Problem, ReplayError, audit, replay
from .rules import apply, first_to_act, new_match
from .shuffle import Deal, commitment_of, deal_from_seed, new_seed
from .state import MatchState
from .view import next_round_keeping_final_table as next_round
from .view import view

__all__ = [
    "BOTS",
    "ClockConfig",
    "Deal",
    "GreedyBot",
    "IllegalCommand",
    "MatchState",
    "Problem",
    "RandomBot",
    "ReplayError",
    "add_events",
    "add_round",
    "apply",
    "audit",
    "commitment_of",
    "deal_from_seed",
    "first_to_act",
    "iso_timestamp",
    "legal_commands",
    "legal_decisions",
    "legal_plays",
    "new_match",
    "new_record",
    "new_seed",
    "next_round",
    "replay",
    "status_of",
    "view",
]

"""The rules of Spectacular Bid: pure Python, no Django, no I/O, no clock reads.

``apply(state, seat, command, now_ms) -> (state, events)`` is the only way a match changes;
``view(state, seat)`` is what a seat (or, with None, a spectator) may know. A round dealt from
the players' contributions starts as ``begin_dealing(new_match(sealed_deal(seed)))`` (or
``next_round``) and waits for them (docs/fairness.md).
"""

from .bots import BOTS, GreedyBot, RandomBot
from .clock import ClockConfig
from .errors import IllegalCommand
from .fairness import begin_dealing
from .legal import legal_commands, legal_decisions, legal_plays
from .record import add_events, add_round, iso_timestamp, new_record, status_of
from .replay import Problem, ReplayError, audit, replay
from .rules import apply, first_to_act, new_match, next_round
from .shuffle import (
    Deal,
    commitment_of,
    deal_from_seed,
    deal_with_contributions,
    new_seed,
    sealed_deal,
)
from .state import MatchState
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
    "begin_dealing",
    "commitment_of",
    "deal_from_seed",
    "deal_with_contributions",
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
    "sealed_deal",
    "status_of",
    "view",
]

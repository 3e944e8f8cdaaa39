"""The rules of Spectacular Bid: pure Python, no Django, no I/O, no clock reads.

``apply(state, seat, command, now_ms) -> Applied | Flagged`` (each unpacks as ``state, events``)
is the only way a match changes; ``view(state, seat)`` is what a seat (or, with None, a
spectator) may know, including everything a client needs to draw its controls. A round dealt
from the players' contributions starts as ``begin_dealing(new_match(sealed_deal(seed)))`` (or
``next_round``) and waits for them (docs/fairness.md).
"""

from .analysis import analyse, decision_frames
from .bots import BOTS, GreedyBot, RandomBot, contribution
from .clock import ClockConfig
from .errors import IllegalCommand, Rejection
from .expert import ExpertBot
from .fairness import begin_dealing, may_contribute
from .legal import legal_commands, legal_decisions, legal_plays
from .record import (
    HeaderChange,
    add_events,
    add_round,
    header_change,
    header_changes,
    iso_timestamp,
    new_record,
    status_of,
    update_header,
    with_round_added,
)
from .replay import FAIRNESS, Problem, ReplayError, audit, replay
from .rules import (
    Applied,
    Flagged,
    apply,
    device_holder,
    first_to_act,
    new_match,
    next_round,
    starter,
)
from .scoring import points_for, round_to_5
from .shuffle import (
    Deal,
    commitment_of,
    deal_from_seed,
    deal_with_contributions,
    new_seed,
    sealed_deal,
)
from .state import DEALING, MatchState
from .view import view

__all__ = [
    "DEALING",
    "FAIRNESS",
    "Applied",
    "Flagged",
    "HeaderChange",
    "Rejection",
    "device_holder",
    "starter",
    "BOTS",
    "ClockConfig",
    "Deal",
    "ExpertBot",
    "GreedyBot",
    "IllegalCommand",
    "MatchState",
    "Problem",
    "RandomBot",
    "ReplayError",
    "add_events",
    "add_round",
    "analyse",
    "decision_frames",
    "apply",
    "audit",
    "begin_dealing",
    "commitment_of",
    "contribution",
    "deal_from_seed",
    "deal_with_contributions",
    "first_to_act",
    "header_change",
    "header_changes",
    "iso_timestamp",
    "legal_commands",
    "legal_decisions",
    "legal_plays",
    "may_contribute",
    "new_match",
    "new_record",
    "new_seed",
    "points_for",
    "round_to_5",
    "next_round",
    "replay",
    "sealed_deal",
    "status_of",
    "update_header",
    "view",
    "with_round_added",
]

"""Deals no one controls: each round waits in ``DEALING`` for one contribution per seat.

The server has committed to its seed (the commitment is public, the seed hidden) before anyone
contributes; once both contributions are in, the round is dealt from all three
(``shuffle.deal_with_contributions``) and waits for Start as before. Clocks never run here.
docs/fairness.md describes the protocol and what it proves.
"""

from __future__ import annotations

import re
from dataclasses import replace

from .errors import IllegalCommand
from .shuffle import (
    DEVICE,
    PLAYER,
    SERVER,
    Contribution,
    deal_with_contributions,
    server_contribution,
)
from .state import DEALING, READY, Draft, MatchState

# Exactly 64 lowercase hex digits: one spelling per value, so a record has one form to check.
CONTRIBUTION_FORMAT = re.compile(r"[0-9a-f]{64}")

# What may happen while a round is being dealt; everything else waits for the tiles.
DEALING_COMMANDS = ("contribute", "resign", "void")


def begin_dealing(state: MatchState) -> MatchState:
    """The round ``new_match`` or ``next_round`` has just set up, waiting for contributions
    instead: no tile belongs to anyone yet. A sealed deal (``shuffle.sealed_deal``) gets its
    tiles from the contributions; a deal that already has tiles (a record being replayed) keeps
    them."""
    return replace(
        state,
        phase=DEALING,
        deal=replace(state.deal, contributions=(None, None)),
        hands=((), ()),
        boneyard=(),
    )


def check_dealing(state: MatchState, kind: str) -> None:
    if state.phase == DEALING and kind not in DEALING_COMMANDS:
        raise IllegalCommand(
            "dealing", "the round is being dealt: it waits for both players' contributions"
        )


def may_contribute(state: MatchState, seat: int) -> bool:
    return state.phase == DEALING and state.deal.contributions[seat] is None


def contribute(d: Draft, seat: int | None, command: dict, now_ms: int) -> None:
    """A player's contribution, or (from the server, ``drawn: true``) the stand-ins for every
    contribution still missing. Deals the round once both are in."""
    if d.phase != DEALING:
        raise IllegalCommand(
            "not_dealing", "contributions are taken only while a round waits for its deal"
        )
    if seat is None:
        _stand_in_for_the_missing(d, command, now_ms)
    else:
        _take_from_player(d, seat, command, now_ms)
    if None not in d.deal.contributions:
        _deal(d)


def _take_from_player(d: Draft, seat: int, command: dict, now_ms: int) -> None:
    if "drawn" in command:
        raise IllegalCommand("server_only", "only the server stands in for a contribution")
    if d.deal.contributions[seat] is not None:
        raise IllegalCommand("already_contributed", "this round already has your contribution")
    value = command.get("value")
    if not isinstance(value, str) or not CONTRIBUTION_FORMAT.fullmatch(value):
        raise IllegalCommand(
            "bad_contribution", "a contribution is 32 random bytes as 64 lowercase hex digits"
        )
    # In pass-and-play one device holds both seats, so neither player alone chose the value.
    _record(d, seat, Contribution(value, DEVICE if d.hotseat else PLAYER), now_ms)


def _stand_in_for_the_missing(d: Draft, command: dict, now_ms: int) -> None:
    if command.get("drawn") is not True or "value" in command:
        raise IllegalCommand(
            "bad_command", "the server's contribute is {'type': 'contribute', 'drawn': true}"
        )
    for seat, contribution in enumerate(d.deal.contributions):
        if contribution is None:
            value = server_contribution(d.deal.commitment, seat)
            _record(d, seat, Contribution(value, SERVER), now_ms)


def _record(d: Draft, seat: int, contribution: Contribution, now_ms: int) -> None:
    contributions = list(d.deal.contributions)
    contributions[seat] = contribution
    d.deal = replace(d.deal, contributions=(contributions[0], contributions[1]))
    d.emit(
        "contribute",
        seat,
        now_ms,
        {
            "value": contribution.value,
            "source": contribution.source,
            "from_player": contribution.from_player,
        },
    )


def _deal(d: Draft) -> None:
    deal = d.deal
    if deal.is_sealed:
        first, second = deal.contributions
        deal = deal_with_contributions(
            deal.seed, first.value, second.value, d.round_no, (first.source, second.source)
        )
    d.deal = deal
    d.hands = deal.hands
    d.boneyard = deal.boneyard
    d.phase = READY


def contributions_json(deal, *, reveal_values: bool) -> list[dict] | None:
    """Each seat's contribution as the view and the record show it (None for a seed-only
    deal); ``value`` is None unless revealed."""
    if deal.contributions is None:
        return None
    return [
        {
            "seat": seat,
            "value": contribution.value if contribution and reveal_values else None,
            "source": contribution.source if contribution else None,
            "from_player": contribution.from_player if contribution else None,
        }
        for seat, contribution in enumerate(deal.contributions)
    ]

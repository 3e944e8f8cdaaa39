"""Dealing a round through the match service, as both players' clients would: each seat sends
its contribution (docs/fairness.md). Values are fixed per seat and round, so a test's matches
replay the same way every run."""

from __future__ import annotations

import hashlib

import engine
from matches import services
from matches.models import Match
from matches.selectors import match_state


def contribution(seat: int, round_no: int) -> dict:
    value = hashlib.sha256(f"test contribution {seat} {round_no}".encode()).hexdigest()
    return {"type": "contribute", "value": value, "seat": seat}


def deal_by_service(match: Match, users: dict, now_ms: int) -> bool:
    """Both seats contribute to the round ``match`` is dealing, if it is; True if it was.
    ``users`` maps each seat to its user (the same user twice in pass-and-play, where ``seat``
    in the command says for whom the device contributes)."""
    state = match_state(Match.objects.get(pk=match.pk))
    if state.phase != engine.DEALING:
        return False
    for seat in (0, 1):
        if engine.may_contribute(state, seat):
            services.match_submit(
                match_id=match.pk,
                user=users[seat],
                command=contribution(seat, state.round_no),
                arrival_ms=now_ms,
            )
    match.refresh_from_db()
    return True

"""Reads of matches: the live state, the public record, events since a number."""

from __future__ import annotations

import copy
import pickle
from dataclasses import replace

from django.db.models import Q

import engine

from .models import Match


def match_state(match: Match) -> engine.MatchState:
    """The engine state after the match's last event: the snapshot if it is current, otherwise
    rebuilt from the record (the record is the truth; the snapshot only saves time)."""
    if match.snapshot:
        state = pickle.loads(match.snapshot)
        if state.seq == match.seq:
            return state
    state = engine.replay(match.record)
    return replace(state, deal=replace(state.deal, seed=match.secret_seed))


def match_record(match: Match, *, withhold_live: bool = True) -> dict:
    """The record of ARCHIVE.md. The hands and boneyard of a round still being played are
    withheld (None) unless ``withhold_live`` is False (for the service's own checks)."""
    record = copy.deepcopy(match.record) if withhold_live else dict(match.record)
    ratings = (
        (match.rating_before0, match.rating_after0),
        (match.rating_before1, match.rating_after1),
    )
    record["players"] = [
        {
            **player,
            "rating_before": ratings[player["seat"]][0],
            "rating_after": ratings[player["seat"]][1],
        }
        for player in record["players"]
    ]
    if withhold_live:
        for round_record in record["rounds"]:
            if round_record["seed"] is None:
                round_record["hands"] = None
                round_record["boneyard"] = None
                for event in round_record["events"]:
                    if event["type"] == "draw":
                        event.pop("tile", None)
    return record


def events_since(match: Match, seq: int) -> list[dict]:
    return [
        event
        for round_record in match.record["rounds"]
        for event in round_record["events"]
        if event["seq"] > seq
    ]


def live_match_for(user) -> Match | None:
    """The user's match that is not over yet (a player is in at most one at a time)."""
    return (
        Match.objects.filter(Q(player0=user) | Q(player1=user))
        .filter(status__in=[Match.Status.WAITING, Match.Status.LIVE])
        .order_by("-created_at")
        .first()
    )

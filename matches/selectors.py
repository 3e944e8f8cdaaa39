"""Reads of matches: the live state, the public record, events since a number."""

from __future__ import annotations

import pickle
from dataclasses import replace

from django.db.models import Q

import engine

from . import broadcast
from .models import Match


def match_state(match: Match) -> engine.MatchState:
    """The engine state after the match's last event: the snapshot if it is current, otherwise
    rebuilt from the record (the record is the truth; the snapshot only saves time)."""
    if (state := snapshot_state(match)) is not None:
        return state
    state = engine.replay(match.record)
    return replace(state, deal=replace(state.deal, seed=match.secret_seed))


def snapshot_state(match: Match) -> engine.MatchState | None:
    """The state the match's snapshot holds, if it is current (no database read)."""
    if match.snapshot:
        state = pickle.loads(match.snapshot)
        if state.seq == match.seq:
            return state
    return None


def match_record(match: Match, *, withhold_live: bool = True) -> dict:
    """The record of ARCHIVE.md. The hands and boneyard of a round still being played are
    withheld (None) unless ``withhold_live`` is False (for the service's own checks)."""
    record = match.record
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
                _withhold_round(round_record)
    return record


def _withhold_round(round_record: dict) -> None:
    """A round still being played: its tiles, drawn tiles and (until it is dealt) the
    contributions to its deal stay secret."""
    dealing = round_record["hands"] is None
    round_record["hands"] = None
    round_record["boneyard"] = None
    for event in round_record["events"]:
        if event["type"] == "draw":
            event.pop("tile", None)
        elif event["type"] == "contribute" and dealing:
            event.pop("value", None)


def events_since(match: Match, seq: int) -> list[dict]:
    return list(match.events.filter(seq__gt=seq).values_list("data", flat=True))


def live_match_for(user) -> Match | None:
    """The user's match that is not over yet (a player is in at most one at a time)."""
    return (
        Match.objects.filter(Q(player0=user) | Q(player1=user))
        .filter(status__in=[Match.Status.WAITING, Match.Status.LIVE])
        .order_by("-created_at")
        .first()
    )


def seats_of(match_id: str, user) -> list[int] | None:
    """The seats the user holds in the match ([] for a spectator), or None if there is no such
    match."""
    match = Match.objects.filter(pk=match_id).only("player0_id", "player1_id").first()
    if match is None:
        return None
    return match.seats_of(user) if user is not None and user.is_authenticated else []


def state_message(match_id: str, audience, last_seq: int | None) -> dict:
    """The full state for this audience, with the events after ``last_seq`` when the client
    says what it saw (a resync after a reconnect or a gap). The header (which grows with the
    match) is not loaded: the snapshot is the state, the events are rows."""
    match = Match.objects.defer("header").get(pk=match_id)
    state = match_state(match)
    viewer = broadcast.viewer_for(match, state, audience)
    events = events_since(match, last_seq) if last_seq is not None else []
    return {**broadcast.state_message(match, state, viewer, events), "resync": True}


def last_seq(match_id: str) -> int:
    """The match's last event number: a client that saw less missed a broadcast."""
    return Match.objects.filter(pk=match_id).values_list("seq", flat=True).first() or 0


def live_matches(*, limit: int) -> list[Match]:
    """The newest matches being played now (to watch)."""
    return list(
        Match.objects.filter(status=Match.Status.LIVE)
        .select_related("player0", "player1")
        .order_by("-created_at")[:limit]
    )


def recent_matches(user, *, limit: int = 10) -> list[dict]:
    """The user's latest matches, newest first, from the user's side."""
    matches = (
        Match.objects.filter(Q(player0=user) | Q(player1=user))
        .select_related("player0", "player1")
        .order_by("-created_at")[:limit]
    )
    rows = []
    for match in matches:
        seat = 0 if match.player0_id == user.pk else 1
        opponent = match.player1 if seat == 0 else match.player0
        before = match.rating_before0 if seat == 0 else match.rating_before1
        after = match.rating_after0 if seat == 0 else match.rating_after1
        if match.status == Match.Status.FINISHED and match.mode == Match.Mode.ONLINE:
            result = "win" if match.winner == seat else "loss"
        else:
            result = match.status if match.status != Match.Status.FINISHED else "finished"
        rows.append({
            "match": match,
            "opponent": None if match.mode == Match.Mode.HOTSEAT else opponent,
            "result": result,
            "delta": None if after is None or before is None else after - before,
            "url": f"/match/{match.id}/",
        })  # fmt: skip
    return rows


def deal_proofs(record: dict) -> list[dict]:
    """For each round whose seed is revealed: the seed, its commitment, the players'
    contributions and whether the engine's fairness proof holds (the seed matches the
    commitment, and the tiles follow from the seed and the contributions, docs/fairness.md)."""
    _state, problems = engine.audit(record)
    unfair = {p.round for p in problems if p.about == engine.FAIRNESS}
    return [
        {
            "round": number,
            "seed": round_record["seed"],
            "commitment": round_record["commitment"],
            "contributions": round_record.get("contributions"),
            "verified": number not in unfair,
        }
        for number, round_record in enumerate(record["rounds"], start=1)
        if round_record["seed"] is not None
    ]

"""Telling everyone concerned: each seat gets its own view, spectators the public one.

Every message carries the match's event number (``seq``): the channel layer delivers at most
once, so a client that sees a gap asks for a resync.
"""

from __future__ import annotations

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

import engine

from .models import Match

WATCHERS = "watch"
HOTSEAT = "hotseat"


def group_name(match_id, audience) -> str:
    """``audience`` is a seat (0, 1), ``"watch"`` for spectators or ``"hotseat"``."""
    suffix = f"seat{audience}" if audience in (0, 1) else audience
    return f"match.{str(match_id).replace('-', '')}.{suffix}"


def visible_event(event: dict, viewer: int | None, *, dealing: bool) -> dict:
    """A drawn tile is known only to the player who drew it; contributions to a deal are shown
    only once the round is dealt (``dealing``: the event's round is not dealt yet; until then
    nobody learns another's value)."""
    if event["type"] == "draw" and event["seat"] != viewer:
        return _without(event, "tile")
    if event["type"] == "contribute" and dealing:
        return _without(event, "value")
    return event


def _without(event: dict, key: str) -> dict:
    return {name: value for name, value in event.items() if name != key}


def state_message(match: Match, state: engine.MatchState, viewer: int | None, events=()) -> dict:
    dealing = _seqs_of_round_being_dealt(match, state)
    return {
        "type": "state",
        "seq": state.seq,
        "match": {
            "id": str(match.id),
            "mode": match.mode,
            "rated": match.rated,
            "status": match.status,
            "players": [
                {"seat": p["seat"], "username": p["username"], "computer": p.get("computer")}
                for p in match.record["players"]
            ],
        },
        "you": viewer,
        # Who presses Start / Continue (or reveals, in pass-and-play) while the clocks stand:
        # the view alone cannot tell (it would take the opponent's hand), and a client needs it
        # to offer the button; it becomes public anyway the moment the clocks run.
        "starter": engine.starter(state),
        "view": engine.view(state, viewer),
        "events": [
            visible_event(event, viewer, dealing=event["seq"] in dealing) for event in events
        ],
        "deadline": {"kind": match.deadline_kind or None, "at_ms": match.deadline_ms},
    }


def _seqs_of_round_being_dealt(match: Match, state: engine.MatchState) -> set[int]:
    """The events of the round still waiting for its deal: only their contributions are
    secret (a resync may also bring earlier rounds' events, whose values are public)."""
    if state.phase != engine.DEALING:
        return set()
    return {event["seq"] for event in match.record["rounds"][-1]["events"]}


def viewer_for(match: Match, state: engine.MatchState, audience) -> int | None:
    if audience == HOTSEAT:
        return engine.device_holder(state)
    return audience if audience in (0, 1) else None


def audiences(match: Match) -> tuple:
    if match.mode == Match.Mode.HOTSEAT:
        return (HOTSEAT, WATCHERS)
    return (0, 1, WATCHERS)


def publish(match: Match, state: engine.MatchState, events: list[dict]) -> None:
    layer = get_channel_layer()
    send = async_to_sync(layer.group_send)
    for audience in audiences(match):
        message = state_message(match, state, viewer_for(match, state, audience), events)
        send(group_name(match.id, audience), {"type": "match.message", "payload": message})

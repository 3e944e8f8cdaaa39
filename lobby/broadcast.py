"""Telling lobby pages what changed, after commit, over the channel layer.

Group ``lobby`` gets the public state; ``lobby.user.<id>`` gets one player's own part and
``match_started``. Every message carries ``seq`` from one Redis counter: messages are whole
snapshots, so a client applies a snapshot only if it is newer than the last it applied.
"""

from __future__ import annotations

import logging

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from accounts.models import User

log = logging.getLogger(__name__)

LOBBY_GROUP = "lobby"
SEQ_KEY = "sbo:lobby:seq"


def user_group(user_id: int) -> str:
    return f"lobby.user.{user_id}"


def next_seq() -> int:
    from config.redis_clients import sync_redis

    return int(sync_redis().incr(SEQ_KEY))


def _send(group: str, payload: dict) -> None:
    async_to_sync(get_channel_layer().group_send)(
        group, {"type": "lobby.message", "payload": payload}
    )


def lobby_changed(user_ids: list[int]) -> None:
    from lobby.selectors import lobby_state, personal_state

    try:
        _send(LOBBY_GROUP, {**lobby_state(), "seq": next_seq()})
        for user in User.objects.filter(pk__in=user_ids):
            _send(user_group(user.pk), {**personal_state(user), "seq": next_seq()})
    except Exception:  # a lost broadcast is repaired by the next one or a reload
        log.exception("could not broadcast the lobby state")


def match_started(match_id, user_ids: list[int]) -> None:
    from lobby.selectors import match_url

    try:
        for user_id in user_ids:
            _send(user_group(user_id), {
                "type": "match_started", "match_id": str(match_id), "url": match_url(match_id),
                "seq": next_seq(),
            })  # fmt: skip
    except Exception:
        log.exception("could not tell players that match %s started", match_id)

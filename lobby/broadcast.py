"""Telling lobby pages what changed, after commit, over the channel layer.

Group ``lobby`` gets the public state; ``lobby.user.<id>`` gets one player's own part and
``match_started``. Every message carries ``seq`` from one Redis counter: messages are whole
snapshots, so a client applies a snapshot only if it is newer than the last it applied.
"""

from __future__ import annotations

import logging
import time

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from accounts.models import User
from lobby.selectors import lobby_state, match_url, personal_state
from realtime.redis_clients import sync_redis

log = logging.getLogger(__name__)

LOBBY_GROUP = "lobby"
SEQ_KEY = "sbo:lobby:seq"


def user_group(user_id: int) -> str:
    return f"lobby.user.{user_id}"


# The counter never goes back, even when Redis loses it: it counts up from the wall clock's
# microseconds whenever it finds itself below them (open pages drop a snapshot with a lower
# seq, so a counter restarting at 1 would freeze them).
_NEXT_SEQ = """
local seq = redis.call('INCR', KEYS[1])
local floor = tonumber(ARGV[1])
if seq < floor then
  redis.call('SET', KEYS[1], ARGV[1])
  seq = floor
end
return seq
"""


def next_seq(*, now_us: int | None = None) -> int:
    floor = now_us if now_us is not None else time.time_ns() // 1_000
    return int(sync_redis().eval(_NEXT_SEQ, 1, SEQ_KEY, floor))


def _send(group: str, payload: dict) -> None:
    async_to_sync(get_channel_layer().group_send)(
        group, {"type": "lobby.message", "payload": payload}
    )


def lobby_changed(user_ids: list[int]) -> None:
    try:
        # The number first, then the state: a snapshot read later always carries a later number.
        seq = next_seq()
        _send(LOBBY_GROUP, {**lobby_state(), "seq": seq})
        for user in User.objects.filter(pk__in=user_ids):
            seq = next_seq()
            _send(user_group(user.pk), {**personal_state(user), "seq": seq})
    except Exception:  # a lost broadcast is repaired by the next one or a reload
        log.exception("could not broadcast the lobby state")


def match_started(match_id, user_ids: list[int]) -> None:
    try:
        for user_id in user_ids:
            _send(user_group(user_id), {
                "type": "match_started", "match_id": str(match_id), "url": match_url(match_id),
                "seq": next_seq(),
            })  # fmt: skip
    except Exception:
        log.exception("could not tell players that match %s started", match_id)

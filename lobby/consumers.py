"""The lobby WebSocket, ``/ws/lobby/``: thin. It sends the lobby state on connect, relays the
broadcasts of lobby/broadcast.py, and turns requests into calls of lobby.services.

Requests: ``{"type": "seek_create", "rated": bool, "rating_min": int|null, "rating_max":
int|null}``, ``seek_cancel`` / ``seek_accept`` (``seek_id``), ``challenge_create``
(``username``, ``rated``), ``challenge_accept`` / ``challenge_decline`` / ``challenge_cancel``
(``challenge_id``), ``quick_join``, ``quick_leave``, ``hotseat_start``, ``sync``, ``ping``
(answered ``pong``; the socket counts as present while it is open, see lobby/presence.py). A refused
request answers ``{"type": "error", "code", "message", "request"}``; a started match reaches both
players as ``{"type": "match_started", "match_id", "url"}``.
"""

from __future__ import annotations

from channels.db import database_sync_to_async
from redis.exceptions import RedisError

from lobby import broadcast, presence, selectors, services
from matches.timekeeping import now_ms
from realtime.presence import wall_ms
from realtime.sockets import GuardedJsonConsumer

CLOSE_NOT_SIGNED_IN = 4401


def _int_or_none(value):
    if value is None or value == "":
        return None
    if type(value) is not int:
        raise services.LobbyError("bad_message", "a rating bound is a whole number")
    return value


def _flag(content: dict, key: str) -> bool:
    value = content.get(key)
    if value is None:
        return False
    if type(value) is not bool:
        raise services.LobbyError("bad_message", f"{key} is true or false")
    return value


def _id(content: dict, key: str) -> int:
    value = content.get(key)
    if type(value) is not int or not 0 < value < 2**63:
        raise services.LobbyError("bad_message", f"{key} is a positive whole number")
    return value


def _call(kind: str, user, content: dict):
    """Run one request's service call (in a worker thread, through database_sync_to_async)."""
    if kind == "seek_create":
        return services.seek_create(
            user=user, rated=_flag(content, "rated"),
            rating_min=_int_or_none(content.get("rating_min")),
            rating_max=_int_or_none(content.get("rating_max")),
        )  # fmt: skip
    if kind == "seek_cancel":
        return services.seek_cancel(user=user, seek_id=_id(content, "seek_id"))
    if kind == "seek_accept":
        return services.seek_accept(user=user, seek_id=_id(content, "seek_id"))
    if kind == "challenge_create":
        username = content.get("username")
        if not isinstance(username, str):
            raise services.LobbyError("bad_message", "username is a string")
        return services.challenge_create(
            user=user, opponent_username=username, rated=_flag(content, "rated")
        )
    if kind in ("challenge_accept", "challenge_decline", "challenge_cancel"):
        return getattr(services, kind)(user=user, challenge_id=_id(content, "challenge_id"))
    if kind == "quick_join":
        return services.quick_join(user=user, now_ms=now_ms())
    if kind == "quick_leave":
        return services.quick_leave(user=user)
    if kind == "computer_start":
        level = content.get("level")
        if not isinstance(level, str):
            raise services.LobbyError("bad_message", "level is a string")
        return services.computer_start(user=user, level=level, rated=_flag(content, "rated"))
    if kind == "hotseat_start":
        return services.hotseat_start(user=user)
    raise services.LobbyError("unknown_request", "unknown request")


def _snapshot(user) -> tuple[dict, dict]:
    seq = broadcast.next_seq()
    return {**selectors.lobby_state(), "seq": seq}, {**selectors.personal_state(user), "seq": seq}


class LobbyConsumer(GuardedJsonConsumer):
    async def opening(self):
        self.user = self.scope.get("user")
        if self.user is None or not self.user.is_authenticated:
            return CLOSE_NOT_SIGNED_IN
        return None

    async def opened(self):
        self.groups_joined = [broadcast.LOBBY_GROUP, broadcast.user_group(self.user.pk)]
        for group in self.groups_joined:
            await self.channel_layer.group_add(group, self.channel_name)
        await self._seen()
        await self._send_snapshot()

    def joined_groups(self) -> list[str]:
        return self.groups_joined

    async def closing(self):
        for group in self.groups_joined:
            await self.channel_layer.group_discard(group, self.channel_name)
        try:
            still_open = await presence.left(self.user.pk, self.channel_name, wall_ms())
        except RedisError:
            return  # its entry goes stale: the user no longer counts as present
        if still_open == 0:
            await database_sync_to_async(services.lobby_leave)(user=self.user)

    async def _seen(self) -> None:
        try:
            await presence.seen(self.user.pk, self.channel_name, wall_ms())
        except RedisError:
            pass  # this process marks it open again on its timer (realtime/presence.py)

    async def handle(self, content: dict) -> None:
        kind = content.get("type")
        if kind == "ping":
            await self.send_json({"type": "pong"})
        elif kind == "sync":
            await self._send_snapshot()
        else:
            try:
                await database_sync_to_async(_call)(kind, self.user, content)
            except services.LobbyError as rejection:
                await self.send_rejection(content, rejection)
            else:
                await self.send_json({"type": "ok", "request": kind})

    async def lobby_message(self, event):
        await self.send_json(event["payload"])

    async def _send_snapshot(self):
        public, personal = await database_sync_to_async(_snapshot)(self.user)
        await self.send_json(public)
        await self.send_json(personal)

    def error_context(self, content: dict) -> dict:
        kind = content.get("type") if isinstance(content, dict) else None
        return {"request": kind if isinstance(kind, str) and len(kind) <= 40 else None}

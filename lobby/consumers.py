"""The lobby WebSocket, ``/ws/lobby/``: thin. It sends the lobby state on connect, relays the
broadcasts of lobby/broadcast.py, and turns requests into calls of lobby.services.

Requests: ``{"type": "seek_create", "rated": bool, "rating_min": int|null, "rating_max":
int|null}``, ``seek_cancel`` / ``seek_accept`` (``seek_id``), ``challenge_create``
(``username``, ``rated``), ``challenge_accept`` / ``challenge_decline`` / ``challenge_cancel``
(``challenge_id``), ``quick_join``, ``quick_leave``, ``hotseat_start``, ``sync``, ``ping``
(answered ``pong``; it keeps the socket counted as present, see lobby/presence.py). A refused
request answers ``{"type": "error", "code", "message", "request"}``; a started match reaches both
players as ``{"type": "match_started", "match_id", "url"}``.
"""

from __future__ import annotations

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from config.presence import wall_ms
from config.ratelimit import TokenBucket
from lobby import broadcast, presence, selectors, services
from matches.timekeeping import monotonic_ms

CLOSE_NOT_SIGNED_IN = 4401


def _int_or_none(value):
    if value is None or value == "":
        return None
    if type(value) is not int:
        raise services.LobbyError("bad_message", "a rating bound is a whole number")
    return value


def _call(kind: str, user, content: dict):
    """Run one request's service call (in a worker thread, through database_sync_to_async)."""
    if kind == "seek_create":
        return services.seek_create(
            user=user, rated=bool(content.get("rated")),
            rating_min=_int_or_none(content.get("rating_min")),
            rating_max=_int_or_none(content.get("rating_max")),
        )  # fmt: skip
    if kind == "seek_cancel":
        return services.seek_cancel(user=user, seek_id=content.get("seek_id"))
    if kind == "seek_accept":
        return services.seek_accept(user=user, seek_id=content.get("seek_id"))
    if kind == "challenge_create":
        return services.challenge_create(
            user=user,
            opponent_username=str(content.get("username") or ""),
            rated=bool(content.get("rated")),
        )
    if kind in ("challenge_accept", "challenge_decline", "challenge_cancel"):
        return getattr(services, kind)(user=user, challenge_id=content.get("challenge_id"))
    if kind == "quick_join":
        return services.quick_join(user=user, now_ms=services._now_ms())
    if kind == "quick_leave":
        return services.quick_leave(user=user)
    if kind == "hotseat_start":
        return services.hotseat_start(user=user)
    raise services.LobbyError("unknown_request", f"unknown request {kind!r}")


def _snapshot(user) -> tuple[dict, dict]:
    seq = broadcast.next_seq()
    return {**selectors.lobby_state(), "seq": seq}, {**selectors.personal_state(user), "seq": seq}


class LobbyConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self):
        self.user = self.scope.get("user")
        if self.user is None or not self.user.is_authenticated:
            await self.close(code=CLOSE_NOT_SIGNED_IN)
            return
        self.groups_joined = [broadcast.LOBBY_GROUP, broadcast.user_group(self.user.pk)]
        for group in self.groups_joined:
            await self.channel_layer.group_add(group, self.channel_name)
        await presence.seen(self.user.pk, self.channel_name, wall_ms())
        self.bucket = TokenBucket.for_connections()
        await self.accept()
        await self._send_snapshot()

    async def disconnect(self, code):
        if not getattr(self, "groups_joined", None):
            return
        for group in self.groups_joined:
            await self.channel_layer.group_discard(group, self.channel_name)
        if await presence.left(self.user.pk, self.channel_name, wall_ms()) == 0:
            await database_sync_to_async(services.lobby_leave)(user=self.user)

    async def receive_json(self, content, **kwargs):
        if not isinstance(content, dict):
            await self.send_json(
                {"type": "error", "code": "bad_message", "message": "a message is a JSON object"}
            )
            return
        kind = content.get("type")
        await presence.seen(self.user.pk, self.channel_name, wall_ms())
        if not self.bucket.allow(monotonic_ms()):
            await self._error(kind, "rate_limited", "too many requests: slow down")
        elif kind == "ping":
            await self.send_json({"type": "pong"})
        elif kind == "sync":
            await self._send_snapshot()
        else:
            try:
                await database_sync_to_async(_call)(kind, self.user, content)
            except services.LobbyError as error:
                await self._error(kind, error.code, error.message)
            else:
                await self.send_json({"type": "ok", "request": kind})

    async def lobby_message(self, event):
        await self.send_json(event["payload"])

    async def _send_snapshot(self):
        public, personal = await database_sync_to_async(_snapshot)(self.user)
        await self.send_json(public)
        await self.send_json(personal)

    async def _error(self, kind, code: str, message: str) -> None:
        await self.send_json({"type": "error", "code": code, "message": message, "request": kind})

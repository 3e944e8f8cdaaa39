"""The match WebSocket, ``/ws/match/<id>/``: thin. Frames are checked by the shared guard
(realtime/sockets.py); a command from someone who holds no seat is refused here, before it
costs the server anything shared; a player's command is handed to ``commands.receive``. Reads
come from the selectors; the service's broadcasts reach the socket through its group. The
messages are documented in docs/protocol.md."""

from __future__ import annotations

import asyncio

from django.conf import settings
from redis.exceptions import RedisError

from realtime.database import in_database_threads
from realtime.ratelimit import TokenBucket
from realtime.sockets import GuardedJsonConsumer

from . import broadcast, commands, presence, readings, scheduler, selectors, services

CLOSE_NO_SUCH_MATCH = 4404
READS = ("ping", "hello", "sync")  # what a spectator may send


class MatchConsumer(GuardedJsonConsumer):
    async def opening(self):
        scheduler.ensure_running()  # this process fires deadlines too, not only the worker
        self.match_id = str(self.scope["url_route"]["kwargs"]["match_id"])
        self.seats: list[int] = []
        self.sent_seq = -1  # the last event number this client was sent
        seats = await in_database_threads(selectors.seats_of)(self.match_id, self.scope.get("user"))
        if seats is None:
            return CLOSE_NO_SUCH_MATCH
        self.seats = seats
        if len(seats) == 2:
            self.audience = broadcast.HOTSEAT
        else:
            self.audience = seats[0] if seats else broadcast.WATCHERS
        return None

    def budget(self) -> TokenBucket:
        if self.seats:
            return TokenBucket.for_connections()
        return TokenBucket(
            capacity=settings.WS_SPECTATOR_RATE_BURST,
            per_second=settings.WS_SPECTATOR_RATE_PER_SECOND,
        )

    async def opened(self):
        readings.MEMORY.opened(self.match_id, spectator=self._spectator)
        await self.channel_layer.group_add(self._group(), self.channel_name)
        await self._seen()
        await self._send_state(last_seq=None)
        if self._spectator:
            asyncio.get_running_loop().call_later(readings.CATCH_UP_S, self._ask_catch_up)

    async def closing(self):
        readings.MEMORY.closed(self.match_id, spectator=self._spectator)
        await self.channel_layer.group_discard(self._group(), self.channel_name)
        try:
            for seat in self.seats:
                await presence.left(self.match_id, seat, self.channel_name)
            if self._spectator:
                await presence.stopped_watching(self.match_id, self.channel_name)
        except RedisError:
            pass  # the entries go stale on their own

    @property
    def _spectator(self) -> bool:
        return self.audience == broadcast.WATCHERS

    def _group(self) -> str:
        return broadcast.group_name(self.match_id, self.audience)

    def joined_groups(self) -> list[str]:
        return [self._group()]

    async def handle(self, content: dict) -> None:
        kind = content.get("type")
        if kind not in READS and not self.seats:
            await self.send_error(content, "not_a_player", "you are not playing in this match")
            return
        if kind == "ping":
            server_ms, seq = await readings.pong(self.match_id)
            if seq is None:  # Redis lost it (or is down): the database knows
                seq = await in_database_threads(selectors.last_seq)(self.match_id)
            seq = max(seq, self.sent_seq)  # a reading made just before this socket's last state
            await self.send_json({"type": "pong", "t": content.get("t"), "server_ms": server_ms,
                                  "seq": seq})  # fmt: skip
        elif kind in ("hello", "sync"):
            last_seq = content.get("last_seq")
            await self._send_state(last_seq=last_seq if type(last_seq) is int else None)
        else:
            await self._command(content)

    async def _seen(self) -> None:
        """Count this socket as present for its seats, or as watching (this process keeps it
        marked open)."""
        try:
            for seat in self.seats:
                await presence.seen(self.match_id, seat, self.channel_name)
            if self._spectator:
                await presence.watching(self.match_id, self.channel_name)
        except RedisError:
            pass  # marked again on this process's timer; absence is only judged at a deadline

    def _ask_catch_up(self) -> None:
        if not self.finished:
            asyncio.ensure_future(self._send_catch_up())

    async def _send_catch_up(self) -> None:
        try:  # through the layer: handled in turn with the broadcasts
            await self.channel_layer.send(self.channel_name, {"type": "catch.up"})
        except RedisError:
            pass  # Redis is down: the spectator's pings show what it missed once it is back

    async def catch_up(self, event):
        """A spectator's one look back (matches/readings.py): a change made before every web
        process had read that this match is watched was not sent to it."""
        _, seq = await readings.pong(self.match_id)
        if seq is not None and seq > self.sent_seq:
            await self._send_state(last_seq=self.sent_seq)

    def forward(self, message: dict) -> bool:
        """A broadcast, the moment this process reads it (realtime/forwarding.py): sent now if
        it is the next in order, dropped if covered; one that skips ahead is left to
        ``match_message``, which resyncs (that waits on the database)."""
        if message.get("type") != "match.message":
            return False
        order = self._order_of(message)
        if order == "next":
            self.send_now(message["text"])
            self.sent_seq = message["seq"]
        return order != "ahead"

    async def match_message(self, event):
        """Forward a broadcast (``broadcast.layer_message``), keeping this client's events in
        seq order: broadcasts from different processes may arrive out of order (or not at
        all), so a broadcast that skips ahead is replaced by a resync from the record, and one
        already covered is dropped."""
        order = self._order_of(event)
        if order == "ahead":
            await self._send_state(last_seq=self.sent_seq)
        elif order == "next":
            await self.send(text_data=event["text"])
            self.sent_seq = event["seq"]

    def _order_of(self, event: dict) -> str:
        """Where a broadcast falls for this client: the ``next`` events, ``covered`` already,
        or ``ahead`` (it skips events this client was not sent)."""
        seq, first_seq = event["seq"], event["first_seq"]
        services.match_seen_at(self.match_id, seq, event.get("row"))
        if seq <= self.sent_seq:
            return "covered"
        if first_seq is not None and first_seq > self.sent_seq + 1:
            return "ahead"
        return "next"

    async def _command(self, content: dict) -> None:
        await commands.receive(
            match_id=self.match_id,
            user=self.scope.get("user"),
            seats=self.seats,
            content=content,
            answer=self.send_json,
        )

    async def _send_state(self, last_seq: int | None) -> None:
        message = await in_database_threads(selectors.state_message)(
            self.match_id, self.audience, last_seq
        )
        await self.send_json(message)
        self.sent_seq = max(self.sent_seq, message["seq"])

    def error_context(self, content: dict) -> dict:
        return {"cseq": content.get("cseq") if isinstance(content, dict) else None}

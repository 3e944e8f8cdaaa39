"""The match WebSocket, ``/ws/match/<id>/``: thin. Frames are checked by the shared guard
(config/sockets.py); a command from someone who holds no seat is refused here, before it costs
the server anything shared; a player's command is stamped by the time authority, handed to the
match service, and answered. The service's broadcasts reach the socket through its group. The
messages are documented in docs/protocol.md."""

from __future__ import annotations

import logging

from channels.db import database_sync_to_async
from django.conf import settings
from redis.exceptions import RedisError

from config.ratelimit import TokenBucket
from config.redis_clients import PoolBusy
from config.sockets import GuardedJsonConsumer

from . import broadcast, presence, scheduler, services, timekeeping
from .models import Match, TimingFault
from .selectors import events_since, match_state

log = logging.getLogger(__name__)

CLOSE_NO_SUCH_MATCH = 4404
READS = ("ping", "hello", "sync")  # what a spectator may send


class MatchConsumer(GuardedJsonConsumer):
    async def opening(self):
        scheduler.ensure_running()  # this process fires deadlines too, not only the worker
        self.match_id = str(self.scope["url_route"]["kwargs"]["match_id"])
        self.seats: list[int] = []
        self.sent_seq = -1  # the last event number this client was sent
        seats = await database_sync_to_async(_seats_of)(self.match_id, self.scope.get("user"))
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
        await self.channel_layer.group_add(self._group(), self.channel_name)
        await self._seen()
        await self._send_state(last_seq=None)

    async def closing(self):
        await self.channel_layer.group_discard(self._group(), self.channel_name)
        for seat in self.seats:
            try:
                await presence.left(self.match_id, seat, self.channel_name)
            except RedisError:
                pass  # the entry goes stale on its own

    def _group(self) -> str:
        return broadcast.group_name(self.match_id, self.audience)

    def joined_groups(self) -> list[str]:
        return [self._group()]

    async def handle(self, content: dict) -> None:
        kind = content.get("type")
        if kind not in READS and not self.seats:
            await self.send_error(content, "not_a_player", "you are not playing in this match")
            return
        await self._seen()
        if kind == "ping":
            await self.send_json(
                {
                    "type": "pong",
                    "t": content.get("t"),
                    "server_ms": await _authority_now(),
                    "seq": await _last_seq(self.match_id),
                }
            )
        elif kind in ("hello", "sync"):
            last_seq = content.get("last_seq")
            await self._send_state(last_seq=last_seq if type(last_seq) is int else None)
        else:
            await self._command(content)

    async def _seen(self) -> None:
        """Keep this socket counted as present for its seats (clients ping every few seconds)."""
        try:
            for seat in self.seats:
                await presence.seen(self.match_id, seat, self.channel_name)
        except RedisError:
            pass  # seen again on the next message; absence is only judged at a deadline

    async def match_message(self, event):
        """Forward a broadcast, keeping this client's events in seq order: broadcasts from
        different processes may arrive out of order (or not at all), so a broadcast that skips
        ahead is replaced by a resync from the record, and one already covered is dropped."""
        payload = event["payload"]
        if payload["seq"] <= self.sent_seq:
            return
        events = payload.get("events") or []
        if events and events[0]["seq"] > self.sent_seq + 1:
            await self._send_state(last_seq=self.sent_seq)
            return
        await self.send_json(payload)
        self.sent_seq = payload["seq"]

    async def _command(self, content: dict) -> None:
        cseq = content.get("cseq")
        if cseq is not None and (type(cseq) is not int or not 1 <= cseq < 2**53):
            await self.send_error(content, "bad_message", "cseq is a positive whole number")
            return
        command = {key: value for key, value in content.items() if key != "cseq"}
        try:
            arrival = await timekeeping.stamp_arrival(self.match_id)
        except PoolBusy:
            await self.send_error(content, "busy", "the server is busy; send it again")
            return
        except RedisError as exc:
            # Answer first: recording the fault may wait for the very Redis that failed.
            await self.send_error(
                content, "time_unavailable", "the server cannot read its clock; send it again"
            )
            await self._report_fault(TimingFault.Kind.UNREACHABLE, {"error": repr(exc)})
            return
        try:
            await self._watch_time(arrival)
            outcome = await database_sync_to_async(services.match_submit)(
                match_id=self.match_id,
                user=self.scope.get("user"),
                command=command,
                arrival_ms=arrival.at_ms,
                cseq=cseq,
            )
        except services.CommandRejected as exc:
            error = self.error_message(content, exc.code, exc.reason)
            await self.send_json({**error, **exc.details})
            return
        finally:
            await timekeeping.release_arrival(arrival)
        await self.send_json(
            {
                "type": "ack",
                "cseq": cseq,
                "seq": outcome.seq,
                "duplicate": outcome.duplicate,
                "late": outcome.late,
            }
        )

    async def _watch_time(self, arrival: timekeeping.Arrival) -> None:
        if arrival.lag_ms > timekeeping.setting_ms("STAMP_LATE_TOLERANCE_MS", 2_000):
            await self._report_fault(
                TimingFault.Kind.LATE_STAMP, {"lag_ms": round(arrival.lag_ms, 1)}
            )
        suspicion = timekeeping.WATCH.observe(
            arrival.at_ms, timekeeping.monotonic_ms() - arrival.lag_ms / 2
        )
        if suspicion is not None:
            await self._report_fault(*suspicion)

    async def _report_fault(self, kind: str, detail: dict) -> None:
        await database_sync_to_async(services.fault_report)(
            match_id=self.match_id, kind=kind, detail=detail, seats=self.seats
        )

    async def _send_state(self, last_seq: int | None) -> None:
        message = await database_sync_to_async(_state_message)(
            self.match_id, self.audience, last_seq
        )
        await self.send_json(message)
        self.sent_seq = max(self.sent_seq, message["seq"])

    def error_message(self, content: dict, code: str, text: str) -> dict:
        cseq = content.get("cseq") if isinstance(content, dict) else None
        return {"type": "error", "cseq": cseq, "code": code, "reason": text}


def _seats_of(match_id: str, user) -> list[int] | None:
    """The seats the user holds ([] for a spectator), or None if there is no such match."""
    match = Match.objects.filter(pk=match_id).only("player0_id", "player1_id").first()
    if match is None:
        return None
    return match.seats_of(user) if user is not None and user.is_authenticated else []


def _state_message(match_id: str, audience, last_seq: int | None) -> dict:
    """The full state for this audience, with the events after ``last_seq`` when the client
    says what it saw (a resync after a reconnect or a gap)."""
    match = Match.objects.get(pk=match_id)
    state = match_state(match)
    viewer = broadcast.viewer_for(match, state, audience)
    events = events_since(match, last_seq) if last_seq is not None else []
    return {**broadcast.state_message(match, state, viewer, events), "resync": True}


@database_sync_to_async
def _last_seq(match_id: str) -> int:
    """The match's last event number: a client that saw less missed a broadcast."""
    return Match.objects.filter(pk=match_id).values_list("seq", flat=True).first() or 0


async def _authority_now() -> int | None:
    try:
        return timekeeping.authority_ms(await timekeeping.async_redis().time())
    except RedisError:
        return None

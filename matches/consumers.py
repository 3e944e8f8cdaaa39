"""The match WebSocket, ``/ws/match/<id>/``: thin. It stamps each command's arrival with the time
authority, hands it to the match service and sends back the result; the service's broadcasts
reach it through its group. The messages are documented in docs/protocol.md."""

from __future__ import annotations

import json
import logging

from autobahn.exception import Disconnected
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from redis.exceptions import RedisError

from config.ratelimit import TokenBucket

from . import broadcast, presence, services, timekeeping
from .models import Match, TimingFault
from .selectors import events_since, match_state

log = logging.getLogger(__name__)

CLOSE_NO_SUCH_MATCH = 4404
NOT_JSON = object()  # what a frame that is not JSON text decodes to


class MatchConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self):
        self.match_id = str(self.scope["url_route"]["kwargs"]["match_id"])
        self.seats: list[int] = []
        seats = await database_sync_to_async(_seats_of)(self.match_id, self.scope.get("user"))
        if seats is None:
            # Accept first: a close before the handshake is answered with a bare HTTP 403, and
            # the client would never see the code.
            await self.accept()
            await self.close(code=CLOSE_NO_SUCH_MATCH)
            return
        self.seats = seats
        if len(seats) == 2:
            self.audience = broadcast.HOTSEAT
        else:
            self.audience = seats[0] if seats else broadcast.WATCHERS
        self.bucket = TokenBucket.for_connections()
        await self.channel_layer.group_add(
            broadcast.group_name(self.match_id, self.audience), self.channel_name
        )
        await self.accept()
        await self._seen()
        await self._send_state(last_seq=None)

    async def __call__(self, scope, receive, send):
        # However the connection ends (even if the consumer fails), its seats stop counting as
        # connected: an absent player whose clock runs out has abandoned the match.
        try:
            await super().__call__(scope, receive, send)
        finally:
            for seat in getattr(self, "seats", []):
                await presence.left(self.match_id, seat, self.channel_name)

    async def disconnect(self, code):
        if not hasattr(self, "audience"):
            return
        await self.channel_layer.group_discard(
            broadcast.group_name(self.match_id, self.audience), self.channel_name
        )

    async def send_json(self, content, close=False):
        try:
            await super().send_json(content, close)
        except Disconnected:
            pass  # the client has gone: its disconnect is on its way

    async def receive(self, text_data=None, bytes_data=None, **kwargs):
        """Anything but a text frame of JSON is a bad message, answered, not a crash."""
        try:
            content = json.loads(text_data) if text_data else NOT_JSON
        except ValueError:
            content = NOT_JSON
        await self.receive_json(content, **kwargs)

    async def receive_json(self, content, **kwargs):
        await self._seen()
        if not self.bucket.allow(timekeeping.monotonic_ms()):
            await self._error(content, "rate_limited", "too many messages: slow down")
            return
        if not isinstance(content, dict):
            await self._error({}, "bad_message", "a message is a JSON object")
            return
        kind = content.get("type")
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
            await self._send_state(last_seq=last_seq if isinstance(last_seq, int) else None)
        else:
            await self._command(content)

    async def _seen(self) -> None:
        """Keep this socket counted as present for its seats (clients ping every few seconds)."""
        for seat in self.seats:
            await presence.seen(self.match_id, seat, self.channel_name)

    async def match_message(self, event):
        await self.send_json(event["payload"])

    async def _command(self, content: dict) -> None:
        cseq = content.get("cseq")
        if cseq is not None and (type(cseq) is not int or cseq < 1):
            await self._error(content, "bad_message", "cseq is a positive whole number")
            return
        command = {key: value for key, value in content.items() if key != "cseq"}
        try:
            arrival = await timekeeping.stamp_arrival(self.match_id)
        except RedisError as exc:
            await _report_fault(self.match_id, TimingFault.Kind.UNREACHABLE, {"error": repr(exc)})
            await self._error(
                content, "time_unavailable", "the server cannot read its clock; try again"
            )
            return
        await self._watch_time(arrival)
        try:
            outcome = await database_sync_to_async(services.match_submit)(
                match_id=self.match_id,
                user=self.scope.get("user"),
                command=command,
                arrival_ms=arrival.at_ms,
                cseq=cseq,
            )
        except services.CommandRejected as exc:
            await self._error(content, exc.code, exc.reason)
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
            await _report_fault(
                self.match_id, TimingFault.Kind.LATE_STAMP, {"lag_ms": round(arrival.lag_ms, 1)}
            )
        suspicion = timekeeping.WATCH.observe(
            arrival.at_ms, timekeeping.monotonic_ms() - arrival.lag_ms / 2
        )
        if suspicion is not None:
            await _report_fault(self.match_id, *suspicion)

    async def _send_state(self, last_seq: int | None) -> None:
        message = await database_sync_to_async(_state_message)(
            self.match_id, self.audience, last_seq
        )
        await self.send_json(message)

    async def _error(self, content: dict, code: str, reason: str) -> None:
        cseq = content.get("cseq") if isinstance(content, dict) else None
        await self.send_json({"type": "error", "cseq": cseq, "code": code, "reason": reason})


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


@database_sync_to_async
def _report_fault(match_id: str, kind: str, detail: dict) -> None:
    services.fault_report(match_id=match_id, kind=kind, detail=detail)

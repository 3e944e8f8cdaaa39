"""The path of one player's command from a socket to the match service: stamp its arrival by
the time authority, report what the stamp says about the service's timekeeping, submit it, and
answer with an ack or an error. The consumer only parses, checks the sender and hands over."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from redis.exceptions import RedisError

from engine import Rejection
from realtime.database import in_database_threads
from realtime.redis_clients import PoolBusy

from . import broadcast, services, timekeeping
from .models import TimingFault

Answer = Callable[[dict], Awaitable[None]]


async def receive(*, match_id: str, user, seats: list[int], content: dict, answer: Answer):
    """Apply a player's command message (``content``, cseq included) and ``answer`` it."""
    cseq = content.get("cseq")
    if cseq is not None and (type(cseq) is not int or not 1 <= cseq < 2**53):
        # The refused cseq is echoed as sent: the client tells which message was refused.
        await answer(_error(Rejection("bad_message", "cseq is a positive whole number"), cseq))
        return
    try:
        arrival = await timekeeping.stamp_arrival(match_id)
    except PoolBusy:
        await answer(_error(Rejection("busy", "the server is busy; send it again"), cseq))
        return
    except RedisError as exc:
        # Answer first: recording the fault may wait for the very Redis that failed.
        unreadable = Rejection(
            "time_unavailable", "the server cannot read its clock; send it again"
        )
        await answer(_error(unreadable, cseq))
        await report_fault(match_id, seats, TimingFault.Kind.UNREACHABLE, {"error": repr(exc)})
        return
    outcome = None
    try:
        for kind, detail in timekeeping.suspicions(arrival):
            await report_fault(match_id, seats, kind, detail)
        command = {key: value for key, value in content.items() if key != "cseq"}
        # The move's broadcasts are held for the loop (not sent by the database thread) and go
        # out right after the ack: the mover's answer does not wait on every audience's.
        async with broadcast.held():
            outcome = await in_database_threads(services.match_submit)(
                match_id=match_id, user=user, command=command, arrival_ms=arrival.at_ms,
                cseq=cseq, arrival_token=arrival.token,
            )  # fmt: skip
            await answer(_ack(outcome, cseq))
    except services.CommandRejected as rejection:
        await answer(_error(rejection, cseq))
    finally:
        if outcome is None or not outcome.released:  # else released with the move's writes
            await timekeeping.release_arrival(arrival)


async def report_fault(match_id: str, seats: list[int], kind: str, detail: dict) -> None:
    await in_database_threads(services.fault_report)(
        match_id=match_id, kind=kind, detail=detail, seats=seats
    )


def _ack(outcome: services.Outcome, cseq) -> dict:
    return {
        "type": "ack",
        "cseq": cseq,
        "seq": outcome.seq,
        "duplicate": outcome.duplicate,
        "late": outcome.late,
    }


def _error(rejection: Rejection, cseq) -> dict:
    return {"type": "error", **rejection.as_dict(), "cseq": cseq}

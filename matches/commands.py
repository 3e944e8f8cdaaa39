"""The path of one player's command from a socket to the match service: stamp its arrival by
the time authority, report what the stamp says about the service's timekeeping, submit it, and
answer with an ack or an error. The consumer only parses, checks the sender and hands over."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from functools import partial

from django.conf import settings
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

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
    command = {key: value for key, value in content.items() if key != "cseq"}
    stamp = timekeeping.StampInFlight(match_id)
    submit = partial(
        in_database_threads(services.match_submit), match_id=match_id, user=user,
        command=command, arrival_ms=stamp, cseq=cseq, arrival_token=stamp.token,
    )  # fmt: skip
    # The move's broadcasts are held for the loop (not sent by the database thread) and go
    # out right after the ack: the mover's answer does not wait on every audience's.
    async with broadcast.held(replies_first=True):
        # A move this process can make from its loop waits for its stamp (no thread to wake).
        on_loop = services.may_submit_on_loop(match_id)
        submitting = None
        if settings.DB_THREADS > 1 and not on_loop:
            # The match is read while its arrival is stamped: the service waits for the stamp
            # once it needs the time, before any lock. (Not where one thread serves every
            # socket of the process: it would wait for each stamp instead of serving others.)
            submitting = asyncio.ensure_future(submit())
        try:
            arrival = await stamp.arrival()
        except asyncio.CancelledError:  # the socket closed
            stamp.abandon(submitting)
            raise
        except RedisError as exc:
            if submitting is not None:
                await asyncio.gather(submitting, return_exceptions=True)  # nothing is applied
            if isinstance(exc, RedisTimeoutError):  # sent: Redis may have stamped it all the same
                timekeeping.release_later(match_id, stamp.token)
            await _unstamped(match_id, seats, exc, cseq, answer)
            return
        outcome = None
        try:
            for kind, detail in timekeeping.suspicions(arrival):
                await report_fault(match_id, seats, kind, detail)
            if on_loop:
                outcome = await services.match_submit_on_loop(
                    match_id=match_id, user=user, command=command, arrival_ms=arrival.at_ms,
                    cseq=cseq, arrival_token=stamp.token,
                )  # fmt: skip
            if outcome is None:
                submitting = submitting or asyncio.ensure_future(submit())
                outcome = await asyncio.shield(submitting)  # a thread is not stopped
            await answer(_ack(outcome, cseq))
        except services.CommandRejected as rejection:
            await answer(_error(rejection, cseq))
        except timekeeping.StampFailed:
            await answer(_error(_UNREADABLE_CLOCK, cseq))
        finally:
            if submitting is not None and not submitting.done():
                # The socket closed while a database thread applies the command: it goes on,
                # and the stamp stays pending until it is done (else a forfeit could slip in).
                stamp.abandon(submitting)
            elif outcome is None or not outcome.released:  # else released with its writes
                await timekeeping.release_arrival(arrival)


_UNREADABLE_CLOCK = Rejection("time_unavailable", "the server cannot read its clock; send it again")


async def _unstamped(match_id: str, seats: list[int], exc: RedisError, cseq, answer: Answer):
    if isinstance(exc, PoolBusy):
        await answer(_error(Rejection("busy", "the server is busy; send it again"), cseq))
        return
    # Answer first: recording the fault may wait for the very Redis that failed.
    await answer(_error(_UNREADABLE_CLOCK, cseq))
    await report_fault(match_id, seats, TimingFault.Kind.UNREACHABLE, {"error": repr(exc)})


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

"""Celery tasks: thin calls into the match service. Each is idempotent, so a redelivered or
duplicated task does nothing twice."""

from __future__ import annotations

import logging
import time

from celery import shared_task
from django.conf import settings

from . import analysis, computer, deadlines, scheduler, services, timekeeping, webbeats
from .models import TimingFault

log = logging.getLogger(__name__)

# Evidence that is conclusive by itself: an arrival the authority stamped too late to be fair.
CONCLUSIVE_FAULTS = (TimingFault.Kind.LATE_STAMP,)
AUTHORITY_PROBES = 3
RECHECK_AGAIN_S = 1.0
RECHECK_GIVE_UP_S = 60


@shared_task(ignore_result=True)
def sweep_deadlines() -> int:
    """Every second (beat): the backstop of the web processes' deadline loops; acts on every
    deadline that has passed, and rebuilds the set if Redis lost it."""
    deadlines.rebuild_if_lost()
    now_ms = timekeeping.now_ms()
    return scheduler.fire_due(deadlines.due(now_ms), now_ms)


@shared_task(ignore_result=True)
def conclude_pending_ends() -> int:
    """Every few seconds (beat): the backstop of the processes that tell a forfeit before they
    conclude it (services.match_expire), for one that died in between: its record is folded,
    its ratings written and its end told again; left alone while that process may still be at
    it."""
    return services.conclude_pending_ends(
        older_than_ms=settings.END_CONCLUDED_WITHIN_MS, now_ms=int(time.time() * 1000)
    )


@shared_task(ignore_result=True)
def computer_turn(match_id: str, seq: int) -> str:
    """The computer's turn at event ``seq`` (queued by the service after each change)."""
    return computer.play_turn(match_id=match_id, seq=seq)


@shared_task(ignore_result=True)
def computer_overdue() -> int:
    """Every 5 s (beat): queue again the computer's turns that no worker took."""
    return computer.overdue_turns(
        now_ms=timekeeping.now_ms(), older_than_ms=settings.COMPUTER_OVERDUE_MS
    )


@shared_task(ignore_result=True)
def analyse_match(match_id: str) -> str:
    """The expert's analysis of a finished match (matches/analysis.py)."""
    return analysis.analysis_compute(match_id=match_id)


@shared_task(ignore_result=True)
def recheck_fault(fault_id: int) -> str:
    """Decide a suspected fault on the evidence: confirm it (which voids a live match), dismiss
    it, or leave it to staff."""
    fault = TimingFault.objects.filter(pk=fault_id).first()
    if fault is None or fault.status != TimingFault.Status.SUSPECTED:
        return "decided"
    if fault.kind == TimingFault.Kind.UNREACHABLE:
        long = _unreachable_for_long(fault)
        if long is None:  # the web processes have not beaten since: ask again in a moment
            recheck_fault.apply_async((fault_id,), countdown=RECHECK_AGAIN_S)
            return "waiting"
        if not long:
            services.fault_dismiss(fault_id=fault_id, decided_by="auto")
            return "dismissed"
    elif fault.kind not in CONCLUSIVE_FAULTS and not _authority_disagrees():
        return "left_to_staff"
    fault = services.fault_confirm(
        fault_id=fault_id, decided_by="auto", now_ms=timekeeping.now_ms_or_wall()
    )
    return "confirmed" if fault.status == TimingFault.Status.CONFIRMED else "dismissed"


def _unreachable_for_long(fault: TimingFault) -> bool | None:
    """Was the authority out of reach long enough to matter? It still is; or the commands of the
    incident kept failing for the tolerance; or the web processes, which read the authority on
    every beat, could not beat for longer than theirs around the incident. None: they have not
    beaten since, so it cannot be told yet (for up to RECHECK_GIVE_UP_S; then it is an outage)."""
    if not _authority_answers():
        return True
    first_ms = fault.detected_at.timestamp() * 1000
    last_ms = (fault.last_seen_at or fault.detected_at).timestamp() * 1000
    if last_ms - first_ms >= timekeeping.setting_ms("STAMP_LATE_TOLERANCE_MS", 2_000):
        return True
    tolerance_ms = webbeats.tolerance_s() * 1000
    around = (int(first_ms) - tolerance_ms, int(last_ms) + tolerance_ms)
    now_ms = timekeeping.now_ms()
    web = webbeats.verdict(*around, now_ms)
    if web == webbeats.DOWN_NOW:
        return True if now_ms - last_ms > RECHECK_GIVE_UP_S * 1000 else None
    return web == webbeats.GAP


def _authority_answers() -> bool:
    """Does the time authority answer now, every time it is asked? One failed read is a
    suspicion; a fault is an authority that cannot be read."""
    try:
        for _ in range(AUTHORITY_PROBES):
            timekeeping.now_ms()
    except Exception:
        return False
    return True


def _authority_disagrees() -> bool:
    """Does the time authority still disagree with this machine's wall clock?"""
    try:
        authority = timekeeping.now_ms()
    except Exception:
        return True
    tolerance = getattr(settings, "TIME_JUMP_TOLERANCE_MS", 1_000)
    return abs(authority - time.time() * 1000) > tolerance

"""Celery tasks: thin calls into the match service. Each is idempotent (keyed by the match and
its event number), so a redelivered or duplicated task does nothing twice."""

from __future__ import annotations

import logging
import time

from celery import shared_task
from django.conf import settings

from . import deadlines, services, timekeeping
from .models import Match, TimingFault

log = logging.getLogger(__name__)

PENDING_RETRY_S = 0.05  # a command stamped before the deadline is about to be applied
# Evidence that is conclusive by itself: an arrival the authority stamped too late to be fair.
CONCLUSIVE_FAULTS = (TimingFault.Kind.LATE_STAMP,)
AUTHORITY_PROBES = 3


@shared_task(ignore_result=True)
def expire_match(match_id: str, seq: int) -> str:
    """The task armed for one deadline (the sweeper catches the ones that get lost)."""
    outcome = services.match_expire(match_id=match_id, seq=seq, now_ms=timekeeping.now_ms())
    if outcome == "early":
        deadline_ms = (
            Match.objects.filter(pk=match_id).values_list("deadline_ms", flat=True).first()
        )
        deadlines.schedule(match_id, seq, deadline_ms)
    elif outcome == "command_pending":
        expire_match.apply_async((match_id, seq), countdown=PENDING_RETRY_S, expires=600)
    return outcome


@shared_task(ignore_result=True)
def sweep_deadlines() -> int:
    """Every second (beat): act on every deadline that has passed, whatever became of its task."""
    if deadlines.is_missing():
        deadlines.rebuild()
    now_ms = timekeeping.now_ms()
    acted = 0
    for match_id in deadlines.due(now_ms):
        outcome = services.match_expire(match_id=match_id, now_ms=now_ms)
        if outcome in ("nothing_due", "early"):
            # Redis was out of step with the database: the database wins.
            deadline_ms = (
                Match.objects.filter(pk=match_id).values_list("deadline_ms", flat=True).first()
            )
            deadlines.remember(match_id, deadline_ms)
        else:
            acted += 1
    return acted


@shared_task(ignore_result=True)
def recheck_fault(fault_id: int) -> str:
    """Decide a suspected fault on the evidence: confirm it (which voids a live match), dismiss
    it, or leave it to staff."""
    fault = TimingFault.objects.filter(pk=fault_id).first()
    if fault is None or fault.status != TimingFault.Status.SUSPECTED:
        return "decided"
    if fault.kind == TimingFault.Kind.UNREACHABLE:
        if _authority_answers() and _incident_ms(fault) < _tolerance_ms("STAMP_LATE_TOLERANCE_MS"):
            services.fault_dismiss(fault_id=fault_id, decided_by="auto")
            return "dismissed"
    elif fault.kind not in CONCLUSIVE_FAULTS and not _authority_disagrees():
        return "left_to_staff"
    fault = services.fault_confirm(
        fault_id=fault_id, decided_by="auto", now_ms=timekeeping.now_ms_or_wall()
    )
    return "confirmed" if fault.status == TimingFault.Status.CONFIRMED else "dismissed"


def _tolerance_ms(name: str) -> int:
    return timekeeping.setting_ms(name, 2_000)


def _incident_ms(fault: TimingFault) -> float:
    """How long the commands of one incident kept seeing the fault."""
    last = fault.last_seen_at or fault.detected_at
    return (last - fault.detected_at).total_seconds() * 1000


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

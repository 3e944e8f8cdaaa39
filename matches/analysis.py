"""The expert's analysis of finished matches: requested when a match ends (or when someone
first asks for it), computed once by a Celery task (``engine.analyse``: each decision judged
from that player's view at the time only) and stored in ``MatchAnalysis``."""

from __future__ import annotations

import logging

from celery import current_app
from django.conf import settings
from django.db import transaction
from django.utils import timezone

import engine

from .models import Match, MatchAnalysis
from .selectors import match_record

log = logging.getLogger(__name__)

ANALYSE_TASK = "matches.tasks.analyse_match"


def analysis_request(match: Match) -> MatchAnalysis | None:
    """The match's analysis, requested now if it was not yet; None while the match is live or
    if it was voided (a void has no result to learn from)."""
    if match.status != Match.Status.FINISHED:
        return None
    analysis, created = MatchAnalysis.objects.get_or_create(
        match=match, defaults={"budget_ms": settings.ANALYSIS_BUDGET_MS}
    )
    if created:
        transaction.on_commit(lambda: _queue(str(match.pk)), robust=True)
    return analysis


def _queue(match_id: str) -> None:
    current_app.send_task(ANALYSE_TASK, (match_id,))


def analysis_compute(*, match_id: str) -> str:
    """Compute a requested analysis (idempotent: a done one is kept as it is)."""
    analysis = MatchAnalysis.objects.select_related("match").filter(pk=match_id).first()
    if analysis is None:
        return "not_requested"
    if analysis.status == MatchAnalysis.Status.DONE:
        return "done"
    record = match_record(analysis.match)
    try:
        analysis.result = engine.analyse(record, budget_ms=analysis.budget_ms, seed=match_id)
        analysis.status = MatchAnalysis.Status.DONE
    except engine.ReplayError:
        log.exception("match %s: its record does not replay; no analysis", match_id)
        analysis.status = MatchAnalysis.Status.FAILED
    analysis.computed_at = timezone.now()
    analysis.save(update_fields=["result", "status", "computed_at"])
    return analysis.status

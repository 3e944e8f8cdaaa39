"""Celery tasks of the lobby: thin calls into lobby.services."""

from __future__ import annotations

from celery import shared_task

from lobby import services
from matches.timekeeping import now_ms


@shared_task(ignore_result=True)
def quick_pair() -> int:
    """Every second (beat): pair the players waiting for "Play now" as their windows widen."""
    return len(services.quick_pair(now_ms=now_ms()))

"""``manage.py keep_deadlines``: the deadline keeper (matches/scheduler.py ``keep_deadlines``)."""

from __future__ import annotations

import sys

import uvloop
from django.core.management.base import BaseCommand

from matches import scheduler
from realtime.collector import freeze_startup


class Command(BaseCommand):
    help = (
        "Fire the matches' deadlines the moment they fall due, from a process that does nothing "
        "else. Optional: without it the web processes fire them (a little later under load), "
        "and Celery beat's sweeper stands behind both."
    )

    def handle(self, *args, **options) -> None:
        # Its database threads make forfeits ahead while its loop fires those due: the loop
        # must not wait the default 5 ms for the GIL at every turn.
        sys.setswitchinterval(0.0005)
        # A full collection of what start-up made stopped it for 200 ms, every forfeit due
        # meanwhile as late (realtime/collector.py).
        freeze_startup()
        try:
            uvloop.run(scheduler.keep_deadlines())
        except KeyboardInterrupt:
            pass

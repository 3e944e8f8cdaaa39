"""The deadline keeper (``manage.py keep_deadlines``) fires the deadlines while it runs; killed,
it leaves them to the web processes, which fire them on their own again once its mark lapses.

A real Daphne, a real keeper, real Redis and database; no Celery beat, so its sweeper fires
nothing. The web process is told to leave each deadline to a live keeper for ten minutes:
whatever fires a deadline sooner while the keeper runs is the keeper."""

from __future__ import annotations

import os
import signal

import pytest
from django.contrib.auth import get_user_model

import engine
from matches import deadlines, services, timekeeping
from matches.models import Match, MatchEvent
from matches.selectors import match_state
from realtime.redis_clients import sync_redis
from scripts.proc import Supervisor, wait_until
from tests.faults.play import audited
from tests.matches.conftest import FAST
from tests.support.dealing import deal_by_service
from tests.support.servers import PYTHON, ROOT, server_environment, start_daphne

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SHORT = engine.ClockConfig(bank_ms=1_500, delay_ms=0)  # the first player's clock runs out


@pytest.fixture
def keeper_beside_a_web_process(django_db_blocker, tmp_path):
    with django_db_blocker.unblock():
        env = server_environment(dict(os.environ), **FAST)
    sync_redis().delete(deadlines.KEEPER_KEY)
    with Supervisor() as web, Supervisor() as keeper:
        start_daphne(web, {**env, "WEB_DEADLINE_GRACE_MS": "600000"}, tmp_path / "daphne.log")
        with open(tmp_path / "keeper.log", "ab") as log:
            process = keeper.start(
                "keeper", [PYTHON, "manage.py", "keep_deadlines"], env=env, cwd=ROOT, stdout=log
            )
        wait_until(
            lambda: process.poll() is not None or sync_redis().exists(deadlines.KEEPER_KEY),
            30,
            message="the keeper to mark itself alive",
        )
        assert process.poll() is None, "the keeper exited; see keeper.log"
        yield process


def clock_started(settings, name: str) -> tuple[Match, int]:
    """A match whose first player's clock, started now, runs out in 1.5 s; and its deadline."""
    settings.START_GRACE_MS = 60_000
    users = [get_user_model().objects.create_user(f"{name}{seat}") for seat in (0, 1)]
    now = timekeeping.now_ms()
    match = services.match_create(player0=users[0], player1=users[1], now_ms=now, clock=SHORT)
    assert deal_by_service(match, dict(enumerate(users)), now)
    starter = engine.first_to_act(match_state(match))
    user = match.player0 if starter == 0 else match.player1
    services.match_submit(
        match_id=match.pk, user=user, command={"type": "start"}, arrival_ms=timekeeping.now_ms()
    )
    match.refresh_from_db()
    assert match.deadline_kind == Match.DeadlineKind.DECISION
    return match, match.deadline_ms


def forfeited_and_concluded(match: Match) -> bool:
    match.refresh_from_db()
    return (
        match.status == Match.Status.FINISHED
        and not match.end_pending
        and not MatchEvent.objects.filter(match=match).exists()
    )


def test_the_keeper_fires_the_deadlines_and_once_killed_the_web_process_does(
    keeper_beside_a_web_process, settings
):
    match, deadline = clock_started(settings, "kept")
    wait_until(lambda: forfeited_and_concluded(match), 20, message="the keeper's forfeit")
    forfeit = audited(match)["rounds"][-1]["events"][-1]
    assert (forfeit["type"], forfeit["at_ms"]) == ("abandon", deadline)

    keeper_beside_a_web_process.send_signal(signal.SIGKILL)
    keeper_beside_a_web_process.wait(10)
    match, deadline = clock_started(settings, "unkept")
    wait_until(lambda: forfeited_and_concluded(match), 20, message="the web process's forfeit")
    forfeit = audited(match)["rounds"][-1]["events"][-1]
    assert (forfeit["type"], forfeit["at_ms"]) == ("abandon", deadline)

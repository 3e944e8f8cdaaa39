"""Our own parts failing during live matches, with real processes (Daphne, a Celery worker,
redis-server): a player loses only by the rules, never because a process of ours failed.

Each test runs on a Redis of its own (``broker_redis``), which the test process uses too, so the
web processes' beats and the deadline set are this test's alone.
"""

from __future__ import annotations

import asyncio
import signal

import pytest

import engine
from config.env import redis_channel_layers
from matches import tasks, timekeeping, webbeats
from matches.models import Match, TimingFault
from realtime.redis_clients import reset_clients
from scripts.proc import Supervisor, wait_until
from tests.faults.play import audited, new_match, seated, started
from tests.matches.conftest import FAST
from tests.support.servers import start_daphne

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

FREEZE_S = 5.0  # how long Redis stays frozen (SIGSTOP, then SIGCONT)


@pytest.fixture
def own_redis(broker_redis, settings, monkeypatch):
    """The test process on the test's Redis, the real key for the web beats."""
    settings.REDIS_URL = broker_redis.url
    settings.CHANNEL_LAYERS = redis_channel_layers(broker_redis.url)
    monkeypatch.setattr(webbeats, "BEATS_KEY", "sbo:web:beats")
    reset_clients()
    yield broker_redis
    reset_clients()


@pytest.fixture
def web_env(fault_env):
    return {**fault_env, **FAST}


def test_with_no_worker_a_clock_that_runs_out_is_forfeited_at_its_deadline(
    own_redis, web_env, tmp_path, settings
):
    match, cookies = new_match(settings, engine.ClockConfig(bank_ms=1_500, delay_ms=300))
    with Supervisor() as web:  # a web process, and no worker or beat at all
        server = start_daphne(web, web_env, tmp_path / "daphne.log")

        async def scenario():
            seats = await seated(server.url, match, cookies)
            await started(seats)
            for client in seats:  # nobody acts: the web process fires the forfeit
                await client.wait_for(lambda c: c.over, 10)
                await client.close()

        asyncio.run(scenario())
    record = audited(match)
    forfeit = record["rounds"][-1]["events"][-1]
    assert (forfeit["type"], match.reason) == ("timeout", "time")
    assert forfeit["at_ms"] == _deadline_of(record)
    assert not TimingFault.objects.exists()


def _deadline_of(record: dict) -> int:
    """The deadline of the decision the forfeit ended: its turn's start plus delay and bank."""
    events = [e for r in record["rounds"] for e in r["events"]]
    start = events[-2]
    clock = record["clock"]
    return start["at_ms"] + clock["delay_ms"] + clock["bank_ms"]


def test_a_clock_that_ran_while_no_web_process_was_up_voids_the_match(
    own_redis, web_env, tmp_path, settings
):
    match, cookies = new_match(settings, engine.ClockConfig(bank_ms=2_000, delay_ms=500))
    with Supervisor() as first:
        server = start_daphne(first, web_env, tmp_path / "daphne-1.log")

        async def start_then_lose_the_web_tier():
            seats = await seated(server.url, match, cookies)
            await started(seats)
            first.children["daphne"].send_signal(signal.SIGKILL)  # the only web process
            for client in seats:
                client._closing = True  # these clients do not come back
            return seats

        asyncio.run(start_then_lose_the_web_tier())
    match.refresh_from_db()
    deadline = match.deadline_ms
    outage_ms = webbeats.tolerance_s() * 1000 + 2_000
    wait_until(lambda: timekeeping.now_ms() > deadline + outage_ms, 15, message="an outage")
    # The backstop sweeper (a worker) finds the deadline passed, but nobody could have acted.
    tasks.sweep_deadlines()
    match.refresh_from_db()
    assert match.status == Match.Status.LIVE
    # The web tier comes back: its first poll judges the deadline, and the outage voids.
    with Supervisor() as second:
        start_daphne(second, web_env, tmp_path / "daphne-2.log")
        wait_until(
            lambda: Match.objects.get(pk=match.pk).is_over, 15, message="the match to be decided"
        )
    record = audited(match)
    assert (match.status, match.winner, match.reason) == ("void", None, "void")
    assert record["rounds"][-1]["events"][-1]["type"] == "void"
    fault = TimingFault.objects.get(match=match)
    assert (fault.kind, fault.status) == ("web_down", "confirmed")


def test_a_frozen_redis_closes_no_socket_answers_every_command_and_voids_the_running_clock(
    own_redis, web_env, tmp_path, settings, probe_app
):
    from tests.faults.conftest import start_worker

    match, cookies = new_match(settings, engine.ClockConfig(bank_ms=60_000, delay_ms=5_000))
    with Supervisor() as web, Supervisor() as worker:
        server = start_daphne(web, web_env, tmp_path / "daphne.log")
        start_worker(worker, web_env, tmp_path / "worker.log", probe_app)

        async def scenario():
            seats = await seated(server.url, match, cookies)
            starter = await started(seats)
            loop = asyncio.get_running_loop()
            frozen_at = loop.time()
            own_redis.process.send_signal(signal.SIGSTOP)
            try:  # a resign is any player's at any moment: it would end the match if taken
                during = await starter.command({"type": "resign"}, timeout=15)
                await asyncio.sleep(max(0.0, FREEZE_S - (loop.time() - frozen_at)))
            finally:
                own_redis.process.send_signal(signal.SIGCONT)
            pongs = []
            for client in seats:  # both sockets are still open and answer
                await client.send({"type": "ping", "t": 1})
                pongs.append(await client.wait_for(lambda c: c.messages[-1]["type"] == "pong", 15))
            for client in seats:
                await client.wait_for(lambda c: c.over, 20)
            closed = [client.closed for client in seats]
            for client in seats:
                await client.close()
            return during, pongs, closed

        during, pongs, closed = asyncio.run(scenario())
    assert during["type"] == "error" and during["code"] in ("time_unavailable", "unavailable")
    assert closed == [False, False] and all(pongs)
    record = audited(match)
    # The service could not stamp a command while a clock ran: a fault of the service (RULES §7).
    assert (match.status, match.reason) == ("void", "void")
    assert [e["type"] for r in record["rounds"] for e in r["events"]] == [
        "contribute", "contribute", "start", "void",
    ]  # fmt: skip
    fault = TimingFault.objects.get(match=match)
    assert (fault.kind, fault.status) == ("unreachable", "confirmed")

"""A web process dies mid-match: its players reconnect to another and finish.

Two Daphne processes on one channel layer and a Celery worker, real Redis and database. Both
players play through the first Daphne until it is killed with SIGKILL; their clients reconnect
to the second, catch up (hello with their last seq), resend what was unanswered, and play on.
No move is lost or applied twice, and the record replays through the rules.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal

import pytest

import engine
from clients.match_client import play_match
from matches.models import Match, TimingFault
from scripts.proc import Supervisor
from tests.faults.play import audited, new_match, seated
from tests.matches.conftest import FAST
from tests.support.servers import server_environment, start_celery_worker, start_daphne

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ROOMY = engine.ClockConfig(bank_ms=60_000, delay_ms=5_000)  # the outage costs nobody the match
PLAYER_EVENTS = {"contribute", "start", "play", "draw", "offer", "accept", "waive"}


@pytest.fixture
def two_web_processes(django_db_blocker, tmp_path):
    with django_db_blocker.unblock():
        env = server_environment(dict(os.environ), **FAST)
    with Supervisor() as first, Supervisor() as second, Supervisor() as worker:
        doomed = start_daphne(first, env, tmp_path / "daphne-1.log")
        survivor = start_daphne(second, env, tmp_path / "daphne-2.log")
        start_celery_worker(worker, env, tmp_path / "worker.log")
        yield doomed, survivor, first.children["daphne"]


def test_players_of_a_killed_web_process_reconnect_to_another_and_finish(
    two_web_processes, settings
):
    doomed, survivor, doomed_process = two_web_processes
    match, cookies = new_match(settings, ROOMY, dealt=False)  # the clients deal every round

    async def scenario():
        # Each client tries the first web process, then the next.
        seats = await seated([doomed.url, survivor.url], match, cookies)
        games = [
            asyncio.create_task(
                play_match(client, strategy="greedy", rng=random.Random(seat), timeout=60)
            )
            for seat, client in enumerate(seats)
        ]
        # Kill the first web process once the match is well under way.
        await seats[0].wait_for(lambda c: c.seq >= 12, 60)
        doomed_process.send_signal(signal.SIGKILL)
        await asyncio.gather(*games)
        for client in seats:
            await client.close()
        return seats

    seats = asyncio.run(scenario())
    record = audited(match)
    assert match.status == Match.Status.FINISHED and match.reason != "void"
    assert all(client.reconnects >= 1 for client in seats), "both went through the second"
    assert not TimingFault.objects.filter(match=match).exists()
    # Every decision a player made was applied once: as many acknowledged cseqs as the record
    # has events of that seat's own making. (A command applied by the killed process just
    # before it died lost its ack; resent, it is acknowledged as a duplicate, not applied again.)
    events = [e for r in record["rounds"] for e in r["events"]]
    for seat, client in enumerate(seats):
        acks = [m for m in client.messages if m["type"] == "ack"]
        applied = {m["cseq"] for m in acks if not m["late"]}
        made = [
            e
            for e in events
            if e["seat"] == seat
            and e["type"] in PLAYER_EVENTS
            and not e.get("auto")
            and e.get("from_player") is not False  # not the server's stand-in for a contribution
        ]
        assert len(applied) == len(made), f"seat {seat}: {len(applied)} acks, {len(made)} events"

"""The database goes away mid-match (PostgreSQL refusing every new connection, the open ones
terminated, as in a restart): a command gets a clear error, nothing is half-written, and play
resumes with the same command. PostgreSQL only (CI runs the suite on it)."""

from __future__ import annotations

import asyncio
import random

import pytest
from django.db import connection

import engine
from clients.match_client import choose
from matches.models import Match
from scripts.proc import Supervisor
from tests.faults.play import audited, new_match, seated, started
from tests.support.servers import start_daphne

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def postgresql():
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (DATABASE_URL=postgres://...)")


def set_connections(allowed: bool, keep_pid: int) -> None:
    """Let new connections to the test database in, or refuse them and end the open ones but
    the test's own (from the server's maintenance database: a database cannot lock itself out)."""
    import psycopg

    settings_dict = connection.settings_dict
    name = settings_dict["NAME"]
    with psycopg.connect(
        dbname="postgres",
        host=settings_dict["HOST"] or None,
        port=settings_dict["PORT"] or None,
        user=settings_dict["USER"] or None,
        password=settings_dict["PASSWORD"] or None,
        autocommit=True,
    ) as admin:
        admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS {str(allowed).lower()}')
        if not allowed:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid() AND pid <> %s",
                [name, keep_pid],
            )


def test_a_database_outage_mid_match_is_answered_and_play_resumes(
    postgresql, server_env, tmp_path, settings
):
    match, cookies = new_match(settings, engine.ClockConfig(bank_ms=60_000, delay_ms=5_000))

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (own_pid,) = cursor.fetchone()
    with Supervisor() as web:
        server = start_daphne(web, server_env, tmp_path / "daphne.log")

        async def scenario():
            seats = await seated(server.url, match, cookies)
            starter = await started(seats)
            await starter.wait_for(lambda c: c.view["to_act"] is not None, 10)
            mover = seats[starter.view["to_act"]]
            await mover.wait_for(lambda c: c.my_turn(), 10)
            decision = choose(mover.view, "greedy", random.Random(0))
            await asyncio.to_thread(set_connections, False, own_pid)
            try:
                during = await mover.command(decision, timeout=15)
            finally:
                await asyncio.to_thread(set_connections, True, own_pid)
            after = await mover.command(decision, cseq=mover.cseq, timeout=15)  # the same cseq
            resigned = await mover.command({"type": "resign"})
            assert resigned["type"] == "ack", resigned
            for client in seats:
                await client.wait_for(lambda c: c.over, 10)
                await client.close()
            return during, after, mover.seat

        during, after, mover_seat = asyncio.run(scenario())
    assert (during["type"], during["code"]) == ("error", "unavailable")
    assert (after["type"], after["duplicate"]) == ("ack", False)
    record = audited(match)
    made = [
        (e["type"], e["seat"]) for r in record["rounds"] for e in r["events"] if not e.get("auto")
    ]
    assert made[:2] == [("contribute", 0), ("contribute", 1)]  # the deal, in new_match
    assert len(made) == 5 and made[2][0] == "start" and made[4][0] == "resign"
    assert made[3][1] == mover_seat  # the decision, applied once
    assert match.status == Match.Status.FINISHED

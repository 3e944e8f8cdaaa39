"""Two web processes behind HAProxy, a player on each: a whole match is played across them.

The layout of `make run` on a machine with two cores (scripts/loadbalancer.py renders
deploy/haproxy.cfg.in): each player's socket reaches the one port of the load balancer, which
puts them on different Daphnes; every broadcast crosses between the processes through the
channel layer, and the record replays through the rules.
"""

from __future__ import annotations

import asyncio
import os
import random

import pytest

import engine
from clients.match_client import MatchClient, play_match
from matches.models import Match, TimingFault
from scripts.loadbalancer import Backend, haproxy_binary, start_haproxy
from scripts.proc import Supervisor, free_port
from tests.faults.play import audited, new_match
from tests.matches.conftest import FAST
from tests.support.servers import (
    http_get,
    server_environment,
    start_celery_worker,
    start_daphne,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        haproxy_binary() is None and os.environ.get("CI") != "true",
        reason="haproxy is not installed (.ci/run installs it)",
    ),
]

ROOMY = engine.ClockConfig(bank_ms=60_000, delay_ms=5_000)


@pytest.fixture
def balanced_site(django_db_blocker, tmp_path):
    """Two Daphnes behind HAProxy on one port, and a worker; yields the site's URL."""
    with django_db_blocker.unblock():
        env = server_environment(dict(os.environ), **FAST)
    port = free_port()
    with Supervisor() as web, Supervisor() as balancer, Supervisor() as worker:
        servers = [
            start_daphne(web, env, tmp_path / f"web-{n}.log", name=f"web-{n}", behind_proxy=True)
            for n in (1, 2)
        ]
        backends = [
            Backend(f"web-{n}", server.host, server.port)
            for n, server in zip((1, 2), servers, strict=True)
        ]
        start_haproxy(balancer, tmp_path, "127.0.0.1", port, backends)
        start_celery_worker(worker, env, tmp_path / "worker.log")
        yield f"http://127.0.0.1:{port}"


def served_by(client: MatchClient) -> str:
    return client.ws.response.headers["X-Served-By"]


def test_a_whole_match_is_played_with_each_player_on_another_web_process(balanced_site, settings):
    settings.DEAL_CONTRIBUTION_MS = 60_000  # the players contribute, however slow to connect
    match, cookies = new_match(settings, ROOMY, dealt=False)  # their clients contribute
    status, _ = http_get(f"{balanced_site}/healthz")
    assert status == 200

    async def scenario():
        seats = []
        for seat, cookie in enumerate(cookies):
            client = await MatchClient.connect(
                balanced_site, match.pk, sessionid=cookie, name=f"seat{seat}"
            )
            await client.wait_for(lambda c: c.state is not None)
            seats.append(client)
        servers = [served_by(client) for client in seats]
        # Greedy against random: a whole match, but a short one.
        games = [
            play_match(client, strategy=strategy, rng=random.Random(seat), timeout=120)
            for seat, (client, strategy) in enumerate(zip(seats, ("greedy", "random"), strict=True))
        ]
        await asyncio.gather(*games)
        for client in seats:
            await client.close()
        return seats, servers

    seats, servers = asyncio.run(scenario())
    assert sorted(servers) == ["web-1", "web-2"], f"both players on {servers}"
    record = audited(match)
    assert match.status == Match.Status.FINISHED and match.reason == "points"
    assert not TimingFault.objects.filter(match=match).exists()
    # Each player saw every event of the match, though half of them were made on the other
    # process: the channel layer carried them across.
    seqs = [event["seq"] for round_record in record["rounds"] for event in round_record["events"]]
    for client in seats:
        assert [event["seq"] for event in client.events] == seqs

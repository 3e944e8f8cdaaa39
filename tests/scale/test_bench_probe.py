"""bench-live's echo probe against a site that will not take it: an overloaded site's load
balancer answers the handshake 503, a stopped one refuses the connection. The probe counts each
attempt and keeps trying until its time is up, instead of ending the whole benchmark run. And
the bots' figures cover the measured window only."""

from __future__ import annotations

import asyncio
import threading
from collections import namedtuple

import pytest

from benchmarks.live_bench import (
    Stats,
    _ping,
    by_second,
    echo_probe,
    local_postgres,
    machine_shares,
    open_window,
)
from scripts.proc import free_port

PROBE_S = 1.0
PERIOD_S = 0.1


async def _answer_503(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.readuntil(b"\r\n\r\n")
    writer.write(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")
    await writer.drain()
    writer.close()


async def test_a_503_to_the_handshake_is_counted_as_refused_and_tried_again():
    server = await asyncio.start_server(_answer_503, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        figures = await echo_probe(f"ws://127.0.0.1:{port}/ws/echo/", PROBE_S, PERIOD_S)
    assert figures["samples"] == [] and figures["lost"] == 0
    assert figures["refused"] >= 2  # tried again after the first refusal


async def test_a_port_nobody_listens_on_is_counted_as_refused():
    figures = await echo_probe(f"ws://127.0.0.1:{free_port()}/ws/echo/", PROBE_S, PERIOD_S)
    assert figures["samples"] == [] and figures["refused"] >= 2


async def test_the_bots_count_only_what_happens_inside_the_measured_window():
    # The warm-up's burst (every match starting) and the closing one (every live match
    # resigning at the end) are no steady state: a sample outside the window is dropped.
    stats = Stats()
    now = asyncio.get_running_loop().time()
    stats.sample("ack", 1.0)  # no window yet: the bots are still connecting
    stats.resync()
    stats.measure_from, stats.measure_until = now - 1, now + 60
    stats.sample("ack", 2.0)
    stats.command("play", {"type": "error", "code": "busy"}, 3.0)
    stats.command("contribute", {"type": "ack", "seq": 9}, 6.0)
    stats.resync()
    stats.measure_from, stats.measure_until = now - 60, now - 1
    stats.sample("broadcast", 4.0)
    stats.forfeit(-5.0)
    stats.resync()
    counted = stats.as_dict()
    assert (counted["ack"], counted["broadcast"], counted["forfeit"]) == ([2.0, 6.0], [], [])
    assert (counted["n"], counted["errors"], counted["early"]) == (2, {"busy": 1}, 0)
    assert counted["ack_by_kind"] == {"contribute": [6.0]}
    assert counted["resyncs"] == 1


async def test_every_bot_process_opens_its_window_on_the_one_go_signal():
    # Each process timed its window from its own readiness: one ended seconds before another,
    # and the late one measured the early one's closing resignations as slow broadcasts.
    go, stats = threading.Event(), Stats()
    loop = asyncio.get_running_loop()
    timer = threading.Timer(0.3, go.set)
    waited_from = loop.time()
    timer.start()
    end = await open_window(stats, go, (2.0, 10.0))
    assert go.is_set() and loop.time() - waited_from >= 0.3
    assert (stats.measure_from - loop.time(), end) == (
        pytest.approx(2.0, abs=0.2),
        stats.measure_from + 10.0,
    )
    assert not stats.measuring()  # the warm-up is not measured


def test_each_second_of_the_run_gets_its_count_median_and_worst():
    start = 1_800_000_000.0
    timed = [(start + 0.1, 10.0), (start + 0.9, 30.0), (start + 0.5, 20.0), (start + 2.2, 400.0)]
    assert by_second(timed) == [
        {"s": 0, "p50": 20.0, "p99": 30.0, "n": 3, "max": 30.0},
        {"s": 2, "p50": 400.0, "p99": 400.0, "n": 1, "max": 400.0},
    ]
    assert by_second([]) == []


class _Recorder:
    def __init__(self, loop):
        self.loop, self.sent_at = loop, []

    async def send(self, message):
        assert message["type"] == "ping"
        self.sent_at.append(self.loop.time())


async def test_a_bot_pings_first_at_its_own_moment_then_every_ping_period():
    loop = asyncio.get_running_loop()
    client, started = _Recorder(loop), loop.time()
    pinger = asyncio.create_task(_ping(client, first_after_s=0.05, every_s=0.5))
    while len(client.sent_at) < 3:
        await asyncio.sleep(0.01)
    pinger.cancel()
    first, second, third = client.sent_at[:3]
    assert 0.05 <= first - started < 0.5  # not at once, and not a whole period late
    assert second - first >= 0.5 and third - second >= 0.5


def test_the_cpu_of_a_postgresql_on_this_machine_is_counted_and_not_one_elsewhere(monkeypatch):
    psutil = pytest.importorskip("psutil")
    monkeypatch.setenv("DATABASE_URL", "postgres://bench@db.example.com:5432/bench")
    assert local_postgres() is None
    monkeypatch.setenv("DATABASE_URL", "sqlite:////tmp/bench.sqlite3")
    assert local_postgres() is None
    monkeypatch.setenv("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test")
    found = local_postgres()
    running = any(p.info["name"] == "postgres" for p in psutil.process_iter(["name"]))
    if not running:  # nothing to count, and nothing is named in its place
        assert found is None
        return
    postmaster = psutil.Process(found)
    assert postmaster.name() == "postgres"
    assert postmaster.children(), "its backends and workers are its children"


def test_the_machine_share_counts_the_time_stolen_by_other_guests_apart():
    times = namedtuple("scputimes", "user system idle iowait steal")
    before, after = times(10, 5, 100, 1, 0), times(40, 15, 140, 1, 10)  # 90 ticks in all
    assert machine_shares(before, after) == {"busy": 44.4, "steal": 11.1}

"""How long a broadcast waits in a busy web process before its socket sends it, and what
delivering it costs: through Channels' queue and dispatch (every broadcast until 2026-12-07)
against taken in the turn of the event loop that reads it (realtime/forwarding.py).

In-process, on one event loop, against a real Redis and the pub/sub layer: ``SOCKETS`` sockets
of each way, each in a group of its own, as a match's seat is. Both ways' sockets are open
throughout and the two are alternated ``ROUNDS`` times, so the machine's noise falls on both.

- **Wait**: the loop is kept as busy as a loaded web process's (``BUSY_TASKS`` tasks, each
  running ``BUSY_US`` of Python every turn of the loop, so a turn takes a few milliseconds, as
  at a thousand matches). One broadcast every ``EVERY_S`` to a socket in turn; the time from
  its ``PUBLISH`` to its frame being handed to the ASGI send.
- **Cost**: the loop idle but for ``BURST`` broadcasts sent at once; the process's CPU time
  (``time.process_time``) from the first ``PUBLISH`` until every frame is handed on, per
  broadcast. The publishing is in it too, the same both ways.
"""

from __future__ import annotations

import asyncio
import itertools
import statistics
import time

from engine.tournament import percentile

SOCKETS = 200
ROUNDS = 5
BUSY_TASKS = 8
BUSY_US = 300
EVERY_S = 0.005
WAIT_SAMPLES = 300  # per round and way
BURST = 2_000  # per round and way
TIMEOUT_S = 30


def _listeners():
    """The two ways' consumers: the same socket, one taking its broadcasts as read."""
    from realtime.sockets import GuardedJsonConsumer

    class Queued(GuardedJsonConsumer):
        """A match seat's socket, as to its broadcasts: one group, each message sent on."""

        handed_on: list[float] | None = None  # each frame's wait, once handed to the ASGI send
        sent_at: dict[str, float] = {}  # by text, when it was published
        own_groups: list[str] = []  # the sockets' own, one each (``groups`` is Channels')

        async def opened(self):
            self.group = f"forwarding-bench.{self.channel_name.replace('!', '.')}"
            await self.channel_layer.group_add(self.group, self.channel_name)
            type(self).own_groups.append(self.group)

        def joined_groups(self) -> list[str]:
            return [self.group]

        async def bench_message(self, event):
            self.note(event["text"])
            await self.send(text_data=event["text"])

        @classmethod
        def note(cls, text: str) -> None:
            cls.handed_on.append(time.perf_counter() - cls.sent_at.pop(text))

    class Forwarded(Queued):
        handed_on: list[float] | None = None
        sent_at: dict[str, float] = {}
        own_groups: list[str] = []

        def forward(self, message: dict) -> bool:
            if message.get("type") != "bench.message":
                return False
            self.note(message["text"])
            self.send_now(message["text"])
            return True

    return {"queued": Queued, "forwarded": Forwarded}


async def _open(consumer, n: int):
    from channels.testing import WebsocketCommunicator
    from django.contrib.auth.models import AnonymousUser

    communicator = WebsocketCommunicator(consumer.as_asgi(), "/ws/forwarding-bench/")
    communicator.scope["user"] = AnonymousUser()
    communicator.scope["client"] = (f"10.9.{n // 200}.{n % 200}", 40_000 + n)  # under the caps
    connected, _ = await communicator.connect(timeout=TIMEOUT_S)
    assert connected
    return communicator


def _drain(communicators) -> None:
    """Take the frames the communicators were handed, so their queues do not grow."""
    for communicator in communicators:
        while not communicator.output_queue.empty():
            communicator.output_queue.get_nowait()


async def _until(condition) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("broadcasts were not all handed on")
        await asyncio.sleep(0.005)


def _spin(us: float) -> None:
    until = time.perf_counter() + us / 1e6
    while time.perf_counter() < until:
        pass


async def _busy(stop: asyncio.Event) -> None:
    while not stop.is_set():
        _spin(BUSY_US)
        await asyncio.sleep(0)


_numbers = itertools.count()  # every broadcast's text is its own


async def _publish(layer, consumer, groups, count: int, every_s: float) -> None:
    for group in itertools.islice(itertools.cycle(groups), count):
        text = f"{consumer.__name__}-{next(_numbers)}"
        consumer.sent_at[text] = time.perf_counter()
        await layer.group_send(group, {"type": "bench.message", "text": text})
        if every_s:
            await asyncio.sleep(every_s)


async def _wait_ms(layer, consumer, groups) -> list[float]:
    consumer.handed_on = []
    stop = asyncio.Event()
    busy = [asyncio.ensure_future(_busy(stop)) for _ in range(BUSY_TASKS)]
    try:
        await _publish(layer, consumer, groups, WAIT_SAMPLES, EVERY_S)
        await _until(lambda: len(consumer.handed_on) == WAIT_SAMPLES)
    finally:
        stop.set()
        await asyncio.gather(*busy)
    return [seconds * 1000 for seconds in consumer.handed_on]


async def _cost_us(layer, consumer, groups) -> float:
    consumer.handed_on = []
    started = time.process_time()
    await asyncio.gather(
        *(_publish(layer, consumer, groups[n::8], BURST // 8, 0) for n in range(8))
    )
    await _until(lambda: len(consumer.handed_on) == BURST)
    return (time.process_time() - started) / BURST * 1e6


async def _measure() -> dict:
    from channels.layers import get_channel_layer

    layer = get_channel_layer()
    ways = _listeners()
    sockets = {way: [await _open(c, n) for n in range(SOCKETS)] for way, c in ways.items()}
    groups = {way: consumer.own_groups for way, consumer in ways.items()}
    waits = {way: [] for way in ways}
    costs = {way: [] for way in ways}
    for _ in range(ROUNDS):
        for way, consumer in ways.items():
            waits[way] += await _wait_ms(layer, consumer, groups[way])
            _drain(sockets[way])
            costs[way].append(await _cost_us(layer, consumer, groups[way]))
            _drain(sockets[way])
    for communicators in sockets.values():
        for communicator in communicators:
            await communicator.disconnect()
    summary = {
        way: {
            "wait_ms": {
                "p50": round(percentile(waits[way], 0.5), 2),
                "p99": round(percentile(waits[way], 0.99), 2),
                "n": len(waits[way]),
            },
            "cpu_us_per_broadcast": round(statistics.median(costs[way]), 1),
            "cpu_samples_us": [round(value, 1) for value in costs[way]],
        }
        for way in ways
    }
    queued, forwarded = summary["queued"], summary["forwarded"]
    return {
        "sockets_each_way": SOCKETS,
        "rounds": ROUNDS,
        "busy_loop": {"tasks": BUSY_TASKS, "us_each_per_turn": BUSY_US},
        **summary,
        "ratio_wait_p50_forwarded_to_queued": round(
            forwarded["wait_ms"]["p50"] / queued["wait_ms"]["p50"], 3
        ),
        "ratio_wait_p99_forwarded_to_queued": round(
            forwarded["wait_ms"]["p99"] / queued["wait_ms"]["p99"], 3
        ),
        "ratio_cpu_forwarded_to_queued": round(
            forwarded["cpu_us_per_broadcast"] / queued["cpu_us_per_broadcast"], 3
        ),
    }


def run() -> dict:
    from benchmarks.harness import run_async

    return run_async("forwarding-", _measure)


if __name__ == "__main__":  # python -m benchmarks.forwarding_bench: one run, its JSON on stdout
    import json

    print(json.dumps(run()))

"""What answering a ping costs a web process, in CPU: a Redis round trip per ping (the
authority's ``TIME`` and the match's seq, as pings were answered until 2026-12-06) against the
answer from the process's last reading (matches/readings.py), whose refresh (twice a second,
one round trip for every match open in the process) is counted too, spread over the pings it
serves.

In-process, on one event loop, against a real Redis, at the load of one of two web processes
at a thousand matches: a socket of each of 1,000 matches open in the process, each client
pinging every 5 s (200 pings a second). The two ways are alternated ``ROUNDS`` times, so the
machine's noise falls on both; the figure is the median CPU time (``time.process_time``) per
ping each way, and their ratio.
"""

from __future__ import annotations

import statistics
import time

MATCHES = 1_000
PINGS_PER_S = MATCHES / 5  # one socket of each match here, a ping every 5 s
PINGS = 5_000  # per round and way
ROUNDS = 7


async def _cpu_us_per_call(calls: int, call) -> float:
    started = time.process_time()
    for n in range(calls):
        await call(n)
    return (time.process_time() - started) / calls * 1e6


async def _measure() -> dict:
    from matches import readings
    from realtime.redis_clients import async_redis

    match_ids = [f"ping-cost-{n}" for n in range(MATCHES)]
    await async_redis().mset({readings.SEQ_KEY.format(m): n for n, m in enumerate(match_ids)})
    memory = readings.Memory()
    for match_id in match_ids:
        memory.opened(match_id)

    async def asked(n: int) -> None:
        await readings.clock_and_seq(match_ids[n % MATCHES])

    async def remembered(n: int) -> None:
        server_ms, seq = await readings.pong(match_ids[n % MATCHES], memory)
        assert server_ms is not None and seq == n % MATCHES  # from memory, never asked

    samples: dict[str, list[float]] = {"asked": [], "remembered": [], "refresh": []}
    for _ in range(ROUNDS):
        samples["asked"].append(await _cpu_us_per_call(PINGS, asked))
        samples["refresh"].append(await _cpu_us_per_call(20, lambda _: readings.refresh(memory)))
        samples["remembered"].append(await _cpu_us_per_call(PINGS, remembered))
    median = {way: statistics.median(values) for way, values in samples.items()}
    refresh_share = median["refresh"] / readings.REFRESH_S / PINGS_PER_S
    remembered_in_all = median["remembered"] + refresh_share
    return {
        "matches_open": MATCHES,
        "pings_per_s": PINGS_PER_S,
        "rounds": ROUNDS,
        "asked_us_per_ping": round(median["asked"], 2),
        "remembered_us_per_ping": round(median["remembered"], 2),
        "refresh_us": round(median["refresh"], 1),
        "refresh_us_per_ping": round(refresh_share, 2),
        "remembered_with_refresh_us_per_ping": round(remembered_in_all, 2),
        "ratio_remembered_to_asked": round(remembered_in_all / median["asked"], 3),
        "samples_us": {way: [round(v, 2) for v in values] for way, values in samples.items()},
    }


def run() -> dict:
    from benchmarks.harness import run_async

    return run_async("ping-cost-", _measure)


if __name__ == "__main__":  # python -m benchmarks.ping_cost_bench: one run, its JSON on stdout
    import json

    print(json.dumps(run()))

"""What one move costs the match service, round by round, through a match of 54 rounds.

The whole write path of a move (``services.match_submit``: the row lock, the engine, the
events appended, the snapshot, the after-commit Redis writes and broadcasts) timed in-process
on a real database and a real Redis, for every command of one long match between the greedy
bots. The deals come from a fixed stream and the contributions are fixed, so every run plays
the same match (the one ``random.Random(2042)`` gives: 54 rounds, 1,452 commands). The figure
is the median cost of a move in rounds 30-44 against round 1's in the same run: a move must
not cost more as the match grows (issue: within 1.2x).
"""

from __future__ import annotations

import hashlib
import random
import statistics
import time
from collections import defaultdict
from unittest.mock import patch

DEAL_STREAM_SEED = 2042
STEP_MS = 1_500


def contribution(seat: int, round_no: int) -> dict:
    value = hashlib.sha256(f"bench contribution {seat} {round_no}".encode()).hexdigest()
    return {"type": "contribute", "value": value}


def _play(costs: dict[int, list[float]]) -> dict:
    from django.contrib.auth import get_user_model

    import engine
    from matches import services
    from matches.models import Match
    from matches.selectors import match_state

    users = get_user_model().objects
    stamp = time.time_ns()
    ala, olek = (users.create_user(f"{name}{stamp}") for name in ("ala", "olek"))
    now = 1_800_000_000_000
    match = services.match_create(player0=ala, player1=olek, now_ms=now)
    bot, rng = engine.GreedyBot(), random.Random(1)
    seats = {0: ala, 1: olek}
    while True:
        state = match_state(Match.objects.get(pk=match.pk))
        if state.result is not None:
            break
        now += STEP_MS
        if state.phase == engine.DEALING:
            seat = 0 if engine.may_contribute(state, 0) else 1
            command = contribution(seat, state.round_no)
        elif engine.starter(state) is not None:
            seat, command = engine.first_to_act(state), {"type": "start"}
        else:
            seat, command = state.decider, bot.choose(state, state.decider, rng)
        started = time.perf_counter()
        services.match_submit(match_id=match.pk, user=seats[seat], command=command, arrival_ms=now)
        costs[state.round_no].append((time.perf_counter() - started) * 1000)
    match.refresh_from_db()
    return {"rounds": match.round_count, "commands": match.seq, "reason": match.reason}


def run() -> dict:
    import engine
    from benchmarks.harness import django_for_run

    deals = random.Random(DEAL_STREAM_SEED)
    with django_for_run("move-cost-") as database:
        costs: dict[int, list[float]] = defaultdict(list)
        with patch.object(engine, "new_seed", lambda: f"{deals.getrandbits(256):064x}"):
            match = _play(costs)
    median = {number: statistics.median(samples) for number, samples in costs.items()}
    late = [cost for number in range(30, 45) for cost in costs[number]]
    round_one, rounds_30_44 = statistics.median(costs[1]), statistics.median(late)
    return {
        "database": database,
        "match": match,
        "move_ms_round_1": round(round_one, 3),
        "move_ms_rounds_30_44": round(rounds_30_44, 3),
        "ratio_30_44_to_1": round(rounds_30_44 / round_one, 3),
        "move_ms_by_round": {str(n): round(ms, 3) for n, ms in sorted(median.items())},
    }


if __name__ == "__main__":  # python -m benchmarks.move_cost_bench: one run, its JSON on stdout
    import json

    print(json.dumps(run()))

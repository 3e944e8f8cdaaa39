"""Duplicate tournaments between the bots: ``python -m engine tournament``.

Every pairing plays single rounds and whole matches, each deal twice with the seats (and so
the hands and the jockey) swapped, as duplicate bridge does, so that the luck of the deal
cancels out. ``rounds`` and ``matches`` count games played: half as many deals, each played
twice. Points and wins are from the first bot's side.

A single round starts either as a match's first round (rank opening) or, half of the time, as a
round after a domino (an auction, the jockey drawn at random), both players at 150. Time stands
still (every command arrives at 0 ms): no one loses on time. Each game's deals and random
generators derive from the seed, the pairing and the game's number only, so the points and wins
do not depend on the number of worker processes. Decision times are measured only for
decisions with more than one legal option, both on the wall clock (``decision_ms``) and as the
worker's CPU time (``decision_cpu_ms``, which a machine busy with other work does not inflate).
"""

from __future__ import annotations

import hashlib
import math
import random
import statistics
import time
from dataclasses import replace
from itertools import combinations
from multiprocessing import Pool

from .bots import BOTS
from .legal import legal_decisions
from .rules import apply, new_match, next_round
from .shuffle import Deal, deal_from_seed
from .state import FINISHED, READY, SETTLED

Z95 = 1.959964  # the two-sided 95% quantile of the normal distribution
START = {"type": "start"}


def _seed_hex(*parts) -> str:
    return hashlib.sha256(":".join(map(str, parts)).encode()).hexdigest()


def _deal(seed_hex: str, swapped: bool) -> Deal:
    deal = deal_from_seed(seed_hex)
    return replace(deal, hands=deal.hands[::-1]) if swapped else deal


def _make_bots(names, budget_ms: float) -> list:
    return [BOTS[name](budget_ms) if name == "expert" else BOTS[name]() for name in names]


def _play_round(state, bots, rng: random.Random, a_seat: int, times: list):
    """Play until the round is over; record the decision times (wall, CPU) of ``a_seat``."""
    while not state.round_over:
        if state.phase == READY:
            state, _ = apply(state, None, START, 0)
            continue
        seat = state.decider
        started, started_cpu = time.perf_counter(), time.process_time()
        command = bots[seat].choose(state, seat, rng)
        if seat == a_seat and len(legal_decisions(state, seat)) > 1:
            times.append(
                (
                    (time.perf_counter() - started) * 1000,
                    (time.process_time() - started_cpu) * 1000,
                )
            )
        state, _ = apply(state, seat, command, 0)
    return state


def play_round(names, seed, index: int, swapped: bool, budget_ms: float):
    """One single round of deal ``index``; returns the first bot's points and decision times."""
    a_seat = 1 if swapped else 0
    seats = names[::-1] if swapped else names
    context = random.Random(_seed_hex(seed, "round-context", index))
    deal = _deal(_seed_hex(seed, "round", index), swapped)
    state = new_match(deal)
    if context.random() < 0.5:
        jockey = context.randrange(2)
        # A round after a domino won by the jockey: both at 150, an auction for the opening.
        settled = replace(state, phase=SETTLED, next_jockey=jockey ^ swapped)
        state = next_round(settled, deal)
    rng = random.Random(_seed_hex(seed, "round-play", index, swapped))
    times: list[float] = []
    before = state.balances[a_seat]
    state = _play_round(state, _make_bots(seats, budget_ms), rng, a_seat, times)
    return state.balances[a_seat] - before, times


def play_match(names, seed, index: int, swapped: bool, budget_ms: float):
    """One whole match of deal sequence ``index``; returns 1 if the first bot won (else 0) and
    its decision times."""
    a_seat = 1 if swapped else 0
    seats = names[::-1] if swapped else names
    bots = _make_bots(seats, budget_ms)
    rng = random.Random(_seed_hex(seed, "match-play", index, swapped))
    times: list[float] = []
    state = new_match(_deal(_seed_hex(seed, "match", index, 1), swapped))
    while True:
        state = _play_round(state, bots, rng, a_seat, times)
        if state.phase == FINISHED:
            return int(state.result.winner == a_seat), times
        deal = _deal(_seed_hex(seed, "match", index, state.round_no + 1), swapped)
        state = next_round(state, deal)


def _duplicate(task):
    """A worker's task: one deal played twice; the two results and the decision times."""
    kind, names, seed, index, budget_ms = task
    game = play_round if kind == "round" else play_match
    first, first_times = game(names, seed, index, False, budget_ms)
    second, second_times = game(names, seed, index, True, budget_ms)
    return kind, names, (first, second), first_times + second_times


def mean_ci95(values) -> tuple[float, float, float]:
    """The mean and its normal 95% confidence interval."""
    mean = statistics.fmean(values)
    half = Z95 * statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0
    return mean, mean - half, mean + half


def wilson_ci95(wins: int, games: int) -> tuple[float, float]:
    """The Wilson score 95% interval of a proportion (sound near 0 and 1, unlike the normal)."""
    p = wins / games
    denominator = 1 + Z95**2 / games
    centre = (p + Z95**2 / (2 * games)) / denominator
    half = Z95 * math.sqrt(p * (1 - p) / games + Z95**2 / (4 * games**2)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def percentile(values, fraction: float) -> float:
    """The nearest-rank percentile (0.0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(fraction * len(ordered)) - 1)]


def tournament(
    names, *, rounds: int, matches: int, budget_ms: float, seed, workers: int = 1
) -> list[dict]:
    """Every pairing of ``names`` (in the given order) plays ``rounds`` single rounds and
    ``matches`` whole matches in duplicate (each rounded up to an even number); one summary per
    pairing, from the first bot's side."""
    pairings = list(combinations(names, 2))
    tasks = [
        (kind, pair, seed, index, budget_ms)
        for pair in pairings
        for kind, count in (("round", rounds), ("match", matches))
        for index in range((count + 1) // 2)
    ]
    if workers > 1:
        with Pool(workers) as pool:
            results = list(pool.imap_unordered(_duplicate, tasks, chunksize=4))
    else:
        results = [_duplicate(task) for task in tasks]
    return [_summary(pair, results) for pair in pairings]


def _summary(pair, results) -> dict:
    per_deal = [sum(r[2]) / 2 for r in results if r[1] == pair and r[0] == "round"]
    wins = [w for r in results if r[1] == pair and r[0] == "match" for w in r[2]]
    times = [t for r in results if r[1] == pair for t in r[3]]
    wall, cpu = [t[0] for t in times], [t[1] for t in times]
    mean, low, high = mean_ci95(per_deal) if per_deal else (0.0, 0.0, 0.0)
    win_low, win_high = wilson_ci95(sum(wins), len(wins)) if wins else (0.0, 0.0)
    return {
        "a": pair[0],
        "b": pair[1],
        "rounds": 2 * len(per_deal),
        "mean_points_per_round": round(mean, 3),
        "ci95": [round(low, 3), round(high, 3)],
        "matches": len(wins),
        "win_rate": round(sum(wins) / len(wins), 4) if wins else None,
        "win_ci95": [round(win_low, 4), round(win_high, 4)],
        "decision_ms": _percentiles(wall),
        "decision_cpu_ms": _percentiles(cpu),
    }


def _percentiles(times_ms) -> dict:
    return {"p50": round(percentile(times_ms, 0.5), 2), "p99": round(percentile(times_ms, 0.99), 2)}


def describe(summary: dict) -> str:
    """One line of text for a pairing's summary."""
    low, high = summary["ci95"]
    win_low, win_high = summary["win_ci95"]
    win_rate = summary["win_rate"]
    wins = (
        "no matches"
        if win_rate is None
        else (
            f"{summary['matches']} matches, win rate {win_rate:.1%} "
            f"(95% CI {win_low:.1%}..{win_high:.1%})"
        )
    )
    return (
        f"{summary['a']} vs {summary['b']}: {summary['rounds']} rounds, "
        f"{summary['mean_points_per_round']:+.2f} points/round (95% CI {low:+.2f}..{high:+.2f}); "
        f"{wins}; {summary['a']} decisions p50 {summary['decision_ms']['p50']:.1f} ms, "
        f"p99 {summary['decision_ms']['p99']:.1f} ms "
        f"(CPU {summary['decision_cpu_ms']['p50']:.1f}/{summary['decision_cpu_ms']['p99']:.1f} ms)"
    )

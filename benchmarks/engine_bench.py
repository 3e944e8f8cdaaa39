"""The rules engine's speed: complete random rounds per second on one core, time per ``apply``
and per legal-move query, beside the PyPI package ``dominoes`` (random games per second) run in
the same process as the peer. Two rates of ours: through ``apply`` (the frozen, validated
interface every match uses) and through the fast simulation the search uses
(``engine/fastsim.py``, proven equal to ``apply`` by tests/engine/test_fastsim.py), each round
dealt by the provably fair shuffle and opened by rank."""

from __future__ import annotations

import random
import time

from engine import RandomBot, apply, deal_from_seed, legal_decisions, new_match, next_round
from engine.fastsim import Sim
from engine.rules import rank_opening_tile
from engine.state import FINISHED, READY, SETTLED

START = {"type": "start"}


def _seeds(rng: random.Random):
    while True:
        yield f"{rng.getrandbits(256):064x}"


def play_rounds(count: int, rng: random.Random, on_step=None) -> int:
    """Play ``count`` complete rounds between random bots (matches continue across rounds and a
    finished match starts a new one). ``on_step(state, seat, command)`` sees each decision."""
    bot = RandomBot()
    seeds = _seeds(rng)
    done = 0
    state = new_match(deal_from_seed(next(seeds)))
    while done < count:
        if state.phase == SETTLED or state.phase == FINISHED:
            done += 1
            state = (
                next_round(state, deal_from_seed(next(seeds)))
                if state.phase == SETTLED
                else new_match(deal_from_seed(next(seeds)))
            )
            continue
        if state.phase == READY:
            seat, command = None, START
        else:
            seat = state.decider
            command = bot.choose(state, seat, rng)
        if on_step is not None:
            on_step(state, seat, command)
        # Time stands still, so no match is decided on time here.
        state, _ = apply(state, seat, command, 0)
    return done


def timed_rounds(seconds: float, rng: random.Random) -> tuple[int, float]:
    """Complete rounds played in about ``seconds``, and the exact time they took."""
    started = time.perf_counter()
    rounds = 0
    while time.perf_counter() - started < seconds:
        rounds += play_rounds(50, rng)
    return rounds, time.perf_counter() - started


def timed_fast_rounds(seconds: float, rng: random.Random) -> tuple[int, float]:
    """Complete random rounds of the fast simulation in about ``seconds``."""
    seeds = _seeds(rng)
    started = time.perf_counter()
    rounds = 0
    while time.perf_counter() - started < seconds:
        for _ in range(50):
            deal = deal_from_seed(next(seeds))
            opening = rank_opening_tile(deal.hands)
            first = 0 if opening in deal.hands[0] else 1
            sim = Sim(deal.hands, deal.boneyard, balances=(150, 150), turn=first, forced=opening)
            sim.play_out_random(rng)
        rounds += 50
    return rounds, time.perf_counter() - started


def per_call_us(rounds: int, rng: random.Random) -> dict:
    """Record real decisions, then time ``apply`` and ``legal_decisions`` on exactly those."""
    steps = []
    play_rounds(
        rounds, rng, on_step=lambda state, seat, command: steps.append((state, seat, command))
    )
    started = time.perf_counter()
    for state, seat, command in steps:
        apply(state, seat, command, 0)
    apply_s = time.perf_counter() - started
    deciding = [(state, seat) for state, seat, _ in steps if seat is not None]
    started = time.perf_counter()
    for state, seat in deciding:
        legal_decisions(state, seat)
    legal_s = time.perf_counter() - started
    return {
        "apply_us": round(apply_s / len(steps) * 1e6, 2),
        "legal_query_us": round(legal_s / len(deciding) * 1e6, 2),
        "applies_measured": len(steps),
        "applies_per_round": round(len(steps) / rounds, 1),
    }


def timed_peer_games(seconds: float) -> tuple[int, float] | None:
    """Random games of the ``dominoes`` package (its own random player) in about ``seconds``."""
    try:
        import dominoes
        from dominoes import players
    except ImportError:
        return None
    started = time.perf_counter()
    games = 0
    while time.perf_counter() - started < seconds:
        game = dominoes.Game.new()
        while game.result is None:
            players.random(game)
            game.make_move(*game.valid_moves[0])
        games += 1
    return games, time.perf_counter() - started


def interleaved(slices: int, slice_s: float, rng: random.Random):
    """Our two rates and the peer's, measured in alternating slices so that a machine whose
    speed drifts (a shared VM) affects all alike."""
    ours, fast, peer = [0, 0.0], [0, 0.0], [0, 0.0]
    for _ in range(slices):
        for total, sample in (
            (ours, timed_rounds(slice_s, rng)),
            (fast, timed_fast_rounds(slice_s, rng)),
            (peer, timed_peer_games(slice_s)),
        ):
            if sample is not None:
                total[0] += sample[0]
                total[1] += sample[1]
    return ours[0] / ours[1], fast[0] / fast[1], (peer[0] / peer[1] if peer[1] else None)


def _ratio(rate: float, peer: float | None) -> float | None:
    return None if peer is None else round(rate / peer, 2)


def run(seconds: float = 5.0) -> dict:
    rng = random.Random(2026)
    timed_rounds(0.5, rng)  # warm up
    ours, fast, peer = interleaved(slices=10, slice_s=seconds / 10, rng=rng)
    return {
        "benchmark": "engine",
        "random_rounds_per_second": round(ours),
        "fastsim_random_rounds_per_second": round(fast),
        "target_rounds_per_second": 2000,
        "target_ratio_to_peer": 1.1,
        "peer": "dominoes (PyPI): random games per second",
        "method": "one core; ours (apply, fastsim) and the peer in 10 alternating slices",
        "peer_games_per_second": None if peer is None else round(peer),
        "ratio_to_peer": _ratio(ours, peer),
        "fastsim_ratio_to_peer": _ratio(fast, peer),
        **per_call_us(2000, rng),
    }

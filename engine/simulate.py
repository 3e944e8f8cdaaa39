"""Complete computer-vs-computer matches, recorded as ARCHIVE.md records.

Everything is a deterministic function of the simulation seed: the deals (each round's server
seed is SHA-256 of ``"<seed>:<match>:<round>"``, mixed with the bots' contributions), the bots'
choices and their simulated thinking times. Each bot gets a temperament per match, so some
matches are lost on time; now and then a bot sends no contribution and the server stands in.
"""

from __future__ import annotations

import hashlib
import random

from .bots import BOTS, contribution
from .clock import ClockConfig
from .fairness import begin_dealing, may_contribute
from .record import add_events, add_round, iso_timestamp, new_record
from .rules import apply, new_match, next_round
from .shuffle import sealed_deal
from .state import DEALING, FINISHED, READY, SETTLED

EPOCH_MS = 1_764_496_800_000  # 2025-11-30T10:00:00Z: simulated matches start an hour apart
SLOW_THINK_CHANCES = (0.005, 0.02, 0.08)
SILENT_CHANCE = 0.05  # a bot sends no contribution this round: the server stands in


def round_seed(seed: int | str, match: int, round_no: int) -> str:
    return hashlib.sha256(f"{seed}:{match}:{round_no}".encode()).hexdigest()


class Thinker:
    """Simulated decision times in ms: usually inside the delay, sometimes a long think."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.slow_chance = rng.choice(SLOW_THINK_CHANCES)

    def decision_ms(self, command: dict) -> int:
        rng = self.rng
        if command["type"] == "draw":
            return rng.randint(300, 2_000)
        if rng.random() < self.slow_chance:
            return rng.randint(10_000, 45_000)
        return rng.randint(500, 9_000)


def contributing(state, rng: random.Random) -> tuple[int | None, dict]:
    """The next contribution to the round being dealt, or the server's stand-in for a silent
    bot."""
    if rng.random() < SILENT_CHANCE:
        return None, {"type": "contribute", "drawn": True}
    seat = 0 if may_contribute(state, 0) else 1
    return seat, contribution(rng)


def simulate_match(index: int, seed: int | str, bot_names=("random", "random"), clock=None) -> dict:
    rng = random.Random(f"{seed}:{index}:bots")
    bots = [BOTS[name]() for name in bot_names]
    thinkers = [Thinker(rng), Thinker(rng)]
    now = EPOCH_MS + index * 3_600_000
    state = begin_dealing(
        new_match(sealed_deal(round_seed(seed, index, 1)), clock=clock or ClockConfig())
    )
    record = new_record(
        state,
        match_id=f"sim-{seed}-{index}",
        mode="online",
        rated=False,
        created_at=iso_timestamp(now),
        players=[
            {"seat": seat, "username": f"{name}-bot-{seat}"} for seat, name in enumerate(bot_names)
        ],
    )
    while state.phase != FINISHED:
        if state.phase == SETTLED:
            next_seed = round_seed(seed, index, state.round_no + 1)
            state = begin_dealing(next_round(state, sealed_deal(next_seed)))
            add_round(record, state)
            continue
        if state.phase == DEALING:
            now += rng.randint(50, 500)
            seat, command = contributing(state, rng)
        elif state.phase == READY:
            now += rng.randint(1_000, 6_000)
            seat, command = None, {"type": "start"}
        else:
            seat = state.decider
            command = bots[seat].choose(state, seat, rng)
            now += thinkers[seat].decision_ms(command)
        # A command that came too late is Flagged: the timeout at the deadline.
        state, events = apply(state, seat, command, now)
        add_events(record, state, events)
    return record


def simulate(matches: int, seed: int | str, bot_names=("random", "random")):
    for index in range(matches):
        yield simulate_match(index, seed, bot_names)

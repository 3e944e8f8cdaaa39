"""Complete computer-vs-computer matches, recorded as ARCHIVE.md records.

Everything is a deterministic function of the simulation seed: the deals (each round's shuffle
seed is SHA-256 of ``"<seed>:<match>:<round>"``), the bots' choices and their simulated thinking
times. Each bot gets a temperament per match, so some matches are lost on time.
"""

from __future__ import annotations

import hashlib
import random

from .bots import BOTS
from .clock import ClockConfig
from .errors import IllegalCommand
from .record import add_events, add_round, iso_timestamp, new_record
from .rules import apply, new_match
from .shuffle import deal_from_seed
from .state import FINISHED, READY, SETTLED
from .view import next_round_keeping_final_table as next_round  # issue 13 shim

EPOCH_MS = 1_764_496_800_000  # 2025-11-30T10:00:00Z: simulated matches start an hour apart
SLOW_THINK_CHANCES = (0.005, 0.02, 0.08)


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


def simulate_match(index: int, seed: int | str, bot_names=("random", "random"), clock=None) -> dict:
    rng = random.Random(f"{seed}:{index}:bots")
    bots = [BOTS[name]() for name in bot_names]
    thinkers = [Thinker(rng), Thinker(rng)]
    now = EPOCH_MS + index * 3_600_000
    state = new_match(deal_from_seed(round_seed(seed, index, 1)), clock=clock or ClockConfig())
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
            state = next_round(state, deal_from_seed(round_seed(seed, index, state.round_no + 1)))
            add_round(record, state)
            continue
        if state.phase == READY:
            now += rng.randint(1_000, 6_000)
            seat, command = None, {"type": "start"}
        else:
            seat = state.decider
            command = bots[seat].choose(state, seat, rng)
            now += thinkers[seat].decision_ms(command)
        try:
            state, events = apply(state, seat, command, now)
        except IllegalCommand as exc:
            if exc.code != "time_over":
                raise
            # The command came too late; the server's timeout fires shortly after the deadline.
            now = state.deadline_ms + rng.randint(1, 40)
            state, events = apply(state, None, {"type": "timeout"}, now)
        add_events(record, state, events)
    return record


def simulate(matches: int, seed: int | str, bot_names=("random", "random")):
    for index in range(matches):
        yield simulate_match(index, seed, bot_names)

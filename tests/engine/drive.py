"""Whole matches played through ``apply`` and recorded as they go, for the property tests."""

from __future__ import annotations

import random
from dataclasses import dataclass

from engine import (
    BOTS,
    Flagged,
    add_events,
    add_round,
    apply,
    new_match,
    new_record,
    next_round,
)
from engine.fairness import begin_dealing
from engine.shuffle import deal_from_seed, sealed_deal
from engine.simulate import contributing, round_seed
from engine.state import DEALING, FINISHED, HANDOVER, READY, SETTLED, MatchState

from .builders import T0

MAX_STEPS = 20_000


@dataclass
class Played:
    state: MatchState
    record: dict


def dealt(seed: int, round_no: int):
    """Round ``round_no``'s deal in the match played from ``seed``."""
    return deal_from_seed(round_seed(seed, 0, round_no))


def think_ms(rng: random.Random, slow_chance: float) -> int:
    """Usually inside the delay, sometimes a long think that may run out the bank."""
    return rng.randint(10_000, 50_000) if rng.random() < slow_chance else rng.randint(0, 9_000)


def play_match(
    seed: int,
    *,
    bots=("random", "random"),
    hotseat=False,
    slow_chance=0.02,
    quit_chance=0.0,
    on_step=None,
    fair=False,
) -> Played:
    """Play a match to its end with the given bots; ``on_step(before, seat, command, after,
    events)`` sees every accepted command. Occasionally (``quit_chance``) a player resigns, the
    server voids the match, or a late player is abandoned rather than timed out. A ``fair``
    match deals every round from the server's seed and the bots' contributions; otherwise
    rounds are seed-only, as in records made before contributions."""
    rng = random.Random(seed)
    players = [BOTS[name]() for name in bots]

    def deal_of(round_no: int):
        return sealed_deal(round_seed(seed, 0, round_no)) if fair else dealt(seed, round_no)

    def opened(state: MatchState) -> MatchState:
        return begin_dealing(state) if fair else state

    state = opened(new_match(deal_of(1), hotseat=hotseat))
    record = new_record(
        state,
        match_id=f"prop-{seed}",
        mode="hotseat" if hotseat else "online",
        rated=False,
        created_at="2025-11-30T10:00:00Z",
        players=[{"seat": s, "username": f"{name}-{s}"} for s, name in enumerate(bots)],
    )
    now = T0
    for _ in range(MAX_STEPS):
        if state.phase == FINISHED:
            break
        if state.phase == SETTLED:
            state = opened(next_round(state, deal_of(state.round_no + 1)))
            add_round(record, state)
            continue
        roll = rng.random()
        if state.phase in (READY, HANDOVER):
            now += rng.randint(0, 60_000)
            seat, command = None, {"type": "start"}
        elif roll < quit_chance:
            seat, command = (
                (rng.choice((0, 1)), {"type": "resign"})
                if roll < quit_chance / 2
                else (None, {"type": "void", "why": "test fault"})
            )
        elif state.phase == DEALING:
            now += rng.randint(0, 1_000)
            seat, command = contributing(state, rng)
        else:
            seat = state.decider
            command = players[seat].choose(state, seat, rng)
            now += (
                rng.randint(300, 2_000) if command["type"] == "draw" else think_ms(rng, slow_chance)
            )
            if now >= state.deadline_ms:
                flagged = apply(state, seat, command, now)
                assert isinstance(flagged, Flagged), "a command at or after the deadline applied"
                assert flagged.events[-1]["at_ms"] == state.deadline_ms
                seat, command = None, {"type": "abandon" if roll < 0.5 else "timeout"}
        before = state
        state, events = apply(state, seat, command, now)
        add_events(record, state, events)
        if on_step is not None:
            on_step(before, seat, command, state, events)
    return Played(state, record)

"""Contributions and resignations may come from either player at any moment: one that reached
the server before the other's command but is applied after it is taken at that command's time,
never refused; a decision is still judged by its own arrival."""

from __future__ import annotations

import hashlib

import pytest

import engine
from engine import IllegalCommand

T0 = 1_000_000


def value(seat: int) -> str:
    return hashlib.sha256(f"seat {seat}".encode()).hexdigest()


def dealing() -> engine.MatchState:
    return engine.begin_dealing(engine.new_match(engine.sealed_deal(engine.new_seed())))


def test_a_contribution_applied_after_a_later_one_is_taken_at_its_time():
    state, first = engine.apply(dealing(), 1, {"type": "contribute", "value": value(1)}, T0 + 200)
    state, second = engine.apply(state, 0, {"type": "contribute", "value": value(0)}, T0 + 100)
    assert [e["at_ms"] for e in first + second] == [T0 + 200, T0 + 200]
    assert state.phase == "ready" and state.last_ms == T0 + 200


def test_a_resignation_applied_after_the_opponents_move_is_taken_at_its_time():
    state = dealing()
    for seat in (0, 1):
        state, _ = engine.apply(state, seat, {"type": "contribute", "value": value(seat)}, T0)
    state, _ = engine.apply(state, engine.first_to_act(state), {"type": "start"}, T0 + 1_000)
    resigner = 1 - state.decider
    state, events = engine.apply(state, resigner, {"type": "resign"}, T0 + 500)
    assert events[0]["at_ms"] == T0 + 1_000
    assert state.result.winner == 1 - resigner and state.result.reason == "resign"


def test_a_decision_is_still_judged_by_its_own_arrival():
    state = dealing()
    for seat in (0, 1):
        state, _ = engine.apply(state, seat, {"type": "contribute", "value": value(seat)}, T0)
    state, _ = engine.apply(state, engine.first_to_act(state), {"type": "start"}, T0 + 1_000)
    with pytest.raises(IllegalCommand) as refused:
        engine.apply(state, state.decider, {"type": "draw"}, T0 + 999)
    assert refused.value.code == "time_went_backwards"

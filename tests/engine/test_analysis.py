"""The analysis of a match record (engine/analysis.py)."""

import json
import random

import pytest

from engine import (
    GreedyBot,
    ReplayError,
    add_events,
    apply,
    deal_from_seed,
    legal_plays,
    new_match,
    new_record,
)
from engine.analysis import analyse, command_of
from engine.fastsim import Sim
from engine.legal import play_command
from engine.state import PLAY, READY

from .records import pool


def _first_rounds(record: dict, count: int) -> dict:
    """The record as it stood when its first ``count`` rounds were settled (a live match)."""
    record["rounds"] = record["rounds"][:count]
    last = record["rounds"][-1]["events"][-1]
    assert last["type"] == "settle"
    record.update(status="live", result=None, balances=last["balances"])
    return record


def _points(state, tile, place) -> int:
    sim = Sim.from_state(state)
    index = None
    if place is not None:
        index = next(i for i, p in enumerate(sim.places) if p[:2] == place)
    return sim.points_of(tile, index)


def _skipped_twenty(state, seat):
    """When the seat could take 20 or more and could also score nothing: the nothing play."""
    if state.phase != PLAY or seat != 0:
        return None
    scored = {option: _points(state, *option) for option in legal_plays(state, seat)}
    if scored and max(scored.values()) >= 20:
        return next((option for option, points in scored.items() if points == 0), None)
    return None


def record_with_a_planted_mistake() -> tuple[dict, int]:
    """A one-round record of two greedy players in which seat 0 once skips a play worth 20 or
    more; and the number of that event."""
    for attempt in range(200):
        state = new_match(deal_from_seed(f"{attempt:064x}"))
        record = new_record(
            state, match_id=f"planted-{attempt}", mode="online", rated=False,
            created_at="2026-11-30T10:00:00Z",
            players=[{"seat": 0, "username": "ala"}, {"seat": 1, "username": "olek"}],
        )  # fmt: skip
        planted = None
        rng = random.Random(attempt)
        while not state.round_over:
            if state.phase == READY:
                seat, command = None, {"type": "start"}
            else:
                seat = state.decider
                skip = None if planted else _skipped_twenty(state, seat)
                command = play_command(*skip) if skip else GreedyBot().choose(state, seat, rng)
            state, events = apply(state, seat, command, 0)
            add_events(record, state, events)
            if seat is not None and skip and not planted:
                planted = events[0]["seq"]
        if planted:
            return record, planted
    raise AssertionError("no deal offers a 20 to skip")  # pragma: no cover


def test_a_skipped_twenty_is_marked_as_a_mistake():
    record, planted = record_with_a_planted_mistake()
    analysis = analyse(record, budget_ms=30, seed=1)
    json.dumps(analysis)  # plain JSON
    (entry,) = [d for d in analysis["decisions"] if d["seq"] == planted]
    assert entry["seat"] == 0 and entry["options"] > 1
    assert entry["mistake"] and entry["loss"] >= 10
    assert entry["best_expected"] - entry["expected"] == pytest.approx(entry["loss"], abs=0.02)
    assert entry["best"] != entry["choice"]
    seat0 = analysis["summary"][0]
    assert seat0["seat"] == 0 and seat0["mistakes"] >= 1 and seat0["expected_loss"] >= 10
    assert seat0["decisions"] >= seat0["choices"] >= 1


def test_every_player_decision_is_listed_once_and_server_decisions_are_not():
    record = _first_rounds(pool()[0], 2)
    analysis = analyse(record, budget_ms=1)
    decisions = [
        (event["seq"], command_of(event))
        for round_record in record["rounds"]
        for event in round_record["events"]
        if event["type"] in ("play", "draw", "offer", "accept", "waive") and not event.get("auto")
    ]
    assert [(d["seq"], d["choice"]) for d in analysis["decisions"]] == decisions
    forced = [d for d in analysis["decisions"] if d["options"] == 1]
    assert forced and all(d["expected"] is None and d["loss"] == 0 for d in forced)
    assert analysis["match"] == record["id"] and analysis["mistake_points"] == 10


def test_an_analysis_is_deterministic_and_covers_the_auction():
    record = next(
        r for r in pool() if any(e["type"] == "offer" for rr in r["rounds"] for e in rr["events"])
    )
    auction_round = next(
        i
        for i, rr in enumerate(record["rounds"])
        if any(e["type"] == "offer" for e in rr["events"])
    )
    record = _first_rounds(record, auction_round + 1)
    first = analyse(record, budget_ms=1, seed=5)
    assert first == analyse(record, budget_ms=1, seed=5)
    kinds = {d["choice"]["type"] for d in first["decisions"] if d["options"] > 1}
    assert "offer" in kinds


def test_a_record_that_breaks_the_rules_cannot_be_analysed():
    record = pool()[0]
    first_play = next(e for e in record["rounds"][0]["events"] if e["type"] == "play")
    first_play["tile"] = [9, 9]
    with pytest.raises(ReplayError):
        analyse(record, budget_ms=1)


def test_command_of_each_decision():
    assert command_of({"type": "offer", "amount": 20}) == {"type": "offer", "amount": 20}
    assert command_of({"type": "waive"}) == {"type": "waive"}

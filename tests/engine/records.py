"""Simulated match records to check, and ways to find the events a corruption edits."""

from __future__ import annotations

import functools
import json

from engine.simulate import simulate


@functools.cache
def _pool() -> tuple[str, ...]:
    records = [*simulate(25, "engine-tests"), *simulate(10, "engine-tests", ("greedy", "greedy"))]
    return tuple(json.dumps(record) for record in records)


def pool() -> list[dict]:
    """Fresh copies of the simulated records: edit them freely."""
    return [json.loads(text) for text in _pool()]


def events_of(record: dict):
    """Every (round, index, event) of a record, in order."""
    for round_record in record["rounds"]:
        for index, event in enumerate(round_record["events"]):
            yield round_record, index, event


def hand_before(round_record: dict, index: int, seat: int) -> list[list[int]]:
    """The seat's hand just before event ``index`` of the round, from the record itself."""
    hand = [list(t) for t in round_record["hands"][seat]]
    for event in round_record["events"][:index]:
        if event["seat"] == seat and event["type"] == "draw":
            hand.append(event["tile"])
        elif event["seat"] == seat and event["type"] == "play":
            hand.remove(event["tile"])
    return hand

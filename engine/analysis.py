"""The analysis of a match record: for each decision a player made, the expert's estimate of the
expected points of that choice and of the best choice, from that player's view at the time only.

``analyse(record, budget_ms=…)`` replays the record (ARCHIVE.md) through the rules, shows each
seat's ``Knowledge`` the view it had at each of its decisions (exactly what the expert would
have seen in its place), and asks the expert's estimator (``engine.expert.estimate``) for the
value of every option. Its result is plain JSON::

    {
      "match": "8c1d…",                  # the record's id
      "budget_ms": 100,                  # the expert's budget per decision
      "mistake_points": 10,              # a loss of at least this many points is a mistake
      "decisions": [                     # every decision a player made, in order
        {
          "round": 1, "seq": 3, "seat": 1,
          "choice": {"type": "play", "tile": [3, 6], "place": {"tile": [6, 6], "side": "chain_a"}},
          "options": 4,                  # how many decisions were legal
          "expected": 12.5,              # the choice's expected points until the round ends
          "best": {"type": "play", …},   # the option the expert values most
          "best_expected": 14.0,
          "loss": 1.5,                   # best_expected - expected (never negative)
          "mistake": false
        }, …
      ],
      "summary": [                       # one per seat
        {"seat": 0, "decisions": 40, "choices": 25, "mistakes": 2, "expected_loss": 31.5}, …
      ]
    }

Expected points are the change of the player's balance from that decision until the round
ends (scores, the block settlement and, in the auction, the payment). A decision with a single
legal option (a draw, a forced opening, the only fitting place) is listed with ``options: 1``,
``expected`` and ``best_expected`` null and no loss: there was nothing to choose. Decisions the
server made (``auto``) are not the player's and are left out. Each decision's estimate uses its
own random generator, seeded by the seed, the round and the event number, so the analysis is
deterministic and one decision's estimate does not depend on the others'.
"""

from __future__ import annotations

import random

from .expert import Knowledge, estimate, options
from .replay import ReplayError, audit
from .view import view

DECISIONS = ("play", "draw", "offer", "accept", "waive")
MISTAKE_POINTS = 10


def command_of(event: dict) -> dict:
    """The command a decision event records."""
    kind = event["type"]
    if kind == "play":
        return {"type": "play", "tile": event["tile"], "place": event["place"]}
    if kind == "offer":
        return {"type": "offer", "amount": event["amount"]}
    return {"type": kind}


def decision_frames(record: dict) -> list:
    """Each decision a player made in the record (round, event, the state just before it)."""
    frames = []
    before = None

    def step(round_no, event, state):
        nonlocal before
        if event is not None and event["type"] in DECISIONS and not event.get("auto"):
            frames.append((round_no, event, before))
        before = state

    _, problems = audit(record, step)
    if problems:
        raise ReplayError(problems)
    return frames


def analyse(
    record: dict, *, budget_ms: float = 100, seed=0, mistake_points: float = MISTAKE_POINTS
) -> dict:
    """The analysis of ``record`` (see the module's docstring for its form); raises
    ``ReplayError`` if the record breaks the rules."""
    knowledge = {0: Knowledge(0), 1: Knowledge(1)}
    decisions = []
    for round_no, event, state in decision_frames(record):
        seat = event["seat"]
        seen = view(state, seat)
        knowledge[seat].observe(seen)
        decisions.append(
            _judge(seen, knowledge[seat], event, round_no, budget_ms, seed, mistake_points)
        )
    return {
        "match": record.get("id"),
        "budget_ms": budget_ms,
        "mistake_points": mistake_points,
        "decisions": decisions,
        "summary": [_summary(seat, decisions) for seat in (0, 1)],
    }


def _judge(seen, knowledge, event, round_no, budget_ms, seed, mistake_points) -> dict:
    choice = command_of(event)
    entry = {"round": round_no, "seq": event["seq"], "seat": event["seat"], "choice": choice}
    count = len(options(seen))
    if count == 1:
        return {
            **entry,
            "options": 1,
            "expected": None,
            "best": choice,
            "best_expected": None,
            "loss": 0.0,
            "mistake": False,
        }
    rng = random.Random(f"{seed}:{round_no}:{event['seq']}")
    values = estimate(seen, knowledge, rng, budget_ms)
    expected = next(value for command, value in values if command == choice)
    best, best_expected = max(values, key=lambda item: item[1])
    loss = best_expected - expected
    return {
        **entry,
        "options": count,
        "expected": round(expected, 2),
        "best": best,
        "best_expected": round(best_expected, 2),
        "loss": round(loss, 2),
        "mistake": loss >= mistake_points,
    }


def _summary(seat: int, decisions: list[dict]) -> dict:
    own = [entry for entry in decisions if entry["seat"] == seat]
    return {
        "seat": seat,
        "decisions": len(own),
        "choices": sum(1 for entry in own if entry["options"] > 1),
        "mistakes": sum(1 for entry in own if entry["mistake"]),
        "expected_loss": round(sum(entry["loss"] for entry in own), 2),
    }

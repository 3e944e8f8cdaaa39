"""The record of a match (ARCHIVE.md): replayed through the rules, a good record checks clean and
a corrupted one is caught, with the seat, the event and what was expected."""

import pytest

from engine import ReplayError, audit, replay
from engine.replay import REQUIRED_FIELDS, Problem
from engine.simulate import simulate

from .corruptions import (
    CORRUPTIONS,
    FAIRNESS_CORRUPTIONS,
    corrupted,
    deal_not_from_seed,
    wrong_points,
)
from .drive import play_match
from .records import events_of, pool


def test_every_simulated_record_checks_clean():
    for record in pool():
        state, problems = audit(record)
        assert problems == []
        assert state.phase == "finished"


@pytest.mark.parametrize(
    "corruption, message", CORRUPTIONS, ids=[c.__name__ for c, _ in CORRUPTIONS]
)
def test_a_corrupted_record_is_caught(corruption, message):
    record, problems = corrupted(corruption)
    assert any(message in str(problem) for problem in problems), problems
    with pytest.raises(ReplayError) as caught:
        replay(record)
    assert caught.value.problems == problems


def test_a_problem_names_the_round_the_event_the_seat_and_what_was_expected():
    _, problems = corrupted(wrong_points)
    problem = problems[0]
    assert problem.round is not None and problem.seq is not None and problem.seat in (0, 1)
    assert str(problem).startswith(
        f"round {problem.round}, event {problem.seq}, seat {problem.seat}: play: points"
    )


def test_a_problem_of_the_whole_match_says_so():
    assert (
        str(Problem(None, None, None, "status: expected 'finished'"))
        == "match: status: expected 'finished'"
    )


def first_round_cut_before_its_last_play(record):
    events = record["rounds"][0]["events"]
    last_play = max(i for i, e in enumerate(events) if e["type"] == "play")
    del events[last_play:]


STRUCTURE = [
    (lambda r: r["rounds"][0].update(hands=None), "the round's hands are withheld"),
    (
        lambda r: r["rounds"][0]["boneyard"].append(r["rounds"][0]["hands"][0].pop()),
        "each player is dealt exactly 7 tiles",
    ),
    (
        lambda r: (
            r["rounds"][0]["boneyard"].__setitem__(0, [6, 6])
            or r["rounds"][0]["hands"][0].__setitem__(0, [6, 6])
        ),
        "the hands and the boneyard are not the double-six set",
    ),
    (lambda r: r["rounds"][0].update(seed=None), "the round is over but its seed was not revealed"),
    (lambda r: r["rounds"][0]["events"].pop(), "missing settle event (expected {'seq'"),
    (first_round_cut_before_its_last_play, "a new round is dealt before the previous one ended"),
    (lambda r: r.pop("clock"), "malformed record: KeyError('clock')"),
    (lambda r: r["rounds"][0]["events"][1].update(at_ms="soon"), "(bad_time)"),
    (lambda r: r["rounds"][0].update(seed="xyz"), "malformed record: ValueError"),
    (lambda r: r["rounds"].clear(), "the record has no rounds"),
]


@pytest.mark.parametrize(
    "corruption, message", STRUCTURE, ids=[m.split(":")[0][:40] for _, m in STRUCTURE]
)
def test_a_record_that_cannot_be_followed_is_reported_not_crashed_on(corruption, message):
    record = next(r for r in pool() if len(r["rounds"]) > 1)
    corruption(record)
    _, problems = audit(record)
    assert any(message in str(problem) for problem in problems), problems


def test_a_non_object_where_an_automatic_event_is_due_is_a_problem():
    record = next(r for r in pool() if len(r["rounds"]) > 1)
    record["rounds"][0]["events"][-1] = "settle"
    _, problems = audit(record)
    assert [str(p) for p in problems] == ["round 1: an event is not an object: 'settle'"]


def test_the_match_record_must_be_an_object():
    _, problems = audit(["not", "a", "record"])
    assert [p.message.split(":")[0] for p in problems] == ["malformed record"]


def test_audit_shows_each_step_to_an_observer():
    record = next(simulate(1, "steps"))
    steps = []
    audit(record, on_step=lambda round_no, event, state: steps.append((round_no, event, state)))
    deals = [step for step in steps if step[1] is None]
    events = [event for r in record["rounds"] for event in r["events"]]
    assert len(deals) == len(record["rounds"])
    assert [step[1] for step in steps if step[1] is not None] == events
    assert steps[-1][2] == replay(record)


# --- the fairness proof, apart from the rules ---------------------------------------------------


@pytest.mark.parametrize(
    "corruption, message",
    FAIRNESS_CORRUPTIONS,
    ids=[c.__name__ for c, _ in FAIRNESS_CORRUPTIONS],
)
def test_a_deal_the_fairness_proof_does_not_bear_out_is_reported_as_such(corruption, message):
    _, problems = corrupted(corruption)
    found = [p for p in problems if message in str(p)]
    assert found and all(p.about == "fairness" for p in found), problems


def test_a_seed_only_round_still_verifies_the_old_way():
    record = play_match(4, bots=("greedy", "greedy")).record
    assert all("contributions" not in r for r in record["rounds"])
    assert audit(record)[1] == []
    deal_not_from_seed(record)
    assert ("fairness", "the deal does not follow from the seed") in [
        (p.about, p.message) for p in audit(record)[1]
    ]


def test_a_record_without_seeds_has_its_rules_checked_and_its_proof_reported_missing():
    record = pool()[0]
    for round_record in record["rounds"]:
        round_record["seed"] = None
    _, problems = audit(record)
    assert problems and {p.about for p in problems} == {"fairness"}
    assert all("its seed was not revealed" in p.message for p in problems)


def test_withheld_tiles_are_said_to_be_unchecked():
    record = next(r for r in pool() if len(r["rounds"]) > 1)
    record["rounds"][-1]["hands"] = None
    _, problems = audit(record)
    assert [p.about for p in problems] == ["unchecked"]


# --- what ARCHIVE.md requires, and nothing more ---------------------------------------------------

OPTIONAL = ("auto", "banks_ms", "winner", "source")


def strip_optional_fields(record):
    for _, _, event in events_of(record):
        for key in OPTIONAL:
            if key not in REQUIRED_FIELDS.get(event["type"], ()):
                event.pop(key, None)


def test_a_record_with_only_the_required_fields_checks_clean():
    for record in pool()[:12]:
        strip_optional_fields(record)
        assert audit(record)[1] == []


@pytest.mark.parametrize(
    "kind, key, wrong",
    [("settle", "winner", 1), ("timeout", "banks_ms", [1, 1]), ("offer", "banks_ms", [0, 0])],
)
def test_a_field_that_is_not_required_is_checked_when_present(kind, key, wrong):
    def corruption(record):
        _, _, event = next(e for e in events_of(record) if e[2]["type"] == kind and key in e[2])
        event[key] = wrong if event[key] != wrong else 0

    _, problems = corrupted(corruption)
    assert any(f"{kind}: {key} should be" in str(p) for p in problems), problems


def test_a_required_field_that_is_missing_is_a_problem():
    def corruption(record):
        _, _, event = next(e for e in events_of(record) if e[2]["type"] == "accept")
        del event["paid"]

    _, problems = corrupted(corruption)
    assert any("accept: paid should be" in str(p) and "(absent)" in str(p) for p in problems)

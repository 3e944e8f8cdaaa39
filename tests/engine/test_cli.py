"""``python -m engine simulate`` and ``python -m engine check`` (engine/__main__.py, check.py)."""

import json

import pytest

from engine.__main__ import main
from engine.check import load_records

from .corruptions import CORRUPTIONS, FAIRNESS_CORRUPTIONS, corrupted
from .records import pool


def write_lines(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return str(path)


def test_simulate_prints_one_json_record_per_line(capsys):
    assert main(["simulate", "--matches", "3", "--seed", "5"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3
    records = [json.loads(line) for line in lines]
    assert [r["id"] for r in records] == ["sim-5-0", "sim-5-1", "sim-5-2"]
    assert all(r["status"] == "finished" for r in records)


def test_simulate_is_deterministic_for_a_seed_and_takes_the_bots(capsys):
    main(["simulate", "--seed", "7", "--bots", "greedy"])
    first = capsys.readouterr().out
    main(["simulate", "--seed", "7", "--bots", "greedy"])
    assert capsys.readouterr().out == first
    assert json.loads(first)["players"][0]["username"] == "greedy-bot-0"


def test_check_passes_simulated_records_as_json_lines(tmp_path, capsys):
    main(["simulate", "--matches", "2", "--seed", "9"])
    path = tmp_path / "sims.jsonl"
    path.write_text(capsys.readouterr().out, encoding="utf-8")
    assert main(["check", str(path)]) == 0
    assert capsys.readouterr().out == (
        "2 record(s) checked, 0 breaking the rules, 0 failing the fairness proof\n"
    )


@pytest.mark.parametrize("shape", ["one record", "a list of records"])
def test_check_loads_a_single_json_file(tmp_path, capsys, shape):
    record = pool()[0]
    path = tmp_path / "match.json"
    path.write_text(
        json.dumps(record if shape == "one record" else [record, record], indent=2),
        encoding="utf-8",
    )
    assert load_records(str(path)) == ([record] if shape == "one record" else [record, record])
    assert main(["check", str(path)]) == 0


def test_check_reports_a_corrupted_record_with_seat_event_and_expectation(tmp_path, capsys):
    good, bad = pool()[:2]
    event = next(e for e in bad["rounds"][0]["events"] if e["type"] == "play" and e["seq"] > 2)
    expected = event["points"]
    event["points"] += 5
    path = write_lines(tmp_path / "two.jsonl", [good, bad])
    assert main(["check", path]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (
        f"{path}#2 (match {bad['id']}): rules: round 1, event {event['seq']}, "
        f"seat {event['seat']}: play: points should be {expected}, recorded {expected + 5}"
    )
    assert out[-1] == "2 record(s) checked, 1 breaking the rules, 0 failing the fairness proof"


def test_check_reads_several_files(tmp_path, capsys):
    good, bad = pool()[:2]
    bad["status"] = "live"
    paths = [write_lines(tmp_path / "a.jsonl", [good]), write_lines(tmp_path / "b.jsonl", [bad])]
    assert main(["check", *paths]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == (
        "2 record(s) checked, 1 breaking the rules, 0 failing the fairness proof"
    )


def test_check_reports_a_record_that_is_not_an_object(tmp_path, capsys):
    path = tmp_path / "odd.json"
    path.write_text("[42]", encoding="utf-8")
    assert main(["check", str(path)]) == 1
    assert capsys.readouterr().out.startswith(
        f"{path}#1 (match None): rules: match: malformed record"
    )


def test_a_command_is_required(capsys):
    with pytest.raises(SystemExit):
        main([])


# --- a record made by hand from ARCHIVE.md's example --------------------------------------------

T = 1764496800000
SEAT_0 = [[0, 1], [0, 5], [1, 4], [1, 5], [2, 4], [4, 4], [6, 6]]
SEAT_1 = [[0, 0], [3, 6], [2, 2], [2, 3], [3, 3], [4, 5], [5, 6]]


def archive_example() -> dict:
    """ARCHIVE.md's example written out in full: its first six events, then seat 1 resigns.
    Only the fields the contract requires; no seed (it is not the example's to give)."""
    used = SEAT_0 + SEAT_1 + [[1, 2], [0, 3]]
    rest = [[a, b] for a in range(7) for b in range(a, 7) if [a, b] not in used]
    return {
        "id": "8c1d",
        "mode": "online",
        "rated": True,
        "status": "finished",
        "created_at": "2026-11-30T10:00:00Z",
        "clock": {"bank_ms": 120000, "delay_ms": 10000},
        "players": [{"seat": 0, "username": "ala"}, {"seat": 1, "username": "olek"}],
        "result": {"winner": 0, "reason": "resign"},
        "balances": [135, 165],
        "rounds": [
            {
                "number": 1,
                "opening": "rank",
                "commitment": "9f2c",
                "seed": None,
                "jockey": None,
                "hands": [SEAT_0, SEAT_1],
                "boneyard": [[1, 2], [0, 3], *rest],
                "events": [
                    {"seq": 1, "type": "start", "seat": None, "at_ms": T},
                    {"seq": 2, "type": "play", "seat": 0, "tile": [6, 6], "place": None,
                     "points": 0, "ends": 12, "balances": [150, 150],
                     "banks_ms": [120000, 120000], "at_ms": T + 4000},
                    {"seq": 3, "type": "play", "seat": 1, "tile": [3, 6],
                     "place": {"tile": [6, 6], "side": "chain_a"}, "points": 15, "ends": 15,
                     "balances": [135, 165], "banks_ms": [120000, 117500], "at_ms": T + 16500},
                    {"seq": 4, "type": "draw", "seat": 0, "tile": [1, 2], "at_ms": T + 21000},
                    {"seq": 5, "type": "draw", "seat": 0, "tile": [0, 3], "at_ms": T + 25000},
                    {"seq": 6, "type": "play", "seat": 0, "tile": [0, 3],
                     "place": {"tile": [3, 6], "side": "low"}, "points": 0, "ends": 12,
                     "balances": [135, 165], "banks_ms": [116500, 117500], "at_ms": T + 30000},
                    {"seq": 7, "type": "resign", "seat": 1, "at_ms": T + 31000},
                ],
            }
        ],
    }  # fmt: skip


def test_check_accepts_archives_example_and_says_its_deal_cannot_be_proven(tmp_path, capsys):
    path = tmp_path / "example.json"
    path.write_text(json.dumps(archive_example()), encoding="utf-8")
    assert main(["check", "--rules-only", str(path)]) == 0
    assert capsys.readouterr().out == (
        "1 record(s) checked, 0 breaking the rules, fairness not checked\n"
    )
    assert main(["check", str(path)]) == 1
    assert capsys.readouterr().out.splitlines() == [
        f"{path}#1 (match 8c1d): fairness: round 1: "
        "the round is over but its seed was not revealed",
        "1 record(s) checked, 0 breaking the rules, 1 failing the fairness proof",
    ]


def test_check_rejects_archives_example_with_a_wrong_score(tmp_path, capsys):
    record = archive_example()
    record["rounds"][0]["events"][2]["points"] = 10
    path = write_lines(tmp_path / "bad.jsonl", [record])
    assert main(["check", "--rules-only", path]) == 1
    assert "rules: round 1, event 3, seat 1: play: points should be 15" in capsys.readouterr().out


def test_withheld_tiles_are_reported_without_failing_the_check(tmp_path, capsys):
    record = archive_example()
    record["rounds"][0]["hands"] = None
    record.update(status="live", result=None)
    path = write_lines(tmp_path / "live.jsonl", [record])
    assert main(["check", "--rules-only", path]) == 0
    assert "not checked: round 1: the round's hands are withheld" in capsys.readouterr().out


@pytest.mark.parametrize(
    "corruption", [c for c, _ in CORRUPTIONS], ids=[c.__name__ for c, _ in CORRUPTIONS]
)
def test_check_rejects_every_corruption_of_the_rules_even_with_rules_only(
    tmp_path, capsys, corruption
):
    record, _ = corrupted(corruption)
    path = write_lines(tmp_path / "bad.jsonl", [record])
    assert main(["check", "--rules-only", path]) == 1
    assert main(["check", path]) == 1
    assert "rules: " in capsys.readouterr().out


@pytest.mark.parametrize(
    "corruption",
    [c for c, _ in FAIRNESS_CORRUPTIONS],
    ids=[c.__name__ for c, _ in FAIRNESS_CORRUPTIONS],
)
def test_check_rejects_every_corruption_of_the_deal(tmp_path, capsys, corruption):
    record, _ = corrupted(corruption)
    path = write_lines(tmp_path / "bad.jsonl", [record])
    assert main(["check", path]) == 1
    assert "fairness: " in capsys.readouterr().out

"""``python -m engine simulate`` and ``python -m engine check`` (engine/__main__.py, check.py)."""

import json

import pytest

from engine.__main__ import main
from engine.check import load_records

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

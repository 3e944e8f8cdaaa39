"""Duplicate tournaments (engine/tournament.py) and ``python -m engine tournament``."""

import json

import pytest

from engine.__main__ import main
from engine.tournament import (
    describe,
    mean_ci95,
    percentile,
    play_match,
    play_round,
    tournament,
    wilson_ci95,
)

KEYS = {
    "a",
    "b",
    "rounds",
    "mean_points_per_round",
    "ci95",
    "matches",
    "win_rate",
    "win_ci95",
    "decision_ms",
    "decision_cpu_ms",
}


def test_the_json_output_has_one_object_per_pairing_from_the_first_bots_side(capsys):
    argv = ["tournament", "--bots", "expert,greedy,random", "--rounds", "4", "--matches", "2"]
    assert main([*argv, "--budget-ms", "1", "--seed", "s", "--json", "--workers", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    summaries = [json.loads(line) for line in lines]
    assert [(s["a"], s["b"]) for s in summaries] == [
        ("expert", "greedy"),
        ("expert", "random"),
        ("greedy", "random"),
    ]
    for summary in summaries:
        assert set(summary) == KEYS
        assert (summary["rounds"], summary["matches"]) == (4, 2)
        low, high = summary["ci95"]
        assert low <= summary["mean_points_per_round"] <= high
        win_low, win_high = summary["win_ci95"]
        assert 0 <= win_low <= summary["win_rate"] <= win_high <= 1
        assert set(summary["decision_ms"]) == set(summary["decision_cpu_ms"]) == {"p50", "p99"}


def test_the_results_do_not_depend_on_the_number_of_workers():
    def points(workers):
        summaries = tournament(
            ["greedy", "random"], rounds=6, matches=2, budget_ms=1, seed=3, workers=workers
        )
        return [(s["mean_points_per_round"], s["ci95"], s["win_rate"]) for s in summaries]

    assert points(1) == points(2)


@pytest.mark.parametrize("index", range(6))  # rank openings and auctions alike
def test_a_duplicate_round_gives_the_first_bot_the_same_hand_and_role_in_both_seats(index):
    first, _ = play_round(("greedy", "greedy"), "dup", index, False, 1)
    second, _ = play_round(("greedy", "greedy"), "dup", index, True, 1)
    # The same deterministic player in the same seat of the same deal: the same points.
    assert first == second


def test_a_match_is_played_to_its_end():
    won, times = play_match(("greedy", "random"), "m", 0, False, 1)
    assert won in (0, 1) and times


def test_the_text_output_describes_each_pairing(capsys):
    assert main(["tournament", "--bots", "greedy,random", "--rounds", "2", "--matches", "0"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("greedy vs random: 2 rounds") and "no matches" in out


def test_the_bots_must_be_two_or_more_known_ones(capsys):
    with pytest.raises(SystemExit):
        main(["tournament", "--bots", "greedy"])
    with pytest.raises(SystemExit):
        main(["tournament", "--bots", "greedy,perfect"])
    assert "two or more of random, greedy, expert" in capsys.readouterr().err


def test_the_statistics():
    assert mean_ci95([4.0]) == (4.0, 4.0, 4.0)
    mean, low, high = mean_ci95([0.0, 2.0, 4.0])
    assert mean == 2.0 and low == pytest.approx(2 - 1.959964 * 2 / 3**0.5)
    assert wilson_ci95(10, 10)[1] == pytest.approx(1.0) and 0.69 < wilson_ci95(10, 10)[0] < 0.73
    assert percentile([], 0.5) == 0.0
    assert percentile([3, 1, 2], 0.5) == 2 and percentile(list(range(1, 101)), 0.99) == 99


def test_describe_without_rounds():
    summaries = tournament(["greedy", "random"], rounds=0, matches=2, budget_ms=1, seed=1)
    assert summaries[0]["rounds"] == 0 and summaries[0]["ci95"] == [0.0, 0.0]
    assert "2 matches" in describe(summaries[0])

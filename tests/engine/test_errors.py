"""RULES §8: an illegal request changes nothing and gets a stable code. One row per code."""

import re
from pathlib import Path

import pytest

from engine import IllegalCommand, apply, next_round, rules

from .builders import assert_rejected, auction_table, deal, play_cmd, table

HAND0 = [(6, 6), (0, 1), (2, 3)]
HAND1 = [(0, 6), (1, 2), (4, 4)]


def ready():
    return table(HAND0, HAND1)


def opening():
    game = ready()
    game.start()
    return game


def opened():
    game = opening()
    game.play(0, (6, 6))
    return game


def drawn():
    game = table(HAND0, [(1, 2), (4, 4)], draw_first=[(3, 6)])
    game.start()
    game.play(0, (6, 6))
    game.draw(1)
    return game


def auction():
    game = auction_table(HAND0, HAND1, jockey=0)
    game.start()
    return game


def offered():
    game = auction()
    game.offer(1, 15)
    return game


def settled():
    game = table([(6, 6)], HAND1)
    game.start()
    game.play(0, (6, 6))
    return game


def finished():
    game = opening()
    game.send(1, {"type": "resign"})
    return game


def voided():
    game = opening()
    game.send(None, {"type": "void", "why": "clock fault"})
    return game


LATE = 10_000 + 120_000

REJECTIONS = [
    ("not_your_turn", opening, 1, play_cmd((0, 6)), 0),
    ("tile_not_in_hand", opened, 1, play_cmd((5, 6), (6, 6), "chain_a"), 0),
    ("place_not_open", opened, 1, play_cmd((0, 6), (0, 1), "high"), 0),
    ("place_not_open", opened, 1, play_cmd((0, 6), (6, 6), "arm_a"), 0),
    ("halves_do_not_match", opened, 1, play_cmd((1, 2), (6, 6), "chain_a"), 0),
    ("must_play_drawn", drawn, 1, {"type": "draw"}, 0),
    ("must_play_drawn", drawn, 1, play_cmd((1, 2), (6, 6), "chain_a"), 0),
    ("can_play", opened, 1, {"type": "draw"}, 0),
    ("offer_below_minimum", auction, 1, {"type": "offer", "amount": 10}, 0),
    ("offer_not_multiple_of_5", auction, 1, {"type": "offer", "amount": 16}, 0),
    ("offer_unaffordable", auction, 1, {"type": "offer", "amount": 155}, 0),
    ("nothing_to_accept", auction, 1, {"type": "accept"}, 0),
    ("cannot_waive", offered, 0, {"type": "waive"}, 0),
    ("clocks_standing", ready, 0, play_cmd((6, 6)), 0),
    ("round_over", settled, 1, play_cmd((0, 6), (6, 6), "chain_a"), 0),
    ("round_over", settled, None, {"type": "start"}, 0),
    ("time_went_backwards", opened, 1, play_cmd((0, 6), (6, 6), "chain_a"), -1),
    ("match_over", finished, 0, play_cmd((6, 6)), 0),
    ("match_over", finished, 0, {"type": "resign"}, 0),
    ("match_over", voided, None, {"type": "void", "why": "again"}, 0),
    ("server_only", opening, 0, {"type": "timeout"}, LATE),
    ("server_only", opening, 1, {"type": "void", "why": "x"}, 0),
    ("not_a_player", opening, None, play_cmd((6, 6)), 0),
    ("not_a_player", opening, 2, {"type": "resign"}, 0),
    ("bad_command", opening, 0, ["play"], 0),
    ("bad_command", opening, 0, {"tile": [6, 6]}, 0),
    ("bad_command", opening, 0, {"type": 3}, 0),
    ("bad_command", opening, 0, {"type": "play", "tile": [6, 7]}, 0),
    ("bad_command", opening, 0, {"type": "play", "tile": [6]}, 0),
    ("bad_command", opening, 0, {"type": "play", "tile": [True, 6]}, 0),
    ("bad_command", opening, 0, {"type": "play", "tile": "66"}, 0),
    (
        "bad_command",
        opened,
        1,
        {"type": "play", "tile": [0, 6], "place": {"tile": [6, 6], "side": "left"}},
        0,
    ),
    ("bad_command", opened, 1, {"type": "play", "tile": [0, 6], "place": [[6, 6], "chain_a"]}, 0),
    ("bad_command", opened, 1, {"type": "play", "tile": [0, 6], "place": {"side": "chain_a"}}, 0),
    ("bad_command", opening, None, {"type": "void"}, 0),
    ("bad_command", opening, None, {"type": "void", "why": ""}, 0),
    ("unknown_command", opening, 0, {"type": "pass"}, 0),
    ("wrong_opening_tile", opening, 0, play_cmd((0, 1)), 0),
    ("opening_has_no_place", opening, 0, play_cmd((6, 6), (6, 6), "chain_a"), 0),
    ("place_required", opened, 1, play_cmd((0, 6)), 0),
    ("already_started", opening, 0, {"type": "start"}, 0),
    ("auction_on", auction, 1, play_cmd((0, 6)), 0),
    ("no_auction", opening, 0, {"type": "waive"}, 0),
    ("clock_not_running", ready, None, {"type": "timeout"}, LATE),
    ("clock_not_running", settled, None, {"type": "abandon"}, LATE),
    ("not_expired", opening, None, {"type": "abandon"}, LATE - 1),
]


@pytest.mark.parametrize(
    "code, situation, seat, command, after_ms",
    REJECTIONS,
    ids=[f"{r[0]}-{r[1].__name__}" for r in REJECTIONS],
)
def test_an_illegal_command_is_refused_with_its_code_and_changes_nothing(
    code, situation, seat, command, after_ms
):
    situation().reject(seat, command, code, after_ms)


@pytest.mark.parametrize("now_ms", ["1764496800000", 1.5e12, True, None])
def test_the_arrival_time_must_be_whole_milliseconds(now_ms):
    game = opening()
    assert_rejected(game.state, 0, play_cmd((6, 6)), now_ms, "bad_time")


def test_every_code_the_rules_can_raise_has_a_row():
    engine_dir = Path(rules.__file__).parent
    # The dealing phase's codes have their own table (tests/engine/test_fairness.py).
    source = "".join(
        path.read_text(encoding="utf-8")
        for path in engine_dir.glob("*.py")
        if path.name != "fairness.py"
    )
    raised = set(re.findall(r'IllegalCommand\(\s*"(\w+)"', source))
    assert len(raised) > 25
    assert raised - {"wrong_phase"} == {row[0] for row in REJECTIONS} | {"bad_time"}


def test_a_new_round_is_dealt_only_after_a_settlement():
    with pytest.raises(IllegalCommand) as caught:
        next_round(opening().state, deal(HAND0, HAND1))
    assert caught.value.code == "wrong_phase"


def test_a_tile_may_be_named_high_half_first():
    game = opened()
    game.send(1, {"type": "play", "tile": [6, 0], "place": {"tile": [6, 6], "side": "chain_a"}})
    assert game.state.layout.placements[-1].tile == (0, 6)


def test_a_finished_match_is_never_voided():
    game = finished()
    result = game.state.result
    with pytest.raises(IllegalCommand) as refused:
        game.send(None, {"type": "void", "why": "the server clock jumped"})
    assert refused.value.code == "match_over"
    assert game.state.result == result


def test_resigning_loses_the_match_at_any_moment():
    for situation in (ready, opening, auction, settled):
        game = situation()
        (event,) = game.send(0, {"type": "resign"})
        assert (event["type"], event["seat"]) == ("resign", 0)
        assert (game.state.result.winner, game.state.result.reason) == (1, "resign")


def test_apply_returns_a_new_state_and_leaves_the_old_one_as_it_was():
    game = opening()
    before = game.state
    after, _ = apply(before, 0, play_cmd((6, 6)), game.now)
    assert before.layout.is_empty and not after.layout.is_empty
    assert (before.seq, after.seq) == (1, 2)

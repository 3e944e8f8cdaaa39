"""RULES §2, §4 and §5: the deal, the rank opening, a turn (play, draw, pass) and round ends."""

import pytest

from engine import legal_commands, next_round
from engine.tiles import opening_rank

from .builders import deal, play_cmd, table


@pytest.mark.parametrize(
    "hand0, hand1, opener, tile",
    [
        ([(6, 6), (0, 1)], [(5, 5), (5, 6)], 0, (6, 6)),
        ([(0, 1), (5, 6)], [(0, 0), (2, 3)], 1, (0, 0)),
        ([(1, 6), (0, 1)], [(2, 5), (3, 3)], 1, (3, 3)),
        ([(2, 5), (0, 1)], [(1, 6), (0, 2)], 1, (1, 6)),
        ([(1, 6), (0, 1)], [(2, 5), (0, 2)], 0, (1, 6)),
        ([(4, 6), (0, 1)], [(5, 6), (0, 2)], 1, (5, 6)),
    ],
    ids=[
        "highest double",
        "any double beats any other tile",
        "a double beats a heavier tile",
        "[1|6] beats [2|5] (seat 1)",
        "[1|6] beats [2|5] (seat 0)",
        "highest pip sum",
    ],
)
def test_the_rank_opening_is_forced_on_its_holder(hand0, hand1, opener, tile):
    game = table(hand0, hand1)
    game.start()
    assert (game.state.decider, game.state.forced_tile) == (opener, tile)
    plays = [c for c in legal_commands(game.state, opener) if c["type"] == "play"]
    assert plays == [play_cmd(tile)]
    assert legal_commands(game.state, 1 - opener) == [{"type": "resign"}]


def test_opening_rank_orders_doubles_then_pip_sum_then_the_larger_half():
    assert opening_rank((0, 0)) > opening_rank((5, 6)) > opening_rank((1, 6)) > opening_rank((2, 5))


def test_the_opening_tile_scores_like_any_play():
    game = table([(5, 5), (0, 1)], [(2, 3), (0, 2)])
    game.start()
    (event, *_) = game.play(0, (5, 5))
    assert (event["place"], event["ends"], event["points"], event["balances"]) == (
        None,
        10,
        10,
        [160, 140],
    )


def test_the_turn_passes_to_the_opponent_after_a_double_and_after_a_score():
    game = table([(5, 5), (0, 1)], [(0, 5), (0, 2)])
    game.start()
    game.play(0, (5, 5))
    assert game.state.decider == 1
    game.play(1, (0, 5), (5, 5), "chain_a")
    assert game.state.decider == 0


def test_a_player_who_cannot_play_draws_one_tile_at_a_time_until_one_fits():
    game = table([(6, 6), (0, 1)], [(0, 2), (1, 1)], draw_first=[(0, 3), (2, 6), (1, 2)])
    game.start()
    game.play(0, (6, 6))
    assert legal_commands(game.state, 1) == [{"type": "draw"}, {"type": "resign"}]
    (event,) = game.draw(1)
    assert (event["type"], event["tile"]) == ("draw", [0, 3])
    assert game.state.drawn is None
    game.draw(1)
    assert game.state.drawn == (2, 6)
    assert game.state.hands[1] == ((0, 2), (0, 3), (1, 1), (2, 6))


def test_a_drawn_tile_that_fits_must_be_played_at_once_and_nothing_else():
    game = table([(6, 6), (0, 1)], [(0, 2), (1, 1)], draw_first=[(2, 6), (1, 2)])
    game.start()
    game.play(0, (6, 6))
    game.draw(1)
    assert game.state.drawn == (2, 6)
    assert [c for c in legal_commands(game.state, 1) if c["type"] != "resign"] == [
        play_cmd((2, 6), (6, 6), "chain_a"),
        play_cmd((2, 6), (6, 6), "chain_b"),
    ]
    game.reject(1, {"type": "draw"}, "must_play_drawn")
    game.reject(1, play_cmd((0, 2)), "must_play_drawn")
    game.play(1, (2, 6), (6, 6), "chain_b")
    assert game.state.drawn is None and game.state.decider == 0


def test_a_player_who_can_play_may_not_draw():
    game = table([(6, 6), (0, 1)], [(0, 6), (1, 1)])
    game.start()
    game.play(0, (6, 6))
    game.reject(1, {"type": "draw"}, "can_play")


def test_a_pass_is_made_by_the_server_when_nothing_fits_and_the_boneyard_is_empty():
    game = table([(6, 6), (5, 6), (0, 1)], [(1, 1), (1, 5)], boneyard=())
    events = game.start()
    assert [e["type"] for e in events] == ["start"]
    events = game.play(0, (6, 6))
    assert [(e["type"], e["seat"], e.get("auto")) for e in events] == [
        ("play", 0, None),
        ("pass", 1, True),
    ]
    assert game.state.decider == 0 and game.state.passes == 1
    game.play(0, (5, 6), (6, 6), "chain_a")
    assert game.state.passes == 0


def test_drawing_the_last_tile_that_does_not_fit_ends_in_a_mandatory_pass():
    game = table([(6, 6), (5, 6), (0, 1)], [(1, 1), (2, 2)], boneyard=[(0, 3)])
    game.start()
    game.play(0, (6, 6))
    events = game.draw(1)
    assert [(e["type"], e["seat"]) for e in events] == [("draw", 1), ("pass", 1)]
    assert game.state.hands[1] == ((0, 3), (1, 1), (2, 2))
    assert game.state.decider == 0


# (rest of seat 0's hand, seat 1's hand, settle winner, points, balances) — §5's examples.
BLOCKS = [
    ([(0, 1), (0, 3)], [(4, 4), (2, 4), (1, 3)], 0, 20, [170, 130]),
    ([(0, 1), (0, 3)], [(4, 4), (2, 4), (1, 2)], 0, 15, [165, 135]),
    ([(0, 1), (0, 3), (0, 2)], [(2, 4)], None, 0, [150, 150]),
    ([(4, 4), (2, 4), (1, 3)], [(0, 1), (0, 3)], 1, 20, [130, 170]),
]


@pytest.mark.parametrize(
    "rest0, hand1, winner, points, balances",
    BLOCKS,
    ids=["4 vs 18", "4 vs 17", "6 vs 6", "18 vs 4"],
)
def test_a_block_pays_the_lighter_hand_the_heavier_sum_rounded_to_5(
    rest0, hand1, winner, points, balances
):
    game = table([(6, 6), (5, 6), *rest0], hand1, boneyard=())
    game.start()
    game.play(0, (6, 6))
    events = game.play(0, (5, 6), (6, 6), "chain_a")
    assert [e["type"] for e in events] == ["play", "pass", "pass", "settle"]
    settle = events[-1]
    assert (settle["end"], settle["winner"], settle["points"], settle["balances"]) == (
        "block",
        winner,
        points,
        balances,
    )
    settlement = game.state.settlement
    assert game.state.phase == "settled" and {**settlement, **settle} == settlement
    # The settlement panel's story: both final hands, the final layout, the rounding, the cap.
    assert settlement["hands"] == [[list(t) for t in hand] for hand in game.state.hands]
    assert settlement["layout"] == game.state.layout.to_view()
    heavier = max(settle["pips"])
    expected_rounded = None if winner is None else (heavier + 2) // 5 * 5
    assert (settlement["rounded"], settlement["owed"]) == (expected_rounded, expected_rounded or 0)
    after = next_round(game.state, deal([(1, 1)], [(2, 2)]))
    assert (after.opening, after.jockey, after.round_no) == ("rank", None, 2)


def test_a_block_that_empties_the_heavier_balance_ends_the_match():
    game = table(
        [(6, 6), (5, 6), (0, 1), (0, 3)], [(4, 4), (2, 4), (1, 3)], boneyard=(), balances=(285, 15)
    )
    game.start()
    game.play(0, (6, 6))
    events = game.play(0, (5, 6), (6, 6), "chain_a")
    assert events[-1]["points"] == 15 and events[-1]["balances"] == [300, 0]
    assert game.state.phase == "finished"
    assert (game.state.result.winner, game.state.result.reason) == (0, "points")


def test_a_domino_makes_the_jockey_and_earns_no_bonus():
    game = table([(6, 6)], [(4, 5), (5, 6), (3, 4)])
    game.start()
    events = game.play(0, (6, 6))
    settle = events[-1]
    assert (
        settle["end"],
        settle["winner"],
        settle["pips"],
        settle["points"],
        settle["balances"],
    ) == ("domino", 0, [0, 27], 0, [150, 150])
    after = next_round(game.state, deal([(1, 1)], [(2, 2)]))
    assert (after.opening, after.jockey, after.phase) == ("auction", 0, "ready")


def test_the_last_tile_scores_as_usual_before_the_round_ends():
    game = table([(5, 5)], [(4, 5), (1, 2)])
    game.start()
    play, settle = game.play(0, (5, 5))
    assert (play["points"], settle["type"], settle["points"], settle["balances"]) == (
        10,
        "settle",
        0,
        [160, 140],
    )

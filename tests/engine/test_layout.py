"""RULES §3: places, the spinner and the counted ends, on the seed's own worked examples."""

import pytest

from engine.layout import Counted, Layout
from engine.scoring import round_to_5

from .builders import auction_table

# The seed's sequence: (tile, place it goes on or None, end total, counted contributions as the
# Polish text lists them, open places as the Polish text lists them).
SEQUENCE = [
    (
        (1, 4),
        None,
        5,
        {((1, 4), "high"): 4, ((1, 4), "low"): 1},
        {((1, 4), "high", 4), ((1, 4), "low", 1)},
    ),
    (
        (1, 1),
        ((1, 4), "low"),
        6,
        {((1, 1), None): 2, ((1, 4), "high"): 4},
        {((1, 1), "chain_b", 1), ((1, 4), "high", 4)},
    ),
    (
        (4, 4),
        ((1, 4), "high"),
        10,
        {((1, 1), None): 2, ((4, 4), "chain_b"): 8},
        {((1, 1), "chain_b", 1), ((4, 4), "chain_b", 4)},
    ),
    (
        (3, 4),
        ((4, 4), "chain_b"),
        5,
        {((1, 1), None): 2, ((3, 4), "low"): 3},
        {((1, 1), "chain_b", 1), ((3, 4), "low", 3)},
    ),
    (
        (1, 2),
        ((1, 1), "chain_b"),
        5,
        {((1, 2), "high"): 2, ((3, 4), "low"): 3},
        {((1, 1), "arm_a", 1), ((1, 1), "arm_b", 1), ((1, 2), "high", 2), ((3, 4), "low", 3)},
    ),
    (
        (1, 5),
        ((1, 1), "arm_a"),
        10,
        {((1, 2), "high"): 2, ((1, 5), "high"): 5, ((3, 4), "low"): 3},
        {((1, 1), "arm_b", 1), ((1, 2), "high", 2), ((1, 5), "high", 5), ((3, 4), "low", 3)},
    ),
    (
        (5, 5),
        ((1, 5), "high"),
        15,
        {((1, 2), "high"): 2, ((5, 5), "chain_b"): 10, ((3, 4), "low"): 3},
        {((1, 1), "arm_b", 1), ((1, 2), "high", 2), ((5, 5), "chain_b", 5), ((3, 4), "low", 3)},
    ),
    (
        (0, 5),
        ((5, 5), "chain_b"),
        5,
        {((0, 5), "low"): 0, ((1, 2), "high"): 2, ((3, 4), "low"): 3},
        {((0, 5), "low", 0), ((1, 1), "arm_b", 1), ((1, 2), "high", 2), ((3, 4), "low", 3)},
    ),
    (
        (1, 3),
        ((1, 1), "arm_b"),
        8,
        {((0, 5), "low"): 0, ((1, 2), "high"): 2, ((1, 3), "high"): 3, ((3, 4), "low"): 3},
        {((0, 5), "low", 0), ((1, 2), "high", 2), ((1, 3), "high", 3), ((3, 4), "low", 3)},
    ),
]


def layouts_of(sequence):
    layout = Layout()
    for tile, on, *_ in sequence:
        layout = (
            layout.open_with(tile) if on is None else layout.play(tile, on, layout.open_value(on))
        )
        yield layout


def contributions(layout: Layout) -> dict:
    return {(c.tile, c.side): c.value for c in layout.counted()}


@pytest.mark.parametrize("step", range(len(SEQUENCE)), ids=[f"{t}" for t, *_ in SEQUENCE])
def test_the_seeds_sequence_counts_each_end_as_the_polish_text_lists_it(step):
    layout = list(layouts_of(SEQUENCE[: step + 1]))[-1]
    _, _, total, counted, places = SEQUENCE[step]
    assert layout.end_total() == total
    assert contributions(layout) == counted
    assert set(layout.open_places) == places
    assert len(layout.open_places) == len(places)


def test_only_the_first_double_is_the_spinner_and_later_doubles_play_in_line():
    *_, last = layouts_of(SEQUENCE)
    assert last.spinner == (1, 1)
    joined = {p.tile: p.joined for p in last.placements}
    assert joined[(4, 4)] == joined[(5, 5)] == "chain_a"
    assert not any(
        side.startswith("arm") for tile, side, _ in last.open_places if tile in ((4, 4), (5, 5))
    )


def test_the_spinners_arms_open_only_once_both_chain_sides_are_taken():
    steps = list(layouts_of(SEQUENCE))
    arms = [
        {side for tile, side, _ in layout.open_places if side.startswith("arm")} for layout in steps
    ]
    assert arms[:4] == [set()] * 4
    assert arms[4] == {"arm_a", "arm_b"}


def test_an_opening_spinner_keeps_its_arms_closed_while_one_chain_side_is_free():
    layout = Layout().open_with((3, 3)).play((1, 3), ((3, 3), "chain_a"), 3)
    assert {side for _, side, _ in layout.open_places} == {"chain_b", "low"}
    assert contributions(layout) == {((3, 3), None): 6, ((1, 3), "low"): 1}


# (the opening tiles, end total, counted contributions, open places) — the seed's openings.
OPENINGS = [
    ([(0, 0)], 0, {((0, 0), None): 0}, {((0, 0), "chain_a", 0), ((0, 0), "chain_b", 0)}),
    ([(2, 2)], 4, {((2, 2), None): 4}, {((2, 2), "chain_a", 2), ((2, 2), "chain_b", 2)}),
    ([(5, 5)], 10, {((5, 5), None): 10}, {((5, 5), "chain_a", 5), ((5, 5), "chain_b", 5)}),
    (
        [(3, 6), (6, 6)],
        15,
        {((3, 6), "low"): 3, ((6, 6), None): 12},
        {((3, 6), "low", 3), ((6, 6), "chain_b", 6)},
    ),
]


@pytest.mark.parametrize(
    "tiles, total, counted, places", OPENINGS, ids=["[0|0]", "[2|2]", "[5|5]", "[3|6]+[6|6]"]
)
def test_openings_count_as_the_seed_shows(tiles, total, counted, places):
    layout = Layout().open_with(tiles[0])
    if len(tiles) == 2:
        layout = layout.play(tiles[1], (tiles[0], "high"), 6)
    assert layout.end_total() == total
    assert contributions(layout) == counted
    assert set(layout.open_places) == places


def test_a_spinner_is_counted_once_as_a_whole():
    assert Layout().open_with((5, 5)).counted() == [Counted((5, 5), None, 10)]


def test_places_for_lists_every_open_place_a_tile_fits_and_open_value_knows_closed_places():
    *_, last = layouts_of(SEQUENCE[:5])
    assert last.places_for((1, 3)) == [((3, 4), "low"), ((1, 1), "arm_a"), ((1, 1), "arm_b")]
    assert last.places_for((6, 6)) == []
    assert last.fits((2, 6)) and not last.fits((6, 6))
    assert last.open_value(((1, 1), "arm_b")) == 1
    assert last.open_value(((1, 1), "chain_b")) is None


# --- the same sequence through apply: ends and points as recorded -----------------------------

# (seat, tile, place, end total, points moved, balances after)
PLAYED = [
    (0, (1, 4), None, 5, 5, [155, 145]),
    (1, (1, 1), ((1, 4), "low"), 6, 0, [155, 145]),
    (0, (4, 4), ((1, 4), "high"), 10, 10, [165, 135]),
    (1, (3, 4), ((4, 4), "chain_b"), 5, 5, [160, 140]),
    (0, (1, 2), ((1, 1), "chain_b"), 5, 5, [165, 135]),
    (1, (1, 5), ((1, 1), "arm_a"), 10, 10, [155, 145]),
    (0, (5, 5), ((1, 5), "high"), 15, 15, [170, 130]),
    (1, (0, 5), ((5, 5), "chain_b"), 5, 5, [165, 135]),
    (0, (1, 3), ((1, 1), "arm_b"), 8, 0, [165, 135]),
]


def test_the_seeds_sequence_played_moves_each_positive_multiple_of_5_and_nothing_else():
    hand0 = [(1, 4), (4, 4), (1, 2), (5, 5), (1, 3), (6, 6), (2, 6)]
    hand1 = [(1, 1), (3, 4), (1, 5), (0, 5), (0, 6), (3, 6), (4, 6)]
    game = auction_table(hand0, hand1, jockey=0)
    game.start()
    game.waive(1)
    for seat, tile, on, total, points, balances in PLAYED:
        (event, *_) = game.play(seat, tile, *(on or ()))
        assert (event["ends"], event["points"], event["balances"]) == (total, points, balances)
    assert game.state.layout == list(layouts_of(SEQUENCE))[-1]


def test_an_end_total_of_15_moves_15_points_so_150_150_becomes_135_165():
    game = auction_table([(3, 6), (0, 1)], [(6, 6), (0, 2)], jockey=0)
    game.start()
    game.waive(1)
    game.play(0, (3, 6))
    (event, *_) = game.play(1, (6, 6), (3, 6), "high")
    assert (event["ends"], event["points"], event["balances"]) == (15, 15, [135, 165])


def test_a_20_won_from_a_player_holding_5_moves_5_and_ends_the_match():
    game = auction_table([(6, 6), (4, 4), (0, 1)], [(4, 6), (0, 2)], jockey=0, balances=(295, 5))
    game.start()
    assert [e["type"] for e in game.events] == ["start", "waive"]  # 5 cannot pay the minimum 15
    game.play(0, (6, 6))
    game.play(1, (4, 6), (6, 6), "chain_a")
    (event,) = game.play(0, (4, 4), (4, 6), "low")
    assert (event["ends"], event["points"], event["balances"]) == (20, 5, [300, 0])
    assert game.state.phase == "finished"
    assert (game.state.result.winner, game.state.result.reason) == (0, "points")


@pytest.mark.parametrize(
    "pips, rounded",
    [(0, 0), (1, 0), (2, 0), (3, 5), (4, 5), (5, 5), (16, 15), (17, 15), (18, 20), (19, 20)],
)
def test_a_blocked_hand_rounds_to_the_nearest_multiple_of_5(pips, rounded):
    assert round_to_5(pips) == rounded

"""RULES §2 and STYLE 3: what each role sees, one test per role."""

from engine import next_round, view

from .builders import auction_table, deal, table
from .views import assert_view_hides_secrets, tiles_in

HAND0 = [(6, 6), (0, 1), (2, 3)]
HAND1 = [(0, 6), (1, 2), (4, 4)]


def midround(hotseat=False):
    game = table(HAND0, HAND1, hotseat=hotseat, draw_first=[(3, 6)])
    game.start()
    game.play(0, (6, 6))
    return game


def test_seat_0_sees_its_own_hand_and_counts_of_the_rest():
    game = midround()
    seen = assert_view_hides_secrets(game.state, 0)
    assert seen["hand"] == [[0, 1], [2, 3]]
    assert (seen["hand_counts"], seen["boneyard_count"], seen["to_act"]) == ([2, 3], 22, 1)
    assert seen["legal"]["plays"] == [] and not seen["legal"]["draw"] and seen["legal"]["resign"]


def test_seat_1_sees_its_own_hand_and_its_choices():
    game = midround()
    seen = assert_view_hides_secrets(game.state, 1)
    assert seen["hand"] == [[0, 6], [1, 2], [4, 4]]
    assert seen["legal"]["plays"] == [
        {
            "tile": [0, 6],
            "places": [{"tile": [6, 6], "side": "chain_a"}, {"tile": [6, 6], "side": "chain_b"}],
            "scores": [0, 0],
        }
    ]
    assert seen["layout"]["end_total"] == 12
    assert seen["layout"]["counted"] == [{"tile": [6, 6], "side": None, "value": 12}]
    assert seen["clock"] == {
        "running": True,
        "seat": 1,
        "turn_start_ms": game.now,
        "delay_ms": 10_000,
        "deadline_ms": game.now + 130_000,
    }


def test_a_spectator_sees_no_hand_and_no_choices():
    game = midround()
    seen = assert_view_hides_secrets(game.state, None)
    assert (seen["hand"], seen["legal"], seen["must_play"]) == (None, None, None)
    assert tiles_in(seen) == {(6, 6)}
    assert seen["commitment"] == game.state.deal.commitment


def test_a_drawn_tile_that_must_be_played_is_shown_to_its_owner_only():
    game = table(HAND0, [(1, 2), (4, 4)], draw_first=[(3, 6)])
    game.start()
    game.play(0, (6, 6))
    game.draw(1)
    assert view(game.state, 1)["must_play"] == [3, 6]
    assert view(game.state, 0)["must_play"] is None
    assert_view_hides_secrets(game.state, 0)


def test_a_hand_over_hides_every_hand():
    game = midround(hotseat=True)
    assert game.state.phase == "handover"
    for seat in (0, 1, None):
        seen = assert_view_hides_secrets(game.state, seat)
        assert seen["hand"] is None
        assert tiles_in(seen) == {(6, 6)}
    assert view(game.state, 1)["legal"]["start"] is True
    assert view(game.state, 1)["clock"]["running"] is False


def test_the_auction_shows_the_standing_offer_and_the_range_of_raises():
    game = auction_table(HAND0, HAND1, jockey=0)
    game.start()
    assert view(game.state, 1)["legal"]["waive"] and not view(game.state, 1)["legal"]["accept"]
    game.offer(1, 15)
    seen = assert_view_hides_secrets(game.state, 0)
    assert seen["auction"] == {"offer": 15, "offerer": 1}
    assert seen["legal"]["offer"] == {"min": 20, "max": 165, "step": 5}
    assert seen["legal"]["accept"] and not seen["legal"]["waive"]
    assert view(game.state, 1)["legal"]["offer"] is None


def test_a_rank_round_has_no_auction_and_a_finished_match_shows_its_result():
    game = midround()
    assert view(game.state, None)["auction"] is None
    game.send(0, {"type": "resign"})
    seen = view(game.state, 1)
    assert seen["result"] == {"winner": 1, "reason": "resign"}
    assert seen["legal"]["resign"] is False and seen["clock"]["deadline_ms"] is None


def test_the_settlement_is_shown_to_everyone():
    game = table([(6, 6)], HAND1)
    game.start()
    game.play(0, (6, 6))
    seen = view(game.state, None)
    assert seen["settlement"]["end"] == "domino" and seen["settlement"]["pips"] == [0, 17]


def test_each_place_of_a_play_says_what_it_would_score():
    game = table([(5, 5), (0, 1)], [(0, 5), (1, 2)])
    game.start()
    assert view(game.state, 0)["legal"]["plays"] == [
        {"tile": [5, 5], "places": [None], "scores": [10]}
    ]
    game.play(0, (5, 5))
    assert view(game.state, 1)["legal"]["plays"] == [
        {
            "tile": [0, 5],
            "places": [{"tile": [5, 5], "side": "chain_a"}, {"tile": [5, 5], "side": "chain_b"}],
            "scores": [10, 10],
        }
    ]


def test_each_offer_says_what_it_would_cost_after_the_jockey_discount():
    game = auction_table(HAND0, HAND1, jockey=0)
    game.start()
    offers = view(game.state, 1)["legal"]["offers"]
    assert (offers[0], offers[-1]) == ({"amount": 15, "cost": 15}, {"amount": 150, "cost": 150})
    game.offer(1, 15)
    offers = view(game.state, 0)["legal"]["offers"]
    assert (offers[0], offers[-1]) == ({"amount": 20, "cost": 5}, {"amount": 165, "cost": 150})
    assert view(game.state, 1)["legal"]["offers"] == []


def test_a_domino_settlement_rounds_nothing_and_keeps_the_final_table_into_the_next_round():
    game = table([(6, 6)], HAND1)
    game.start()
    game.play(0, (6, 6))
    after = next_round(game.state, deal([(1, 1)], [(2, 2)]))
    settlement = view(after, None)["settlement"]
    assert (settlement["end"], settlement["rounded"], settlement["owed"]) == ("domino", None, 0)
    assert settlement["hands"] == [[], [[0, 6], [1, 2], [4, 4]]]
    assert [p["tile"] for p in settlement["layout"]["tiles"]] == [[6, 6]]


def test_a_block_settlement_shows_the_rounding_and_what_was_owed_before_the_cap():
    game = table(
        [(6, 6), (5, 6), (0, 1), (0, 3)], [(4, 4), (2, 4), (1, 3)], boneyard=(), balances=(285, 15)
    )
    game.start()
    game.play(0, (6, 6))
    game.play(0, (5, 6), (6, 6), "chain_a")
    settlement = view(game.state, 0)["settlement"]
    assert settlement["pips"] == [4, 18]
    assert (settlement["rounded"], settlement["owed"], settlement["points"]) == (20, 20, 15)
    assert settlement["hands"] == [[[0, 1], [0, 3]], [[1, 3], [2, 4], [4, 4]]]
    assert len(settlement["layout"]["tiles"]) == 2

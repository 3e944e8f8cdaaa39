"""Each rule is written once, in the engine: change it there and the rules, the views, the
bots, the computer clients and the pages all follow. Every test changes one rule's number
in its one place and watches every consumer of it change."""

from __future__ import annotations

import random

import pytest

import engine
from clients.match_client import choose
from engine import auction, scoring
from engine.bots import GreedyBot
from matches.views import worked_examples
from tests.engine.builders import auction_table, table


def opened_with_55():
    """Seat 1 to play with a choice: [0, 5] on the 5-5 spinner makes ends of 10 + 0 = 10,
    [2, 5] makes 10 + 2 = 12."""
    game = table([(5, 5), (1, 1)], [(0, 5), (2, 5), (3, 4)])
    game.start()
    game.play(0, (5, 5))
    return game


def scores_seen(state, seat):
    return {
        (tuple(option["tile"]), place["side"]): score
        for option in engine.view(state, seat)["legal"]["plays"]
        for place, score in zip(option["places"], option["scores"], strict=True)
    }


@pytest.fixture
def scoring_by_fours(monkeypatch):
    monkeypatch.setattr(scoring, "SCORING_MULTIPLE", 4)


def test_scoring_multiples_change_in_one_place_for_rules_views_bots_clients_and_pages(
    scoring_by_fours,
):
    game = opened_with_55()
    seen = scores_seen(game.state, 1)
    assert seen[((2, 5), "chain_a")] == 12 and seen[((0, 5), "chain_a")] == 0
    # The greedy bot (engine) and the greedy client (from the view alone) both take the 12.
    greedy = GreedyBot().choose(game.state, 1, random.Random(0))
    client = choose(engine.view(game.state, 1), "greedy", random.Random(0))
    assert greedy["tile"] == client["tile"] == [2, 5]
    (play,) = game.play(1, (2, 5), (5, 5), "chain_a")
    assert play["points"] == 12
    # The rules page's worked examples: ends of 4 and 8 now score, 5, 10 and 15 do not.
    examples = [(e["layout"]["end_total"], e["points"]) for e in worked_examples()]
    assert {total: points for total, points in examples} == {
        4: 4, 5: 0, 6: 0, 8: 8, 10: 0, 15: 0, 0: 0
    }  # fmt: skip


def test_by_default_multiples_of_5_score():
    game = opened_with_55()
    seen = scores_seen(game.state, 1)
    assert seen[((0, 5), "chain_a")] == 10 and seen[((2, 5), "chain_a")] == 0
    assert choose(engine.view(game.state, 1), "greedy", random.Random(0))["tile"] == [0, 5]


def test_the_jockey_discount_changes_in_one_place_for_rules_views_bots_and_clients(monkeypatch):
    monkeypatch.setattr(auction, "JOCKEY_DISCOUNT", 40)
    # Seat 0 is the jockey and holds 20: with a discount of 40 it may offer up to 60.
    game = auction_table([(6, 6), (0, 1)], [(5, 5), (0, 2)], jockey=0, balances=(20, 280))
    game.start()
    game.offer(1, 15)
    legal = engine.view(game.state, 0)["legal"]
    assert legal["offers"][-1] == {"amount": 60, "cost": 20}
    assert {offer["amount"]: offer["cost"] for offer in legal["offers"]}[45] == 5
    client = choose(engine.view(game.state, 0), "greedy", random.Random(0))
    bot = GreedyBot().choose(game.state, 0, random.Random(0))
    assert client == bot == {"type": "offer", "amount": 20}  # costs nothing after the discount
    game.offer(0, 60)
    (accept,) = game.accept(1)
    assert accept["paid"] == 20


def test_a_blocked_rounds_rounding_and_cap_come_from_the_engine(monkeypatch):
    monkeypatch.setattr(scoring, "SCORING_MULTIPLE", 3)
    game = table([(6, 6), (5, 6), (0, 1), (0, 3)], [(4, 4), (2, 4), (1, 3)], boneyard=())
    game.start()
    game.play(0, (6, 6))
    game.play(0, (5, 6), (6, 6), "chain_a")
    settlement = engine.view(game.state, 0)["settlement"]
    assert (settlement["pips"], settlement["rounded"], settlement["points"]) == ([4, 18], 18, 18)

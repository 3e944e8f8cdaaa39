"""The computer players and the simulator (engine/bots.py, engine/simulate.py)."""

import random

import pytest

from engine import (
    BOTS,
    GreedyBot,
    IllegalCommand,
    RandomBot,
    apply,
    deal_from_seed,
    first_to_act,
    legal_commands,
    legal_decisions,
    new_match,
    next_round,
    view,
)
from engine import simulate as simulate_module
from engine.clock import ClockConfig
from engine.simulate import Thinker, simulate, simulate_match

from .builders import auction_table, table


def test_the_greedy_bot_takes_the_highest_scoring_play():
    # After [6|6], [1|6] scores 12+1=13 (nothing), [4|6] scores 16, [3|6] scores 15.
    game = table([(6, 6), (0, 0)], [(1, 6), (3, 6), (4, 6), (2, 2)])
    game.start()
    game.play(0, (6, 6))
    command = GreedyBot().choose(game.state, 1, random.Random(0))
    assert command == {"type": "play", "tile": [3, 6], "place": {"tile": [6, 6], "side": "chain_a"}}


def test_the_greedy_bot_sheds_the_heaviest_tile_when_nothing_scores():
    game = table([(6, 6), (0, 0)], [(1, 6), (2, 6), (2, 2)])
    game.start()
    game.play(0, (6, 6))
    assert GreedyBot().choose(game.state, 1, random.Random(0))["tile"] == [2, 6]


def test_the_greedy_bot_draws_when_it_cannot_play():
    game = table([(6, 6), (0, 0)], [(1, 2), (2, 2)])
    game.start()
    game.play(0, (6, 6))
    assert GreedyBot().choose(game.state, 1, random.Random(0)) == {"type": "draw"}


def test_the_greedy_bot_bids_the_minimum_when_the_opening_is_worth_it_and_never_its_whole_balance():
    game = auction_table([(0, 1), (0, 2)], [(5, 5), (0, 3)], jockey=0)
    game.start()
    assert GreedyBot().choose(game.state, 1, random.Random(0)) == {"type": "offer", "amount": 15}
    poor = auction_table([(0, 1), (0, 2)], [(5, 5), (0, 3)], jockey=0, balances=(285, 15))
    poor.start()
    assert GreedyBot().choose(poor.state, 1, random.Random(0)) == {"type": "waive"}


def test_the_greedy_bot_accepts_an_offer_it_would_not_beat():
    game = auction_table([(0, 1), (0, 2)], [(5, 5), (0, 3)], jockey=0)
    game.start()
    game.offer(1, 30)  # a raise to 35 would cost the jockey 20, more than an opening worth 10
    assert GreedyBot().choose(game.state, 0, random.Random(0)) == {"type": "accept"}


@pytest.mark.parametrize("roll, expected", [(0.1, "offer"), (0.9, "waive")])
def test_the_random_bot_offers_half_the_time_in_an_auction(roll, expected):
    game = auction_table([(0, 1), (0, 2)], [(5, 5), (0, 3)], jockey=0)
    game.start()

    class Rolls(random.Random):
        def random(self):
            return roll

    assert RandomBot().choose(game.state, 1, Rolls(0))["type"] == expected


def test_the_random_bot_plays_only_legal_decisions():
    game = table([(6, 6), (0, 0)], [(1, 6), (3, 6), (2, 2)])
    game.start()
    game.play(0, (6, 6))
    rng = random.Random(3)
    for _ in range(20):
        assert RandomBot().choose(game.state, 1, rng) in legal_decisions(game.state, 1)


def test_the_thinker_draws_fast_and_thinks_long_only_sometimes():
    class Always(random.Random):
        def random(self):
            return 0.0

    thinker = Thinker(Always(1))
    assert 300 <= thinker.decision_ms({"type": "draw"}) <= 2_000
    assert 10_000 <= thinker.decision_ms({"type": "play"}) <= 45_000
    thinker.slow_chance = 0.0
    assert 500 <= thinker.decision_ms({"type": "offer"}) <= 9_000


def test_simulated_matches_are_deterministic_and_some_end_on_time():
    first = list(simulate(6, "det"))
    assert first == list(simulate(6, "det"))
    assert {r["result"]["reason"] for r in simulate(20, "det")} >= {"points", "time"}


def test_a_simulated_match_may_use_another_clock():
    record = simulate_match(0, "clock", clock=ClockConfig(bank_ms=30_000, delay_ms=2_000))
    assert record["clock"] == {"bank_ms": 30_000, "delay_ms": 2_000}


def test_the_simulator_does_not_hide_an_illegal_command_from_a_bot(monkeypatch):
    class Cheat:
        def choose(self, state, seat, rng):
            return {"type": "draw"} if state.layout.is_empty else {"type": "offer", "amount": 15}

    monkeypatch.setitem(simulate_module.BOTS, "cheat", Cheat)
    with pytest.raises(IllegalCommand):
        simulate_match(0, "cheat", ("cheat", "cheat"))


def test_nothing_is_legal_once_the_match_is_over():
    game = table([(6, 6)], [(0, 1)])
    game.send(1, {"type": "resign"})
    assert legal_commands(game.state, 0) == legal_commands(game.state, 1) == []


def test_first_to_act_is_the_rank_holder_the_jockeys_opponent_or_the_waiting_player():
    assert first_to_act(table([(0, 1)], [(6, 6)]).state) == 1
    assert first_to_act(table([(6, 6)], [(0, 1)]).state) == 0
    assert first_to_act(auction_table([(6, 6)], [(0, 1)], jockey=1).state) == 0
    game = table([(6, 6), (0, 1)], [(0, 6), (1, 2)], hotseat=True)
    game.start()
    game.play(0, (6, 6))
    assert (game.state.phase, first_to_act(game.state)) == ("handover", 1)


@pytest.mark.parametrize("name", ["random", "greedy"])
def test_a_bot_choosing_from_the_view_alone_makes_only_legal_decisions(name):
    """choose_from_view (the server's computer player and the clients) through whole matches:
    every decision it makes is legal, in the auction and in the play, draws included."""
    rng = random.Random(21)
    bot = BOTS[name]()
    kinds = set()
    for seed in range(6):
        state = new_match(deal_from_seed(f"{seed:064x}"))
        now = 0
        while state.result is None:
            now += 500
            if state.phase in ("ready", "handover"):
                state, _ = apply(state, None, {"type": "start"}, now)
            elif state.phase == "settled":
                state = next_round(state, deal_from_seed(f"{seed + 1000 * state.round_no:064x}"))
            else:
                command = bot.choose_from_view(view(state, state.decider), rng)
                kinds.add(command["type"])
                assert command in legal_decisions(state, state.decider)
                state, _ = apply(state, state.decider, command, now)
    assert {"play", "draw", "offer"} <= kinds and kinds & {"accept", "waive"}

"""The expert (engine/expert.py): it reads nothing but its views, infers what they prove about
the opponent's hand, and chooses by simulating the rest of the round."""

import random
from dataclasses import replace

import pytest

from engine import BOTS, GreedyBot, apply, audit, deal_from_seed, new_match, next_round, view
from engine.expert import ExpertBot, Knowledge, _index_of, _sim_for, estimate, layout_of, options
from engine.legal import legal_decisions
from engine.simulate import simulate_match
from engine.state import FINISHED, READY, SETTLED
from engine.tiles import FULL_SET

from .builders import auction_table, hidden_tiles_redealt, table

SIXES = {tile for tile in FULL_SET if 6 in tile}


def _expert_turn(game, bot: ExpertBot, seat: int = 0) -> dict:
    command = bot.choose(game.state, seat, random.Random(1))
    game.send(seat, command, 1_000)
    return command


def _opponent_tiles_in_samples(knowledge: Knowledge, seen: dict, count: int = 200) -> set:
    rng = random.Random(2)
    tiles = set()
    for _ in range(count):
        hand, _ = knowledge.sample(seen, rng)
        assert len(hand) == seen["hand_counts"][1 - knowledge.seat]
        tiles.update(hand)
    return tiles


def test_the_expert_is_registered_beside_the_other_bots():
    assert BOTS["expert"] is ExpertBot and ExpertBot.name == "expert"


def test_an_opponent_who_drew_held_no_tile_matching_the_open_ends_then():
    hand0 = [(6, 6), (0, 1), (0, 2), (1, 2), (0, 3), (1, 3), (2, 3)]
    hand1 = [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4), (0, 4), (1, 4)]
    game = table(hand0, hand1, draw_first=[(0, 5), (5, 6)])
    game.start()
    bot = ExpertBot(budget_ms=2)
    assert _expert_turn(game, bot)["tile"] == [6, 6]  # the rank opening, forced
    game.draw(1)
    game.draw(1)
    game.play(1, (5, 6), (6, 6), "chain_a")  # the second drawn tile fits: played at once
    assert _expert_turn(game, bot) == {"type": "draw"}
    knowledge = bot.knowledge[0]
    # Seven dealt, two drawn, one played: eight tiles, none of them with a 6.
    assert len(knowledge.slots) == 8
    assert all(SIXES <= slot for slot in knowledge.slots)
    seen = view(game.state, 0)
    assert not _opponent_tiles_in_samples(knowledge, seen) & SIXES


def test_an_opponent_who_passed_holds_nothing_matching_the_open_ends():
    game = table([(6, 6), (1, 6), (0, 0)], [(1, 2), (2, 3), (3, 3)], boneyard=())
    game.start()
    bot = ExpertBot(budget_ms=2)
    _expert_turn(game, bot)  # [6|6]; the opponent cannot play and passes at once
    seen = view(game.state, 0)
    bot.choose(game.state, 0, random.Random(1))
    assert not _opponent_tiles_in_samples(bot.knowledge[0], seen) & SIXES


def test_a_rank_opening_proves_the_opponent_held_no_higher_double():
    hand0 = [(0, 1), (0, 2), (1, 2), (0, 3), (1, 3), (2, 3), (3, 3)]
    hand1 = [(4, 4), (0, 5), (1, 5), (2, 5), (3, 5), (0, 6), (1, 6)]
    game = table(hand0, hand1)
    game.start()
    game.play(1, (4, 4))
    bot = ExpertBot(budget_ms=2)
    assert bot.choose(game.state, 0, random.Random(1)) == {"type": "draw"}
    tiles = _opponent_tiles_in_samples(bot.knowledge[0], view(game.state, 0))
    assert not tiles & {(5, 5), (6, 6)} and (4, 5) in tiles


def test_the_opponents_plays_take_the_oldest_slot_that_allows_them():
    knowledge = Knowledge(0)
    knowledge.slots = [frozenset({(6, 6)}), frozenset()]
    knowledge._drop_slot_for((6, 6))
    assert knowledge.slots == [frozenset({(6, 6)})]
    knowledge._drop_slot_for((6, 6))  # contradicting evidence: the newest slot goes
    assert knowledge.slots == []


def test_contradicting_evidence_falls_back_to_an_unconstrained_sample():
    game = table([(6, 6), (0, 1)], [(1, 2), (2, 3)])
    game.start()
    seen = view(game.state, 0)
    knowledge = Knowledge(0)
    knowledge.observe(seen)
    knowledge.slots = [frozenset(FULL_SET)] * 2
    hand, boneyard = knowledge.sample(seen, random.Random(0))
    assert len(hand) == 2 and len(boneyard) == 28 - 2 - 2


def test_a_new_round_starts_the_knowledge_afresh():
    state = new_match(deal_from_seed("cd" * 32))
    state, _ = apply(state, None, {"type": "start"}, 0)
    seat = state.decider
    knowledge = Knowledge(seat)
    knowledge.observe(view(state, seat))
    knowledge.slots = []
    following = replace(state, round_no=2, opening="auction")
    knowledge.observe(view(following, seat))
    assert knowledge.round == 2 and len(knowledge.slots) == 7


def test_the_expert_takes_an_obvious_fifteen():
    game = table([(6, 6), (0, 0), (1, 1)], [(3, 6), (1, 6), (2, 2), (0, 1)])
    game.start()
    game.play(0, (6, 6))
    command = ExpertBot(budget_ms=5).choose(game.state, 1, random.Random(3))
    assert command["tile"] == [3, 6]


def test_the_expert_offers_the_minimum_when_opening_is_worth_more_and_never_its_whole_balance(
    monkeypatch,
):
    hand1 = [(5, 5), (0, 5), (1, 4), (2, 3), (0, 0), (1, 1), (0, 1)]
    game = auction_table([(2, 2), (3, 3), (4, 4), (6, 6), (4, 6), (3, 6), (2, 6)], hand1, jockey=0)
    game.start()
    # The expected points of the round if the expert opens, and if its opponent opens.
    monkeypatch.setattr("engine.expert.opening_values", lambda *args: (30.0, 0.0))
    offer = {"type": "offer", "amount": 15}
    assert ExpertBot(budget_ms=1).choose(game.state, 1, random.Random(0)) == offer
    monkeypatch.setattr("engine.expert.opening_values", lambda *args: (10.0, 0.0))
    assert ExpertBot(budget_ms=1).choose(game.state, 1, random.Random(0)) == {"type": "waive"}
    monkeypatch.undo()
    poor = auction_table([(2, 2), (3, 3)], hand1, jockey=0, balances=(285, 15))
    poor.start()
    seen = view(poor.state, 1)
    values = dict((str(c), v) for c, v in estimate(seen, Knowledge(1), random.Random(0), 5))
    assert values[str({"type": "offer", "amount": 15})] == -15  # paying it all loses the match


def test_accepting_is_worth_the_payment_received():
    game = auction_table([(0, 1), (0, 2)], [(5, 5), (0, 3)], jockey=0)
    game.start()
    game.offer(1, 30)
    seen = view(game.state, 0)
    knowledge = Knowledge(0)
    knowledge.observe(seen)
    (accept, accept_value), *offers = estimate(seen, knowledge, random.Random(0), 5)
    assert accept == {"type": "accept"} and offers[0][0] == {"type": "offer", "amount": 35}
    # Raising to 35 costs the jockey 20 if accepted; accepting brings in 30.
    assert offers[0][1] - accept_value == pytest.approx(
        _difference_of_openings(seen, knowledge) - 50, abs=1e-9
    )


def _difference_of_openings(seen, knowledge) -> float:
    from engine.expert import opening_values, playouts_for

    mine, theirs = opening_values(seen, knowledge, random.Random(0), playouts_for(seen, 5))
    return mine - theirs


def test_options_are_the_legal_decisions_at_every_decision_of_a_match():
    state = new_match(deal_from_seed("ab" * 32))
    rng = random.Random(4)
    seen_kinds = set()
    for round_no in range(2, 8):
        while not state.round_over:
            if state.phase == READY:
                state, _ = apply(state, None, {"type": "start"}, 0)
                continue
            seat = state.decider
            assert options(view(state, seat)) == legal_decisions(state, seat)
            command = BOTS["random"]().choose(state, seat, rng)
            seen_kinds.add(command["type"])
            state, _ = apply(state, seat, command, 0)
        if state.phase == FINISHED:
            break
        state = next_round(state, deal_from_seed(f"{round_no:064x}"))
    assert {"play", "draw", "offer"} <= seen_kinds


def test_a_place_that_is_not_open_is_refused():
    game = table([(6, 6), (0, 0)], [(3, 6), (1, 6)])
    game.start()
    seen = view(game.state, 0)
    sim = _sim_for(seen, Knowledge(0), random.Random(0), None)
    assert _index_of(sim, None) is None
    with pytest.raises(ValueError):
        _index_of(sim, {"tile": [6, 6], "side": "chain_a"})


def test_the_layout_is_rebuilt_from_the_placed_tiles():
    game = table([(6, 6), (0, 0)], [(3, 6), (1, 6)])
    game.start()
    game.play(0, (6, 6))
    game.play(1, (3, 6), (6, 6), "chain_a")
    assert layout_of(view(game.state, 0)["layout"]["tiles"]) == game.state.layout


@pytest.mark.parametrize("match_seed", ["ee", "ff"])
def test_the_expert_decides_the_same_whatever_the_hidden_tiles(match_seed):
    """Two states that differ only in the opponent's hand and the boneyard's order show the
    expert the same view, so with the same seed it makes the same decision, all match long."""
    shuffler = random.Random(match_seed)
    plain, alternative, opponent = ExpertBot(budget_ms=1), ExpertBot(budget_ms=1), GreedyBot()
    state = new_match(deal_from_seed(match_seed * 32))
    decisions = 0
    while state.phase != FINISHED and decisions < 60:
        if state.phase == SETTLED:
            state = next_round(state, deal_from_seed(f"{shuffler.getrandbits(256):064x}"))
            continue
        if state.phase == READY:
            state, _ = apply(state, None, {"type": "start"}, 0)
            continue
        seat = state.decider
        if seat == 1:
            state, _ = apply(state, 1, opponent.choose(state, 1, shuffler), 0)
            continue
        twin = hidden_tiles_redealt(state, 0, shuffler)
        assert view(twin, 0) == view(state, 0)
        command = plain.choose(state, 0, random.Random(decisions))
        assert alternative.choose(twin, 0, random.Random(decisions)) == command
        state, _ = apply(state, 0, command, 0)
        decisions += 1
    assert decisions > 10


def test_a_simulated_match_of_the_expert_checks_clean():
    record = simulate_match(0, "expert-check", ("expert", "greedy"))
    assert record["status"] == "finished"
    assert audit(record)[1] == []

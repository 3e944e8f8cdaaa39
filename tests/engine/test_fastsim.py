"""The fast simulation (engine/fastsim.py) equals the rules: thousands of random rounds are
played through ``apply`` and through one ``Sim`` in lockstep, and every step must agree."""

import random

from engine import apply, deal_from_seed, legal_plays, new_match, next_round
from engine.fastsim import Sim
from engine.legal import play_command
from engine.state import AUCTION, FINISHED, PLAY, READY, SETTLED

from .builders import table


def _canonical_move(sim: Sim, move):
    tile, index = move
    return (tile, None if index is None else sim.places[index][:2])


def _assert_same(sim: Sim, state, events) -> None:
    assert sim.balances == list(state.balances)
    assert [sorted(hand) for hand in sim.hands] == [sorted(hand) for hand in state.hands]
    assert sim.boneyard[::-1] == list(state.boneyard)
    assert [place[:3] for place in sim.places] == list(state.layout.open_places)
    assert sim.spinner == state.layout.spinner
    if state.phase == PLAY:
        assert not sim.over
        assert (sim.turn, sim.drawn, sim.passes) == (state.decider, state.drawn, state.passes)
        expected = sorted(legal_plays(state, state.decider))
        assert sorted(_canonical_move(sim, move) for move in sim.moves()) == expected
        fresh = Sim.from_state(state)
        assert sorted(_canonical_move(fresh, move) for move in fresh.moves()) == expected
        return
    assert sim.over
    settles = [event for event in events if event["type"] == "settle"]
    if not settles:
        assert (sim.winner, sim.end) == (state.result.winner, None)
        return
    settle = settles[0]
    assert (sim.end, sim.round_winner) == (settle["end"], settle["winner"])
    assert sim.winner == (state.result.winner if state.phase == FINISHED else None)


def _play_round_in_lockstep(state, rng: random.Random):
    """Play the round of ``state`` (in PLAY) to its end at random in both; returns the state."""
    sim = Sim.from_state(state)
    while state.phase == PLAY:
        moves = sim.moves()
        if moves:
            move = rng.choice(moves)
            tile, place = _canonical_move(sim, move)
            state, events = apply(state, state.decider, play_command(tile, place), 0)
            assert sim.points_of(*move) == events[0]["points"]
            assert sim.play(*move) == events[0]["points"]
        else:
            state, events = apply(state, state.decider, {"type": "draw"}, 0)
            assert list(sim.draw()) == events[0]["tile"]
        _assert_same(sim, state, events)
    return state


def _opening(state, rng: random.Random):
    """Start the round and settle its auction at random (the fast sim begins with the play)."""
    state, _ = apply(state, None if state.round_no == 1 else 0, {"type": "start"}, 0)
    while state.phase == AUCTION:
        command = rng.choice([{"type": "waive"}, {"type": "accept"}, {"type": "offer"}])
        if command["type"] == "offer":
            command["amount"] = state.auction.offer + 5 if state.auction.offer else 15
        try:
            state, _ = apply(state, state.decider, command, 0)
        except Exception:
            continue
    return state


def test_thousands_of_random_rounds_agree_with_the_rules_step_by_step():
    rng = random.Random(15)
    rounds = 0
    state = new_match(deal_from_seed(f"{rng.getrandbits(256):064x}"))
    while rounds < 2_000:
        state = _opening(state, rng)
        if state.phase == PLAY:
            state = _play_round_in_lockstep(state, rng)
            rounds += 1
        seed = f"{rng.getrandbits(256):064x}"
        if state.phase == SETTLED:
            state = next_round(state, deal_from_seed(seed))
        else:
            state = new_match(deal_from_seed(seed))
        assert state.phase == READY


def test_the_points_of_a_move_are_what_playing_it_scores_capped_by_the_balance():
    game = table([(2, 2), (0, 1)], [(2, 6), (1, 3)], balances=(5, 295))
    game.start()
    game.play(0, (2, 2))
    sim = Sim.from_state(game.state)
    assert sim.points_of((2, 6), 0) == 5  # ends 4 (spinner) + 6, capped by the balance of 5
    sim.play((2, 6), 0)
    assert sim.over and sim.winner == 1 and sim.end is None


def test_a_block_with_equal_hands_has_no_round_winner():
    game = table([(6, 6), (0, 4)], [(1, 1), (0, 2)], boneyard=())
    game.start()
    sim = Sim.from_state(game.state)
    sim.play((6, 6), None)
    assert sim.over and sim.end == "block" and sim.round_winner is None


def test_greedy_and_random_playouts_finish_the_round():
    for play_out in (Sim.play_out, lambda sim: Sim.play_out_random(sim, random.Random(1))):
        start = new_match(deal_from_seed("ab" * 32))
        start, _ = apply(start, None, {"type": "start"}, 0)
        sim = Sim.from_state(start)
        play_out(sim)
        assert sim.over and sum(sim.balances) == 300

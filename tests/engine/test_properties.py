"""Properties over thousands of random matches: points are conserved, the clock and balances never
go negative, legality is exactly ``legal_commands``, every match ends, a record replays to the
state that was played, and no view leaks a hidden tile."""

from __future__ import annotations

import copy
import json
import pickle
import random
from dataclasses import replace as with_fields

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import IllegalCommand, apply, legal_commands, new_match, next_round, replay
from engine.layout import SIDES
from engine.state import FINISHED, HANDOVER, READY, SETTLED
from engine.tiles import FULL_SET

from .builders import T0
from .drive import dealt, play_match
from .views import assert_view_hides_secrets

seeds = st.integers(min_value=0, max_value=2**64)
VIEW_EVERY = 5  # views are checked on every fifth event and at every hand-over
bot_pairs = st.tuples(st.sampled_from(["random", "greedy"]), st.sampled_from(["random", "greedy"]))


def check_invariants(before, seat, command, after, events):
    assert sum(after.balances) == 300
    assert min(after.balances) >= 0
    assert all(0 <= bank <= after.clock.bank_ms for bank in after.banks_ms)
    assert [e["seq"] for e in events] == list(range(before.seq + 1, after.seq + 1))
    if after.seq % VIEW_EVERY == 0 or after.phase == HANDOVER:
        for who in (0, 1, None):
            assert_view_hides_secrets(after, who)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=seeds,
    bots=bot_pairs,
    hotseat=st.booleans(),
    slow=st.sampled_from([0.0, 0.01, 0.05]),
    quit=st.sampled_from([0.0, 0.002]),
    fair=st.booleans(),
)
def test_every_match_ends_conserving_300_points_and_replays_to_the_same_state(
    seed, bots, hotseat, slow, quit, fair
):
    played = play_match(
        seed,
        bots=bots,
        hotseat=hotseat,
        slow_chance=slow,
        quit_chance=quit,
        on_step=check_invariants,
        fair=fair,
    )
    assert played.state.phase == FINISHED
    assert played.record["status"] in ("finished", "void")
    assert replay(played.record) == played.state


def check_conservation(before, seat, command, after, events):
    assert sum(after.balances) == 300 and min(after.balances) >= 0


@settings(max_examples=450, deadline=None)
@given(seed=seeds, bots=bot_pairs, slow=st.sampled_from([0.01, 0.05]))
def test_many_more_matches_end_with_the_300_points_conserved(seed, bots, slow):
    played = play_match(seed, bots=bots, slow_chance=slow, on_step=check_conservation)
    assert played.state.phase == FINISHED and played.state.result.reason in (
        "points",
        "time",
        "abandon",
    )
    assert 0 in played.state.balances or 0 in played.state.banks_ms


# --- legality is exactly legal_commands -------------------------------------------------------


MALFORMED = [
    None,
    [],
    "play",
    {"type": None},
    {"type": "pass"},
    {"type": "void"},
    {"type": "play", "tile": [7, 0]},
    {"type": "play", "tile": [1]},
    {"type": "play", "tile": [0, 0], "place": "x"},
    {"type": "play", "tile": [0, 0], "place": {"tile": [0, 0], "side": "up"}},
    {"type": "offer", "amount": "20"},
    {"type": "offer", "amount": 20.0},
    {"type": "offer"},
]
SIMPLE = ["draw", "accept", "waive", "start", "resign", "timeout", "abandon"]


def candidate(state, rng: random.Random) -> dict:
    """A command of any kind, legal or not: plays of any tile (often from a hand) on open, closed
    or no places; offers of any amount; the simple commands; malformed ones."""
    kind = rng.randrange(4)
    if kind == 0:
        hands = state.hands[0] + state.hands[1]
        tile = rng.choice(hands) if hands and rng.random() < 0.7 else rng.choice(FULL_SET)
        roll = rng.random()
        if roll < 0.2:
            place = None
        elif roll < 0.6 and state.layout.open_places:
            on, side, _ = rng.choice(state.layout.open_places)
            place = {"tile": list(on), "side": side}
        else:
            place = {"tile": list(rng.choice(FULL_SET)), "side": rng.choice(SIDES)}
        return {"type": "play", "tile": list(tile), "place": place}
    if kind == 1:
        return {"type": "offer", "amount": rng.randrange(-10, 321)}
    if kind == 2:
        return {"type": rng.choice(SIMPLE)}
    return copy.deepcopy(rng.choice(MALFORMED))


def allowed(state, seat, command) -> bool:
    """Exactly the commands offered (compared as JSON, so 20.0 is not 20)."""
    if seat in (0, 1):
        return json.dumps(command) in {json.dumps(c) for c in legal_commands(state, seat)}
    return seat is None and command == {"type": "start"} and state.phase in (READY, HANDOVER)


def assert_legality_is_exactly_legal_commands(state, now, rng, tries=8):
    for seat in (0, 1):
        for command in legal_commands(state, seat):
            after, events = apply(state, seat, command, now)
            assert events and after.seq == state.seq + len(events)
    for _ in range(tries):
        seat = rng.choice((0, 1, None, 2))
        command = candidate(state, rng)
        if allowed(state, seat, command):
            apply(state, seat, command, now)
            continue
        before = pickle.loads(pickle.dumps(state))
        try:
            apply(state, seat, command, now)
        except IllegalCommand:
            assert state == before
        else:
            # The server's own commands are not offered to players; they have their own tests.
            assert seat is None and command["type"] in ("void", "timeout", "abandon"), (
                seat,
                command,
            )


choice_index = st.integers(0, 2**16)


@settings(max_examples=100, deadline=None)
@given(seed=seeds, hotseat=st.booleans(), steps=st.integers(1, 80), data=st.data())
def test_every_offered_command_is_accepted_and_every_other_is_rejected_without_change(
    seed, hotseat, steps, data
):
    rng = random.Random(seed)
    state = new_match(dealt(seed, 1), hotseat=hotseat)
    now = T0
    for _ in range(steps):
        if state.phase == FINISHED:
            break
        if state.phase == SETTLED:
            state = next_round(state, dealt(seed, state.round_no + 1))
        assert_legality_is_exactly_legal_commands(state, now, rng)
        seat = None if state.phase in (READY, HANDOVER) else state.decider
        choices = [
            c for c in legal_commands(state, 0 if seat is None else seat) if c["type"] != "resign"
        ]
        command = choices[data.draw(choice_index) % len(choices)]
        now += rng.randrange(12_000)
        state, _ = apply(state, seat, command, now)
        assert sum(state.balances) == 300 and min(state.balances) >= 0


def test_a_live_record_replays_to_the_live_state_with_the_seed_still_withheld():
    seen = []
    played = play_match(11, on_step=lambda before, seat, command, after, events: seen.append(after))
    assert len(seen) > 50
    cut = len(seen) // 2
    live = seen[cut - 1]
    record = copy.deepcopy(played.record)
    rounds = record["rounds"][: live.round_no]
    events_so_far = live.seq
    rounds[-1]["events"] = [e for e in rounds[-1]["events"] if e["seq"] <= events_so_far]
    if not live.round_over:
        rounds[-1]["seed"] = None
    record.update(rounds=rounds, status="live", result=None, balances=list(live.balances))
    expected = (
        live if live.round_over else with_fields(live, deal=with_fields(live.deal, seed=None))
    )
    assert replay(record) == expected

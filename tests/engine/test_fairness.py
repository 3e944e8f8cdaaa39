"""Deals no one controls (engine/fairness.py, docs/fairness.md): the server commits to a seed,
each player adds a contribution, and the round is dealt from all three."""

import copy
import hashlib
import random
from dataclasses import replace

import pytest

from engine import GreedyBot, apply, audit, new_match, next_round, replay, starter, view
from engine.bots import contribution
from engine.fairness import begin_dealing
from engine.record import (
    add_events,
    add_round,
    header_change,
    new_record,
    update_header,
    with_round_added,
)
from engine.shuffle import (
    commitment_of,
    deal_from_seed,
    deal_with_contributions,
    mixed_seed,
    sealed_deal,
    server_contribution,
)
from engine.state import SETTLED

from .builders import T0, Table, assert_rejected, deal
from .drive import play_match
from .views import assert_view_hides_secrets

SEED = "51ab" * 16
C0 = "0c" * 32
C1 = "1c" * 32


def other_hex(value: str) -> str:
    return ("1" if value[0] == "0" else "0") + value[1:]


def dealing(*, hotseat=False, seed=SEED) -> Table:
    """A first round waiting for both contributions, as the server starts one."""
    return Table(begin_dealing(new_match(sealed_deal(seed), hotseat=hotseat)))


def contribute(value) -> dict:
    return {"type": "contribute", "value": value}


DRAWN = {"type": "contribute", "drawn": True}


# --- the deal function ---------------------------------------------------------------------


def test_the_mixed_seed_is_the_sha256_of_seed_contributions_and_round_number_as_documented():
    material = bytes.fromhex(SEED) + bytes.fromhex(C0) + bytes.fromhex(C1) + (3).to_bytes(8, "big")
    assert mixed_seed(SEED, C0, C1, 3) == hashlib.sha256(material).hexdigest()
    dealt = deal_with_contributions(SEED, C0, C1, 3)
    by_mixed_seed = deal_from_seed(mixed_seed(SEED, C0, C1, 3))
    assert (dealt.hands, dealt.boneyard) == (by_mixed_seed.hands, by_mixed_seed.boneyard)
    assert (dealt.seed, dealt.commitment) == (SEED, commitment_of(SEED))


@pytest.mark.parametrize(
    "changed",
    [
        (other_hex(SEED), C0, C1, 1),
        (SEED, other_hex(C0), C1, 1),
        (SEED, C0, other_hex(C1), 1),
        (SEED, C1, C0, 1),
        (SEED, C0, C1, 2),
    ],
    ids=["seed", "contribution 0", "contribution 1", "swapped", "round number"],
)
def test_the_deal_changes_when_any_input_changes(changed):
    def tiles(dealt):
        return dealt.hands, dealt.boneyard

    assert tiles(deal_with_contributions(*changed)) != tiles(
        deal_with_contributions(SEED, C0, C1, 1)
    )


@pytest.mark.parametrize("bad", ["00" * 31, "00" * 33, "zz" * 32])
def test_a_seed_and_each_contribution_are_exactly_32_bytes(bad):
    for args in ((bad, C0, C1, 1), (SEED, bad, C1, 1), (SEED, C0, bad, 1)):
        with pytest.raises(ValueError):
            mixed_seed(*args)
    with pytest.raises(ValueError):
        sealed_deal(bad)


def test_the_servers_stand_in_is_fixed_by_the_commitment_and_the_seat():
    commitment = commitment_of(SEED)
    expected = hashlib.sha256(b"absent" + bytes.fromhex(commitment) + bytes([1])).hexdigest()
    assert server_contribution(commitment, 1) == expected != server_contribution(commitment, 0)


def test_a_bots_contribution_comes_from_the_csprng_unless_a_simulation_gives_its_own_rng():
    first, second = contribution(), contribution()
    assert first["type"] == "contribute" and first["value"] != second["value"]
    assert contribution(random.Random(1)) == contribution(random.Random(1))


# --- the dealing phase -----------------------------------------------------------------------


def test_a_round_waits_in_dealing_with_only_its_commitment_public():
    game = dealing()
    assert game.state.phase == "dealing" and game.state.hands == ((), ())
    for seat in (0, 1, None):
        seen = assert_view_hides_secrets(game.state, seat)
        assert seen["hand"] is None and seen["hand_counts"] == [0, 0]
        assert seen["boneyard_count"] == 0
        assert seen["commitment"] == commitment_of(SEED)
        assert seen["clock"]["running"] is False and seen["clock"]["deadline_ms"] is None
    assert view(game.state, 0)["legal"]["contribute"] is True
    assert view(game.state, 0)["legal"]["start"] is False


def test_both_contributions_deal_the_round_which_then_waits_for_start():
    game = dealing()
    first = game.send(1, contribute(C1), after_ms=300)
    assert first == [
        {
            "seq": 1,
            "type": "contribute",
            "seat": 1,
            "at_ms": T0 + 300,
            "value": C1,
            "source": "player",
            "from_player": True,
        }
    ]
    seen = view(game.state, 0)
    assert game.state.phase == "dealing" and seen["hand"] is None
    assert [c["value"] for c in seen["contributions"]] == [None, None]
    assert [c["source"] for c in seen["contributions"]] == [None, "player"]
    assert view(game.state, 1)["legal"]["contribute"] is False
    game.send(0, contribute(C0), after_ms=200)
    expected = deal_with_contributions(SEED, C0, C1, 1)
    assert game.state.phase == "ready"
    assert (game.state.hands, game.state.boneyard) == (expected.hands, expected.boneyard)
    assert game.state.banks_ms == (120_000, 120_000) and game.state.deadline_ms is None
    seen = view(game.state, 0)
    assert seen["hand"] == [list(tile) for tile in expected.hands[0]]
    assert [c["value"] for c in seen["contributions"]] == [C0, C1]
    assert view(game.state, starter(game.state))["legal"]["start"] is True
    assert view(game.state, 1 - starter(game.state))["legal"]["start"] is False


def test_the_next_round_mixes_in_its_own_number():
    game = dealing()
    game.send(0, contribute(C0))
    game.send(1, contribute(C1))
    settled = replace(game.state, phase=SETTLED, next_jockey=0)
    after = Table(begin_dealing(next_round(settled, sealed_deal(SEED))))
    after.send(0, contribute(C0))
    after.send(1, contribute(C1))
    expected = deal_with_contributions(SEED, C0, C1, 2)
    assert (after.state.round_no, after.state.phase, after.state.opening) == (2, "ready", "auction")
    assert after.state.hands == expected.hands != game.state.hands


@pytest.mark.parametrize(
    "value",
    [C0.upper(), C0[:-1], C0 + "0", C0 + "\n", "0x" + C0[2:], 42, None, ["00"] * 32],
    ids=["upper case", "63 digits", "65 digits", "newline", "0x", "number", "none", "list"],
)
def test_a_contribution_is_exactly_64_lowercase_hex_digits(value):
    game = dealing()
    game.reject(0, contribute(value), "bad_contribution")
    game.reject(0, {"type": "contribute"}, "bad_contribution")


def test_a_seat_contributes_once_per_round():
    game = dealing()
    game.send(0, contribute(C0))
    game.reject(0, contribute(C1), "already_contributed")


def test_a_contribution_after_the_deal_is_refused_even_once_the_seed_is_revealed():
    game = dealing()
    game.send(0, contribute(C0))
    game.send(1, contribute(C1))
    game.reject(1, contribute(other_hex(C1)), "not_dealing")
    game.start()
    # Once the round is over its seed is revealed; a contribution chosen now comes too late.
    settled = replace(game.state, phase=SETTLED, decider=None)
    assert_rejected(settled, 1, contribute(other_hex(C1)), game.now, "not_dealing")
    game.send(0, {"type": "resign"})
    assert_rejected(game.state, 1, contribute(C1), game.now, "match_over")
    plain = Table(new_match(deal([(6, 6)], [(0, 1)])))
    plain.reject(0, contribute(C0), "not_dealing")


def test_only_the_server_stands_in_and_only_for_what_is_missing():
    game = dealing()
    game.reject(0, DRAWN, "server_only")
    game.reject(None, contribute(C0), "bad_command")
    game.reject(None, {**DRAWN, "value": C0}, "bad_command")
    game.reject(2, contribute(C0), "not_a_player")


@pytest.mark.parametrize(
    "command",
    [
        {"type": "start"},
        {"type": "play", "tile": [6, 6], "place": None},
        {"type": "draw"},
        {"type": "offer", "amount": 15},
        {"type": "waive"},
    ],
)
def test_nothing_but_contributions_resign_and_void_happens_while_dealing(command):
    game = dealing()
    game.reject(0, command, "dealing")
    if command["type"] == "start":
        game.reject(None, command, "dealing")
    game.reject(None, {"type": "timeout"}, "dealing")


def test_a_player_may_resign_while_the_round_is_dealt():
    game = dealing()
    game.send(0, contribute(C0))
    game.send(1, {"type": "resign"})
    assert game.state.result.winner == 0 and game.state.result.reason == "resign"


def test_the_server_stands_in_for_a_silent_player_with_the_committed_value():
    game = dealing()
    game.send(1, contribute(C1), after_ms=100)
    events = game.send(None, DRAWN, after_ms=30_000)
    stand_in = server_contribution(commitment_of(SEED), 0)
    assert events == [
        {
            "seq": 2,
            "type": "contribute",
            "seat": 0,
            "at_ms": T0 + 30_100,
            "value": stand_in,
            "source": "server",
            "from_player": False,
        }
    ]
    assert game.state.phase == "ready"
    assert game.state.banks_ms == (120_000, 120_000)
    assert game.state.hands == deal_with_contributions(SEED, stand_in, C1, 1).hands


def test_the_server_stands_in_for_both_when_neither_contributes():
    game = dealing()
    events = game.send(None, DRAWN)
    assert [(e["seat"], e["source"]) for e in events] == [(0, "server"), (1, "server")]
    assert game.state.phase == "ready"


def test_in_pass_and_play_the_device_contributes_for_both_seats():
    game = dealing(hotseat=True)
    assert game.send(0, contribute(C0))[0]["source"] == "device"
    assert game.send(1, contribute(C1))[0]["from_player"] is True
    assert game.state.phase == "ready"


# --- the record --------------------------------------------------------------------------------


def recorded(game: Table) -> dict:
    return new_record(
        game.state,
        match_id="fair",
        mode="online",
        rated=False,
        created_at="2025-11-30T10:00:00Z",
        players=[{"seat": 0, "username": "a"}, {"seat": 1, "username": "b"}],
    )


def step(game: Table, record: dict, seat, command: dict) -> None:
    """Send the command and record its events, as the server does."""
    events = game.send(seat, command)
    add_events(record, game.state, events)


def test_the_record_has_no_tiles_until_the_round_is_dealt_then_tiles_and_contributions():
    game = dealing()
    record = recorded(game)
    header = record["rounds"][0]
    assert (header["hands"], header["boneyard"], header["contributions"]) == (None, None, None)
    assert header["commitment"] == commitment_of(SEED) and header["seed"] is None
    step(game, record, 0, contribute(C0))
    assert header["hands"] is None
    step(game, record, None, DRAWN)
    stand_in = server_contribution(commitment_of(SEED), 1)
    assert header["contributions"] == [
        {"seat": 0, "value": C0, "source": "player", "from_player": True},
        {"seat": 1, "value": stand_in, "source": "server", "from_player": False},
    ]
    assert header["hands"] == [[list(t) for t in hand] for hand in game.state.hands]
    assert replay(record) == replace(game.state, deal=replace(game.state.deal, seed=None))


def test_a_match_resigned_while_its_round_is_dealt_replays_and_reveals_the_seed():
    game = dealing()
    record = recorded(game)
    step(game, record, 1, contribute(C1))
    step(game, record, 0, {"type": "resign"})
    header = record["rounds"][0]
    assert header["seed"] == SEED and header["hands"] is None and header["contributions"] is None
    assert replay(record) == game.state


def merged(record: dict, change) -> dict:
    """The record with ``change`` merged into it as PostgreSQL's ``||``, ``jsonb_set`` and
    ``jsonb_insert`` do it (the top level's keys replaced; so are the last round's; the round
    added goes after it): matches/rows.py."""
    record = copy.deepcopy(record)
    record["rounds"][-1].update(change.last_round)
    record.update(change.record)
    if change.added_round is not None:
        record["rounds"].append(change.added_round)
    return record


@pytest.mark.parametrize(
    "hotseat, contributions",
    [
        (False, ((0, contribute(C0)), (1, contribute(C1)))),
        (True, ((0, {**contribute(C0), "seat": 0}), (1, {**contribute(C1), "seat": 1}))),
        (False, ((1, contribute(C1)), (None, DRAWN))),  # the server stands in for seat 0
    ],
    ids=["online", "pass-and-play", "one stood in for"],
)
def test_a_header_change_made_apart_from_the_record_is_what_update_header_writes(
    hotseat, contributions
):
    # A store that keeps the header whole merges the change into it where it is, without
    # reading it: the same header as one read, updated and written back.
    game = dealing(hotseat=hotseat)
    record = recorded(game)
    for seat, command in contributions:
        before, events = copy.deepcopy(record), game.send(seat, command)
        update_header(record, game.state)
        assert merged(before, header_change(game.state, events)) == record
        assert (record["rounds"][0]["hands"] is None) == game.state.deal.is_sealed
    assert record["rounds"][0]["hands"] is not None  # dealt by the last contribution
    # A start changes nothing in the header but its events: no change to make.
    assert header_change(game.state, game.send(starter(game.state), {"type": "start"})) is None


def test_a_rounds_end_made_apart_from_the_record_is_what_update_header_and_add_round_write():
    # The round's seed is revealed and the next round, sealed, is added after it: the same
    # header as one read, updated, given the next round and written back.
    game = dealing()
    record = recorded(game)
    for seat, value in ((0, C0), (1, C1)):
        step(game, record, seat, contribute(value))
    game.start()
    rng = random.Random(0)
    while True:
        decider = game.state.decider
        events = game.send(decider, GreedyBot().choose(game.state, decider, rng), after_ms=1_000)
        if game.state.round_over:
            break
        add_events(record, game.state, events)
    assert game.state.result is None
    before = copy.deepcopy(record)
    update_header(record, game.state)
    nxt = begin_dealing(next_round(game.state, sealed_deal(other_hex(SEED))))
    add_round(record, nxt)
    made = merged(before, with_round_added(header_change(game.state, events), nxt))
    assert made == record
    assert made["rounds"][0]["seed"] == SEED and made["rounds"][1]["hands"] is None
    assert made["rounds"][1]["commitment"] == commitment_of(other_hex(SEED))


def test_a_live_record_waiting_for_a_contribution_replays_to_a_state_the_server_can_finish():
    game = dealing()
    record = recorded(game)
    step(game, record, 0, contribute(C0))
    live = replay(copy.deepcopy(record))
    assert live.phase == "dealing" and live.deal.contributions[1] is None
    # The server keeps the seed apart and puts it back before the next command.
    resumed = replace(live, deal=replace(live.deal, seed=SEED))
    after, _ = apply(resumed, 1, contribute(C1), game.now + 1)
    assert after.hands == deal_with_contributions(SEED, C0, C1, 1).hands


def test_fair_matches_played_to_the_end_replay_to_the_same_state():
    for seed in range(6):
        played = play_match(seed, fair=True, bots=("greedy", "random"), quit_chance=0.01)
        rounds = played.record["rounds"]
        assert all("contributions" in r for r in rounds)
        assert replay(played.record) == played.state


def test_a_new_round_of_a_fair_match_is_added_while_it_waits():
    game = dealing()
    record = recorded(game)
    for seat, value in ((0, C0), (1, C1)):
        step(game, record, seat, contribute(value))
    settled = replace(game.state, phase=SETTLED, next_jockey=None)
    nxt = begin_dealing(next_round(settled, sealed_deal(other_hex(SEED))))
    add_round(record, nxt)
    assert record["rounds"][1]["hands"] is None
    assert record["rounds"][1]["commitment"] == commitment_of(other_hex(SEED))


def test_a_contribution_slipped_into_a_record_after_the_deal_is_caught():
    record = play_match(3, fair=True).record
    events = record["rounds"][0]["events"]
    start = next(i for i, e in enumerate(events) if e["type"] == "start")
    forged = {**events[0], "seq": events[start]["seq"], "at_ms": events[start]["at_ms"]}
    events.insert(start + 1, forged)
    _, problems = audit(record)
    assert any(
        "contribute is illegal here" in p.message and "(not_dealing)" in p.message for p in problems
    ), problems

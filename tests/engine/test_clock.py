"""RULES §7: a bank for the match plus a fresh 10 s delay per genuinely new decision."""

import pytest

from engine import ClockConfig, Flagged, apply, device_holder, next_round, starter, view

from .builders import auction_table, deal, play_cmd, table

BANK, DELAY = 120_000, 10_000


@pytest.mark.parametrize(
    "think_ms, bank_left",
    [(0, BANK), (8_000, BANK), (10_000, BANK), (13_000, BANK - 3_000), (10_001, BANK - 1)],
)
def test_the_delay_is_free_and_only_the_rest_comes_from_the_bank(think_ms, bank_left):
    assert ClockConfig().bank_after(0, BANK, think_ms) == bank_left


def opened(after_ms):
    """Seat 0 opens [6|6] ``after_ms`` into the first turn."""
    game = table([(6, 6), (0, 1)], [(0, 6), (1, 2)])
    game.start()
    (event,) = game.play(0, (6, 6), after_ms=after_ms)
    return game, event


def test_a_decision_in_8_s_costs_nothing():
    _, event = opened(8_000)
    assert event["banks_ms"] == [BANK, BANK]


def test_a_decision_in_13_s_costs_3_s():
    _, event = opened(13_000)
    assert event["banks_ms"] == [BANK - 3_000, BANK]


def test_the_next_decision_gets_a_fresh_delay_not_a_fresh_bank():
    game, _ = opened(13_000)
    (event,) = game.play(1, (0, 6), (6, 6), "chain_a", after_ms=9_000)
    assert event["banks_ms"] == [BANK - 3_000, BANK]
    assert game.state.turn_start_ms == game.now


def test_a_draw_keeps_the_delay():
    game = table([(6, 6), (0, 1)], [(0, 2), (1, 1)], draw_first=[(0, 3), (2, 6)])
    game.start()
    game.play(0, (6, 6))
    turn_start = game.now
    game.draw(1, after_ms=6_000)
    game.draw(1, after_ms=3_000)
    assert game.state.turn_start_ms == turn_start
    (event,) = game.play(1, (2, 6), (6, 6), "chain_a", after_ms=4_000)
    assert event["banks_ms"] == [BANK, BANK - 3_000]


def test_time_spent_drawing_stays_charged_when_the_turn_ends_in_a_mandatory_pass():
    game = table([(6, 6), (5, 6), (0, 1)], [(1, 1), (2, 2)], boneyard=[(0, 3), (0, 4)])
    game.start()
    game.play(0, (6, 6))
    game.draw(1, after_ms=7_000)
    (_, passed) = game.draw(1, after_ms=7_000)
    assert (passed["type"], passed["auto"], passed["banks_ms"]) == (
        "pass",
        True,
        [BANK, BANK - 4_000],
    )


def test_the_deadline_is_turn_start_plus_delay_plus_bank():
    game = table([(6, 6), (0, 1)], [(0, 6), (1, 2)])
    game.start()
    assert game.state.deadline_ms == game.now + DELAY + BANK


def test_a_command_arriving_exactly_at_the_deadline_is_flagged_and_loses_on_time_then():
    game = table([(6, 6), (0, 1)], [(0, 6), (1, 2)])
    game.start()
    deadline = game.state.deadline_ms
    state, events = flagged = apply(game.state, 0, play_cmd((6, 6)), deadline)
    assert isinstance(flagged, Flagged)
    assert [(e["type"], e["seat"], e["at_ms"]) for e in events] == [("timeout", 0, deadline)]
    assert (state.result.winner, state.result.reason) == (1, "time")
    assert (0, 0) == (state.banks_ms[0], len(state.layout.placements))


def test_a_late_command_is_flagged_before_its_own_rules_are_read():
    game = table([(6, 6), (0, 1)], [(0, 6), (1, 2)])
    game.start()
    late = game.state.deadline_ms + 5_000
    assert isinstance(apply(game.state, 0, {"type": "play", "tile": "garbage"}, late), Flagged)
    # Only the player whose clock ran out is flagged; the other one is simply not to act.
    game.reject(1, play_cmd((0, 6)), "not_your_turn", after_ms=late - game.now)


def test_a_command_arriving_1_ms_before_the_deadline_is_accepted_with_1_ms_left():
    _, event = opened(DELAY + BANK - 1)
    assert event["banks_ms"] == [1, BANK]


@pytest.mark.parametrize("kind, reason", [("timeout", "time"), ("abandon", "abandon")])
def test_the_server_ends_a_match_on_time_only_at_or_after_the_deadline(kind, reason):
    game = table([(6, 6), (0, 1)], [(0, 6), (1, 2)])
    game.start()
    game.reject(None, {"type": kind}, "not_expired", after_ms=DELAY + BANK - 1)
    (event,) = game.send(None, {"type": kind}, after_ms=DELAY + BANK)
    assert (event["type"], event["seat"], event["banks_ms"]) == (kind, 0, [0, BANK])
    assert (game.state.result.winner, game.state.result.reason, game.state.phase) == (
        1,
        reason,
        "finished",
    )


def test_the_auction_clock_switches_with_each_raise_and_an_accept_starts_the_openers_clock():
    game = auction_table([(6, 6), (0, 1)], [(5, 5), (0, 2)], jockey=0)
    game.start()
    game.offer(1, 15, after_ms=12_000)
    assert (game.state.decider, game.state.turn_start_ms) == (0, game.now)
    (event,) = game.accept(0, after_ms=15_000)
    assert event["banks_ms"] == [BANK - 5_000, BANK - 2_000]
    assert (game.state.decider, game.state.turn_start_ms) == (1, game.now)


def test_clocks_stand_while_a_round_is_dealt_and_until_start():
    game = table([(6, 6), (0, 1)], [(0, 6), (1, 2)])
    assert game.state.deadline_ms is None
    game.reject(None, {"type": "timeout"}, "clock_not_running", after_ms=10 * BANK)
    game.reject(0, play_cmd((6, 6)), "clocks_standing")
    game.start(after_ms=10 * BANK)
    (event,) = game.play(0, (6, 6), after_ms=DELAY)
    assert event["banks_ms"] == [BANK, BANK]


def test_banks_carry_across_rounds_and_clocks_stand_between_them():
    game = table([(6, 6)], [(0, 6), (1, 2)])
    game.start()
    game.play(0, (6, 6), after_ms=DELAY + 4_000)
    assert game.state.phase == "settled" and game.state.deadline_ms is None
    game.reject(None, {"type": "timeout"}, "clock_not_running", after_ms=10 * BANK)
    game.state = next_round(game.state, deal([(2, 3)], [(1, 1), (5, 5)]))
    assert game.state.banks_ms == (BANK - 4_000, BANK)
    game.start(after_ms=10 * BANK)
    game.offer(1, 15, after_ms=DELAY + 1_000)
    (event,) = game.accept(0, after_ms=DELAY + 2_000)
    assert event["banks_ms"] == [BANK - 6_000, BANK - 1_000]


def test_a_pass_and_play_hand_over_stops_the_clocks_until_the_next_player_reveals():
    game = table([(6, 6), (0, 1)], [(0, 6), (1, 2)], hotseat=True)
    game.start()
    game.play(0, (6, 6))
    assert (game.state.phase, game.state.resume_phase, game.state.deadline_ms) == (
        "handover",
        "play",
        None,
    )
    game.reject(1, play_cmd((0, 6), (6, 6), "chain_a"), "clocks_standing", after_ms=DELAY + BANK)
    game.reject(None, {"type": "timeout"}, "clock_not_running", after_ms=DELAY + BANK)
    (start,) = game.start(after_ms=10 * BANK)
    assert (start["type"], game.state.phase, game.state.turn_start_ms) == (
        "start",
        "play",
        game.now,
    )
    (event,) = game.play(1, (0, 6), (6, 6), "chain_a", after_ms=DELAY)
    assert event["banks_ms"] == [BANK, BANK]


def test_a_hand_over_happens_in_the_auction_too_but_not_when_the_same_player_goes_on():
    game = auction_table([(6, 6), (0, 1)], [(5, 5), (0, 2)], jockey=0, hotseat=True)
    game.start()
    assert game.state.phase == "auction"
    game.offer(1, 15)
    assert (game.state.phase, game.state.resume_phase) == ("handover", "auction")
    game.start()
    game.accept(0)
    assert (game.state.phase, game.state.decider) == ("handover", 1)
    game.start()
    game.play(1, (5, 5))
    assert (game.state.phase, game.state.resume_phase, game.state.decider) == (
        "handover",
        "play",
        0,
    )


def test_a_draw_in_pass_and_play_keeps_the_device_with_the_drawer():
    game = table([(6, 6), (0, 1)], [(0, 2), (1, 1)], hotseat=True, draw_first=[(0, 3), (2, 6)])
    game.start()
    game.play(0, (6, 6))
    game.start()
    game.draw(1)
    assert (game.state.phase, game.state.decider) == ("play", 1)


def test_a_forced_waive_at_start_hands_the_device_to_the_jockey_before_their_clock_runs():
    # The jockey's opponent cannot afford the smallest offer: the engine waives for them at
    # Start, and the opening passes to the jockey, who has not seen the device yet.
    game = auction_table(
        [(6, 6), (0, 1)], [(5, 5), (0, 2)], jockey=0, balances=(290, 10), hotseat=True
    )
    assert starter(game.state) == 1
    start, waive = game.start()
    assert (waive["type"], waive["seat"], waive.get("auto")) == ("waive", 1, True)
    assert (game.state.phase, game.state.resume_phase, game.state.decider) == (
        "handover",
        "play",
        0,
    )
    assert view(game.state, 0)["hand"] is None and game.state.deadline_ms is None
    assert starter(game.state) == 0 == device_holder(game.state)
    game.start(after_ms=15_000)  # the jockey takes the device and reveals 15 s later
    (play,) = game.play(0, (6, 6), after_ms=DELAY)
    assert play["banks_ms"] == [BANK, BANK]


def test_a_forced_waive_in_an_online_match_needs_no_hand_over():
    game = auction_table([(6, 6), (0, 1)], [(5, 5), (0, 2)], jockey=0, balances=(290, 10))
    game.start()
    assert (game.state.phase, game.state.decider) == ("play", 0)

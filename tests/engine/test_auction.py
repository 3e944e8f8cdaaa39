"""RULES §6: the auction for the opening after a domino."""

import pytest

from engine import legal_commands

from .builders import auction_table, play_cmd

HAND0 = [(6, 6), (0, 1), (2, 3)]
HAND1 = [(5, 5), (0, 2), (1, 4)]


def started(**kw):
    game = auction_table(HAND0, HAND1, **kw)
    game.start()
    return game


def test_the_jockeys_opponent_acts_first_and_may_waive_or_offer_at_least_15():
    game = started(jockey=0)
    assert (game.state.phase, game.state.decider) == ("auction", 1)
    commands = legal_commands(game.state, 1)
    assert commands[0] == {"type": "waive"}
    assert [c["amount"] for c in commands[1:-1]] == list(range(15, 155, 5))


def test_a_waive_lets_the_jockey_open_free_with_any_tile():
    game = started(jockey=0)
    (event,) = game.waive(1)
    assert (event["type"], event["balances"], event.get("auto")) == ("waive", [150, 150], None)
    assert (game.state.phase, game.state.decider, game.state.forced_tile) == ("play", 0, None)
    assert [c for c in legal_commands(game.state, 0) if c["type"] == "play"] == [
        play_cmd(t) for t in sorted(HAND0)
    ]
    game.play(0, (0, 1))


def test_an_accepted_offer_is_paid_in_full_by_a_non_jockey_who_then_opens_with_any_tile():
    game = started(jockey=0)
    game.offer(1, 25)
    (event,) = game.accept(0)
    assert (event["paid"], event["balances"]) == (25, [175, 125])
    assert (game.state.decider, game.state.forced_tile) == (1, None)
    game.play(1, (0, 2))


def test_an_accepted_jockey_offer_of_20_costs_5():
    game = started(jockey=0)
    game.offer(1, 15)
    game.offer(0, 20)
    (event,) = game.accept(1)
    assert (event["paid"], event["balances"]) == (5, [145, 155])
    assert game.state.decider == 0


def test_the_discount_is_only_the_jockeys_and_never_paid_out():
    game = started(jockey=1)
    game.offer(0, 15)
    (event,) = game.accept(1)
    assert (event["paid"], event["balances"]) == (15, [135, 165])


@pytest.mark.parametrize(
    "amount, code",
    [
        (10, "offer_below_minimum"),
        (17, "offer_not_multiple_of_5"),
        (155, "offer_unaffordable"),
        (-5, "offer_below_minimum"),
        ("20", "bad_command"),
        (20.0, "bad_command"),
        (None, "bad_command"),
    ],
)
def test_a_first_offer_is_a_multiple_of_5_from_15_to_what_the_offerer_could_pay(amount, code):
    started(jockey=0).reject(1, {"type": "offer", "amount": amount}, code)


@pytest.mark.parametrize(
    "amount, code",
    [(20, "offer_below_minimum"), (27, "offer_not_multiple_of_5"), (170, "offer_unaffordable")],
)
def test_a_raise_is_at_least_5_more_and_a_multiple_of_5(amount, code):
    game = started(jockey=0)
    game.offer(1, 20)
    game.reject(0, {"type": "offer", "amount": amount}, code)
    game.offer(0, 25)
    game.offer(1, 30)
    assert game.state.auction.offer == 30 and game.state.decider == 0


def test_the_jockey_may_offer_up_to_its_balance_plus_the_discount():
    game = started(jockey=0, balances=(40, 260))
    game.offer(1, 15)
    offers = [c["amount"] for c in legal_commands(game.state, 0) if c["type"] == "offer"]
    assert offers == [20, 25, 30, 35, 40, 45, 50, 55]


def test_a_player_who_cannot_afford_the_minimum_offer_waives_at_once_and_costs_no_time():
    game = auction_table(HAND0, HAND1, jockey=0, balances=(290, 10))
    events = game.start(after_ms=5_000)
    assert [(e["type"], e["seat"], e.get("auto")) for e in events] == [
        ("start", None, None),
        ("waive", 1, True),
    ]
    assert events[1]["banks_ms"] == [120_000, 120_000]
    assert (game.state.decider, game.state.turn_start_ms) == (0, game.now)


def test_a_player_who_cannot_afford_the_minimum_raise_accepts_at_once_and_costs_no_time():
    game = started(jockey=0, balances=(10, 290))
    events = game.offer(1, 30, after_ms=12_000)
    assert [(e["type"], e["seat"], e.get("auto")) for e in events] == [
        ("offer", 1, None),
        ("accept", 0, True),
    ]
    offer, accept = events
    assert offer["banks_ms"] == [120_000, 118_000]
    assert (accept["paid"], accept["balances"], accept["banks_ms"]) == (
        30,
        [40, 260],
        [120_000, 118_000],
    )
    assert (game.state.phase, game.state.decider, game.state.turn_start_ms) == ("play", 1, game.now)


@pytest.mark.parametrize(
    "jockey, balances, offers, final",
    [(0, (150, 15), [(1, 15)], [165, 0]), (0, (5, 295), [(1, 15), (0, 20)], [0, 300])],
    ids=["non-jockey pays its last 15", "jockey pays its last 5"],
)
def test_paying_ones_whole_balance_loses_at_once_before_the_opening(
    jockey, balances, offers, final
):
    game = started(jockey=jockey, balances=balances)
    for seat, amount in offers:
        game.offer(seat, amount)
    acceptor = 1 - offers[-1][0]
    (event,) = game.accept(acceptor)
    assert event["balances"] == final
    assert game.state.phase == "finished"
    assert (game.state.result.winner, game.state.result.reason) == (acceptor, "points")
    assert game.state.layout.is_empty


def test_a_waive_is_impossible_once_an_offer_stands_and_an_accept_needs_one():
    game = started(jockey=0)
    game.reject(1, {"type": "accept"}, "nothing_to_accept")
    game.offer(1, 15)
    game.reject(0, {"type": "waive"}, "cannot_waive")


def test_plays_are_refused_during_the_auction_and_offers_after_it():
    game = started(jockey=0)
    game.reject(1, play_cmd((0, 2)), "auction_on")
    game.reject(1, {"type": "draw"}, "auction_on")
    game.waive(1)
    game.reject(0, {"type": "offer", "amount": 15}, "no_auction")
    game.reject(0, {"type": "accept"}, "no_auction")

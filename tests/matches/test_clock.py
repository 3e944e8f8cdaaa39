"""The match clock through the service (RULES §7), with injected time: no clock is read and
nothing sleeps. Default clock: a 120 s bank for the match, a 10 s delay per decision."""

import pytest

import engine
from engine.legal import legal_plays
from matches import services
from matches.models import Match
from tests.matches.conftest import T0

BANK, DELAY = 120_000, 10_000

pytestmark = pytest.mark.django_db


def test_clocks_stand_until_start_then_the_first_decision_gets_the_delay_and_the_bank(table):
    assert table.match.deadline_kind == Match.DeadlineKind.START
    assert table.match.deadline_ms == T0 + 20_000  # START_GRACE_MS
    table.start(after_ms=15_000)  # the 15 s before Start cost nothing
    state = table.state
    assert state.phase == "play"
    assert table.match.deadline_kind == Match.DeadlineKind.DECISION
    assert table.match.deadline_ms == T0 + 15_000 + DELAY + BANK
    assert state.banks_ms == (BANK, BANK)


def test_a_decision_in_8_s_costs_nothing(table):
    table.start()
    opener = table.state.decider
    table.decide(after_ms=8_000)
    assert table.state.banks_ms[opener] == BANK
    assert table.events()[-1]["banks_ms"][opener] == BANK


def test_a_decision_in_13_s_costs_3_s(table):
    table.start()
    opener = table.state.decider
    table.decide(after_ms=13_000)
    assert table.state.banks_ms[opener] == BANK - 3_000
    play = [e for e in table.events() if e["type"] == "play"][-1]
    assert play["banks_ms"][opener] == BANK - 3_000


def test_the_next_decision_starts_its_delay_when_the_previous_one_arrived(table):
    table.start()
    table.decide(after_ms=4_000)
    state = table.state
    assert state.turn_start_ms == table.now
    assert table.match.deadline_ms == table.now + DELAY + state.banks_ms[state.decider]


def _must_draw_and_will_fit(state):
    """The decider cannot play, and a tile of the boneyard will fit (the turn ends in a play)."""
    return (
        state.phase == "play"
        and not legal_plays(state, state.decider)
        and state.drawn is None
        and any(state.layout.fits(tile) for tile in state.boneyard)
    )


def test_draws_keep_the_delay_of_the_turn(table):
    state = table.play_until(_must_draw_and_will_fit, step_ms=1_000)
    seat, turn_start, bank = state.decider, state.turn_start_ms, state.banks_ms[state.decider]
    deadline = table.match.deadline_ms
    assert deadline == turn_start + DELAY + bank
    table.submit(seat, {"type": "draw"}, after_ms=6_000 - (table.now - turn_start))
    while table.state.drawn is None:
        assert table.match.deadline_ms == deadline  # a draw gets no new delay
        table.submit(seat, {"type": "draw"}, after_ms=500)
    assert table.match.deadline_ms == deadline
    state = table.state
    place = state.layout.places_for(state.drawn)[0]
    table.submit(
        seat,
        engine.legal.play_command(state.drawn, place),
        after_ms=turn_start + 13_000 - table.now,
    )
    assert table.state.banks_ms[seat] == bank - 3_000  # 13 s for the whole turn, draws included


def test_banks_carry_across_rounds_and_clocks_stand_between_rounds(table):
    # Every decision takes 12 s, so each costs 2 s of its player's bank.
    state = table.play_until(lambda s: s.round_no == 2, step_ms=12_000)
    assert state.phase == "dealing"
    settle = table.events()[-1]
    assert settle["type"] == "settle"
    last_banks = [e for e in table.events() if "banks_ms" in e][-1]["banks_ms"]
    assert list(state.banks_ms) == last_banks  # carried over, not refilled
    assert min(state.banks_ms) < BANK
    # Between rounds the clocks stand while the next round is dealt (DEAL_CONTRIBUTION_MS)...
    assert table.match.deadline_kind == Match.DeadlineKind.DEAL
    assert table.match.deadline_ms == settle["at_ms"] + 5_000
    assert engine.view(state, 0)["clock"]["running"] is False
    table.deal(after_ms=4_000)
    state = table.state
    assert state.phase == "ready" and list(state.banks_ms) == last_banks
    # ... and until Continue, whose grace begins at the deal: 19 s later costs nobody anything.
    assert table.match.deadline_kind == Match.DeadlineKind.START
    assert table.match.deadline_ms == table.now + 20_000
    assert engine.view(state, 0)["clock"]["running"] is False
    table.start(after_ms=19_000)
    state = table.state
    assert list(state.banks_ms) == last_banks
    assert table.match.deadline_ms == table.now + DELAY + state.banks_ms[state.decider]


def test_the_server_presses_start_when_the_grace_runs_out(table):
    assert services.match_expire(match_id=table.match.pk, now_ms=T0 + 19_999) == "early"
    assert services.match_expire(match_id=table.match.pk, now_ms=T0 + 20_000) == "start"
    table.match.refresh_from_db()
    start = table.events()[-1]
    assert (start["type"], start["seat"], start["at_ms"]) == ("start", None, T0 + 20_000)
    assert table.match.deadline_ms == T0 + 20_000 + DELAY + BANK


@pytest.fixture
def hotseat(make_user):
    from tests.matches.conftest import Table

    user = make_user("solo")
    match = services.match_create(
        player0=user,
        player1=user,
        mode=Match.Mode.HOTSEAT,
        now_ms=T0,
        clock=engine.ClockConfig(bank_ms=BANK, delay_ms=DELAY),
    )
    return Table(match, {0: user, 1: user}, T0)


def test_clocks_stand_during_a_pass_and_play_hand_over(hotseat):
    hotseat.deal()
    hotseat.start(after_ms=1_000)
    first = hotseat.state.decider
    hotseat.decide(after_ms=2_000)
    state = hotseat.state
    assert state.phase == "handover"
    assert engine.view(state, None)["clock"]["running"] is False
    assert hotseat.match.deadline_kind == Match.DeadlineKind.START
    assert hotseat.match.deadline_ms == hotseat.now + 300_000  # HOTSEAT_REVEAL_GRACE_MS
    # The next player reveals a minute later, then decides in 8 s: the minute cost nothing.
    hotseat.submit(1 - first, {"type": "start"}, after_ms=60_000)
    reveal = hotseat.events()[-1]
    assert (reveal["type"], reveal["seat"]) == ("start", 1 - first)
    assert hotseat.match.deadline_ms == reveal["at_ms"] + DELAY + BANK
    hotseat.decide(after_ms=8_000)
    assert hotseat.state.banks_ms == (BANK, BANK)

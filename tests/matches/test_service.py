"""The match service: the one writer of a match. Real database, injected time."""

import hashlib
import random
import uuid
from datetime import timedelta

import pytest

import engine
from engine.legal import legal_plays, play_command
from matches import services, tasks, timekeeping
from matches.models import TimingFault
from matches.selectors import match_record
from tests.matches.conftest import T0, Table

pytestmark = pytest.mark.django_db


def snapshot(table: Table) -> tuple:
    table.match.refresh_from_db()
    m = table.match
    return (
        m.record,
        m.seq,
        m.status,
        m.deadline_ms,
        m.deadline_kind,
        m.cseq0,
        m.cseq1,
        bytes(m.snapshot),
    )


def assert_rejected(table: Table, seat, command, code: str, *, user=None) -> None:
    """The command is refused with ``code`` and changes nothing (its cseq is not used up)."""
    before = snapshot(table)
    cseq = table.cseq[seat if seat in (0, 1) else 0] + 1
    with pytest.raises(services.CommandRejected) as caught:
        services.match_submit(
            match_id=table.match.pk,
            user=user or table.users[seat],
            command=command,
            arrival_ms=table.now + 100,
            cseq=cseq,
        )
    assert caught.value.code == code, caught.value.message
    assert caught.value.message
    assert snapshot(table) == before


def opponent_tile(state, seat):
    return list(state.hands[1 - seat][0])


# --- who may send what ---------------------------------------------------------------------------


def test_commands_before_start_are_refused(table, make_user):
    first = engine.first_to_act(table.state)
    some_tile = list(table.state.hands[first][0])
    assert_rejected(
        table, first, {"type": "play", "tile": some_tile, "place": None}, "clocks_standing"
    )
    assert_rejected(table, 1 - first, {"type": "start"}, "not_your_start")
    assert_rejected(table, first, {"type": "dance"}, "unknown_command")
    assert_rejected(table, first, {"type": 7}, "bad_command")
    assert_rejected(table, first, ["start"], "bad_command")
    assert_rejected(table, first, {"type": "timeout"}, "server_only")
    assert_rejected(table, first, {"type": "void", "why": "I say so"}, "server_only")
    assert_rejected(table, first, {"type": "start"}, "not_a_player", user=make_user("kibitzer"))


def test_a_command_for_a_match_that_does_not_exist_is_refused(table):
    for match_id in (uuid.uuid4(), "not-a-uuid", "", None, 7, ["x"], "'; DROP TABLE x; --"):
        with pytest.raises(services.CommandRejected) as caught:
            services.match_submit(
                match_id=match_id, user=table.users[0], command={"type": "start"}, arrival_ms=T0
            )
        assert caught.value.code == "no_such_match"


def test_a_command_for_the_other_seat_is_refused(table):
    table.start()
    state = table.state
    decider = state.decider
    forced = list(state.forced_tile)
    # The seat field is a pass-and-play device's; online it cannot make a player act for the other.
    assert_rejected(
        table,
        1 - decider,
        {"type": "play", "tile": forced, "place": None, "seat": decider},
        "not_your_turn",
    )
    assert_rejected(table, 1 - decider, {"type": "draw"}, "not_your_turn")


def test_the_opening_turn_refuses_every_wrong_play(table):
    table.start()
    state = table.state
    decider = state.decider
    forced = list(state.forced_tile)
    other = next(list(t) for t in state.hands[decider] if list(t) != forced)
    assert_rejected(
        table, decider, {"type": "play", "tile": other, "place": None}, "wrong_opening_tile"
    )
    assert_rejected(
        table,
        decider,
        {"type": "play", "tile": forced, "place": {"tile": forced, "side": "high"}},
        "opening_has_no_place",
    )
    assert_rejected(
        table,
        decider,
        {"type": "play", "tile": opponent_tile(state, decider), "place": None},
        "tile_not_in_hand",
    )
    assert_rejected(table, decider, {"type": "play", "tile": [7, 9], "place": None}, "bad_command")
    assert_rejected(table, decider, {"type": "offer", "amount": 15}, "no_auction")
    assert_rejected(table, decider, {"type": "start"}, "already_started")
    with pytest.raises(services.CommandRejected) as caught:  # an arrival before the last event
        services.match_submit(
            match_id=table.match.pk,
            user=table.users[decider],
            command=play_command(state.forced_tile, None),
            arrival_ms=table.now - 1,
        )
    assert caught.value.code == "time_went_backwards"


def test_plays_on_the_layout_refuse_wrong_places(table):
    state = table.play_until(
        lambda s: s.phase == "play" and s.layout.placements and legal_plays(s, s.decider)
    )
    decider = state.decider
    tile, place = legal_plays(state, decider)[0]
    assert_rejected(table, decider, play_command(tile, None), "place_required")
    assert_rejected(
        table,
        decider,
        {"type": "play", "tile": list(tile), "place": {"tile": [9, 9], "side": "high"}},
        "bad_command",
    )
    assert_rejected(
        table,
        decider,
        {"type": "play", "tile": list(tile), "place": {"tile": list(tile), "side": "up"}},
        "bad_command",
    )
    closed = next(
        (t, s)
        for t, s in [
            (tuple(p.tile), side)
            for p in state.layout.placements
            for side in ("high", "low", "chain_a", "chain_b", "arm_a", "arm_b")
        ]
        if state.layout.open_value((t, s)) is None
    )
    assert_rejected(table, decider, play_command(tile, closed), "place_not_open")
    mismatched = next(
        (
            (t, (pt, side))
            for t in state.hands[decider]
            for pt, side, value in state.layout.open_places
            if value not in t
        ),
        None,
    )
    if mismatched:
        assert_rejected(table, decider, play_command(*mismatched), "halves_do_not_match")
    assert_rejected(table, decider, {"type": "draw"}, "can_play")


def test_a_drawn_tile_that_fits_must_be_played(table):
    from tests.matches.test_clock import _must_draw_and_will_fit

    state = table.play_until(_must_draw_and_will_fit)
    seat = state.decider
    while table.state.drawn is None:
        table.submit(seat, {"type": "draw"}, after_ms=100)
    state = table.state
    others = [t for t in state.hands[seat] if t != state.drawn]
    assert_rejected(table, seat, {"type": "draw"}, "must_play_drawn")
    if others:
        place = (state.layout.open_places[0][0], state.layout.open_places[0][1])
        assert_rejected(table, seat, play_command(others[0], place), "must_play_drawn")


def test_the_auction_refuses_every_wrong_bid(table):
    state = table.play_until(lambda s: s.phase == "auction")
    seat = state.decider
    assert_rejected(table, seat, play_command(state.hands[seat][0], None), "auction_on")
    assert_rejected(table, seat, {"type": "draw"}, "auction_on")
    assert_rejected(table, seat, {"type": "accept"}, "nothing_to_accept")
    assert_rejected(table, seat, {"type": "offer", "amount": 17}, "offer_not_multiple_of_5")
    assert_rejected(table, seat, {"type": "offer", "amount": 10}, "offer_below_minimum")
    assert_rejected(table, seat, {"type": "offer", "amount": 1_000}, "offer_unaffordable")
    assert_rejected(table, seat, {"type": "offer", "amount": "15"}, "bad_command")
    assert_rejected(table, 1 - seat, {"type": "waive"}, "not_your_turn")
    table.submit(seat, {"type": "offer", "amount": 15}, after_ms=1_000)
    assert_rejected(table, 1 - seat, {"type": "waive"}, "cannot_waive")
    assert_rejected(table, 1 - seat, {"type": "offer", "amount": 15}, "offer_below_minimum")


def test_nothing_is_taken_after_the_match_is_over(table):
    table.submit(0, {"type": "resign"})
    assert_rejected(table, 1, {"type": "start"}, "match_over")
    assert_rejected(table, 0, {"type": "resign"}, "match_over")


# --- sequence numbers, Start, resign -------------------------------------------------------------


def test_a_duplicate_cseq_is_acknowledged_and_not_applied_twice(table):
    first = engine.first_to_act(table.state)
    applied = table.submit(first, {"type": "start"}, cseq=5)
    assert applied == services.Outcome(seq=3)  # after the two contributions to the deal
    again = table.submit(first, {"type": "start"}, cseq=5, after_ms=10)
    assert again == services.Outcome(seq=3, duplicate=True)
    assert [e["type"] for e in table.events()] == ["contribute", "contribute", "start"]


def test_a_lower_cseq_that_was_never_applied_is_stale_not_a_duplicate(table):
    first = engine.first_to_act(table.state)
    table.submit(first, {"type": "start"}, cseq=8)
    with pytest.raises(services.CommandRejected) as refused:
        table.submit(first, {"type": "resign"}, cseq=7, after_ms=10)
    assert (refused.value.code, refused.value.details) == ("stale_cseq", {"last_cseq": 8})
    table.match.refresh_from_db()
    assert table.match.status == "live"
    assert [e["type"] for e in table.events()] == ["contribute", "contribute", "start"]


def test_each_recent_cseq_is_known_as_applied_and_a_skipped_one_is_not(table):
    first = engine.first_to_act(table.state)
    table.submit(first, {"type": "start"}, cseq=2)
    command = engine.GreedyBot().choose(table.state, first, random.Random(0))
    table.submit(first, command, cseq=5, after_ms=100)
    seq = table.match.seq
    assert table.submit(first, {"type": "start"}, cseq=2).duplicate is True
    assert table.submit(first, command, cseq=5).duplicate is True
    with pytest.raises(services.CommandRejected) as refused:
        table.submit(first, command, cseq=3)
    assert refused.value.code == "stale_cseq"
    assert table.match.seq == seq


def test_the_opponent_has_its_own_cseq(table):
    table.start()  # the first player's cseq 1
    second = 1 - table.state.decider
    assert table.submit(second, {"type": "resign"}, cseq=1).duplicate is False
    assert table.match.reason == "resign"


def test_start_is_pressed_by_the_first_player_to_act(table):
    first = engine.first_to_act(table.state)
    outcome = table.submit(first, {"type": "start"}, after_ms=3_000)
    event = table.events()[-1]
    assert (outcome.seq, event["type"], event["seat"], event["at_ms"]) == (
        3,  # the two contributions to the deal came first
        "start",
        first,
        T0 + 3_000,
    )
    assert table.state.decider == first


def test_continue_after_a_settlement_is_pressed_by_the_next_first_player(table):
    state = table.play_until(lambda s: s.round_no == 2 and s.phase == "ready")  # dealt
    first = engine.first_to_act(state)
    assert_rejected(table, 1 - first, {"type": "start"}, "not_your_start")
    table.submit(first, {"type": "start"}, after_ms=1_000)
    assert table.state.phase in ("play", "auction")


@pytest.mark.parametrize("phase", ["ready", "play"])
def test_a_player_may_resign_at_any_time_even_out_of_turn(table, phase):
    if phase == "play":
        table.start()
    resigner = 1 if phase == "ready" else 1 - table.state.decider
    table.submit(resigner, {"type": "resign"}, after_ms=500)
    match = table.match
    assert (match.status, match.winner, match.reason) == ("finished", 1 - resigner, "resign")
    assert (match.deadline_ms, match.deadline_kind) == (None, "")
    assert table.events()[-1] == {
        "seq": match.seq,
        "type": "resign",
        "seat": resigner,
        "at_ms": table.now,
    }


def test_a_whole_match_to_a_zero_balance(table):
    state = table.play_until(lambda s: False, step_ms=1_000)
    assert state.result.reason == "points"
    assert sorted(state.balances) == [0, 300]
    assert table.match.winner == state.balances.index(300)
    assert table.match.status == "finished"
    assert table.match.finished_at is not None


# --- the clock running out -----------------------------------------------------------------------


def test_a_clock_that_runs_out_while_its_player_is_away_is_an_abandonment(table):
    table.start()
    loser = table.state.decider
    deadline = table.match.deadline_ms
    assert services.match_expire(match_id=table.match.pk, now_ms=deadline - 1) == "early"
    assert services.match_expire(match_id=table.match.pk, now_ms=deadline) == "abandon"
    match = table.match
    match.refresh_from_db()
    assert (match.winner, match.reason) == (1 - loser, "abandon")
    last = table.events()[-1]
    assert (last["type"], last["seat"], last["at_ms"]) == ("abandon", loser, deadline)
    assert last["banks_ms"][loser] == 0
    assert services.match_expire(match_id=table.match.pk, now_ms=deadline + 5) == "nothing_due"


def test_a_clock_that_runs_out_while_its_player_is_connected_loses_on_time(table, present):
    table.start()
    loser = table.state.decider
    present(table.match, loser)
    deadline = table.match.deadline_ms
    assert services.match_expire(match_id=table.match.pk, now_ms=deadline + 20) == "timeout"
    table.match.refresh_from_db()
    assert (table.match.winner, table.match.reason) == (1 - loser, "time")
    assert not TimingFault.objects.exists()  # 20 ms late is within tolerance


def test_an_expiry_before_the_deadline_is_early_and_changes_nothing(table):
    table.start()
    deadline = table.match.deadline_ms
    assert services.match_expire(match_id=table.match.pk, now_ms=deadline - 1) == "early"
    table.match.refresh_from_db()
    assert (table.match.status, table.match.deadline_ms) == ("live", deadline)


# --- fairness ------------------------------------------------------------------------------------


def test_each_round_publishes_its_commitment_and_reveals_its_seed_when_it_ends(table):
    first_view = engine.view(table.state, 0)
    assert (
        first_view["commitment"]
        == hashlib.sha256(bytes.fromhex(table.match.secret_seed)).hexdigest()
    )
    live = match_record(table.match)
    assert live["rounds"][0]["seed"] is None
    assert live["rounds"][0]["hands"] is None and live["rounds"][0]["boneyard"] is None
    secret = table.match.secret_seed
    table.play_until(lambda s: s.round_no == 2)
    record = match_record(table.match)
    first, second = record["rounds"]
    assert first["seed"] == secret and first["commitment"] == first_view["commitment"]
    assert engine.commitment_of(first["seed"]) == first["commitment"]
    assert second["seed"] is None and second["hands"] is None  # still being played
    assert engine.view(table.state, 1)["commitment"] == second["commitment"] != first["commitment"]


def test_the_audit_catches_a_deal_that_does_not_follow_its_commitment(table):
    table.submit(0, {"type": "resign"})
    record = match_record(table.match)
    assert engine.audit(record)[1] == []
    record["rounds"][0]["commitment"] = "0" * 64
    assert any("commitment" in str(problem) for problem in engine.audit(record)[1])


# --- timing faults -------------------------------------------------------------------------------


def test_a_timeout_processed_late_counts_at_its_deadline_and_is_no_fault(table):
    table.start()
    deadline = table.match.deadline_ms
    assert services.match_expire(match_id=table.match.pk, now_ms=deadline + 30_000) == "abandon"
    table.match.refresh_from_db()
    forfeit = table.events()[-1]
    assert (forfeit["type"], forfeit["at_ms"]) == ("abandon", deadline)
    assert (table.match.status, table.match.reason) == ("finished", "abandon")
    assert not TimingFault.objects.exists()


def test_a_start_wait_processed_late_starts_the_clocks_then_and_is_no_fault(table):
    deadline = table.match.deadline_ms
    assert services.match_expire(match_id=table.match.pk, now_ms=deadline + 30_000) == "start"
    start = table.events()[-1]
    assert (start["type"], start["seat"], start["at_ms"]) == ("start", None, deadline + 30_000)
    assert not TimingFault.objects.exists()


def report(table, kind=TimingFault.Kind.UNREACHABLE):
    return services.fault_report(match_id=table.match.pk, kind=kind, detail={"error": "x"})


def test_no_fault_is_recorded_while_no_clock_runs(table):
    assert report(table) is None  # the clocks stand until Start
    table.start()
    table.submit(0, {"type": "resign"})
    assert report(table) is None  # the match is over
    assert not TimingFault.objects.exists()


def test_no_fault_is_recorded_from_the_player_whose_clock_stands(table):
    table.start()
    waiting = 1 - table.state.decider
    fault = services.fault_report(
        match_id=table.match.pk, kind=TimingFault.Kind.LATE_STAMP, detail={}, seats=[waiting]
    )
    assert fault is None and not TimingFault.objects.exists()
    assert services.fault_report(
        match_id=table.match.pk, kind="late_stamp", detail={}, seats=[table.state.decider]
    )


def test_one_incident_is_one_fault_however_many_commands_saw_it(table):
    table.start()
    faults = {report(table).pk for _ in range(50)}
    fault = TimingFault.objects.get()
    assert (faults, fault.sightings) == ({fault.pk}, 50)
    assert report(table, TimingFault.Kind.LATE_STAMP).pk != fault.pk  # another cause


def test_an_inconclusive_fault_is_left_to_staff_and_may_be_dismissed(table):
    table.start()
    fault = report(table, TimingFault.Kind.JUMP)
    assert tasks.recheck_fault(fault.pk) == "left_to_staff"
    services.fault_dismiss(fault_id=fault.pk, decided_by="referee")
    fault.refresh_from_db()
    table.match.refresh_from_db()
    assert (fault.status, fault.decided_by, table.match.status) == ("dismissed", "referee", "live")


def test_a_late_stamp_is_confirmed_automatically_and_voids_the_live_match(table):
    table.start()
    fault = report(table, TimingFault.Kind.LATE_STAMP)
    assert tasks.recheck_fault(fault.pk) == "confirmed"
    table.match.refresh_from_db()
    assert (table.match.status, table.match.winner, table.match.reason) == ("void", None, "void")
    void = table.events()[-1]
    assert (void["type"], void["seat"]) == ("void", None)
    assert tasks.recheck_fault(fault.pk) == "decided"


def test_one_failed_read_of_an_authority_that_answers_is_dismissed(table):
    table.start()
    fault = report(table)
    assert tasks.recheck_fault(fault.pk) == "dismissed"
    table.match.refresh_from_db()
    assert table.match.status == "live"


def test_an_authority_unreachable_for_longer_than_the_tolerance_voids(table, settings):
    table.start()
    fault = report(table)
    TimingFault.objects.filter(pk=fault.pk).update(
        last_seen_at=fault.detected_at + timedelta(milliseconds=settings.STAMP_LATE_TOLERANCE_MS)
    )
    assert tasks.recheck_fault(fault.pk) == "confirmed"
    table.match.refresh_from_db()
    assert table.match.status == "void"


def test_one_failed_read_during_an_outage_the_web_processes_saw_is_confirmed(table):
    from matches import webbeats
    from realtime.redis_clients import sync_redis

    table.start()
    fault = report(table)
    now_s = timekeeping.now_ms() // 1000
    seen = fault.detected_at - timedelta(seconds=10)
    TimingFault.objects.filter(pk=fault.pk).update(detected_at=seen, last_seen_at=seen)
    # The web processes could not beat from 11 to 7 seconds ago: the authority was out of reach.
    beats = [*range(now_s - 20, now_s - 11), *range(now_s - 6, now_s + 1)]
    sync_redis().zadd(webbeats.BEATS_KEY, {str(s): s for s in beats})
    assert tasks.recheck_fault(fault.pk) == "confirmed"
    table.match.refresh_from_db()
    assert table.match.status == "void"


def test_an_unreachable_authority_is_not_judged_until_the_web_processes_beat_again(table):
    from matches import webbeats
    from realtime.redis_clients import sync_redis

    table.start()
    fault = report(table)
    now_s = timekeeping.now_ms() // 1000
    beats = range(now_s - 20, now_s - 3)  # none for the last 3 seconds: they cannot beat yet
    sync_redis().zadd(webbeats.BEATS_KEY, {str(s): s for s in beats})
    assert tasks.recheck_fault(fault.pk) == "waiting"
    fault.refresh_from_db()
    assert fault.status == "suspected"


def test_a_finished_match_is_never_voided(table):
    table.start()
    fault = report(table, TimingFault.Kind.LATE_STAMP)
    table.submit(1, {"type": "resign"})
    with pytest.raises(services.CommandRejected) as refused:
        services.match_void(match_id=table.match.pk, why="test", now_ms=table.now + 1)
    assert refused.value.code == "match_over"
    services.fault_confirm(fault_id=fault.pk, decided_by="referee", now_ms=table.now + 1)
    fault.refresh_from_db()
    table.match.refresh_from_db()
    assert (fault.status, table.match.status, table.match.reason) == (
        "dismissed",
        "finished",
        "resign",
    )
    assert [e["type"] for e in table.events()] == ["contribute", "contribute", "start", "resign"]


# --- rated matches -------------------------------------------------------------------------------


@pytest.fixture
def rated_table(make_user):
    player0, player1 = make_user("ala", on_ladder=True), make_user("olek", on_ladder=True)
    match = services.match_create(player0=player0, player1=player1, rated=True, now_ms=T0)
    return Table(match, {0: player0, 1: player1}, T0)


def ratings(table):
    return [
        type(u).objects.values_list("rating", "rated_games").get(pk=u.pk)
        for u in table.users.values()
    ]


def test_a_rated_result_changes_both_ratings_with_the_match(rated_table):
    before = ratings(rated_table)
    rated_table.submit(1, {"type": "resign"})
    match = rated_table.match
    assert (
        [r for r, _ in ratings(rated_table)]
        == [match.rating_after0, match.rating_after1]
        == [1520, 1480]
    )
    assert [match.rating_before0, match.rating_before1] == [r for r, _ in before]
    assert [p["rating_after"] for p in match_record(match)["players"]] == [1520, 1480]


def test_a_fault_confirmed_after_a_rated_result_keeps_the_result_and_both_ratings(rated_table):
    rated_table.deal()
    rated_table.start()
    fault = report(rated_table, TimingFault.Kind.LATE_STAMP)
    rated_table.submit(1, {"type": "resign"})
    after = ratings(rated_table)
    assert tasks.recheck_fault(fault.pk) == "dismissed"
    match = rated_table.match
    match.refresh_from_db()
    assert (match.status, match.reason, match.winner) == ("finished", "resign", 0)
    assert ratings(rated_table) == after != [(1500, 0), (1500, 0)]
    assert match_record(match)["result"] == {"winner": 0, "reason": "resign"}

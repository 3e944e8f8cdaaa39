"""A web process ends a match whose clock ran out from its event loop, without a database
thread, where it can (matches/services.py ``match_expire_on_loop``): the end is one conditional
statement and is told at once; the record is folded and the ratings written a moment later
(``match_conclude``), or by the sweeper should the process die in between. Meanwhile the record
reads whole. Whatever the loop cannot judge alone (a command stamped in time still pending, a
row changed meanwhile, a turn the process did not beat through) writes nothing and is left to
``match_expire``, which then judges it under the lock."""

from __future__ import annotations

import asyncio
import json

import pytest
from channels.db import database_sync_to_async
from django.db import connection, connections
from django.test import Client

import engine
from accounts.models import RatingChange
from matches import broadcast, deadlines, rows, scheduler, services, timekeeping, webbeats
from matches.models import Match, MatchEvent
from matches.selectors import match_record
from realtime import database
from realtime.redis_clients import sync_redis
from tests.matches.conftest import Table
from tests.matches.test_deadlines import own_deadline_set, wait_until_async  # noqa: F401
from tests.matches.test_loop_moves import loop_move, on_a_loop, ready, terminate_backends_but
from tests.support.dealing import deal_by_service

pytestmark = [
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="forfeits are made on the loop on PostgreSQL"
    ),
    pytest.mark.usefixtures("rows_kept_as_in_a_web_process"),
    pytest.mark.django_db(transaction=True),  # the loop's connection sees only what is committed
]


@pytest.fixture
def rated_table(table):
    Match.objects.filter(pk=table.match.pk).update(rated=True)
    table.match.refresh_from_db()
    return table


def beaten_through(table, until_ms: int) -> None:
    """This web process beat without a break from before the turn to ``until_ms`` (its beats
    in Redis too, where its next beat looks for its last)."""
    seconds = range(table.now // 1000 - 2, until_ms // 1000 + 1)
    sync_redis().zadd(webbeats.BEATS_KEY, {str(s): s for s in seconds})
    for second in seconds:
        webbeats.note_beat(second)


def clock_runs_out(table, *, late_ms: int = 5) -> int:
    """Start the match (its row kept here), this process up throughout; the time when the
    decider's deadline passed ``late_ms`` ago."""
    ready(table)
    deadline = table.match.deadline_ms
    assert table.match.deadline_kind == Match.DeadlineKind.DECISION
    beaten_through(table, deadline + late_ms)
    return deadline + late_ms


def expire_on_loop(table, now_ms: int):
    return lambda: services.match_expire_on_loop(match_id=str(table.match.pk), now_ms=now_ms)


def the_row(match) -> Match:
    return Match.objects.get(pk=match.pk)


def event_rows(match) -> int:
    return MatchEvent.objects.filter(match=match).count()


@pytest.fixture(autouse=True)
def no_own_run(monkeypatch):
    monkeypatch.setattr(webbeats, "_own_run", None)


# --- made on the loop ----------------------------------------------------------------------------


def test_a_clock_run_out_ends_the_match_at_its_deadline_and_is_told_before_the_fold(
    rated_table, sent, present
):
    table = rated_table
    now = clock_runs_out(table)
    deadline = table.match.deadline_ms
    decider = table.state.decider
    present(table.match, decider)
    sent.clear()
    (kind,) = on_a_loop(expire_on_loop(table, now))
    assert kind == "timeout"
    # Told: every seat's view carries the forfeit, stamped at the deadline.
    told = [json.loads(message["text"]) for _, message in sent]
    assert {group.rsplit(".", 1)[1] for group, _ in sent} >= {"seat0", "seat1"}
    for view in told:
        assert view["match"]["status"] == "finished"
        assert (view["events"][-1]["type"], view["events"][-1]["at_ms"]) == ("timeout", deadline)
    # Written: the row over, its events still rows, its ratings not yet written.
    row = the_row(table.match)
    assert (row.status, row.reason, row.winner) == ("finished", "time", 1 - decider)
    assert row.end_pending and row.deadline_ms is None and event_rows(row) > 0
    assert row.rating_after0 is None and not RatingChange.objects.exists()
    # Read meanwhile, the record is whole and replays, the last round's seed revealed.
    before_fold = match_record(row)
    assert engine.audit(json.loads(json.dumps(before_fold)))[1] == []
    assert before_fold["rounds"][-1]["seed"] is not None
    assert before_fold["result"] == {"winner": 1 - decider, "reason": "time"}
    # Concluded: the events folded into the header, the ladder told, once.
    assert services.match_conclude(match_id=row.pk) is True
    assert services.match_conclude(match_id=row.pk) is False
    row = the_row(table.match)
    assert not row.end_pending and event_rows(row) == 0
    assert row.rating_after0 is not None and RatingChange.objects.count() == 2
    after_fold = match_record(row)
    for record in (before_fold, after_fold):
        for player in record["players"]:
            player.pop("rating_before"), player.pop("rating_after")
    assert after_fold == before_fold


def test_a_decider_who_is_not_connected_abandons(table, sent):
    now = clock_runs_out(table)
    (kind,) = on_a_loop(expire_on_loop(table, now))
    assert kind == "abandon"
    services.match_conclude(match_id=table.match.pk)
    assert the_row(table.match).reason == "abandon"


def test_before_its_deadline_nothing_is_written(table, sent):
    now = clock_runs_out(table, late_ms=-1)
    seq = the_row(table.match).seq
    sent.clear()
    assert on_a_loop(expire_on_loop(table, now)) == [None]
    assert the_row(table.match).seq == seq and sent == []
    assert services.match_expire(match_id=table.match.pk, now_ms=now) == "early"


def test_a_command_stamped_before_the_deadline_and_still_pending_goes_first(table, sent):
    now = clock_runs_out(table)
    deadline = table.match.deadline_ms
    sync_redis().zadd(
        timekeeping.ARRIVALS_KEY.format(match_id=table.match.pk), {"in-time": deadline - 1}
    )
    assert on_a_loop(expire_on_loop(table, now)) == [None]
    assert the_row(table.match).status == "live"
    assert services.match_expire(match_id=table.match.pk, now_ms=now) == "command_pending"


def test_a_turn_this_process_did_not_beat_through_is_left_to_the_usual_way(table, sent):
    ready(table)
    deadline = table.match.deadline_ms
    webbeats.note_beat(deadline // 1000)  # up now, but not all through the turn
    assert on_a_loop(expire_on_loop(table, deadline + 5)) == [None]
    assert the_row(table.match).status == "live"


def test_a_row_changed_by_another_process_is_never_written_over(table, sent):
    """Another process moved meanwhile (its broadcast not heard here yet): the kept row is
    stale, its deadline too. The loop writes nothing; the usual way finds it not due."""
    now = clock_runs_out(table)
    kept = rows.kept(table.match.pk)
    table.decide(after_ms=1_000)  # made elsewhere: through the service, under the lock
    rows.recent.put(
        str(kept.pk),
        kept.seq,
        getattr(kept, rows.VERSION),
        rows._kept_values(kept, rows._reader(connection.alias)),
    )  # this process still keeps the row from before
    moved = the_row(table.match)
    assert on_a_loop(expire_on_loop(table, now)) == [None]
    assert the_row(table.match).seq == moved.seq and not the_row(table.match).end_pending
    assert services.match_expire(match_id=table.match.pk, now_ms=now) == "early"


def test_a_match_whose_row_is_not_kept_here_is_left_to_the_usual_way(table, sent):
    now = clock_runs_out(table)
    rows.forget(table.match.pk)
    assert on_a_loop(expire_on_loop(table, now)) == [None]
    assert the_row(table.match).status == "live"


def test_with_the_database_unreachable_nothing_is_written_and_nothing_waits(
    table, sent, monkeypatch
):
    now = clock_runs_out(table)
    sent.clear()
    with monkeypatch.context() as patched:
        patched.setitem(connections["default"].settings_dict, "PORT", "1")  # nobody listens
        assert on_a_loop(expire_on_loop(table, now)) == [None]
    assert the_row(table.match).status == "live" and sent == []
    assert services.match_expire(match_id=table.match.pk, now_ms=now) == "abandon"


def test_a_connection_killed_before_the_end_is_replaced_and_the_end_is_made(table, sent):
    now = clock_runs_out(table)
    connection.ensure_connection()
    djangos = connection.connection.info.backend_pid

    async def kill_the_loops_connection():
        await asyncio.to_thread(terminate_backends_but, djangos)

    first_move = loop_move(table, after_ms=0)  # opens the loop's connection
    _, _, kind = on_a_loop(first_move, kill_the_loops_connection, expire_on_loop(table, now))
    assert kind in ("timeout", "abandon") and the_row(table.match).end_pending


# --- a process that dies between telling and concluding --------------------------------------


def test_the_sweeper_concludes_an_end_whose_process_died_before_concluding_it(rated_table, sent):
    table = rated_table
    now = clock_runs_out(table)
    on_a_loop(expire_on_loop(table, now))  # and the process dies: no match_conclude
    ended = the_row(table.match)
    assert ended.end_pending
    ended_ms = int(ended.finished_at.timestamp() * 1000)
    # While its process may still be at it, the sweeper leaves it alone.
    assert services.conclude_pending_ends(older_than_ms=2_000, now_ms=ended_ms + 1_000) == 0
    assert the_row(table.match).end_pending
    assert services.conclude_pending_ends(older_than_ms=2_000, now_ms=ended_ms + 2_001) == 1
    row = the_row(table.match)
    assert not row.end_pending and event_rows(row) == 0 and RatingChange.objects.count() == 2
    assert services.conclude_pending_ends(older_than_ms=2_000, now_ms=ended_ms + 9_000) == 0


def test_a_record_read_before_the_fold_is_not_cached_as_final(table, sent, client: Client):
    now = clock_runs_out(table)
    on_a_loop(expire_on_loop(table, now))
    pending = client.get(f"/api/matches/{table.match.pk}/")
    assert pending.status_code == 200 and "ETag" not in pending.headers
    services.match_conclude(match_id=table.match.pk)
    final = client.get(f"/api/matches/{table.match.pk}/")
    assert "ETag" in final.headers
    assert pending.json()["rounds"] == final.json()["rounds"]


def test_a_move_after_the_end_was_told_is_refused_and_changes_nothing(table, sent):
    now = clock_runs_out(table)
    on_a_loop(expire_on_loop(table, now))
    ended = the_row(table.match)
    assert rows.kept(table.match.pk) is None  # a match over takes no more moves on the loop
    for seat in (0, 1):
        with pytest.raises(services.CommandRejected):
            table.submit(seat, {"type": "draw"})
    assert the_row(table.match).seq == ended.seq and the_row(table.match).end_pending


# --- fired by the web process's deadline loop ----------------------------------------------------


@pytest.mark.usefixtures("own_deadline_set")
async def test_the_web_process_deadline_loop_ends_the_match_on_the_loop_and_concludes_it(
    make_user, sent, monkeypatch
):
    """No database thread judges the deadline (``fire_due`` is not called); the record is
    folded and the ratings written once the players are told."""
    fired_the_usual_way = []
    monkeypatch.setattr(scheduler, "fire_due", lambda *args: fired_the_usual_way.append(args))
    match, deadline = await database_sync_to_async(lambda: running_out_now(make_user))()
    loop = scheduler.ensure_running()

    def concluded():
        row = the_row(match)
        return row.status == "finished" and not row.end_pending

    try:
        await wait_until_async(concluded, 10)
    finally:
        loop.cancel()
        await asyncio.gather(loop, return_exceptions=True)
        await database.close_loop_connections()
    assert fired_the_usual_way == []
    row = await database_sync_to_async(the_row)(match)
    assert row.reason == "abandon" and row.rating_after0 is not None
    forfeit = row.header["rounds"][-1]["events"][-1]
    assert (forfeit["type"], forfeit["at_ms"]) == ("abandon", deadline)


def running_out_now(make_user) -> tuple[Match, int]:
    """A rated match, started with a one-second clock whose deadline passes in 300 ms, and that
    deadline; its row
    kept and its players known here, this process beating since before the turn."""
    now = timekeeping.now_ms()
    players = {0: make_user("ala"), 1: make_user("olek")}
    match = services.match_create(
        player0=players[0], player1=players[1], now_ms=now - 3_000, rated=True,
        clock=engine.ClockConfig(bank_ms=1_000, delay_ms=0),
    )  # fmt: skip
    assert deal_by_service(match, players, now - 2_000)
    table = Table(match, players, now - 700)
    beaten_through(table, now)
    table.start()
    broadcast.players_of(match.pk)
    assert services.may_submit_on_loop(str(match.pk))
    deadlines.remember(str(match.pk), match.deadline_ms)
    return match, match.deadline_ms

"""A forfeit at a deadline is told before its record is folded and its ratings written
(matches/services.py ``match_expire`` then ``match_conclude``): the end's own transaction is a
move's, so the players hear of it sooner. Meanwhile the record reads whole; a process that dies
in between leaves the rest to the sweeper."""

from __future__ import annotations

import asyncio
import json
import random
from collections import Counter
from types import SimpleNamespace

import pytest
from channels.db import database_sync_to_async
from django.db import connection
from django.test import Client
from redis.exceptions import ConnectionError as RedisConnectionError

import engine
from accounts.models import RatingChange
from matches import broadcast, deadlines, scheduler, services, timekeeping, webbeats
from matches.models import Match, MatchEvent
from matches.selectors import match_record
from realtime import database
from realtime.redis_clients import sync_redis
from tests.matches.conftest import Table
from tests.matches.test_deadlines import own_deadline_set, wait_until_async  # noqa: F401
from tests.support.dealing import deal_by_service

pytestmark = pytest.mark.django_db(transaction=True)  # the broadcasts go after commit
# A forfeit is read without the lock, and made ahead, only where rows can be written only if
# unchanged (PostgreSQL); elsewhere it is made under the lock, as the other tests show.
on_postgresql = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="read without the lock on PostgreSQL only"
)


@pytest.fixture
def rated_table(table):
    Match.objects.filter(pk=table.match.pk).update(rated=True)
    table.match.refresh_from_db()
    return table


def clock_runs_out(table, *, late_ms: int = 5) -> int:
    """Start the match, the web tier up throughout; the time ``late_ms`` after the decider's
    deadline."""
    table.start(after_ms=1_000)
    deadline = table.match.deadline_ms
    assert table.match.deadline_kind == Match.DeadlineKind.DECISION
    seconds = range(table.now // 1000 - 5, deadline // 1000 + 5)
    sync_redis().zadd(webbeats.BEATS_KEY, {str(s): s for s in seconds})
    return deadline + late_ms


def the_row(match) -> Match:
    return Match.objects.get(pk=match.pk)


def event_rows(match) -> int:
    return MatchEvent.objects.filter(match=match).count()


def without_ratings(record: dict) -> dict:
    for player in record["players"]:
        del player["rating_before"], player["rating_after"]
    return record


def test_a_forfeit_is_told_at_once_and_concluded_after(rated_table, sent, present):
    table = rated_table
    now = clock_runs_out(table)
    deadline, decider = table.match.deadline_ms, table.state.decider
    present(table.match, decider)
    sent.clear()
    assert services.match_expire(match_id=table.match.pk, now_ms=now, conclude=False) == "timeout"
    # Told: every seat's view carries the forfeit, stamped at the deadline.
    assert {group.rsplit(".", 1)[1] for group, _ in sent} >= {"seat0", "seat1"}
    for _, message in sent:
        view = json.loads(message["text"])
        assert view["match"]["status"] == "finished"
        assert (view["events"][-1]["type"], view["events"][-1]["at_ms"]) == ("timeout", deadline)
    # Written as a move is: the row over, its events still rows, no rating yet.
    row = the_row(table.match)
    assert (row.status, row.reason, row.winner) == ("finished", "time", 1 - decider)
    assert row.end_pending and row.deadline_ms is None and event_rows(row) > 0
    assert row.rating_after0 is None and not RatingChange.objects.exists()
    # Read meanwhile, the record is whole and replays, the last round's seed revealed.
    told = match_record(row)
    assert engine.audit(json.loads(json.dumps(told)))[1] == []
    assert told["rounds"][-1]["seed"] is not None
    assert told["result"] == {"winner": 1 - decider, "reason": "time"}
    # Concluded: the events folded into the header, the ladder told, once.
    assert services.match_conclude(match_id=row.pk) is True
    assert services.match_conclude(match_id=row.pk) is False
    row = the_row(table.match)
    assert not row.end_pending and event_rows(row) == 0
    assert RatingChange.objects.count() == 2 and row.rating_after0 is not None
    assert without_ratings(match_record(row)) == without_ratings(told)


def test_a_decider_who_is_not_connected_abandons(table, sent):
    now = clock_runs_out(table)
    assert services.match_expire(match_id=table.match.pk, now_ms=now, conclude=False) == "abandon"
    services.match_conclude(match_id=table.match.pk)
    assert the_row(table.match).reason == "abandon"


def test_by_default_a_forfeit_is_concluded_before_match_expire_returns(rated_table, sent):
    now = clock_runs_out(rated_table)
    assert services.match_expire(match_id=rated_table.match.pk, now_ms=now) == "abandon"
    row = the_row(rated_table.match)
    assert not row.end_pending and row.rating_after0 is not None and event_rows(row) == 0


def test_the_sweepers_fire_concludes_at_once(rated_table, sent):
    now = clock_runs_out(rated_table)
    assert scheduler.fire_due([str(rated_table.match.pk)], now) == 1
    row = the_row(rated_table.match)
    assert not row.end_pending and row.rating_after0 is not None and event_rows(row) == 0


def test_a_late_command_loses_on_time_concluded_in_its_own_transaction(rated_table, sent):
    """Only the deadline's fire is told first; a command that finds its sender's time gone
    ends the match the usual way, in one transaction."""
    table = rated_table
    now = clock_runs_out(table)
    state = table.state
    command = engine.GreedyBot().choose(state, state.decider, random.Random(0))
    outcome = table.submit(state.decider, command, after_ms=now - table.now)
    assert outcome.late
    row = the_row(table.match)
    assert not row.end_pending and row.rating_after0 is not None and event_rows(row) == 0


def test_the_sweeper_concludes_a_forfeit_whose_process_died_before_concluding_it(rated_table, sent):
    table = rated_table
    now = clock_runs_out(table)
    # Told, and then its process dies:
    services.match_expire(match_id=table.match.pk, now_ms=now, conclude=False)
    ended = the_row(table.match)
    ended_ms = int(ended.finished_at.timestamp() * 1000)
    # While its process may still be at it, the sweeper leaves it alone.
    assert services.conclude_pending_ends(older_than_ms=2_000, now_ms=ended_ms + 1_000) == 0
    assert the_row(table.match).end_pending
    sent.clear()  # and maybe its end was never told: the sweeper tells it again
    assert services.conclude_pending_ends(older_than_ms=2_000, now_ms=ended_ms + 2_001) == 1
    row = the_row(table.match)
    assert not row.end_pending and event_rows(row) == 0 and RatingChange.objects.count() == 2
    assert {group.rsplit(".", 1)[1] for group, _ in sent} >= {"seat0", "seat1"}
    assert all(json.loads(m["text"])["match"]["status"] == "finished" for _, m in sent)
    assert all(m["seq"] == row.seq for _, m in sent)
    assert services.conclude_pending_ends(older_than_ms=2_000, now_ms=ended_ms + 9_000) == 0


def test_a_record_read_before_the_conclusion_is_not_cached_as_final(table, sent, client: Client):
    now = clock_runs_out(table)
    services.match_expire(match_id=table.match.pk, now_ms=now, conclude=False)
    told = client.get(f"/api/matches/{table.match.pk}/")
    assert told.status_code == 200 and "ETag" not in told.headers
    services.match_conclude(match_id=table.match.pk)
    final = client.get(f"/api/matches/{table.match.pk}/")
    assert final.status_code == 200 and "ETag" in final.headers
    assert told.json()["rounds"] == final.json()["rounds"]


def test_a_command_after_the_forfeit_was_told_is_refused_and_changes_nothing(table, sent):
    now = clock_runs_out(table)
    services.match_expire(match_id=table.match.pk, now_ms=now, conclude=False)
    ended = the_row(table.match)
    for seat in (0, 1):
        with pytest.raises(services.CommandRejected):
            table.submit(seat, {"type": "draw"})
    assert the_row(table.match).seq == ended.seq and the_row(table.match).end_pending


def test_a_forfeit_is_never_voided_while_it_is_being_concluded(table, sent):
    now = clock_runs_out(table)
    services.match_expire(match_id=table.match.pk, now_ms=now, conclude=False)
    with pytest.raises(services.CommandRejected):
        services.match_void(match_id=table.match.pk, why="test", now_ms=now + 1)
    assert services.match_conclude(match_id=table.match.pk)
    assert the_row(table.match).status == "finished"


async def test_a_fire_from_a_process_loop_concludes_only_once_the_players_are_told(
    rated_table, sent, monkeypatch
):
    table = rated_table
    now = await database_sync_to_async(clock_runs_out)(table)
    told_when_concluded = []
    conclude = services.match_conclude

    def concluding(*, match_id):
        told_when_concluded.append(len(sent))
        return conclude(match_id=match_id)

    monkeypatch.setattr(services, "match_conclude", concluding)
    await scheduler._fire(str(table.match.pk), now)
    assert told_when_concluded and told_when_concluded[0] > 0
    row = await database_sync_to_async(the_row)(table.match)
    assert not row.end_pending and row.rating_after0 is not None


@on_postgresql
def test_a_move_made_while_the_forfeit_was_being_judged_is_never_written_over(
    table, sent, monkeypatch
):
    """The move was sent a millisecond before the deadline and written while the forfeit,
    which had read the match without its lock, asked Redis: the forfeit's write finds the
    match changed and judges again under the lock, where the deadline is no longer due."""
    now = clock_runs_out(table)
    state, deadline = table.state, table.match.deadline_ms
    move = engine.GreedyBot().choose(state, state.decider, random.Random(0))
    really_query = timekeeping.query_pending_before

    def a_move_meanwhile(*args):
        monkeypatch.setattr(timekeeping, "query_pending_before", really_query)
        table.submit(state.decider, move, after_ms=deadline - 1 - table.now)
        return really_query(*args)

    monkeypatch.setattr(timekeeping, "query_pending_before", a_move_meanwhile)
    assert services.match_expire(match_id=table.match.pk, now_ms=now, conclude=False) == "early"
    row = the_row(table.match)
    assert row.status == "live" and not row.end_pending
    assert table.events()[-1]["type"] == move["type"]


# --- made ahead of the deadline, by the deadline keeper --------------------------------------


def made_ahead_then(table, now_ms: int, *before_the_deadline):
    """The forfeit made ahead (30 ms before the deadline), ``before_the_deadline`` calls made,
    then made at ``now_ms`` from an event loop, its broadcasts held as the keeper holds them."""
    ahead = services.forfeit_ahead(str(table.match.pk), table.match.deadline_ms)
    assert ahead is not None
    for call in before_the_deadline:
        call()

    async def at_the_deadline():
        try:
            async with broadcast.held():
                return await services.forfeit_made_ahead(ahead, now_ms)
        finally:
            await database.close_loop_connections()

    return asyncio.run(at_the_deadline())


@on_postgresql
@pytest.mark.parametrize("connected", [True, False])
def test_a_forfeit_made_ahead_is_written_and_told_at_its_deadline(
    rated_table, sent, present, connected
):
    table = rated_table
    now = clock_runs_out(table)
    deadline, decider = table.match.deadline_ms, table.state.decider
    if connected:
        present(table.match, decider)
    sent.clear()
    kind = made_ahead_then(table, now)
    assert kind == ("timeout" if connected else "abandon")
    row = the_row(table.match)
    assert (row.status, row.winner, row.reason) == ("finished", 1 - decider, row.reason)
    assert row.reason == ("time" if connected else "abandon")
    assert row.end_pending and row.deadline_ms is None and row.rating_after0 is None
    for _, message in sent:
        last = json.loads(message["text"])["events"][-1]
        assert (last["type"], last["at_ms"]) == (kind, deadline)
    assert services.match_conclude(match_id=row.pk)
    assert the_row(table.match).rating_after0 is not None


@on_postgresql
def test_a_forfeit_made_ahead_is_never_written_before_its_deadline(table, sent):
    now = clock_runs_out(table, late_ms=-1)
    seq, told = the_row(table.match).seq, len(sent)
    assert made_ahead_then(table, now) is None
    assert the_row(table.match).seq == seq and len(sent) == told


@on_postgresql
def test_a_move_made_after_the_forfeit_was_made_ahead_stands(table, sent):
    """The move came 1 ms before the deadline, after the keeper made the forfeit ahead: the
    forfeit's write finds the match changed and writes nothing."""
    now = clock_runs_out(table)
    state, deadline = table.state, table.match.deadline_ms
    move = engine.GreedyBot().choose(state, state.decider, random.Random(0))

    def the_move():
        table.submit(state.decider, move, after_ms=deadline - 1 - table.now)

    assert made_ahead_then(table, now, the_move) is None
    row = the_row(table.match)
    assert row.status == "live" and not row.end_pending
    assert services.match_expire(match_id=row.pk, now_ms=now) == "early"


@on_postgresql
def test_a_forfeit_made_ahead_stands_back_for_a_command_stamped_in_time(table, sent):
    now = clock_runs_out(table)
    arrivals = timekeeping.ARRIVALS_KEY.format(match_id=table.match.pk)

    def stamped_in_time():
        sync_redis().zadd(arrivals, {"in-time": table.match.deadline_ms - 1})

    try:
        assert made_ahead_then(table, now, stamped_in_time) is None
    finally:
        sync_redis().delete(arrivals)
    assert the_row(table.match).status == "live"


@on_postgresql
def test_a_forfeit_made_ahead_through_an_outage_of_the_web_tier_is_left_to_the_usual_way(
    table, sent
):
    table.start(after_ms=1_000)
    deadline = table.match.deadline_ms
    # The web tier beat until 10 s into the turn, then nothing until the deadline: an outage.
    seconds = range(table.now // 1000 - 5, table.now // 1000 + 10)
    sync_redis().zadd(webbeats.BEATS_KEY, {str(s): s for s in [*seconds, deadline // 1000]})
    assert made_ahead_then(table, deadline + 5) is None
    assert the_row(table.match).status == "live"
    assert services.match_expire(match_id=table.match.pk, now_ms=deadline + 5) == "void"


def test_nothing_is_made_ahead_but_a_running_clock_at_that_very_deadline(table, sent):
    assert services.forfeit_ahead(str(table.match.pk), 123) is None  # waiting for Start
    table.start(after_ms=1_000)
    deadline = table.match.deadline_ms
    assert services.forfeit_ahead(str(table.match.pk), deadline + 1) is None  # moved since
    made = services.forfeit_ahead(str(table.match.pk), deadline)
    assert (made is not None) == (connection.vendor == "postgresql")
    assert the_row(table.match).status == "live"  # nothing written


@pytest.fixture
def keeper_of_its_own(monkeypatch):
    """The test's keeper marks itself alive beside the test's own deadline set (autouse)."""
    monkeypatch.setattr(deadlines, "KEEPER_KEY", f"{deadlines.DEADLINES_KEY}:keeper")


@pytest.fixture
def fired_the_usual_way(monkeypatch) -> list:
    """Deadlines fired on a database thread (``scheduler.fire``) are kept here, not fired."""
    fired = []
    monkeypatch.setattr(scheduler, "fire", lambda *args, **kw: fired.append(args))
    return fired


async def concluded_by(keeper: asyncio.Task, match: Match) -> Match:
    """The match's row once its forfeit is concluded, the keeper then stopped."""

    def concluded():
        row = the_row(match)
        return row.status == "finished" and not row.end_pending

    try:
        await wait_until_async(concluded, 10)
    finally:
        keeper.cancel()
        await asyncio.gather(keeper, return_exceptions=True)
        await database.close_loop_connections()
    return await database_sync_to_async(the_row)(match)


@on_postgresql
@pytest.mark.usefixtures("own_deadline_set", "keeper_of_its_own")
async def test_the_keeper_makes_a_forfeit_ahead_and_fires_it_without_a_database_thread(
    make_user, sent, fired_the_usual_way
):
    match, deadline = await database_sync_to_async(running_out_soon)(make_user)
    row = await concluded_by(asyncio.ensure_future(scheduler.keep_deadlines()), match)
    assert fired_the_usual_way == []
    forfeit = row.header["rounds"][-1]["events"][-1]
    assert (forfeit["type"], forfeit["at_ms"]) == ("abandon", deadline)
    assert row.rating_after0 is not None


def keeper_whose_polls_stop_once_it_made_ahead(
    match: Match, monkeypatch, resumed: asyncio.Event | None = None
) -> asyncio.Task:
    """A keeper whose poll, from the one after it saw ``match``'s deadline coming (and so made
    its forfeit ahead), does not come back (a round trip held up, say) until ``resumed`` is
    set, if ever. Only its timer can fire meanwhile."""
    really_take_due = scheduler.take_due
    seen_coming = False

    async def take_due_until_seen_coming(*args, **kwargs):
        nonlocal seen_coming
        if seen_coming:
            await (resumed or asyncio.Event()).wait()
        taken = await really_take_due(*args, **kwargs)
        seen_coming = str(match.pk) in taken.soon
        return taken

    monkeypatch.setattr(scheduler, "take_due", take_due_until_seen_coming)
    return asyncio.ensure_future(scheduler.keep_deadlines())


@on_postgresql
@pytest.mark.usefixtures("own_deadline_set", "keeper_of_its_own")
async def test_the_keeper_fires_a_forfeit_made_ahead_at_its_deadline_by_its_timer(
    make_user, sent, fired_the_usual_way, monkeypatch
):
    match, deadline = await database_sync_to_async(running_out_soon)(make_user)
    keeper = keeper_whose_polls_stop_once_it_made_ahead(match, monkeypatch)
    row = await concluded_by(keeper, match)
    assert fired_the_usual_way == []
    forfeit = row.header["rounds"][-1]["events"][-1]
    assert (forfeit["type"], forfeit["at_ms"]) == ("abandon", deadline)
    assert row.finished_at.timestamp() * 1000 >= deadline


@on_postgresql
@pytest.mark.usefixtures("own_deadline_set", "keeper_of_its_own")
async def test_a_keeper_timer_that_wakes_before_the_authoritys_deadline_claims_nothing_then(
    make_user, sent, fired_the_usual_way, monkeypatch
):
    """The authority's clock 150 ms ahead of this machine's, as the keeper reckons: its timer
    wakes 150 ms early. The claim, made by the authority's time, finds it early and waits."""
    monkeypatch.setattr(
        scheduler._Fires, "saw_authority",
        lambda fires, *read: setattr(fires, "authority_ahead_ms", 150),
    )  # fmt: skip
    match, deadline = await database_sync_to_async(running_out_soon)(make_user)
    keeper = keeper_whose_polls_stop_once_it_made_ahead(match, monkeypatch)
    row = await concluded_by(keeper, match)
    assert row.finished_at.timestamp() * 1000 >= deadline, "never before the deadline"
    assert fired_the_usual_way == []
    forfeit = row.header["rounds"][-1]["events"][-1]
    assert (forfeit["type"], forfeit["at_ms"]) == ("abandon", deadline)


def test_the_claim_at_a_deadline_takes_it_only_where_and_when_it_was_made_ahead_for():
    key, now = deadlines.DEADLINES_KEY, timekeeping.now_ms()  # the test's own set (autouse)
    redis = sync_redis()

    def claim(match_id: str, deadline_ms: int) -> str:
        _, outcome = redis.eval(scheduler._CLAIM_AT_DEADLINE, 1, key, match_id, deadline_ms, 250)
        return outcome.decode() if isinstance(outcome, bytes) else outcome

    redis.zadd(key, {"due": now - 5, "coming": now + 60_000, "moved": now - 5})
    assert claim("coming", now + 60_000) == "early"
    assert redis.zscore(key, "coming") == now + 60_000, "nothing claimed"
    assert claim("moved", now - 6) == "moved"
    assert redis.zscore(key, "moved") == now - 5
    assert claim("gone", now - 5) == "moved"
    assert redis.zscore(key, "gone") is None, "nothing added"
    assert claim("due", now - 5) == "claimed"
    assert redis.zscore(key, "due") >= now + 250, "claimed for CLAIM_MS"
    assert claim("due", now - 5) == "moved", "claimed once"


def running_out_soon(make_user) -> tuple[Match, int]:
    """A rated match whose first player's one-second clock runs out 300 ms from now (the
    web tier beating throughout), in the test's own deadline set; and that deadline."""
    now = timekeeping.now_ms()
    players = {0: make_user("ala"), 1: make_user("olek")}
    match = services.match_create(
        player0=players[0], player1=players[1], now_ms=now - 3_000, rated=True,
        clock=engine.ClockConfig(bank_ms=1_000, delay_ms=0),
    )  # fmt: skip
    assert deal_by_service(match, players, now - 2_000)
    table = Table(match, players, now - 700)
    table.start()
    seconds = range(now // 1000 - 5, now // 1000 + 30)
    sync_redis().zadd(webbeats.BEATS_KEY, {str(s): s for s in seconds})
    deadlines.remember(str(match.pk), match.deadline_ms)
    return match, match.deadline_ms


def test_a_record_whose_forfeit_is_concluded_between_its_two_reads_is_whole(table, sent):
    """The row read (its end pending), then the conclusion takes the event rows into the
    header, then the events are read: the record is read again, whole (it came out empty)."""
    now = clock_runs_out(table)
    services.match_expire(match_id=table.match.pk, now_ms=now, conclude=False)
    read_before = Match.objects.get(pk=table.match.pk)
    assert read_before.end_pending
    services.match_conclude(match_id=table.match.pk)
    record = json.loads(json.dumps(match_record(read_before)))
    assert engine.audit(record)[1] == []
    assert record["rounds"][0]["events"][0]["type"] == "contribute"


@on_postgresql
@pytest.mark.usefixtures("own_deadline_set", "keeper_of_its_own")
async def test_a_deadline_a_poll_takes_while_the_timers_claim_is_on_its_way_is_fired_once(
    make_user, sent, fired_the_usual_way
):
    """The keeper's poll and its timer meet at a deadline: the poll's claim reaches Redis
    first, and the timer's finds the deadline moved. The poll left it to the timer's fire,
    which then fires it as the poll would have."""
    match, deadline = await database_sync_to_async(running_out_soon)(make_user)
    ahead = await database_sync_to_async(services.forfeit_ahead)(str(match.pk), deadline)
    await asyncio.sleep(
        max(0, deadline - await database_sync_to_async(timekeeping.now_ms)()) / 1000
    )
    fires = scheduler._Fires()
    fires.ahead[str(match.pk)] = ahead
    try:
        taken = await scheduler.take_due(keeper=True)
        assert taken.due == [str(match.pk)]
        fires._at_deadline(str(match.pk), ahead)  # its claim is on its way
        fires.start(str(match.pk), taken.now_ms)  # the poll's
        await asyncio.gather(*fires.tasks.values())
    finally:
        fires.cancel()
        await database.close_loop_connections()
    row = await database_sync_to_async(the_row)(match)
    assert (row.status, row.reason) == ("finished", "abandon")
    assert fired_the_usual_way == []
    told = [e["type"] for _, message in sent for e in json.loads(message["text"])["events"]]
    assert "abandon" in told


def claims_at_deadline_fail_once(
    monkeypatch, failed: asyncio.Event, *, after_redis_ran_it: bool
) -> list[int]:
    """The first round trip of a timer's claim fails with Redis's connection lost: before
    Redis ran it (nothing claimed), or after (claimed, the reply lost); ``failed`` is set
    then. Returns the match's score in the deadline set as the failure left it."""
    really_async_redis = scheduler.async_redis
    scores: list[int] = []

    class PipelineFailingOnce:
        def __init__(self, pipe):
            self.pipe, self.claim = pipe, None

        def eval(self, script, numkeys, *args):
            if script == scheduler._CLAIM_AT_DEADLINE:
                self.claim = args[1]  # the match
            return self.pipe.eval(script, numkeys, *args)

        def __getattr__(self, name):
            return getattr(self.pipe, name)

        async def execute(self):
            if self.claim is None or scores:
                return await self.pipe.execute()
            if after_redis_ran_it:
                await self.pipe.execute()
            else:
                await self.pipe.reset()
            scores.append(await really_async_redis().zscore(deadlines.DEADLINES_KEY, self.claim))
            failed.set()
            raise RedisConnectionError("Connection closed by server.")

    class FailingClaimsClient:
        def __init__(self):
            self.client = really_async_redis()

        def pipeline(self, *args, **kwargs):
            return PipelineFailingOnce(self.client.pipeline(*args, **kwargs))

        def __getattr__(self, name):
            return getattr(self.client, name)

    monkeypatch.setattr(scheduler, "async_redis", FailingClaimsClient)
    return scores


@on_postgresql
@pytest.mark.parametrize("after_redis_ran_it", [False, True], ids=["not-claimed", "reply-lost"])
@pytest.mark.usefixtures("own_deadline_set", "keeper_of_its_own")
async def test_a_timers_claim_that_redis_fails_is_fired_once_later_and_never_early(
    make_user, sent, monkeypatch, caplog, after_redis_ran_it
):
    """Redis drops the connection under the keeper's claim at the deadline. The keeper stands
    aside for a moment (the web processes would fire it now), then fires it itself once the
    claim, if it was made, lapses: one forfeit, at the deadline, told once."""
    failed = asyncio.Event()
    scores = claims_at_deadline_fail_once(
        monkeypatch, failed, after_redis_ran_it=after_redis_ran_it
    )
    match, deadline = await database_sync_to_async(running_out_soon)(make_user)
    keeper = keeper_whose_polls_stop_once_it_made_ahead(match, monkeypatch, resumed=failed)
    row = await concluded_by(keeper, match)
    assert len(scores) == 1, "the timer's claim was tried, and failed"
    assert (scores[0] != deadline) == after_redis_ran_it, "claimed only where Redis ran it"
    assert "cannot fire deadlines now" in caplog.text
    assert row.finished_at.timestamp() * 1000 >= deadline, "never before the deadline"
    forfeit = row.header["rounds"][-1]["events"][-1]
    assert (forfeit["type"], forfeit["at_ms"]) == ("abandon", deadline)
    told = Counter(
        group
        for group, message in sent
        for e in json.loads(message["text"])["events"]
        if e["type"] == "abandon"
    )
    assert set(told.values()) == {1}, "told once to each audience"


async def test_the_keepers_poll_does_not_wake_for_a_deadline_its_own_timer_fires():
    """At a deadline armed by the keeper's timer, a poll would only race the timer's claim (and
    when it won, the forfeit asked Redis once more): the poll looks again at the next deadline
    no timer fires, or after the usual POLL_S."""
    now = 1_000_000
    fires = scheduler._Fires()
    armed = SimpleNamespace(deadline_ms=now + 5)
    fires.ahead.update({"armed": armed, "being made": None})
    fires.arm("armed", armed, authority_now_ms=now)
    try:
        soon = {"armed": now + 5, "being made": now + 9}
        assert fires.next_to_poll_for(scheduler.Taken(now, [], now + 5, soon)) == now + 9
        only_armed = scheduler.Taken(now, [], now + 5, {"armed": now + 5})
        assert fires.next_to_poll_for(only_armed) is None
        moved = scheduler.Taken(now, [], now + 7, {"armed": now + 7})  # by a move, since
        assert fires.next_to_poll_for(moved) == now + 7
    finally:
        fires.cancel()

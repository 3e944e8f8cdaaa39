"""Deadlines in Redis and the database; the web processes' deadline loop and the sweeper that
backs it up. These use the authority's real time (the sweeper reads it), with deadlines set just
past so nothing waits."""

import asyncio
import uuid

import pytest
from channels.db import database_sync_to_async

import engine
from matches import broadcast, deadlines, readings, scheduler, services, tasks, timekeeping
from matches.models import Match, TimingFault
from realtime.redis_clients import sync_redis
from tests.support.dealing import deal_by_service

pytestmark = pytest.mark.django_db
GRACE = 20_000


@pytest.fixture(autouse=True)
def own_deadline_set(monkeypatch):
    """A sorted set of this test's own, so other test runs on the same Redis do not meet it."""
    key = f"sbo:deadlines:test-{uuid.uuid4().hex}"
    monkeypatch.setattr(deadlines, "DEADLINES_KEY", key)
    yield key
    sync_redis().delete(key, deadlines.built_key())


def start_due(player0, player1, due_in_ms: int = -50) -> Match:
    """A match (unrated) dealt a second after it was created, whose Start deadline passed 50 ms
    ago (or falls due ``due_in_ms`` from now)."""
    now = timekeeping.now_ms()
    dealt_at = now - GRACE + due_in_ms
    match = services.match_create(
        player0=player0, player1=player1, now_ms=dealt_at - 1_000, clock=engine.ClockConfig()
    )
    assert deal_by_service(match, {0: player0, 1: player1}, dealt_at)
    assert (match.deadline_kind, match.deadline_ms) == (Match.DeadlineKind.START, now + due_in_ms)
    return match


@pytest.fixture
def due_match(make_user):
    """A match whose Start deadline passed 50 ms ago; on_commit hooks do not run in these
    tests, so no task was ever queued for it: as if the task was lost."""
    return start_due(make_user("ala"), make_user("olek"))


def test_the_sweeper_acts_on_a_deadline_whose_task_was_lost(due_match):
    deadlines.remember(str(due_match.pk), due_match.deadline_ms)
    assert tasks.sweep_deadlines() == 1
    due_match.refresh_from_db()
    start = due_match.record["rounds"][0]["events"][2]  # after the two contributions
    assert (start["type"], start["seat"]) == ("start", None)
    assert due_match.deadline_kind == Match.DeadlineKind.DECISION
    assert not TimingFault.objects.exists()


def test_the_sweeper_rebuilds_the_deadlines_from_the_database_when_redis_lost_them(
    due_match, make_user, own_deadline_set
):
    later = services.match_create(
        player0=make_user("ewa"), player1=make_user("jan"), now_ms=timekeeping.now_ms()
    )
    assert not sync_redis().exists(own_deadline_set)
    assert tasks.sweep_deadlines() == 1
    due_match.refresh_from_db()
    assert due_match.status == "live"
    assert sync_redis().zscore(own_deadline_set, str(later.pk)) == later.deadline_ms


def test_a_deadline_written_after_redis_lost_its_data_does_not_hide_the_loss(
    due_match, make_user, own_deadline_set
):
    later = services.match_create(
        player0=make_user("ewa"), player1=make_user("jan"), now_ms=timekeeping.now_ms()
    )
    deadlines.remember(str(later.pk), later.deadline_ms)  # the first write after the loss
    assert deadlines.rebuild_if_lost() is True
    assert sync_redis().zscore(own_deadline_set, str(due_match.pk)) == due_match.deadline_ms
    assert deadlines.rebuild_if_lost() is False  # rebuilt once


def test_the_sweeper_corrects_redis_when_the_database_disagrees(due_match):
    services.match_submit(
        match_id=due_match.pk,
        user=due_match.player0,
        command={"type": "resign"},
        arrival_ms=timekeeping.now_ms(),
    )
    deadlines.remember(str(due_match.pk), due_match.deadline_ms)  # stale: the match is over
    assert tasks.sweep_deadlines() == 0
    assert sync_redis().zscore(deadlines.DEADLINES_KEY, str(due_match.pk)) is None


def test_the_rebuild_leaves_out_matches_that_are_over(due_match, make_user):
    services.match_submit(
        match_id=due_match.pk,
        user=due_match.player1,
        command={"type": "resign"},
        arrival_ms=timekeeping.now_ms(),
    )
    assert deadlines.rebuild() == 0


def test_two_processes_firing_one_deadline_change_the_match_once(due_match):
    match_id = str(due_match.pk)
    now = timekeeping.now_ms()
    assert scheduler.fire_due([match_id], now) == 1
    assert scheduler.fire_due([match_id], now) == 0  # the other process came second
    due_match.refresh_from_db()
    events = due_match.record["rounds"][0]["events"]
    assert [e["type"] for e in events] == ["contribute", "contribute", "start"]
    # Redis now holds the next deadline, the one the database holds.
    assert sync_redis().zscore(deadlines.DEADLINES_KEY, match_id) == due_match.deadline_ms


def test_the_deadline_of_a_match_that_is_gone_is_forgotten_and_blocks_no_other(due_match):
    gone = "00000000-0000-4000-8000-000000000000"
    deadlines.remember(gone, 1)
    assert scheduler.fire_due([gone, str(due_match.pk)], timekeeping.now_ms()) == 1
    assert sync_redis().zscore(deadlines.DEADLINES_KEY, gone) is None


def test_a_deadline_not_yet_due_is_left_and_put_back_in_step(make_user):
    match = services.match_create(
        player0=make_user("ala"), player1=make_user("olek"), now_ms=timekeeping.now_ms()
    )
    deadlines.remember(str(match.pk), match.deadline_ms - 10_000)  # Redis out of step
    assert scheduler.fire_due([str(match.pk)], timekeeping.now_ms()) == 0
    score = sync_redis().zscore(deadlines.DEADLINES_KEY, str(match.pk))
    assert score == match.deadline_ms


@pytest.mark.django_db(transaction=True)
async def test_the_web_process_loop_fires_a_due_deadline_without_any_worker(make_user):
    match = await database_sync_to_async(
        lambda: start_due(make_user("ala"), make_user("olek"))
    )()  # fmt: skip
    deadlines.remember(str(match.pk), match.deadline_ms)
    loop = scheduler.ensure_running()

    def started():
        match.refresh_from_db()
        return match.seq == 3  # the two contributions, then the server's Start

    try:
        await wait_until_async(started, 5)
    finally:
        loop.cancel()
        await asyncio.gather(loop, return_exceptions=True)
    record = await database_sync_to_async(lambda: match.record)()  # its events are rows
    start = record["rounds"][0]["events"][2]
    assert (start["type"], start["seat"]) == ("start", None)


@pytest.mark.django_db(transaction=True)
async def test_the_web_process_loop_fires_a_deadline_when_it_falls_due_not_at_the_next_poll(
    make_user, monkeypatch
):
    monkeypatch.setattr(scheduler, "POLL_S", 60.0)  # a poll would come a minute later
    match = await database_sync_to_async(
        lambda: start_due(make_user("ala"), make_user("olek"), due_in_ms=300)
    )()  # fmt: skip
    start_deadline_ms = match.deadline_ms
    deadlines.remember(str(match.pk), start_deadline_ms)
    loop = scheduler.ensure_running()

    def started():
        match.refresh_from_db()
        return match.seq == 3

    try:
        await wait_until_async(started, 10)
    finally:
        loop.cancel()
        await asyncio.gather(loop, return_exceptions=True)
    record = await database_sync_to_async(lambda: match.record)()
    start = record["rounds"][0]["events"][2]
    assert start["type"] == "start"
    assert 0 <= start["at_ms"] - start_deadline_ms < 10_000  # never early; not a poll later


async def test_a_poll_claims_what_is_due_so_another_poll_at_once_leaves_it(
    own_deadline_set, monkeypatch
):
    monkeypatch.setattr(scheduler, "CLAIM_MS", 60_000)
    now = timekeeping.now_ms()
    client = sync_redis()
    later = now + 30_000
    client.zadd(own_deadline_set, {"due": now - 50, "later": later})
    now_ms, due, next_ms, _ = await scheduler.take_due()
    assert (due, next_ms) == (["due"], later)
    claimed = client.zscore(own_deadline_set, "due")
    assert claimed == now_ms + scheduler.CLAIM_MS
    assert (await scheduler.take_due())[1:3] == ([], later)  # the other process's poll


async def test_a_claim_whose_poller_died_is_taken_again_once_it_lapses(
    own_deadline_set, monkeypatch
):
    monkeypatch.setattr(scheduler, "CLAIM_MS", 0)  # a claim that has lapsed by the next poll
    sync_redis().zadd(own_deadline_set, {"due": timekeeping.now_ms() - 1})
    assert (await scheduler.take_due())[1] == ["due"]  # and its taker dies before firing it
    assert (await scheduler.take_due())[1] == ["due"]


async def test_a_deadline_due_while_another_is_still_being_fired_is_not_held_back_by_it(
    own_deadline_set, monkeypatch
):
    """A fire waits for the database; the poll does not wait for the fire. A fire still under
    way when its claim lapses is not started twice in this process."""
    monkeypatch.setattr(scheduler, "CLAIM_MS", 0)
    started, released = [], asyncio.Event()

    async def slow_fire(match_id: str, now_ms: int, ahead=None) -> None:
        started.append(match_id)
        await released.wait()  # as a fire waiting for a busy database

    monkeypatch.setattr(scheduler, "_fire", slow_fire)
    sync_redis().set(deadlines.built_key(), "1")  # Redis holds the deadlines: no rebuild
    fires = scheduler._Fires()
    poll = scheduler._deadline_poller(fires)
    sync_redis().zadd(own_deadline_set, {"first": timekeeping.now_ms() - 1})
    await asyncio.wait_for(poll(), 2)
    sync_redis().zadd(own_deadline_set, {"second": timekeeping.now_ms() - 1})
    await asyncio.wait_for(poll(), 2)  # "first" is due again (its claim lapsed): still firing
    await asyncio.sleep(0)
    assert started == ["first", "second"]
    released.set()
    await asyncio.gather(*fires.tasks.values())
    assert fires.tasks == {}


@pytest.fixture
def keeper_mark(own_deadline_set, monkeypatch):
    key = f"{own_deadline_set}:keeper"
    monkeypatch.setattr(deadlines, "KEEPER_KEY", key)
    yield key
    sync_redis().delete(key)


async def test_while_a_keeper_runs_a_web_poll_leaves_it_each_deadline_for_the_grace(
    own_deadline_set, keeper_mark, settings
):
    settings.WEB_DEADLINE_GRACE_MS = 5_000
    now = timekeeping.now_ms()
    sync_redis().zadd(own_deadline_set, {"long overdue": now - 6_000, "just due": now - 10})
    assert (await scheduler.take_due(keeper=True))[1] == ["long overdue", "just due"]
    assert sync_redis().exists(keeper_mark)  # the keeper marked itself alive
    sync_redis().zadd(own_deadline_set, {"long overdue": now - 6_000, "just due": now - 10})
    now_ms, due, next_ms, _ = await scheduler.take_due()  # a web process's poll
    assert due == ["long overdue"]
    assert next_ms == now - 10 + 5_000  # it looks again when the keeper has had its time


async def test_a_keeper_that_stopped_leaves_the_deadlines_to_the_web_processes_at_once(
    own_deadline_set, keeper_mark, settings, monkeypatch
):
    settings.WEB_DEADLINE_GRACE_MS = 5_000
    monkeypatch.setattr(scheduler, "KEEPER_MARK_MS", 50)
    await scheduler.take_due(keeper=True)  # its last poll, and then it dies
    sync_redis().zadd(own_deadline_set, {"just due": timekeeping.now_ms() - 10})
    assert (await scheduler.take_due())[1] == []
    await wait_until_async(lambda: not sync_redis().exists(keeper_mark), 5)
    assert (await scheduler.take_due())[1] == ["just due"]


async def test_a_keeper_whose_fires_fail_stands_aside_and_the_web_processes_fire_at_once(
    own_deadline_set, keeper_mark, settings, monkeypatch
):
    settings.WEB_DEADLINE_GRACE_MS = 5_000

    async def failing_fire(match_id: str, now_ms: int, ahead=None) -> None:
        raise RuntimeError("the keeper cannot reach its database")

    monkeypatch.setattr(scheduler, "_fire", failing_fire)
    sync_redis().set(deadlines.built_key(), "1")  # Redis holds the deadlines: no rebuild
    fires = scheduler._Fires()
    keeper_poll = scheduler._deadline_poller(fires, keeper=True)
    due_at = timekeeping.now_ms() - 1
    sync_redis().zadd(own_deadline_set, {"due": due_at})
    await keeper_poll()  # takes it, and its fire fails
    await asyncio.gather(*fires.tasks.values(), return_exceptions=True)
    await asyncio.sleep(0)
    sync_redis().zadd(own_deadline_set, {"due": due_at})  # its claim lapsed
    sync_redis().delete(keeper_mark)
    await keeper_poll()
    assert not sync_redis().exists(keeper_mark)  # it no longer says it is alive
    assert sync_redis().zscore(own_deadline_set, "due") == due_at  # nor takes it
    assert (await scheduler.take_due())[1] == ["due"]  # a web process's poll does, at once


def test_while_the_web_tier_is_down_a_forfeit_is_asked_again_a_second_later(due_match, monkeypatch):
    """Not at every poll: the keeper, up while no web process is, would ask 50 times a second."""
    monkeypatch.setattr(services, "match_expire", lambda **kwargs: "web_down")
    before = timekeeping.now_ms()
    scheduler.fire(str(due_match.pk), before)
    after = timekeeping.now_ms()
    score = sync_redis().zscore(deadlines.DEADLINES_KEY, str(due_match.pk))
    assert before + scheduler.WEB_DOWN_RETRY_MS <= score <= after + scheduler.WEB_DOWN_RETRY_MS


@pytest.mark.parametrize(
    ("next_ms", "wait_s"),
    [
        (None, scheduler.POLL_S),  # nothing ahead: the usual poll
        (1_000_000 + 60_000, scheduler.POLL_S),  # far ahead: the usual poll
        (1_000_000 + 7, 0.008),  # sooner than a poll: then (and not a hair before)
        (1_000_000, scheduler.MIN_WAIT_S),  # due by now (claimed elsewhere): never a busy loop
    ],
)
def test_the_next_poll_comes_at_the_next_deadline_when_that_is_sooner(next_ms, wait_s):
    assert scheduler.wait_before_next_poll_s(1_000_000, next_ms) == pytest.approx(wait_s)


@pytest.mark.parametrize(
    ("outcome", "late_by_ms", "asked_again_in_ms"),
    [
        ("command_pending", 1, scheduler.PENDING_RETRY_MIN_MS),  # applied in a few ms: soon
        ("command_pending", 40, 20),  # pending for a while: half as long again
        ("command_pending", 10_000, scheduler.WEB_DOWN_RETRY_MS),  # never more than a second
        ("web_down", 1, scheduler.WEB_DOWN_RETRY_MS),  # nobody can act: a second later
    ],
)
def test_a_deadline_that_must_wait_is_asked_about_again_later_and_later(
    outcome, late_by_ms, asked_again_in_ms
):
    """Not at every poll: when commands took seconds (an overloaded machine), the keeper and
    both web processes fired each such deadline again every few milliseconds, a database
    read and a Redis round trip each time, and the load that made the commands slow grew."""
    assert scheduler._retry_in_ms(outcome, late_by_ms) == asked_again_in_ms


def pending_command_before(match: Match) -> str:
    """A command stamped just before the match's deadline, still being applied."""
    arrivals = timekeeping.ARRIVALS_KEY.format(match_id=match.pk)
    sync_redis().zadd(arrivals, {uuid.uuid4().hex: match.deadline_ms - 1})
    return arrivals


def test_a_deadline_waiting_for_a_command_is_put_back_by_the_time_of_the_put_back(make_user):
    """A fire that waited long for its database thread (an old ``now_ms``) puts it back by
    the time read then, not by when the deadline was taken: else every poll took it again."""
    match = start_due(make_user("ala"), make_user("olek"), due_in_ms=-400)
    match_id, arrivals = str(match.pk), pending_command_before(match)
    try:
        before = timekeeping.now_ms()
        assert scheduler.fire_due([match_id], match.deadline_ms) == 0  # taken at its deadline
        after = timekeeping.now_ms()
    finally:
        sync_redis().delete(arrivals)
    score = sync_redis().zscore(deadlines.DEADLINES_KEY, match_id)
    late_before, late_after = before - match.deadline_ms, after - match.deadline_ms
    assert late_before >= 400
    assert before + late_before // 2 <= score <= after + late_after // 2


def test_a_deadline_put_back_leaves_alone_one_a_later_change_noted(due_match):
    """The command it waited for was applied between the fire's read and its put-back, and
    noted its own deadline: that one stands (else the next deadline could wait a second)."""
    match_id, arrivals = str(due_match.pk), pending_command_before(due_match)
    later_deadline_ms = due_match.deadline_ms + 30_000
    sync_redis().set(readings.SEQ_KEY.format(match_id), due_match.seq + 1)
    sync_redis().zadd(deadlines.DEADLINES_KEY, {match_id: later_deadline_ms})
    try:
        assert scheduler.fire_due([match_id], timekeeping.now_ms()) == 0
    finally:
        sync_redis().delete(arrivals, readings.SEQ_KEY.format(match_id))
    assert sync_redis().zscore(deadlines.DEADLINES_KEY, match_id) == later_deadline_ms


async def wait_until_async(predicate, timeout_s: float):
    check = database_sync_to_async(predicate)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not await check():
        assert loop.time() < deadline, "the condition did not come true in time"
        await asyncio.sleep(0.02)


def test_a_change_noted_after_a_later_change_of_its_match_leaves_the_later_one(own_deadline_set):
    # Each change's Redis writes are made after its ack, from its own process's loop: two
    # changes' writes can reach Redis out of order, and the older must not undo the newer.
    match_id = uuid.uuid4().hex
    seq_key = readings.SEQ_KEY.format(match_id)

    def note(seq: int, deadline_ms: int | None) -> None:
        pipe = sync_redis().pipeline(transaction=False)
        broadcast.note_change(pipe, match_id, seq, deadline_ms)
        pipe.execute()

    client = sync_redis()
    try:
        note(8, 5_000)
        note(7, 9_000)  # the earlier change, arriving late
        assert (client.get(seq_key), client.zscore(own_deadline_set, match_id)) == ("8", 5_000)
        note(8, 6_000)  # the same change written again (a retry) still counts
        assert client.zscore(own_deadline_set, match_id) == 6_000
        note(9, None)  # the match ended: no deadline
        assert (client.get(seq_key), client.zscore(own_deadline_set, match_id)) == ("9", None)
        assert 0 < client.ttl(seq_key) <= broadcast.SEQ_TTL_S
    finally:
        client.delete(seq_key)

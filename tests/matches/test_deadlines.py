"""Deadlines in Redis and the database; the task armed for each and the sweeper that catches
lost ones. These use the authority's real time (the sweeper reads it), with deadlines set just
past so nothing waits."""

import uuid

import pytest

import engine
from config.redis_clients import sync_redis
from matches import deadlines, services, tasks, timekeeping
from matches.models import Match, TimingFault

pytestmark = pytest.mark.django_db
GRACE = 20_000


@pytest.fixture(autouse=True)
def own_deadline_set(monkeypatch):
    """A sorted set of this test's own, so other test runs on the same Redis do not meet it."""
    key = f"sbo:deadlines:test-{uuid.uuid4().hex}"
    monkeypatch.setattr(deadlines, "DEADLINES_KEY", key)
    yield key
    sync_redis().delete(key)


@pytest.fixture
def due_match(make_user):
    """A match (unrated) whose Start deadline passed 50 ms ago; on_commit hooks do not run in
    these tests, so no task was ever queued for it: as if the task was lost."""
    now = timekeeping.now_ms()
    match = services.match_create(
        player0=make_user("ala"),
        player1=make_user("olek"),
        now_ms=now - GRACE - 50,
        clock=engine.ClockConfig(),
    )
    assert match.deadline_ms < now
    return match


def test_the_sweeper_acts_on_a_deadline_whose_task_was_lost(due_match):
    deadlines.remember(str(due_match.pk), due_match.deadline_ms)
    assert tasks.sweep_deadlines() == 1
    due_match.refresh_from_db()
    start = due_match.record["rounds"][0]["events"][0]
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


def test_the_task_for_a_deadline_acts_once(due_match):
    seq = due_match.seq
    assert tasks.expire_match(str(due_match.pk), seq) == "start"
    assert tasks.expire_match(str(due_match.pk), seq) == "stale"  # redelivered: nothing twice
    due_match.refresh_from_db()
    assert [e["type"] for e in due_match.record["rounds"][0]["events"]] == ["start"]


def test_a_task_that_fires_early_is_scheduled_again(make_user, monkeypatch):
    scheduled = []
    monkeypatch.setattr(deadlines, "schedule", lambda *args: scheduled.append(args))
    match = services.match_create(
        player0=make_user("ala"), player1=make_user("olek"), now_ms=timekeeping.now_ms()
    )
    assert tasks.expire_match(str(match.pk), match.seq) == "early"
    assert scheduled == [(str(match.pk), match.seq, match.deadline_ms)]

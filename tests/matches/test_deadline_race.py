"""A command that reaches the server before the deadline beats the timeout, however long it
waits for the lock; one that arrives exactly at the deadline is late (RULES §7, DESIGN step 5).

The consumer stamps each command's arrival in Redis (``sbo:arrivals:<match>``) before it waits
for the match's lock; the timeout path stands back while such a command is pending."""

import threading
import uuid

import pytest
from django.db import transaction

from matches import services, timekeeping
from matches.models import Match
from realtime.redis_clients import sync_redis


def arrivals_key(match) -> str:
    return timekeeping.ARRIVALS_KEY.format(match_id=str(match.pk))


@pytest.fixture
def stamped():
    """Register a pending arrival as the consumer's Lua stamp does (removed after the test)."""
    keys = []

    def stamp(match, at_ms: int) -> str:
        token = uuid.uuid4().hex
        keys.append(arrivals_key(match))
        sync_redis().zadd(arrivals_key(match), {token: at_ms})
        return token

    yield stamp
    if keys:
        sync_redis().delete(*keys)


def opening_of(table) -> tuple[int, dict]:
    state = table.state
    return state.decider, {"type": "play", "tile": list(state.forced_tile), "place": None}


@pytest.mark.django_db
def test_a_command_stamped_1_ms_before_the_deadline_wins_over_the_timeout(table, stamped):
    table.start()
    deadline = table.match.deadline_ms
    seat, play = opening_of(table)
    stamped(table.match, deadline - 1)
    assert services.match_expire(match_id=table.match.pk, now_ms=deadline) == "command_pending"
    assert services.match_expire(match_id=table.match.pk, now_ms=deadline + 40) == "command_pending"
    table.match.refresh_from_db()
    assert table.match.status == "live"
    outcome = services.match_submit(
        match_id=table.match.pk,
        user=table.users[seat],
        command=play,
        arrival_ms=deadline - 1,
        cseq=99,
    )
    assert outcome.late is False
    table.match.refresh_from_db()
    last = table.events()[-1]
    assert (last["type"], last["seat"], last["at_ms"]) == ("play", seat, deadline - 1)
    assert last["banks_ms"][seat] == 1  # the whole bank but one millisecond was used
    assert table.match.deadline_ms > deadline  # the opponent's decision now


@pytest.mark.django_db
def test_a_command_stamped_at_the_deadline_is_late_and_its_sender_loses_on_time(
    table, stamped, present
):
    table.start()
    deadline = table.match.deadline_ms
    seat, play = opening_of(table)
    present(table.match, seat)
    stamped(table.match, deadline)  # at the deadline: not pending *before* it
    outcome = services.match_submit(
        match_id=table.match.pk, user=table.users[seat], command=play, arrival_ms=deadline, cseq=99
    )
    assert outcome.late is True and outcome.duplicate is False
    table.match.refresh_from_db()
    assert (table.match.status, table.match.winner, table.match.reason) == (
        "finished",
        1 - seat,
        "time",
    )
    last = table.events()[-1]
    assert (last["type"], last["seat"], last["at_ms"]) == ("timeout", seat, deadline)
    # The play was not applied (the round's contributions to its deal came first).
    assert [e["type"] for e in table.events()] == ["contribute", "contribute", "start", "timeout"]


@pytest.mark.django_db
def test_an_arrival_pending_at_the_deadline_does_not_hold_off_the_timeout(table, stamped):
    table.start()
    deadline = table.match.deadline_ms
    stamped(table.match, deadline)
    assert services.match_expire(match_id=table.match.pk, now_ms=deadline) == "abandon"


@pytest.mark.django_db
def test_an_arrival_lost_with_its_process_does_not_hold_off_the_timeout_for_ever(table, stamped):
    table.start()
    deadline = table.match.deadline_ms
    stamped(table.match, deadline - 1)
    later = deadline - 1 + timekeeping.PENDING_TTL_MS + 1
    assert services.match_expire(match_id=table.match.pk, now_ms=later) == "abandon"


# --- the same race with real locks and threads ----


def in_thread(target):
    """Run ``target`` in a thread with its own database connection; returns (thread, results)."""
    from django.db import connection

    results = {}

    def run():
        try:
            results["value"] = target()
        except BaseException as exc:  # reported to the test
            results["error"] = exc
        finally:
            connection.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, results


def value_of(thread, results, timeout=30):
    thread.join(timeout)
    assert not thread.is_alive(), "the thread is stuck"
    if "error" in results:
        raise results["error"]
    return results["value"]


@pytest.mark.django_db(transaction=True)
def test_with_real_locks_a_command_waiting_while_the_timeout_path_holds_the_lock_wins(
    table, stamped, monkeypatch
):
    table.start()
    deadline = table.match.deadline_ms
    seat, play = opening_of(table)
    has_lock, go_on = threading.Event(), threading.Event()
    real_query_pending_before = timekeeping.query_pending_before

    def pending_before_after_a_pause(*args):
        has_lock.set()  # the timeout path holds the match's lock now
        assert go_on.wait(20)
        return real_query_pending_before(*args)

    monkeypatch.setattr(timekeeping, "query_pending_before", pending_before_after_a_pause)
    expiry = in_thread(lambda: services.match_expire(match_id=table.match.pk, now_ms=deadline))
    assert has_lock.wait(20)
    # The command reaches the server 1 ms before the deadline: stamped, then it waits for the lock.
    stamped(table.match, deadline - 1)
    command = in_thread(
        lambda: services.match_submit(
            match_id=table.match.pk,
            user=table.users[seat],
            command=play,
            arrival_ms=deadline - 1,
            cseq=99,
        )
    )
    go_on.set()
    assert value_of(*expiry) == "command_pending"
    assert value_of(*command) == services.Outcome(seq=table.match.seq + 1)
    table.match.refresh_from_db()
    assert table.match.status == "live"
    assert [e["type"] for e in table.events()][-1] == "play"


@pytest.mark.django_db(transaction=True)
def test_with_real_locks_a_command_waiting_for_the_lock_is_judged_by_its_arrival(table, present):
    """Both ways: 1 ms before the deadline wins, at the deadline loses, whoever held the lock."""
    table.start()
    has_lock, release = threading.Event(), threading.Event()

    def hold_the_lock():
        with transaction.atomic():
            Match.objects.select_for_update().get(pk=table.match.pk)
            has_lock.set()
            assert release.wait(20)

    def submit_while_locked(seat, command, arrival_ms):
        has_lock.clear()
        release.clear()
        holder = in_thread(hold_the_lock)
        assert has_lock.wait(20)
        waiting = in_thread(
            lambda: services.match_submit(
                match_id=table.match.pk,
                user=table.users[seat],
                command=command,
                arrival_ms=arrival_ms,
                cseq=99,
            )
        )
        release.set()
        value_of(*holder)
        return value_of(*waiting)

    seat, play = opening_of(table)
    deadline = table.match.deadline_ms
    assert submit_while_locked(seat, play, deadline - 1).late is False
    table.match.refresh_from_db()
    other, next_deadline = 1 - seat, table.match.deadline_ms
    assert table.state.decider == other
    present(table.match, other)
    assert submit_while_locked(other, {"type": "draw"}, next_deadline).late is True
    table.match.refresh_from_db()
    assert (table.match.winner, table.match.reason) == (seat, "time")
    kinds = [e["type"] for e in table.events()]
    assert kinds == ["contribute", "contribute", "start", "play", "timeout"]

"""The web tier's beats, and what a forfeit becomes when no web process could hear the player
(RULES §7: a timing fault of the service voids the match; a forfeit stands otherwise)."""

import asyncio
import random

import pytest

import engine
from matches import scheduler, services, webbeats
from matches.models import TimingFault
from realtime.redis_clients import async_redis, sync_redis

from .conftest import T0

S = T0 // 1000  # the tests' start, in seconds
UNREACHABLE = "redis://127.0.0.1:1/0"  # nothing listens there


def beat(*seconds: int) -> None:
    sync_redis().zadd(webbeats.BEATS_KEY, {str(s): s for s in seconds})


def test_no_beats_at_all_is_no_evidence():
    assert webbeats.verdict(T0, T0 + 10_000, T0 + 10_000) == webbeats.UNKNOWN


def test_a_beat_every_second_is_up():
    beat(*range(S - 5, S + 11))
    assert webbeats.verdict(T0, T0 + 10_000, T0 + 10_000) == webbeats.UP


def test_a_restart_within_the_tolerance_is_up():
    beat(*range(S - 5, S + 3), *range(S + 6, S + 11))  # 3 s without a beat
    assert webbeats.verdict(T0, T0 + 10_000, T0 + 10_000) == webbeats.UP


def test_longer_than_the_tolerance_without_a_beat_while_the_clock_ran_is_a_gap():
    beat(*range(S - 5, S + 3), *range(S + 7, S + 11))  # 4 s without a beat
    assert webbeats.verdict(T0, T0 + 10_000, T0 + 10_000) == webbeats.GAP


def test_a_gap_outside_the_running_clock_does_not_count():
    beat(*range(S - 20, S - 10), *range(S - 2, S + 11))
    assert webbeats.verdict(T0, T0 + 10_000, T0 + 10_000) == webbeats.UP


def test_an_outage_from_just_before_the_deadline_to_well_after_it_is_a_gap():
    beat(*range(S - 5, S + 9), *range(S + 20, S + 31))  # down from S+9 to S+20
    assert webbeats.verdict(T0, T0 + 10_000, T0 + 30_000) == webbeats.GAP


def test_no_web_process_up_now_is_down_now():
    beat(*range(S - 5, S + 5))
    assert webbeats.verdict(T0, T0 + 10_000, T0 + 10_000) == webbeats.DOWN_NOW


def test_beats_lost_from_before_the_clock_started_count_as_an_outage():
    beat(*range(S + 4, S + 11))  # Redis lost the earlier ones: it was down itself
    assert webbeats.verdict(T0, T0 + 10_000, T0 + 10_000) == webbeats.GAP


def test_an_outage_that_began_before_the_clock_started_is_a_gap():
    beat(*range(S - 10, S - 1), *range(S + 5, S + 11))
    assert webbeats.verdict(T0, T0 + 10_000, T0 + 10_000) == webbeats.GAP


def test_an_outage_still_going_on_at_the_deadline_is_judged_later_not_forfeited_now():
    beat(*range(S - 5, S + 9))  # the web tier went down a second before the deadline
    assert webbeats.verdict(T0, T0 + 10_000, T0 + 11_000) == webbeats.DOWN_NOW


def test_the_start_wait_is_not_pressed_while_no_web_process_is_up(table):
    deadline = table.match.deadline_ms  # the Start wait's
    beat(*range(S - 5, S + 1))
    assert services.match_expire(match_id=table.match.pk, now_ms=deadline + 5_000) == "web_down"
    assert [e["type"] for e in table.events()] == ["contribute", "contribute"]  # the deal only


def test_a_move_after_an_outage_during_its_turn_voids_instead(table):
    table.start()
    beat(*range(S - 5, S + 2), *range(S + 8, S + 12))  # down for 5 s of the turn
    table.now = T0 + 11_000
    state = table.state
    command = engine.GreedyBot().choose(state, state.decider, random.Random(0))
    table.submit(state.decider, command)
    assert (table.match.status, table.match.reason) == ("void", "void")
    assert [e["type"] for e in table.events()] == ["contribute", "contribute", "start", "void"]
    assert TimingFault.objects.get().kind == "web_down"


def test_a_forfeit_waits_while_no_web_process_is_up(table):
    table.start()
    deadline = table.match.deadline_ms
    beat(*range(S - 5, S + 2))
    assert services.match_expire(match_id=table.match.pk, now_ms=deadline + 10_000) == "web_down"
    table.match.refresh_from_db()
    assert table.match.status == "live"
    assert not TimingFault.objects.exists()


def test_a_clock_that_ran_while_no_web_process_was_up_voids_the_match(table):
    table.start()
    deadline = table.match.deadline_ms
    start_s = T0 // 1000
    beat(*range(start_s - 5, start_s + 5), *range(deadline // 1000 - 2, deadline // 1000 + 12))
    assert services.match_expire(match_id=table.match.pk, now_ms=deadline + 10_000) == "void"
    table.match.refresh_from_db()
    assert (table.match.status, table.match.winner, table.match.reason) == ("void", None, "void")
    fault = TimingFault.objects.get()
    assert (fault.kind, fault.status, fault.decided_by) == ("web_down", "confirmed", "auto")
    assert [e["type"] for e in table.events()] == ["contribute", "contribute", "start", "void"]


def test_a_clock_that_ran_while_the_web_tier_was_up_is_forfeited_at_its_deadline(table):
    table.start()
    deadline = table.match.deadline_ms
    beat(*range(T0 // 1000 - 5, deadline // 1000 + 12))
    assert services.match_expire(match_id=table.match.pk, now_ms=deadline + 10_000) == "abandon"
    forfeit = table.events()[-1]
    assert (forfeit["type"], forfeit["at_ms"]) == ("abandon", deadline)


# --- this process's own run of beats -------------------------------------------------------------


@pytest.fixture(autouse=True)
def no_own_run(monkeypatch):
    monkeypatch.setattr(webbeats, "_own_run", None)


@pytest.fixture
def unreachable_redis(settings):
    settings.REDIS_URL = UNREACHABLE


def own_beats(*seconds: int) -> None:
    for second in seconds:
        webbeats.note_beat(second)


def test_a_clock_within_this_process_s_own_run_is_up_without_asking_redis(unreachable_redis):
    own_beats(*range(S - 5, S + 11))
    assert webbeats.verdict(T0, T0 + 10_000, T0 + 10_000) == webbeats.UP


def test_a_failed_beat_ends_the_run_and_redis_is_asked_again():
    own_beats(*range(S - 5, S + 11))
    webbeats.note_beat(None)
    beat(*range(S - 5, S + 3), *range(S + 7, S + 11))  # what Redis saw: a 4 s outage
    assert webbeats.verdict(T0, T0 + 10_000, T0 + 10_000) == webbeats.GAP


def test_a_run_broken_for_longer_than_the_tolerance_starts_again(unreachable_redis):
    own_beats(*range(S - 5, S + 3), *range(S + 7, S + 11))  # 4 s without a beat
    assert webbeats.verdict(T0 + 8_000, T0 + 10_000, T0 + 10_000) == webbeats.UP
    with pytest.raises(Exception, match="127.0.0.1:1|Connection"):
        webbeats.verdict(T0, T0 + 10_000, T0 + 10_000)  # not vouched for: Redis must say


def test_a_pause_within_the_tolerance_keeps_the_run(unreachable_redis):
    own_beats(*range(S - 5, S + 3), *range(S + 6, S + 11))  # 3 s without a beat
    assert webbeats.verdict(T0, T0 + 10_000, T0 + 10_000) == webbeats.UP


def test_a_run_that_stopped_is_no_evidence_that_the_tier_is_up_now():
    own_beats(*range(S - 5, S + 5))
    beat(*range(S - 5, S + 5))
    assert webbeats.verdict(T0, T0 + 10_000, T0 + 10_000) == webbeats.DOWN_NOW


def test_a_run_under_another_beats_key_does_not_count(monkeypatch):
    own_beats(*range(S - 5, S + 11))
    monkeypatch.setattr(webbeats, "BEATS_KEY", webbeats.BEATS_KEY + ":other")
    assert webbeats.verdict(T0, T0 + 10_000, T0 + 10_000) == webbeats.UNKNOWN


def test_beats_redis_lost_end_the_run_and_redis_is_asked_again(unreachable_redis):
    own_beats(*range(S - 5, S + 5))
    webbeats.note_beat(S + 5, previous_kept=False)  # the beat at S + 4 was gone: Redis lost it
    with pytest.raises(Exception, match="127.0.0.1:1|Connection"):
        webbeats.verdict(T0, T0 + 5_000, T0 + 5_000)


async def test_the_beat_loop_tells_the_process_of_its_beats_of_lost_ones_and_of_a_failure(
    settings,
):
    reachable = settings.REDIS_URL
    await scheduler._beat()
    (first,) = [int(second) for second in sync_redis().zrange(webbeats.BEATS_KEY, 0, -1)]
    while int((await async_redis().time())[0]) == first:  # the next beat in the next second
        await asyncio.sleep(0.02)
    await scheduler._beat()
    clock = (first * 1000, first * 1000 + 1_000, first * 1000 + 1_000)  # start, end, now
    settings.REDIS_URL = UNREACHABLE
    assert webbeats.verdict(*clock) == webbeats.UP  # vouched for by its own run
    settings.REDIS_URL = reachable
    sync_redis().delete(webbeats.BEATS_KEY)  # Redis loses them: a restart, a flush
    await scheduler._beat()  # finds its previous beat gone: the run starts again
    settings.REDIS_URL = UNREACHABLE
    with pytest.raises(Exception, match="127.0.0.1:1|Connection"):
        webbeats.verdict(*clock)  # not vouched for: Redis must say
    settings.REDIS_URL = reachable
    await scheduler._beat()
    settings.REDIS_URL = UNREACHABLE
    with pytest.raises(Exception, match="127.0.0.1:1|Connection"):
        await scheduler._beat()  # a failed beat ends the run too
    settings.REDIS_URL = reachable
    now_ms = int((await async_redis().time())[0]) * 1000
    sync_redis().delete(webbeats.BEATS_KEY)
    assert webbeats.verdict(now_ms, now_ms, now_ms) == webbeats.UNKNOWN  # Redis was asked

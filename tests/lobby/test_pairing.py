"""Quick pairing: closest ratings first, within a window that widens while players wait."""

import pytest

from lobby import services
from lobby.models import QuickEntry
from lobby.pairing import pick_pairs, window
from tests.accounts.factories import NOW_MS, make_user

T = NOW_MS


def test_the_window_starts_at_100_and_widens_20_a_second_up_to_1000():
    assert [window(ms) for ms in (0, 999, 1000, 5000, 45_000, 600_000)] == [
        100,
        100,
        120,
        200,
        1000,
        1000,
    ]


def test_the_closest_ratings_pair_first():
    waiting = [(1, 1500, T), (2, 1560, T), (3, 1510, T), (4, 1590, T)]
    assert pick_pairs(waiting, T) == [(1, 3), (2, 4)]


def test_a_pair_outside_the_window_waits_until_it_has_widened():
    waiting = [(1, 1500, T), (2, 1700, T + 2000)]
    assert pick_pairs(waiting, T) == []
    assert pick_pairs(waiting, T + 4999) == []  # the longer waiter's window: 100 + 20*4 = 180
    assert pick_pairs(waiting, T + 5000) == [(1, 2)]  # 200


def test_ties_go_to_the_earlier_joiner():
    waiting = [(7, 1550, T + 10), (8, 1500, T), (9, 1600, T + 20)]
    assert pick_pairs(waiting, T + 30) == [(7, 8)]


@pytest.mark.django_db
def test_two_waiting_players_are_paired_by_the_service_as_the_window_widens():
    ann, bob = make_user("ann", rating=1500), make_user("bob", rating=1700)
    assert services.quick_join(user=ann, now_ms=T) is None
    assert services.quick_join(user=bob, now_ms=T + 1000) is None
    assert services.quick_pair(now_ms=T + 4000) == []
    [match] = services.quick_pair(now_ms=T + 5000)
    assert {match.player0_id, match.player1_id} == {ann.pk, bob.pk}
    assert not match.rated  # not both on the ladder
    assert not QuickEntry.objects.exists()


@pytest.mark.django_db
def test_joining_pairs_at_once_when_someone_close_is_waiting_and_ladder_pairs_are_rated():
    ann, bob = make_user("ann", on_ladder=True), make_user("bob", rating=1550, on_ladder=True)
    services.quick_join(user=ann, now_ms=T)
    match = services.quick_join(user=bob, now_ms=T + 100)
    assert match is not None and match.rated
    assert services.quick_leave(user=ann) is None


@pytest.mark.django_db
def test_a_player_who_stops_waiting_is_not_paired():
    ann, bob = make_user("ann"), make_user("bob", rating=1900)
    services.quick_join(user=ann, now_ms=T)
    services.quick_leave(user=ann)
    services.quick_join(user=bob, now_ms=T)
    assert services.quick_pair(now_ms=T + 60_000) == []


@pytest.mark.django_db
def test_the_beat_task_pairs_on_the_time_authoritys_clock(monkeypatch):
    from lobby import tasks

    ann, bob = make_user("ann", rating=1500), make_user("bob", rating=1700)
    services.quick_join(user=ann, now_ms=T)
    services.quick_join(user=bob, now_ms=T)
    monkeypatch.setattr("lobby.tasks.now_ms", lambda: T + 5000)
    assert tasks.quick_pair() == 1
    assert not QuickEntry.objects.exists()

"""The leaderboard: ladder members only, at least 5 rated matches, active in the last 30 days,
ties by rated matches then username."""

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.selectors import leaderboard
from tests.accounts.factories import make_user

pytestmark = pytest.mark.django_db


def ranked(player, *, rating, games=10, days_ago=1, on_ladder=True, now):
    return make_user(
        player,
        rating=rating,
        rated_games=games,
        on_ladder=on_ladder,
        last_rated_at=now - timedelta(days=days_ago),
    )


def test_the_ranking_orders_by_rating_then_rated_matches_then_username():
    now = timezone.now()
    ranked("carol", rating=1600, games=10, now=now)
    ranked("alice", rating=1600, games=10, now=now)
    ranked("dave", rating=1600, games=12, now=now)
    ranked("bob", rating=1700, games=6, now=now)
    assert [u.username for u in leaderboard(now=now)] == ["bob", "dave", "alice", "carol"]


def test_players_off_the_ladder_with_few_matches_or_inactive_are_not_ranked():
    now = timezone.now()
    ranked("member", rating=1500, now=now)
    ranked("visitor", rating=1900, on_ladder=False, now=now)
    ranked("newcomer", rating=1900, games=4, now=now)
    ranked("fifth", rating=1400, games=5, now=now)
    ranked("sleeper", rating=1900, days_ago=31, now=now)
    ranked("justactive", rating=1450, days_ago=29, now=now)
    make_user("never", rating=1900, rated_games=0, on_ladder=True)
    assert [u.username for u in leaderboard(now=now)] == ["member", "justactive", "fifth"]


def test_an_inactive_player_returns_when_time_is_rewound_to_their_last_match():
    now = timezone.now()
    ranked("sleeper", rating=1900, days_ago=40, now=now)
    assert list(leaderboard(now=now)) == []
    assert [u.username for u in leaderboard(now=now - timedelta(days=20))] == ["sleeper"]

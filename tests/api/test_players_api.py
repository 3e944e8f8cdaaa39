"""The players API: the leaderboard (ranks, provisional flag, win rate), a profile with its
rating history, and the players' ratings as the matches left them."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

pytestmark = pytest.mark.django_db


def ladder(count: int, **fields):
    now = timezone.now()
    users = get_user_model().objects
    return [
        users.create(
            username=f"laddered{n:02d}",
            on_ladder=True,
            rating=1600 - 10 * n,
            rated_games=30,
            rated_wins=15 + n % 10,
            rated_losses=15 - n % 10,
            last_rated_at=now,
            **fields,
        )  # fmt: skip
        for n in range(count)
    ]


def test_the_leaderboard_ranks_by_rating_page_by_page(api, world):
    ladder(7)
    first = api.get("/api/leaderboard/?page_size=3").json()
    second = api.get("/api/leaderboard/?page_size=3&page=2").json()
    assert first["count"] == 7
    assert [(e["rank"], e["username"]) for e in first["results"] + second["results"]] == [
        (n + 1, f"laddered{n:02d}") for n in range(6)
    ]
    assert first["results"][0] == {
        "rank": 1, "username": "laddered00", "rating": 1600, "provisional": False,
        "computer": None, "rated_games": 30, "win_rate": 0.5,
    }  # fmt: skip


def test_the_leaderboard_flags_provisional_ratings_and_leaves_out_who_it_should(api, world):
    users = get_user_model().objects
    ladder(1)
    now = timezone.now()
    users.create(username="newish", on_ladder=True, rating=1700, rated_games=6, rated_wins=6,
                 last_rated_at=now)  # fmt: skip
    users.create(
        username="offladder", on_ladder=False, rating=1900, rated_games=30, last_rated_at=now
    )
    users.create(username="idle", on_ladder=True, rating=1900, rated_games=30,
                 last_rated_at=now - timedelta(days=90))  # fmt: skip
    users.create(username="fresh", on_ladder=True, rating=1900, rated_games=2, last_rated_at=now)
    entries = api.get("/api/leaderboard/").json()["results"]
    assert [(e["username"], e["provisional"], e["win_rate"]) for e in entries] == [
        ("newish", True, 1.0),
        ("laddered00", False, 0.5),
    ]


def test_a_profile_has_the_rating_and_its_history(api, world):
    response = api.get("/api/players/ala/")
    assert response.status_code == 200
    profile = response.json()
    full = world.full
    assert profile["username"] == "ala" and profile["on_ladder"] is True
    assert profile["rating"] == full.rating_after0 and profile["rated_games"] == 1
    assert profile["win_rate"] == (1.0 if full.winner == 0 else 0.0)
    assert profile["provisional"] is True
    assert profile["matches_url"] == "/api/players/ala/matches/"
    assert [
        (h["match"], h["before"], h["after"], h["delta"]) for h in profile["rating_history"]
    ] == [(str(full.id), 1500, full.rating_after0, full.rating_after0 - 1500)]


def test_a_player_who_never_played_rated_has_no_win_rate(api, world):
    profile = api.get("/api/players/zed/").json()
    assert profile["rated_games"] == 0 and profile["win_rate"] is None
    assert profile["rating_history"] == [] and profile["last_rated_at"] is None


def test_no_such_player_is_a_404(api, world):
    assert api.get("/api/players/nobody/").status_code == 404

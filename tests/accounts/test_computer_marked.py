"""A computer account is marked as such wherever players are listed: the leaderboard, its
profile, a person's list of opponents, and the API."""

from __future__ import annotations

import pytest
from django.test import Client
from django.utils import timezone

from accounts.services import computer_player
from tests.accounts.factories import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def ranked_computer():
    computer = computer_player(level="expert")
    computer.rating, computer.rated_games, computer.last_rated_at = 1650, 12, timezone.now()
    computer.save(update_fields=["rating", "rated_games", "last_rated_at"])
    person = make_user(
        "ala", rating=1500, rated_games=6, on_ladder=True, last_rated_at=timezone.now()
    )
    return computer, person


def test_the_leaderboard_page_and_api_mark_the_computer_and_not_a_person(ranked_computer):
    computer, person = ranked_computer
    page = Client().get("/leaderboard/").content.decode()
    row_of = {
        name: page[page.index(f">{name}</a>") :].split("</tr>")[0]
        for name in (computer.username, person.username)
    }
    assert "pill-computer" in row_of[computer.username] and "expert" in row_of[computer.username]
    assert "pill-computer" not in row_of[person.username]
    entries = {e["username"]: e for e in Client().get("/api/leaderboard/").json()["results"]}
    assert entries[computer.username]["computer"] == "expert"
    assert entries[person.username]["computer"] is None


def test_the_computers_profile_and_api_say_it_is_the_computer(ranked_computer):
    computer, _ = ranked_computer
    page = Client().get(f"/players/{computer.username}/").content.decode()
    assert "pill-computer" in page.split("</h1>")[0]
    assert Client().get(f"/api/players/{computer.username}/").json()["computer"] == "expert"

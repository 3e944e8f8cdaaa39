"""Reads of accounts: the leaderboard, profiles, rating history.

Leaderboard rules: ladder members with at least ``LEADERBOARD_MIN_RATED`` (5) rated matches
whose last rated match is at most ``LEADERBOARD_INACTIVE_DAYS`` (30) days old (an inactive
player is hidden until they play a rated match again; their rating is kept). Ranked by rating,
ties broken by more rated matches, then username (unique, so the order is total).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import QuerySet
from django.http import Http404
from django.utils import timezone

from accounts.models import RatingChange, User

LEADERBOARD_MIN_RATED = 5
LEADERBOARD_INACTIVE_DAYS = 30


def leaderboard(*, now: datetime | None = None) -> QuerySet[User]:
    now = now or timezone.now()
    return User.objects.filter(
        on_ladder=True,
        is_active=True,
        rated_games__gte=LEADERBOARD_MIN_RATED,
        last_rated_at__gte=now - timedelta(days=LEADERBOARD_INACTIVE_DAYS),
    ).order_by("-rating", "-rated_games", "username")


def leaderboard_ranked(*, now: datetime | None = None, limit: int = 100) -> list[tuple[int, User]]:
    return list(enumerate(leaderboard(now=now)[:limit], start=1))


def player_profile(username: str) -> User:
    try:
        return User.objects.get(username=username, is_active=True)
    except User.DoesNotExist:
        raise Http404("no such player") from None


def rating_history(user: User) -> list[RatingChange]:
    """The user's rating changes that stand (voided ones left out), oldest first."""
    return list(RatingChange.objects.filter(user=user, voided=False).order_by("at", "id"))

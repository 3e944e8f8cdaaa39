"""Reads of accounts: the leaderboard, profiles, rating history.

Leaderboard rules: ladder members with at least ``LEADERBOARD_MIN_RATED`` (5) rated matches
whose last rated match is at most ``LEADERBOARD_INACTIVE_DAYS`` (30) days old (an inactive
player is hidden until they play a rated match again; their rating is kept). Ranked by rating,
ties broken by more rated matches, then username (unique, so the order is total).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import Q, QuerySet
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


def recent_matches(user: User, *, limit: int = 10) -> list[dict]:
    """The user's latest matches, newest first, from the user's side."""
    from matches.models import Match

    matches = (
        Match.objects.filter(Q(player0=user) | Q(player1=user))
        .select_related("player0", "player1")
        .order_by("-created_at")[:limit]
    )
    rows = []
    for match in matches:
        seat = 0 if match.player0_id == user.pk else 1
        opponent = match.player1 if seat == 0 else match.player0
        before = match.rating_before0 if seat == 0 else match.rating_before1
        after = match.rating_after0 if seat == 0 else match.rating_after1
        if match.status == Match.Status.FINISHED and match.mode == Match.Mode.ONLINE:
            result = "win" if match.winner == seat else "loss"
        else:
            result = match.status if match.status != Match.Status.FINISHED else "finished"
        rows.append({
            "match": match,
            "opponent": None if match.mode == Match.Mode.HOTSEAT else opponent,
            "result": result,
            "delta": None if after is None or before is None else after - before,
            "url": f"/match/{match.id}/",
        })  # fmt: skip
    return rows

"""Builders for account and match rows shared by tests/accounts and tests/lobby."""

from __future__ import annotations

from django.utils import timezone

from accounts.models import User

PASSWORD = "correct-horse-battery-9"
NOW_MS = 1_800_000_000_000


def make_user(
    username: str, *, rating: int = 1500, rated_games: int = 0, on_ladder: bool = False, **fields
) -> User:
    return User.objects.create_user(
        username,
        password=PASSWORD,
        rating=rating,
        rated_games=rated_games,
        on_ladder=on_ladder,
        ladder_joined_at=timezone.now() if on_ladder else None,
        **fields,
    )


def make_match(player0: User, player1: User, *, rated: bool = True):
    from matches.services import match_create

    return match_create(player0=player0, player1=player1, rated=rated, now_ms=NOW_MS)


def fast_password_hashing(settings) -> None:
    """The default hasher takes ~0.3 s a user on these machines; these tests do not test it."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

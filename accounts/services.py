"""Writes of accounts: registration, the ladder, and rating results.

``rating_record_result`` runs inside the match service's transaction
(matches/services.py); they lock both players' rows (in primary-key order, like every writer
that locks users) and the caller saves the match.
"""

from __future__ import annotations

from django.contrib.auth.password_validation import validate_password
from django.db import transaction
from django.utils import timezone

from accounts import elo, signals
from accounts.models import RatingChange, User
from engine import Rejection

COMPUTER_LEVELS = ("random", "greedy", "expert")
COMPUTER_PREFIX = "computer-"


class AccountError(Rejection):
    """An account request refused."""


def user_register(*, username: str, password: str, email: str = "") -> User:
    """A new user; the password must pass the configured validators (ValidationError if not)."""
    if username.lower().startswith(COMPUTER_PREFIX):
        raise AccountError(
            "username_reserved", "names starting with 'computer-' are the computer's"
        )
    if User.objects.filter(username__iexact=username).exists():
        raise AccountError("username_taken", "a user with that username already exists")
    user = User(username=username, email=User.objects.normalize_email(email or ""))
    validate_password(password, user)
    user.set_password(password)
    user.save()
    return user


def users_locked(*user_ids) -> dict[int, User]:
    """Lock the users' rows in primary-key order (one order for every writer: no deadlocks)."""
    ids = sorted(set(user_ids))
    return {
        user.pk: user for user in User.objects.select_for_update().filter(pk__in=ids).order_by("pk")
    }


def computer_player(*, level: str) -> User:
    """The computer account of ``level``: it cannot sign in, it is on the ladder with a rating
    of its own, and it may play any number of matches at once."""
    if level not in COMPUTER_LEVELS:
        raise AccountError("no_such_level", f"the computer plays at {', '.join(COMPUTER_LEVELS)}")
    user, created = User.objects.get_or_create(
        username=f"{COMPUTER_PREFIX}{level}",
        defaults={"computer_level": level, "on_ladder": True, "ladder_joined_at": timezone.now()},
    )
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    return user


def ladder_join(*, user: User) -> User:
    with transaction.atomic():
        locked = users_locked(user.pk)[user.pk]
        if not locked.on_ladder:
            locked.on_ladder = True
            locked.ladder_joined_at = timezone.now()
            locked.save(update_fields=["on_ladder", "ladder_joined_at"])
    user.on_ladder, user.ladder_joined_at = locked.on_ladder, locked.ladder_joined_at
    return locked


def ladder_leave(*, user: User) -> User:
    """Leave the ladder: rating and history are kept; rated seeks and rated challenges stop."""
    with transaction.atomic():
        locked = users_locked(user.pk)[user.pk]
        if locked.on_ladder:
            locked.on_ladder = False
            locked.ladder_joined_at = None
            locked.save(update_fields=["on_ladder", "ladder_joined_at"])
            signals.ladder_left.send(sender=User, user=locked)
    user.on_ladder, user.ladder_joined_at = locked.on_ladder, locked.ladder_joined_at
    return locked


def rating_record_result(*, match) -> None:
    """Apply a finished rated match's result (``match.winner`` 0/1) to both players' ratings and
    store before/after on the match. Runs in the caller's transaction; the caller saves the
    match. Does nothing if the result was already applied or the match is one user's."""
    if match.rating_after0 is not None or match.player0_id == match.player1_id:
        return
    users = users_locked(match.player0_id, match.player1_id)
    players = (users[match.player0_id], users[match.player1_id])
    before = (players[0].rating, players[1].rating)
    games = (players[0].rated_games, players[1].rated_games)
    after = elo.match_ratings(before, games, match.winner)
    now = match.finished_at or timezone.now()
    changes = []
    for seat, player in enumerate(players):
        won = seat == match.winner
        changes.append(RatingChange(
            user=player, match=match, before=before[seat], after=after[seat],
            score=1 if won else 0, k=elo.k_factor(games[seat]), at=now,
        ))  # fmt: skip
        player.rating = after[seat]
        player.rated_games += 1
        player.rated_wins += 1 if won else 0
        player.rated_losses += 0 if won else 1
        player.last_rated_at = now
        # Not bulk_update: its CASE for each column costs more to build than a second
        # statement costs to run (1.7 ms against 0.7 for both players, measured).
        player.save(
            update_fields=["rating", "rated_games", "rated_wins", "rated_losses", "last_rated_at"]
        )
    RatingChange.objects.bulk_create(changes)  # one statement for both, while the end waits
    match.rating_before0, match.rating_before1 = before
    match.rating_after0, match.rating_after1 = after

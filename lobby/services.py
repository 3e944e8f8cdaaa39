"""Writes of the lobby: seeks, challenges, quick pairing, pass-and-play.

Locking: every writer that can start a match locks the users concerned first (in primary-key
order, ``accounts.services.users_locked``), then the lobby row it acts on
(``select_for_update``), re-reads it and deletes or closes it in the same transaction. So two
players accepting one seek at once get exactly one match: the second finds the seek gone. On
SQLite the IMMEDIATE transaction mode serialises writers instead. A player is in at most one live
match (``matches.selectors.live_match_for``), checked under the user lock.

Broadcasts (lobby/broadcast.py) run after commit.
"""

from __future__ import annotations

import secrets
from functools import partial

from django.db import transaction

from accounts.models import User
from accounts.services import AccountError, computer_player, users_locked
from engine import Rejection
from lobby import broadcast
from lobby.models import Challenge, QuickEntry, Seek
from lobby.pairing import pick_pairs
from matches.models import Match
from matches.selectors import live_match_for
from matches.services import match_create
from matches.timekeeping import now_ms


class LobbyError(Rejection):
    """A lobby request refused; ``code`` is stable, ``message`` is for people."""


# --- checks --------------------------------------------------------------------------------


def _check_free(user: User, *, who: str = "you") -> None:
    if live_match_for(user) is not None:
        if who == "you":
            raise LobbyError("in_match", "you are already in a live match: finish it first")
        raise LobbyError("opponent_in_match", f"{who} is already in a live match")


def _check_ladder(user: User, *, who: str = "you") -> None:
    if not user.on_ladder:
        if who == "you":
            raise LobbyError("not_on_ladder", "join the rated ladder to play rated matches")
        raise LobbyError("opponent_not_on_ladder", f"{who} is not on the rated ladder")


def _check_range(rating_min, rating_max) -> None:
    for value in (rating_min, rating_max):
        if value is not None and (type(value) is not int or not 0 <= value <= 4000):
            raise LobbyError("bad_range", "a rating bound is a whole number from 0 to 4000")
    if rating_min is not None and rating_max is not None and rating_min > rating_max:
        raise LobbyError("bad_range", "the lowest rating is above the highest")


# --- starting a match ----------------------------------------------------------------------


def _start(a: User, b: User, *, rated: bool) -> Match:
    """Create the match (random seats) and clear both players out of the lobby; both are told
    after commit. Precondition: both users locked, both checked free."""
    if rated:
        _check_ladder(a, who=a.username)
        _check_ladder(b, who=b.username)
    players = (a, b) if secrets.randbelow(2) == 0 else (b, a)
    match = match_create(player0=players[0], player1=players[1], mode=Match.Mode.ONLINE,
                         rated=rated, now_ms=now_ms())  # fmt: skip
    _clear(a, b)
    transaction.on_commit(partial(broadcast.match_started, match.pk, [a.pk, b.pk]))
    return match


def _clear(*users: User) -> None:
    """A player who starts a match (or leaves the lobby) has no seek, queue place or open
    challenge any more."""
    Seek.objects.filter(user__in=users).delete()
    QuickEntry.objects.filter(user__in=users).delete()
    open_challenges = Challenge.objects.filter(status=Challenge.Status.PENDING).filter(
        challenger__in=users
    ) | Challenge.objects.filter(status=Challenge.Status.PENDING, opponent__in=users)
    touched = set()
    for challenge in open_challenges:
        touched |= {challenge.challenger_id, challenge.opponent_id}
    open_challenges.update(status=Challenge.Status.CANCELLED)
    _changed(*touched, *(user.pk for user in users))


def _changed(*user_ids: int) -> None:
    transaction.on_commit(partial(broadcast.lobby_changed, sorted(set(user_ids))))


# --- seeks ---------------------------------------------------------------------------------


def seek_create(*, user: User, rated: bool, rating_min: int | None = None,
                rating_max: int | None = None) -> Seek:  # fmt: skip
    """Open a seek (a player has at most one; a new one replaces it)."""
    _check_range(rating_min, rating_max)
    with transaction.atomic():
        me = users_locked(user.pk)[user.pk]
        _check_free(me)
        if rated:
            _check_ladder(me)
        Seek.objects.filter(user=me).delete()
        seek = Seek.objects.create(
            user=me, rated=bool(rated), rating_min=rating_min, rating_max=rating_max
        )
        _changed(me.pk)
        return seek


def seek_cancel(*, user: User, seek_id) -> None:
    with transaction.atomic():
        deleted, _ = Seek.objects.filter(pk=seek_id, user=user).delete()
        if not deleted:
            raise LobbyError("no_such_seek", "you have no such seek")
        _changed(user.pk)


def seek_accept(*, user: User, seek_id) -> Match:
    """Accept someone else's seek: the match starts and the seek is gone."""
    owner_id = Seek.objects.filter(pk=seek_id).values_list("user_id", flat=True).first()
    if owner_id is None:
        raise LobbyError("no_such_seek", "that seek is no longer open")
    if owner_id == user.pk:
        raise LobbyError("own_seek", "you cannot accept your own seek")
    with transaction.atomic():
        users = users_locked(user.pk, owner_id)
        seek = Seek.objects.select_for_update().filter(pk=seek_id, user_id=owner_id).first()
        if seek is None:
            raise LobbyError("no_such_seek", "that seek is no longer open")
        me, owner = users[user.pk], users[owner_id]
        _check_free(me)
        _check_free(owner, who=owner.username)
        if seek.rated:
            _check_ladder(me)
        if not seek.admits(me.rating):
            raise LobbyError("outside_range", "your rating is outside the range this seek asks for")
        seek.delete()
        return _start(owner, me, rated=seek.rated)


# --- challenges ----------------------------------------------------------------------------


def challenge_create(*, user: User, opponent_username: str, rated: bool) -> Challenge:
    opponent = User.objects.filter(
        username__iexact=(opponent_username or "").strip(), is_active=True
    ).first()
    if opponent is None:
        raise LobbyError("no_such_player", "there is no player by that name")
    if opponent.pk == user.pk:
        raise LobbyError("own_challenge", "you cannot challenge yourself")
    with transaction.atomic():
        users = users_locked(user.pk, opponent.pk)
        me, opponent = users[user.pk], users[opponent.pk]
        _check_free(me)
        if rated:
            _check_ladder(me)
            _check_ladder(opponent, who=opponent.username)
        pending = Challenge.objects.filter(
            challenger=me, opponent=opponent, status=Challenge.Status.PENDING
        )
        pending.update(status=Challenge.Status.CANCELLED)
        challenge = Challenge.objects.create(challenger=me, opponent=opponent, rated=bool(rated))
        _changed(me.pk, opponent.pk)
        return challenge


def _pending_challenge(challenge_id) -> Challenge | None:
    return Challenge.objects.filter(pk=challenge_id, status=Challenge.Status.PENDING).first()


def challenge_accept(*, user: User, challenge_id) -> Match:
    challenge = _pending_challenge(challenge_id)
    if challenge is None or challenge.opponent_id != user.pk:
        raise LobbyError("no_such_challenge", "that challenge is no longer open")
    with transaction.atomic():
        users = users_locked(challenge.challenger_id, user.pk)
        challenge = (
            Challenge.objects.select_for_update()
            .filter(pk=challenge_id, status=Challenge.Status.PENDING, opponent_id=user.pk)
            .first()
        )
        if challenge is None:
            raise LobbyError("no_such_challenge", "that challenge is no longer open")
        me, challenger = users[user.pk], users[challenge.challenger_id]
        _check_free(me)
        _check_free(challenger, who=challenger.username)
        match = _start(challenger, me, rated=challenge.rated)
        Challenge.objects.filter(pk=challenge.pk).update(
            status=Challenge.Status.ACCEPTED, match=match
        )
        return match


def _challenge_close(*, user: User, challenge_id, side: str, status: str) -> None:
    with transaction.atomic():
        challenge = (
            Challenge.objects.select_for_update()
            .filter(pk=challenge_id, status=Challenge.Status.PENDING, **{side: user})
            .first()
        )
        if challenge is None:
            raise LobbyError("no_such_challenge", "that challenge is no longer open")
        challenge.status = status
        challenge.save(update_fields=["status"])
        _changed(challenge.challenger_id, challenge.opponent_id)


def challenge_decline(*, user: User, challenge_id) -> None:
    _challenge_close(
        user=user, challenge_id=challenge_id, side="opponent", status=Challenge.Status.DECLINED
    )


def challenge_cancel(*, user: User, challenge_id) -> None:
    _challenge_close(
        user=user, challenge_id=challenge_id, side="challenger", status=Challenge.Status.CANCELLED
    )


# --- quick pairing -------------------------------------------------------------------------


def quick_join(*, user: User, now_ms: int) -> Match | None:
    """Wait for "Play now" from ``now_ms``; tries to pair at once (the beat task keeps trying
    every second). Returns the match if this call paired the user."""
    with transaction.atomic():
        me = users_locked(user.pk)[user.pk]
        _check_free(me)
        QuickEntry.objects.get_or_create(user=me, defaults={"joined_ms": now_ms})
        _changed(me.pk)
    for match in quick_pair(now_ms=now_ms):
        if user.pk in (match.player0_id, match.player1_id):
            return match
    return None


def quick_leave(*, user: User) -> None:
    with transaction.atomic():
        QuickEntry.objects.filter(user=user).delete()
        _changed(user.pk)


def quick_pair(*, now_ms: int) -> list[Match]:
    """Pair waiting players, closest ratings first, each pair within the window of the longer
    waiter (lobby/pairing.py). A pair is rated when both players are on the ladder."""
    entries = list(QuickEntry.objects.select_related("user").order_by("joined_ms", "id"))
    waiting = [(entry.user_id, entry.user.rating, entry.joined_ms) for entry in entries]
    matches = []
    for a_id, b_id in pick_pairs(waiting, now_ms):
        match = _quick_start(a_id, b_id)
        if match is not None:
            matches.append(match)
    return matches


def _quick_start(a_id: int, b_id: int) -> Match | None:
    with transaction.atomic():
        users = users_locked(a_id, b_id)
        still_waiting = QuickEntry.objects.select_for_update().filter(user_id__in=[a_id, b_id])
        if len(still_waiting) != 2:
            return None
        a, b = users[a_id], users[b_id]
        for user in (a, b):
            if live_match_for(user) is not None:
                QuickEntry.objects.filter(user=user).delete()
                _changed(user.pk)
                return None
        return _start(a, b, rated=a.on_ladder and b.on_ladder)


# --- pass-and-play, leaving ----------------------------------------------------------------


def computer_start(*, user: User, level: str, rated: bool) -> Match:
    """A match against the computer at ``level`` (it plays server-side, through the same match
    service as people); rated only for a player on the ladder."""
    try:
        computer = computer_player(level=level)
    except AccountError as exc:
        raise LobbyError(exc.code, exc.message) from None
    with transaction.atomic():
        me = users_locked(user.pk)[user.pk]
        _check_free(me)
        if me.is_computer:
            raise LobbyError("not_a_person", "the computer does not play itself")
        if rated:
            _check_ladder(me)
        return _start(me, computer, rated=rated)


def hotseat_start(*, user: User) -> Match:
    """A pass-and-play match on one device: the user holds both seats; unrated."""
    with transaction.atomic():
        me = users_locked(user.pk)[user.pk]
        _check_free(me)
        match = match_create(
            player0=me, player1=me, mode=Match.Mode.HOTSEAT, rated=False, now_ms=now_ms()
        )
        _clear(me)
        transaction.on_commit(partial(broadcast.match_started, match.pk, [me.pk]))
        return match


def lobby_leave(*, user: User) -> None:
    """The user closed their last lobby page: their seek, queue place and sent challenges go."""
    with transaction.atomic():
        Seek.objects.filter(user=user).delete()
        QuickEntry.objects.filter(user=user).delete()
        sent = Challenge.objects.filter(challenger=user, status=Challenge.Status.PENDING)
        opponents = list(sent.values_list("opponent_id", flat=True))
        sent.update(status=Challenge.Status.CANCELLED)
        _changed(user.pk, *opponents)


def ladder_left(*, user: User, **_signal) -> None:
    """On accounts' ``ladder_left`` signal (inside ladder_leave's transaction): rated offers go."""
    Seek.objects.filter(user=user, rated=True).delete()
    rated = Challenge.objects.filter(status=Challenge.Status.PENDING, rated=True)
    mine = rated.filter(challenger=user) | rated.filter(opponent=user)
    touched = {user.pk}
    for challenge in mine:
        touched |= {challenge.challenger_id, challenge.opponent_id}
    mine.update(status=Challenge.Status.CANCELLED)
    _changed(*touched)

"""Reads of the lobby: the public state everyone sees and each player's own part."""

from __future__ import annotations

from accounts import elo
from accounts.models import User
from lobby.models import Challenge, QuickEntry, Seek
from matches.models import Match
from matches.selectors import live_match_for


def match_url(match) -> str:
    """Where a match is played (the page matches/views.py serves as URL name ``match``)."""
    match_id = match if not hasattr(match, "pk") else match.pk
    return f"/match/{match_id}/"


def _player(user) -> dict:
    return {
        "username": user.username,
        "rating": user.rating,
        "provisional": elo.is_provisional(user.rated_games),
        "computer": user.computer_level or None,
    }


def lobby_state() -> dict:
    """What every lobby page shows: open seeks (oldest first), players waiting for "Play now",
    matches being played."""
    seeks = Seek.objects.select_related("user").order_by("created_at", "id")
    return {
        "type": "lobby",
        "seeks": [
            {
                "id": seek.pk,
                "owner": _player(seek.user),
                "rated": seek.rated,
                "rating_min": seek.rating_min,
                "rating_max": seek.rating_max,
            }
            for seek in seeks
        ],
        "waiting": QuickEntry.objects.count(),
        "live": Match.objects.filter(
            mode=Match.Mode.ONLINE, status__in=[Match.Status.WAITING, Match.Status.LIVE]
        ).count(),
    }


def _challenge(challenge: Challenge, other) -> dict:
    return {"id": challenge.pk, "rated": challenge.rated, "player": _player(other)}


def personal_state(user) -> dict:
    """One player's own part: challenges to and from them, their queue place, their match."""
    pending = Challenge.objects.filter(status=Challenge.Status.PENDING).select_related(
        "challenger", "opponent"
    )
    entry = QuickEntry.objects.filter(user=user).first()
    live = live_match_for(user)
    fresh = User.objects.get(pk=user.pk)
    return {
        "type": "personal",
        "me": {**_player(fresh), "on_ladder": fresh.on_ladder},
        "incoming": [_challenge(c, c.challenger) for c in pending.filter(opponent=user)],
        "outgoing": [_challenge(c, c.opponent) for c in pending.filter(challenger=user)],
        "quick_since_ms": entry.joined_ms if entry else None,
        "live_match": match_url(live) if live else None,
    }

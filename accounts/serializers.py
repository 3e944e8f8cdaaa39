"""Output shapes of the players API: the leaderboard, a profile and its rating history."""

from __future__ import annotations

from rest_framework import serializers

COMPUTER_HELP = "the computer's level (random, greedy, expert); null for a person"


def win_rate(user) -> float | None:
    """Share of rated matches won (voided ones do not count); None before the first."""
    return round(user.rated_wins / user.rated_games, 4) if user.rated_games else None


class LeaderboardEntrySerializer(serializers.Serializer):
    """A ranked user: ``rank`` is the instance's position, set by the view."""

    rank = serializers.IntegerField()
    username = serializers.CharField(source="user.username")
    rating = serializers.IntegerField(source="user.rating")
    provisional = serializers.BooleanField(source="user.provisional")
    computer = serializers.SerializerMethodField(help_text=COMPUTER_HELP)
    rated_games = serializers.IntegerField(source="user.rated_games")
    win_rate = serializers.SerializerMethodField()

    def get_win_rate(self, entry) -> float | None:
        return win_rate(entry["user"])

    def get_computer(self, entry) -> str | None:
        return entry["user"].computer_level or None


class RatingChangeSerializer(serializers.Serializer):
    match = serializers.UUIDField(source="match_id")
    at = serializers.DateTimeField()
    before = serializers.IntegerField()
    after = serializers.IntegerField()
    delta = serializers.IntegerField()
    score = serializers.IntegerField(help_text="1 won, 0 lost")


class PlayerSerializer(serializers.Serializer):
    """A profile; ``rating_history`` holds the changes that stand (voids left out), oldest
    first."""

    username = serializers.CharField()
    date_joined = serializers.DateTimeField()
    rating = serializers.IntegerField()
    provisional = serializers.BooleanField()
    computer = serializers.SerializerMethodField(help_text=COMPUTER_HELP)
    rated_games = serializers.IntegerField()
    rated_wins = serializers.IntegerField()
    rated_losses = serializers.IntegerField()
    win_rate = serializers.SerializerMethodField()
    on_ladder = serializers.BooleanField()
    last_rated_at = serializers.DateTimeField(allow_null=True)
    matches_url = serializers.SerializerMethodField()
    rating_history = RatingChangeSerializer(many=True, source="history")

    def get_win_rate(self, user) -> float | None:
        return win_rate(user)

    def get_computer(self, user) -> str | None:
        return user.computer_level or None

    def get_matches_url(self, user) -> str:
        return f"/api/players/{user.username}/matches/"

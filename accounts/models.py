"""The site's user model (with its rating and ladder membership) and the rating history."""

from django.conf import settings
from django.contrib.auth.models import AbstractUser
from django.db import models

from accounts import elo


class User(AbstractUser):
    # Elo (accounts/elo.py). Counts are of rated matches whose result stands (voids are undone).
    rating = models.IntegerField(default=elo.INITIAL_RATING)
    rated_games = models.PositiveIntegerField(default=0)
    rated_wins = models.PositiveIntegerField(default=0)
    rated_losses = models.PositiveIntegerField(default=0)
    last_rated_at = models.DateTimeField(null=True, blank=True)
    # The rated ladder: only members play rated matches and appear on the leaderboard.
    on_ladder = models.BooleanField(default=False, db_index=True)
    ladder_joined_at = models.DateTimeField(null=True, blank=True)
    # A computer player's level (engine.BOTS: random, greedy, expert); empty for a person.
    computer_level = models.CharField(max_length=16, blank=True, default="", db_index=True)

    @property
    def is_computer(self) -> bool:
        return bool(self.computer_level)

    @property
    def provisional(self) -> bool:
        return elo.is_provisional(self.rated_games)


class RatingChange(models.Model):
    """One player's rating change from one rated match; a void marks it ``voided`` (kept)."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="rating_changes"
    )
    match = models.ForeignKey(
        "matches.Match", on_delete=models.CASCADE, related_name="rating_changes"
    )
    before = models.IntegerField()
    after = models.IntegerField()
    score = models.PositiveSmallIntegerField()  # 1 won, 0 lost
    k = models.PositiveSmallIntegerField()  # the K factor used (elo.k_factor)
    at = models.DateTimeField()
    voided = models.BooleanField(default=False)

    class Meta:
        ordering = ["at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "match"], name="one_rating_change_per_player_match"
            )
        ]
        indexes = [models.Index(fields=["user", "at"])]

    def __str__(self) -> str:
        return f"{self.user_id}: {self.before} -> {self.after}{' (voided)' if self.voided else ''}"

    @property
    def delta(self) -> int:
        return self.after - self.before

"""The lobby's rows: open seeks, named challenges, and the quick-pairing queue."""

from django.conf import settings
from django.db import models


class Seek(models.Model):
    """An open offer to play anyone whose rating lies in the range (a player has at most one)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="seek"
    )
    rated = models.BooleanField(default=False)
    rating_min = models.IntegerField(null=True, blank=True)
    rating_max = models.IntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"seek by {self.user_id} ({'rated' if self.rated else 'casual'})"

    def admits(self, rating: int) -> bool:
        return (self.rating_min is None or rating >= self.rating_min) and (
            self.rating_max is None or rating <= self.rating_max
        )


class Challenge(models.Model):
    """A direct invitation from one player to another."""

    class Status(models.TextChoices):
        PENDING = "pending"
        ACCEPTED = "accepted"
        DECLINED = "declined"
        CANCELLED = "cancelled"

    challenger = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="challenges_sent"
    )
    opponent = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="challenges_received"
    )
    rated = models.BooleanField(default=False)
    status = models.CharField(
        max_length=10, choices=Status.choices, default=Status.PENDING, db_index=True
    )
    created_at = models.DateTimeField(auto_now_add=True)
    match = models.ForeignKey(
        "matches.Match", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.challenger_id} challenges {self.opponent_id} ({self.status})"


class QuickEntry(models.Model):
    """A player waiting for "Play now" since ``joined_ms`` (the time authority's clock)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="quick_entry"
    )
    joined_ms = models.BigIntegerField()

    class Meta:
        ordering = ["joined_ms", "id"]

    def __str__(self) -> str:
        return f"{self.user_id} waiting since {self.joined_ms}"

"""Reads for the archive API: the match summaries (never the record or snapshot columns), the
full records for export, and the filters the list and the export share."""

from __future__ import annotations

from datetime import UTC

from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.db.models import Q, QuerySet
from django.shortcuts import get_object_or_404
from django_filters import filters as base_filters
from django_filters import rest_framework as filters
from django_filters.fields import IsoDateTimeField
from rest_framework.exceptions import ValidationError

from .models import Match

OVER = (Match.Status.FINISHED, Match.Status.VOID)
WATCHABLE = (Match.Status.WAITING, Match.Status.LIVE)
REASONS = ("points", "time", "resign", "abandon", "void")

# Columns a summary reads; the record (tens of kB) and the snapshot stay in the database.
SUMMARY_FIELDS = (
    "id", "mode", "rated", "status", "created_at", "finished_at", "seq", "winner", "reason",
    "balances", "round_count",
    "rating_before0", "rating_before1", "rating_after0", "rating_after1",
    "player0__username", "player1__username", "player0__computer_level", "player1__computer_level",
)  # fmt: skip


def with_summary(queryset: QuerySet[Match]) -> QuerySet[Match]:
    """Summary rows: players joined and only the summary columns (the record stays in the
    database; the final balances and the number of rounds have columns of their own)."""
    return queryset.select_related("player0", "player1").only(*SUMMARY_FIELDS)


def with_record(queryset: QuerySet[Match]) -> QuerySet[Match]:
    """What ``match_record`` needs (the header, the totals and the ratings), without the
    snapshot. A finished match's header is its whole record; a live one's events are read
    with it."""
    return queryset.only(
        "id", "status", "seq", "finished_at", "header", "balances", "winner", "reason",
        "end_pending", "rating_before0", "rating_before1", "rating_after0", "rating_after1",
    )  # fmt: skip


def match_archive() -> QuerySet[Match]:
    """The matches that are over (finished or void), newest first."""
    return Match.objects.filter(status__in=OVER).order_by("-created_at")


def match_watchable() -> QuerySet[Match]:
    """The matches that can be watched now (waiting for Start, or being played), newest first."""
    return Match.objects.filter(status__in=WATCHABLE).order_by("-created_at")


def match_for_record(match_id) -> Match:
    """One match with its record (Http404 if there is none)."""
    return get_object_or_404(with_record(Match.objects.all()), pk=match_id)


def user_id_of(username: str) -> int | None:
    return get_user_model().objects.filter(username=username).values_list("pk", flat=True).first()


def involving(user_id: int | None) -> Q:
    if user_id is None:
        return Q(pk__in=[])
    return Q(player0_id=user_id) | Q(player1_id=user_id)


USERNAME_MAX_LENGTH = 150  # AbstractUser.username


class StrictBooleanField(forms.Field):
    """``true``/``false`` or ``1``/``0`` (any case); anything else is an error (django-filter's
    boolean quietly ignores a value it does not know, so ``rated=maybe`` listed everything)."""

    widget = forms.TextInput
    default_error_messages = {"invalid": "Enter true or false."}
    VALUES = {"true": True, "1": True, "false": False, "0": False}

    def to_python(self, value):
        if value in self.empty_values:
            return None
        try:
            return self.VALUES[str(value).lower()]
        except KeyError:
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid") from None


class StrictBooleanFilter(base_filters.BooleanFilter):
    field_class = StrictBooleanField


class UtcIsoDateTimeField(IsoDateTimeField):
    """An ISO 8601 time, in UTC. One that does not exist in UTC (``9999-12-31T23:59-01:00``)
    is an error: the database adapter's conversion to UTC overflowed, a 500; and PostgreSQL
    refuses an offset beyond 15:59 (``-23:59`` was a 500 there), so the value goes on in UTC."""

    def to_python(self, value):
        value = super().to_python(value)
        if value is None:
            return None
        try:
            return value.astimezone(UTC)
        except OverflowError:
            raise forms.ValidationError(
                "Out of range: before year 1 or after year 9999 in UTC.", code="invalid"
            ) from None


class UtcIsoDateTimeFilter(filters.IsoDateTimeFilter):
    field_class = UtcIsoDateTimeField


def username_filter(method: str, help_text: str) -> filters.CharFilter:
    """A username: letters, digits and @/./+/-/_, at most 150 (the characters a username can
    hold; anything else is a 400, not a lookup)."""
    return filters.CharFilter(
        method=method,
        help_text=help_text,
        max_length=USERNAME_MAX_LENGTH,
        strip=False,  # "ala\n" is not ala
        validators=[UnicodeUsernameValidator()],
    )


class MatchFilter(filters.FilterSet):
    """Filters of the archive list and the export. ``result`` is from ``player``'s side. A value
    a filter cannot take is a 400 naming the filter (an empty one counts as absent)."""

    player = username_filter("filter_player", "username: matches this player played")
    opponent = username_filter(
        "filter_opponent",
        "username: matches against this player (with `player`: between the two)",
    )
    rated = StrictBooleanFilter(help_text="`true` or `false` (or `1`/`0`)")
    result = filters.ChoiceFilter(
        choices=[("win", "win"), ("loss", "loss")], method="filter_result",
        help_text="`win` or `loss` from `player`'s side (needs `player`); online, finished only",
    )  # fmt: skip
    reason = filters.ChoiceFilter(choices=[(reason, reason) for reason in REASONS])
    mode = filters.ChoiceFilter(choices=Match.Mode.choices)
    status = filters.ChoiceFilter(choices=[(status, status) for status in OVER])
    since = UtcIsoDateTimeFilter(
        field_name="created_at", lookup_expr="gte", help_text="created at or after (ISO 8601)"
    )
    until = UtcIsoDateTimeFilter(
        field_name="created_at", lookup_expr="lt", help_text="created before (ISO 8601)"
    )

    class Meta:
        model = Match
        fields = [
            "player",
            "opponent",
            "rated",
            "result",
            "reason",
            "mode",
            "status",
            "since",
            "until",
        ]

    def __init__(self, *args, player_id: int | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.player_id = player_id  # fixed by the URL (/api/players/{username}/matches/)

    def _player_id(self) -> int | None:
        if self.player_id is None and self.form.cleaned_data.get("player"):
            self.player_id = user_id_of(self.form.cleaned_data["player"])
        return self.player_id

    def _has_player(self) -> bool:
        return self.player_id is not None or bool(self.form.cleaned_data.get("player"))

    def filter_queryset(self, queryset):
        if self.player_id is not None:
            queryset = queryset.filter(involving(self.player_id))
        return super().filter_queryset(queryset)

    def filter_player(self, queryset, name, value):
        if self.player_id is not None:  # the URL already names the player
            return queryset
        return queryset.filter(involving(self._player_id()))

    def filter_opponent(self, queryset, name, value):
        opponent_id = user_id_of(value)
        if opponent_id is None:
            return queryset.none()
        if not self._has_player():
            return queryset.filter(involving(opponent_id))
        player_id = self._player_id()
        return queryset.filter(
            Q(player0_id=player_id, player1_id=opponent_id)
            | Q(player0_id=opponent_id, player1_id=player_id)
        )

    def filter_result(self, queryset, name, value):
        if not self._has_player():
            raise ValidationError(
                {"result": ["`result` is from a player's side: name the `player`."]}
            )
        player_id = self._player_id()
        seat_won = {"win": (0, 1), "loss": (1, 0)}[value]  # the winner when player is on seat 0, 1
        return queryset.filter(status=Match.Status.FINISHED, mode=Match.Mode.ONLINE).filter(
            Q(player0_id=player_id, winner=seat_won[0])
            | Q(player1_id=player_id, winner=seat_won[1])
        )

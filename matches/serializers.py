"""Output shapes of the archive API: match summaries, and the record of ARCHIVE.md (described for
the OpenAPI schema; the record itself is served as stored, field for field)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from accounts.serializers import COMPUTER_HELP

from .models import Match


class MatchPlayerSerializer(serializers.Serializer):
    seat = serializers.IntegerField(min_value=0, max_value=1)
    username = serializers.CharField()
    computer = serializers.CharField(allow_null=True, required=False, help_text=COMPUTER_HELP)
    rating_before = serializers.IntegerField(allow_null=True)
    rating_after = serializers.IntegerField(allow_null=True)


class ResultSerializer(serializers.Serializer):
    winner = serializers.IntegerField(
        allow_null=True, help_text="seat of the winner; null when void"
    )
    reason = serializers.ChoiceField(choices=["points", "time", "resign", "abandon", "void"])


class MatchSummarySerializer(serializers.Serializer):
    """One row of a match list; reads the annotations of ``matches.filters.with_summary``."""

    id = serializers.UUIDField()
    url = serializers.SerializerMethodField(help_text="the full record")
    mode = serializers.ChoiceField(choices=Match.Mode.choices)
    rated = serializers.BooleanField()
    status = serializers.ChoiceField(choices=Match.Status.choices)
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    players = serializers.SerializerMethodField()
    result = serializers.SerializerMethodField()
    balances = serializers.ListField(
        child=serializers.IntegerField(),
        help_text="final (or, live, current)",
    )
    rounds = serializers.IntegerField(source="round_count", help_text="number of rounds dealt")

    def get_url(self, match) -> str:
        return f"/api/matches/{match.id}/"

    @extend_schema_field(MatchPlayerSerializer(many=True))
    def get_players(self, match):
        return [
            {"seat": 0, "username": match.player0.username,
             "computer": match.player0.computer_level or None,
             "rating_before": match.rating_before0, "rating_after": match.rating_after0},
            {"seat": 1, "username": match.player1.username,
             "computer": match.player1.computer_level or None,
             "rating_before": match.rating_before1, "rating_after": match.rating_after1},
        ]  # fmt: skip

    @extend_schema_field(ResultSerializer(allow_null=True))
    def get_result(self, match):
        if not match.reason:
            return None
        return {"winner": match.winner, "reason": match.reason}


# --- the record of ARCHIVE.md, for the schema ----------------------------------------------


def _tile():
    return serializers.ListField(
        child=serializers.IntegerField(min_value=0, max_value=6), min_length=2, max_length=2
    )


class ClockSerializer(serializers.Serializer):
    bank_ms = serializers.IntegerField()
    delay_ms = serializers.IntegerField()


class EventSerializer(serializers.Serializer):
    """Every event has these; each type adds its own fields (ARCHIVE.md, the table of events)."""

    seq = serializers.IntegerField()
    type = serializers.ChoiceField(
        choices=["start", "offer", "accept", "waive", "play", "draw", "pass", "settle",
                 "timeout", "resign", "abandon", "void"]
    )  # fmt: skip
    seat = serializers.IntegerField(allow_null=True)
    at_ms = serializers.IntegerField()


class RoundSerializer(serializers.Serializer):
    number = serializers.IntegerField()
    opening = serializers.ChoiceField(choices=["rank", "auction"])
    commitment = serializers.CharField(help_text="SHA-256 (hex) of the seed, published when dealt")
    seed = serializers.CharField(allow_null=True, help_text="revealed when the round ends")
    jockey = serializers.IntegerField(allow_null=True)
    hands = serializers.ListField(
        child=serializers.ListField(child=_tile()), allow_null=True,
        help_text="null while the round is being played",
    )  # fmt: skip
    boneyard = serializers.ListField(
        child=_tile(),
        allow_null=True,
        help_text="in draw order; null while the round is being played",
    )
    events = EventSerializer(many=True)


class MatchRecordSerializer(serializers.Serializer):
    """The match record (ARCHIVE.md). The hands and boneyard of a round still being played are
    null, and its draws carry no tile, until that round ends."""

    id = serializers.CharField()
    mode = serializers.ChoiceField(choices=Match.Mode.choices)
    rated = serializers.BooleanField()
    status = serializers.ChoiceField(choices=Match.Status.choices)
    created_at = serializers.CharField()
    clock = ClockSerializer()
    players = MatchPlayerSerializer(many=True)
    result = ResultSerializer(allow_null=True)
    balances = serializers.ListField(child=serializers.IntegerField())
    rounds = RoundSerializer(many=True)

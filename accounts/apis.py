"""The players API: the ladder ranking and a player's profile with rating history.

Also what every API view shares about its input (the archive's views in ``matches.apis`` use it
too): a query parameter is given once, a page size is an integer in its range, a username no one
can have is no such player. Malformed input answers 400 ``{"<parameter>": ["<what is wrong>"]}``
(DRF's ValidationError shape), never 500; an unknown player or a page past the end is 404
``{"detail": "..."}``.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework.exceptions import ValidationError
from rest_framework.generics import ListAPIView
from rest_framework.pagination import PageNumberPagination
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.models import User
from accounts.selectors import leaderboard, player_profile, rating_history
from accounts.serializers import LeaderboardEntrySerializer, PlayerSerializer

LEADERBOARD_FIELDS = ("id", "username", "rating", "rated_games", "rated_wins", "computer_level")
PAGE_MAX = 1_000_000_000  # a page number beyond any list (past the end is 404; beyond this, 400)

MESSAGES = {"type": "array", "items": {"type": "string"}}
BAD_QUERY = OpenApiResponse(
    response={"type": "object", "additionalProperties": MESSAGES},
    description="A malformed query parameter (a garbage value, or one given more than once): "
    '`{"<parameter>": ["<what is wrong>"]}`.',
)
DETAIL = {"type": "object", "properties": {"detail": {"type": "string"}}, "required": ["detail"]}
NO_SUCH_PLAYER = OpenApiResponse(DETAIL, description='`{"detail": "no such player"}`')
PAST_THE_END = OpenApiResponse(
    DETAIL, description='A page past the end: `{"detail": "Invalid page."}`'
)


class OneValueEach:
    """A mixin for API views: a query parameter given more than once is a 400 (Django would
    quietly keep the last value, DRF's pagination the first)."""

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)  # authentication, permissions, throttles first
        repeated = {
            name: [f"`{name}` is given {len(values)} times: give it once."]
            for name, values in request.query_params.lists()
            if len(values) > 1
        }
        if repeated:
            raise ValidationError(repeated)


def query_param(request, name: str) -> str | None:
    """The value of query parameter ``name``; ``None`` when it is absent or empty."""
    return request.query_params.get(name) or None


def int_param(request, name: str, *, low: int, high: int) -> int | None:
    """Query parameter ``name`` as an integer from ``low`` to ``high`` (ASCII digits only: no
    sign, space, point or exponent); ``None`` when absent or empty; otherwise a 400."""
    value = query_param(request, name)
    if value is None:
        return None
    if value.isascii() and value.isdigit() and len(value.lstrip("0")) <= len(str(high)):
        if low <= int(value) <= high:
            return int(value)
    raise ValidationError({name: [f"`{name}` must be an integer from {low} to {high}."]})


def page_size_parameter(name: str, default: int, maximum: int) -> dict:
    """The OpenAPI description of a page size query parameter."""
    return {
        "name": name,
        "required": False,
        "in": "query",
        "description": f"Results per page, 1 to {maximum} (default {default}); "
        "anything else answers 400.",
        "schema": {"type": "integer", "minimum": 1, "maximum": maximum},
    }


def player_named(username: str) -> User:
    """The active player ``username``; a name no one can have (a character a username cannot
    hold, too long) is 404 at once, without reaching the database (PostgreSQL refuses a NUL)."""
    try:
        User._meta.get_field("username").run_validators(username)
    except DjangoValidationError:
        raise Http404("no such player") from None
    return player_profile(username)


class LeaderboardPagination(PageNumberPagination):
    """DRF's page numbers, strict: a malformed ``page`` or ``page_size`` is a 400 (DRF answers
    404 for the first and quietly uses the default for the second); a page past the end is
    DRF's 404 "Invalid page."."""

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200

    def get_page_size(self, request):
        size = int_param(request, self.page_size_query_param, low=1, high=self.max_page_size)
        return size or self.page_size

    def get_page_number(self, request, paginator):
        if query_param(request, self.page_query_param) in self.last_page_strings:
            return paginator.num_pages
        return int_param(request, self.page_query_param, low=1, high=PAGE_MAX) or 1

    def get_schema_operation_parameters(self, view):
        return [
            {
                "name": self.page_query_param,
                "required": False,
                "in": "query",
                "description": "A page number (default 1) or `last`; a page past the end "
                "answers 404, anything else that is not a page number 400.",
                "schema": {"type": "integer", "minimum": 1, "maximum": PAGE_MAX},
            },
            page_size_parameter(self.page_size_query_param, self.page_size, self.max_page_size),
        ]


@extend_schema_view(
    get=extend_schema(
        responses={200: LeaderboardEntrySerializer(many=True), 400: BAD_QUERY, 404: PAST_THE_END}
    )
)
class LeaderboardApi(OneValueEach, ListAPIView):
    """The ladder ranking (ties: more rated matches first, then username), page by page."""

    serializer_class = LeaderboardEntrySerializer
    pagination_class = LeaderboardPagination

    def get_queryset(self):
        return leaderboard().only(*LEADERBOARD_FIELDS)

    def list(self, request, *args, **kwargs):
        users = self.paginate_queryset(self.get_queryset())
        first = self.paginator.page.start_index()
        entries = [{"rank": rank, "user": user} for rank, user in enumerate(users, start=first)]
        return self.get_paginated_response(self.get_serializer(entries, many=True).data)


class PlayerDetailApi(APIView):
    """A player's profile and rating history."""

    serializer_class = PlayerSerializer

    @extend_schema(responses={200: PlayerSerializer, 404: NO_SUCH_PLAYER})
    def get(self, request, username):
        player = player_named(username)
        player.history = rating_history(player)
        return Response(PlayerSerializer(player).data)

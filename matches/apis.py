"""The archive API: match lists (cursor-paginated), one match record (with conditional GET), the
live matches, and a player's matches streamed as NDJSON. Reads only, open to everyone."""

from __future__ import annotations

import gc
import json
from base64 import b64decode
from contextlib import contextmanager
from datetime import UTC, datetime
from itertools import islice
from urllib.parse import parse_qsl

from asgiref.sync import sync_to_async
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.handlers.asgi import ASGIRequest
from django.db.models import DateTimeField
from django.http import HttpResponse, JsonResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404
from django.utils import timezone
from django.utils.cache import get_conditional_response, patch_cache_control
from django.utils.http import http_date
from django_filters.rest_framework import DjangoFilterBackend
from django_filters.utils import translate_validation
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework.exceptions import ValidationError
from rest_framework.filters import OrderingFilter
from rest_framework.generics import ListAPIView
from rest_framework.pagination import Cursor, CursorPagination
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.throttling import AnonRateThrottle, ScopedRateThrottle, UserRateThrottle
from rest_framework.views import APIView

from accounts.apis import (
    BAD_QUERY,
    NO_SUCH_PLAYER,
    OneValueEach,
    int_param,
    page_size_parameter,
    player_named,
    query_param,
)

from .analysis import analysis_request
from .filters import (
    OVER,
    REASONS,
    MatchFilter,
    match_archive,
    match_for_record,
    match_watchable,
    with_record,
    with_summary,
)
from .models import Match, MatchAnalysis
from .selectors import match_record
from .serializers import MatchRecordSerializer, MatchSummarySerializer

EXPORT_CHUNK = 100  # records fetched per round trip while streaming an export


class InvalidCursor(ValidationError):
    def __init__(self, why: str):
        super().__init__({"cursor": [f"Invalid cursor: {why}."]}, code="invalid_cursor")


class MatchCursorPagination(CursorPagination):
    """DRF's cursor pages (the cursor is base64 of ``o=<offset>&r=<reverse>&p=<position>``,
    the position being the ordering field's value), read strictly: a cursor that is not one
    this API could have handed out is a 400 naming the cursor, whatever is wrong with it. DRF
    answers 404 "Invalid cursor" to some (not base64), and passes the position to the
    database unchecked, so ``p=garbage`` was a 500. ``page_size`` out of 1..200 is a 400 too
    (DRF quietly used the default). Every match list pages with this class."""

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200
    ordering = "-created_at"
    max_cursor_length = 512  # the cursors handed out are under 100 characters
    cursor_query_description = (
        "The `next` or `previous` link's cursor (opaque). A malformed cursor answers 400 "
        '`{"cursor": ["Invalid cursor: ..."]}`: not base64 of `o`/`r`/`p` fields, each at most '
        "once; an offset `o` out of 0..1000; a direction `r` other than 0 or 1; a position `p` "
        "that is not a value of the ordering field (a timestamp with its UTC offset); longer "
        "than 512 characters."
    )

    def paginate_queryset(self, queryset, request, view=None):
        self.model = queryset.model  # the position is checked against the ordering field
        return super().paginate_queryset(queryset, request, view)

    def get_page_size(self, request):
        size = int_param(request, self.page_size_query_param, low=1, high=self.max_page_size)
        return size or self.page_size

    def decode_cursor(self, request):
        encoded = query_param(request, self.cursor_query_param)
        if encoded is None:
            return None
        if len(encoded) > self.max_cursor_length:
            raise InvalidCursor(f"longer than {self.max_cursor_length} characters")
        try:
            fields = parse_qsl(
                b64decode(encoded.encode("ascii"), validate=True).decode("ascii"),
                keep_blank_values=True,
                strict_parsing=True,
            )
        except ValueError:  # binascii.Error, UnicodeError and parse_qsl's are ValueErrors
            raise InvalidCursor("not base64 of a query string") from None
        tokens = dict(fields)
        if len(tokens) != len(fields) or not tokens.keys() <= {"o", "r", "p"}:
            raise InvalidCursor("its fields are `o`, `r` and `p`, each at most once")
        offset, reverse = tokens.get("o", "0"), tokens.get("r", "0")
        cutoff = self.offset_cutoff  # DRF quietly cuts a larger offset down to it
        if not (
            offset.isascii() and offset.isdigit() and len(offset) <= 4 and int(offset) <= cutoff
        ):
            raise InvalidCursor(f"the offset `o` must be an integer from 0 to {cutoff}")
        if reverse not in ("0", "1"):
            raise InvalidCursor("the direction `r` must be 0 or 1")
        position = tokens.get("p")
        if position is not None:
            position = self.checked_position(position)
        return Cursor(offset=int(offset), reverse=reverse == "1", position=position)

    def checked_position(self, position: str) -> str:
        """The position as a value of the ordering field (as ``_get_position_from_instance``
        writes it). A timestamp must carry its UTC offset and exist in UTC; it goes on in UTC
        (PostgreSQL refuses an offset beyond 15:59, a 500; the cursors handed out are UTC)."""
        field_name = self.ordering[0].lstrip("-")
        field = self.model._meta.get_field(field_name)
        try:
            value = field.to_python(position)
            if isinstance(value, datetime):
                if timezone.is_naive(value):
                    raise ValueError("no UTC offset")
                return str(value.astimezone(UTC))  # OverflowError out of years 1..9999
            if value is not None:
                return position
        except (DjangoValidationError, ValueError, TypeError, OverflowError):
            pass
        kind = " (a timestamp with its UTC offset)" if isinstance(field, DateTimeField) else ""
        raise InvalidCursor(f"the position `p` is not a `{field_name}` value{kind}")

    def get_schema_operation_parameters(self, view):
        cursor, _ = super().get_schema_operation_parameters(view)
        cursor["schema"]["maxLength"] = self.max_cursor_length
        return [
            cursor,
            page_size_parameter(self.page_size_query_param, self.page_size, self.max_page_size),
        ]


class MatchOrderingFilter(OrderingFilter):
    """DRF's ``ordering`` (comma-separated fields, ``-`` for descending), but an unknown field
    is a 400 listing the known ones (DRF drops it quietly)."""

    def get_ordering(self, request, queryset, view):
        value = query_param(request, self.ordering_param)
        if value is None:
            return self.get_default_ordering(view)
        known = self.known(view)
        terms = [term.strip() for term in value.split(",")]
        if not all(term in known for term in terms):
            choices = ", ".join(f"`{term}`" for term in known)
            raise ValidationError(
                {self.ordering_param: [f"Order by {choices} (or several, comma-separated)."]}
            )
        return terms

    @staticmethod
    def known(view) -> list[str]:
        return [f"{sign}{field}" for field in view.ordering_fields for sign in ("", "-")]

    def get_schema_operation_parameters(self, view):
        return [
            {
                "name": self.ordering_param,
                "required": False,
                "in": "query",
                "description": f"The order (default `{view.ordering}`); several fields may be "
                "given comma-separated; an unknown one answers 400.",
                "schema": {"type": "string", "enum": self.known(view)},
            }
        ]


LIST_RESPONSES = {200: MatchSummarySerializer(many=True), 400: BAD_QUERY}


@extend_schema_view(get=extend_schema(responses=LIST_RESPONSES))
class MatchListApi(OneValueEach, ListAPIView):
    """The archive: matches that are over, newest first (or as `ordering` says)."""

    serializer_class = MatchSummarySerializer
    pagination_class = MatchCursorPagination
    filter_backends = [DjangoFilterBackend, MatchOrderingFilter]
    filterset_class = MatchFilter
    ordering_fields = ["created_at", "finished_at"]
    ordering = "-created_at"

    def get_queryset(self):
        return with_summary(match_archive())


class PlayerMatchFilterBackend(DjangoFilterBackend):
    """The archive filters with the player fixed by the URL."""

    def get_filterset_kwargs(self, request, queryset, view):
        return {
            **super().get_filterset_kwargs(request, queryset, view),
            "player_id": view.player.pk,
        }


@extend_schema_view(get=extend_schema(responses={**LIST_RESPONSES, 404: NO_SUCH_PLAYER}))
class PlayerMatchListApi(MatchListApi):
    """The matches a player has played (same filters as the archive; `player` is the URL's)."""

    filter_backends = [PlayerMatchFilterBackend, MatchOrderingFilter]

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        self.player = player_named(kwargs["username"])


@extend_schema_view(get=extend_schema(responses=LIST_RESPONSES))
class LiveMatchListApi(OneValueEach, ListAPIView):
    """Matches that can be watched now (waiting for Start or being played); balances are the
    current ones."""

    serializer_class = MatchSummarySerializer
    pagination_class = MatchCursorPagination

    def get_queryset(self):
        return with_summary(match_watchable())


def last_change_s(match: Match) -> int:
    """When the record last changed (its last event, stamped by the time authority), in s."""
    for round_record in reversed(match.header["rounds"]):  # a finished match's whole record
        if round_record["events"]:
            return round_record["events"][-1]["at_ms"] // 1000
    return int((match.finished_at or datetime.now()).timestamp())


class MatchDetailApi(APIView):
    """The match record of ARCHIVE.md. A match that is over never changes except to be voided,
    so it carries an ETag (id, last event, status) and a Last-Modified, and a client that has
    it gets 304 Not Modified."""

    @extend_schema(
        responses={200: MatchRecordSerializer, 304: OpenApiResponse(description="not modified"),
                   404: OpenApiResponse(description="no such match")},
    )  # fmt: skip
    def get(self, request, match_id):
        with paused_gc():
            match = match_for_record(match_id)
            if match.record_in_rows:  # live, or its end not concluded: it changes still
                response = _json_response(match_record(match))
                patch_cache_control(response, no_cache=True)
                return response
            etag = f'"{match.id}-{match.seq}-{match.status}"'
            modified_s = last_change_s(match)
            not_modified = get_conditional_response(request, etag=etag, last_modified=modified_s)
            withhold = any(r["seed"] is None for r in match.header["rounds"])
            response = not_modified or _json_response(match_record(match, withhold_live=withhold))
            del match  # the decoded record goes by reference counting, before the GC resumes
        response.headers["ETag"] = etag
        response.headers["Last-Modified"] = http_date(modified_s)
        patch_cache_control(response, public=True, no_cache=True)
        return response


class MatchAnalysisApi(APIView):
    """The expert's analysis of a finished match: for each decision a player made, the expected
    points of their choice and of the best choice, judged from that player's view at the time
    only; mistakes (a loss of ``mistake_points`` or more) marked; a summary per seat. The first
    request queues it (202, ``pending``); it is computed once and kept."""

    @extend_schema(
        responses={200: OpenApiResponse(description="the analysis (status done or failed)"),
                   202: OpenApiResponse(description="queued: ask again shortly"),
                   404: OpenApiResponse(description="no such match"),
                   409: OpenApiResponse(description="the match is live, or void")},
    )  # fmt: skip
    def get(self, request, match_id):
        match = get_object_or_404(Match, pk=match_id)
        requested = analysis_request(match)
        if requested is None:
            return JsonResponse(
                {"code": "not_finished", "message": "only a finished match is analysed"},
                status=409,
            )
        if requested.status == MatchAnalysis.Status.PENDING:
            return JsonResponse({"status": requested.status}, status=202)
        return JsonResponse(
            {
                "status": requested.status,
                "computed_at": requested.computed_at.isoformat(),
                **(requested.result or {}),
            }
        )


@contextmanager
def paused_gc():
    """A record decodes to tens of thousands of small lists (tiles) that live only for the
    request; with the cyclic GC running they get promoted and trigger full collections that
    cost 100+ ms (measured: the p99 of this endpoint). They hold no cycles, so refcounting
    frees them; the GC only has to wait a few milliseconds."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _json_response(record: dict) -> HttpResponse:
    """The record rendered here, inside ``paused_gc`` (DRF would render it after the view)."""
    return HttpResponse(
        json.dumps(record, separators=(",", ":")).encode(), content_type="application/json"
    )


class NDJSONRenderer(BaseRenderer):
    """One JSON document per line (errors too, as one line)."""

    media_type = "application/x-ndjson"
    format = "ndjson"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return json.dumps(data, separators=(",", ":"), default=str).encode() + b"\n"


def _line(match: Match) -> bytes:
    withhold = any(r["seed"] is None for r in match.header["rounds"])
    return (
        json.dumps(match_record(match, withhold_live=withhold), separators=(",", ":")).encode()
        + b"\n"
    )


def _lines(matches):
    for match in matches:
        yield _line(match)


async def _alines(matches):
    """Under ASGI: fetch a chunk at a time in the sync thread, so nothing is held in memory."""
    fetch = sync_to_async(lambda: [_line(match) for match in islice(matches, EXPORT_CHUNK)])
    while chunk := await fetch():
        for line in chunk:
            yield line


class PlayerMatchExportApi(OneValueEach, APIView):
    """A player's matches as NDJSON, one record (ARCHIVE.md) a line, streamed; the archive's
    filters apply (as lichess exports games)."""

    renderer_classes = [NDJSONRenderer, JSONRenderer]
    throttle_classes = [AnonRateThrottle, UserRateThrottle, ScopedRateThrottle]
    throttle_scope = "export"

    @extend_schema(
        parameters=[
            OpenApiParameter(name, type=kind, enum=enum, description=help_text)
            for name, kind, enum, help_text in (
                ("player", str, None, "ignored (but a username): the URL names the player"),
                ("opponent", str, None, MatchFilter.base_filters["opponent"].extra["help_text"]),
                ("rated", bool, None, ""),
                ("result", str, ["win", "loss"], "from the player's side"),
                ("reason", str, list(REASONS), ""),
                ("mode", str, list(Match.Mode.values), ""),
                ("status", str, list(OVER), ""),
                ("since", OpenApiTypes.DATETIME, None, "created at or after"),
                ("until", OpenApiTypes.DATETIME, None, "created before"),
            )
        ],
        responses={(200, "application/x-ndjson"): OpenApiResponse(
            OpenApiTypes.STR, description="one match record (ARCHIVE.md) per line"),
            (400, "application/x-ndjson"): BAD_QUERY,
            (404, "application/x-ndjson"): NO_SUCH_PLAYER},
    )  # fmt: skip
    def get(self, request, username):
        player = player_named(username)
        filterset = MatchFilter(
            request.query_params,
            queryset=with_record(match_archive()),
            request=request,
            player_id=player.pk,
        )
        if not filterset.is_valid():
            raise translate_validation(filterset.errors)
        matches = filterset.qs.iterator(chunk_size=EXPORT_CHUNK)
        asynchronous = isinstance(request._request, ASGIRequest)
        response = StreamingHttpResponse(
            _alines(matches) if asynchronous else _lines(matches),
            content_type="application/x-ndjson",
        )
        response.headers["Content-Disposition"] = f'attachment; filename="{player.username}.ndjson"'
        return response

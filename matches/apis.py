"""The archive API: match lists (cursor-paginated), one match record (with conditional GET), the
live matches, and a player's matches streamed as NDJSON. Reads only, open to everyone."""

from __future__ import annotations

import gc
import json
from contextlib import contextmanager
from datetime import datetime
from itertools import islice

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpResponse, StreamingHttpResponse
from django.utils.cache import get_conditional_response, patch_cache_control
from django.utils.http import http_date
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.filters import OrderingFilter
from rest_framework.generics import ListAPIView
from rest_framework.pagination import CursorPagination
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.throttling import AnonRateThrottle, ScopedRateThrottle, UserRateThrottle
from rest_framework.views import APIView

from accounts.selectors import player_profile

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
from .models import Match
from .selectors import match_record
from .serializers import MatchRecordSerializer, MatchSummarySerializer

EXPORT_CHUNK = 100  # records fetched per round trip while streaming an export


class MatchCursorPagination(CursorPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200
    ordering = "-created_at"


class MatchListApi(ListAPIView):
    """The archive: matches that are over, newest first (or as `ordering` says)."""

    serializer_class = MatchSummarySerializer
    pagination_class = MatchCursorPagination
    filter_backends = [DjangoFilterBackend, OrderingFilter]
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


class PlayerMatchListApi(MatchListApi):
    """The matches a player has played (same filters as the archive; `player` is the URL's)."""

    filter_backends = [PlayerMatchFilterBackend, OrderingFilter]

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        self.player = player_profile(kwargs["username"])


class LiveMatchListApi(ListAPIView):
    """Matches that can be watched now (waiting for Start or being played); balances are the
    current ones."""

    serializer_class = MatchSummarySerializer
    pagination_class = MatchCursorPagination

    def get_queryset(self):
        return with_summary(match_watchable())


def last_change_s(match: Match) -> int:
    """When the record last changed (its last event, stamped by the time authority), in s."""
    for round_record in reversed(match.record["rounds"]):
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
            if not match.is_over:
                response = _json_response(match_record(match))
                patch_cache_control(response, no_cache=True)
                return response
            etag = f'"{match.id}-{match.seq}-{match.status}"'
            modified_s = last_change_s(match)
            not_modified = get_conditional_response(request, etag=etag, last_modified=modified_s)
            withhold = any(r["seed"] is None for r in match.record["rounds"])
            response = not_modified or _json_response(match_record(match, withhold_live=withhold))
            del match  # the decoded record goes by reference counting, before the GC resumes
        response.headers["ETag"] = etag
        response.headers["Last-Modified"] = http_date(modified_s)
        patch_cache_control(response, public=True, no_cache=True)
        return response


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
    withhold = any(r["seed"] is None for r in match.record["rounds"])
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


class PlayerMatchExportApi(APIView):
    """A player's matches as NDJSON, one record (ARCHIVE.md) a line, streamed; the archive's
    filters apply (as lichess exports games)."""

    renderer_classes = [NDJSONRenderer, JSONRenderer]
    throttle_classes = [AnonRateThrottle, UserRateThrottle, ScopedRateThrottle]
    throttle_scope = "export"

    @extend_schema(
        parameters=[
            OpenApiParameter(name, type=kind, enum=enum, description=help_text)
            for name, kind, enum, help_text in (
                ("player", str, None, "ignored: the URL names the player"),
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
            OpenApiTypes.STR, description="one match record (ARCHIVE.md) per line")},
    )  # fmt: skip
    def get(self, request, username):
        player = player_profile(username)
        filterset = MatchFilter(
            request.query_params,
            queryset=with_record(match_archive()),
            request=request,
            player_id=player.pk,
        )
        if not filterset.is_valid():
            raise ValidationError(filterset.errors)
        matches = filterset.qs.iterator(chunk_size=EXPORT_CHUNK)
        asynchronous = isinstance(request._request, ASGIRequest)
        response = StreamingHttpResponse(
            _alines(matches) if asynchronous else _lines(matches),
            content_type="application/x-ndjson",
        )
        response.headers["Content-Disposition"] = f'attachment; filename="{player.username}.ndjson"'
        return response

"""Each endpoint's queries are fixed, whatever the page holds (no N+1), and a list never loads
the record or snapshot columns."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.api.test_players_api import ladder

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("url", "queries"),
    [
        ("/api/matches/", 1),
        ("/api/matches/?rated=true&reason=points&mode=online&ordering=finished_at", 1),
        ("/api/matches/?player=ala", 2),  # the player's id, then the page
        ("/api/matches/?player=ala&opponent=olek&result=win", 3),
        ("/api/matches/live/", 1),
        ("/api/players/ala/matches/", 2),
        ("/api/players/ala/", 2),  # profile, history
        ("/api/leaderboard/", 2),  # count, page
    ],
)
def test_queries_per_request(api, world, django_assert_num_queries, url, queries):
    ladder(12)
    with django_assert_num_queries(queries):
        assert api.get(url).status_code == 200


def test_a_record_is_one_query_and_a_304_too(api, world, django_assert_num_queries):
    url = f"/api/matches/{world.full.id}/"
    with django_assert_num_queries(1):
        etag = api.get(url).headers["ETag"]
    with django_assert_num_queries(1):
        assert api.get(url, HTTP_IF_NONE_MATCH=etag).status_code == 304


def test_the_export_is_a_player_lookup_and_one_streamed_query(
    api, world, django_assert_num_queries
):
    with django_assert_num_queries(2):
        response = api.get("/api/players/ala/matches/export/")
        assert len(b"".join(response.streaming_content).splitlines()) == 2


def test_lists_leave_the_record_and_snapshot_in_the_database(api, world):
    with CaptureQueriesContext(connection) as captured:
        api.get("/api/matches/")
        api.get("/api/players/ala/matches/")
        api.get("/api/matches/live/")
    selects = [q["sql"] for q in captured.captured_queries if "matches_match" in q["sql"]]
    assert selects
    for sql in selects:
        head = sql.split(" FROM ")[0]
        assert '"matches_match"."snapshot"' not in head
        assert '"matches_match"."header"' not in head

"""Malformed query strings and paths answer 400 (or 404 where that is the documented meaning:
no such player, a page past the end) with a JSON body that names what is wrong, never 500:
cursors, page and page_size, the archive's filters, ordering, repeated parameters, usernames."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from urllib.parse import quote, urlencode

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient
from rest_framework.throttling import SimpleRateThrottle

from tests.api.strategies import b64, cursors

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def api():
    """One client for the module (a client builds the middleware on its first request)."""
    return APIClient()


CURSOR_LISTS = ("/api/matches/", "/api/matches/live/", "/api/players/ala/matches/")
FILTERED = ("/api/matches/", "/api/players/ala/matches/", "/api/players/ala/matches/export/")
ORDERED = ("/api/matches/", "/api/players/ala/matches/")
PAGE_SIZED = (*CURSOR_LISTS, "/api/leaderboard/")
PLAYER_PATHS = ("/api/players/{}/", "/api/players/{}/matches/", "/api/players/{}/matches/export/")


def cursor(**tokens) -> str:
    """A cursor as DRF encodes one: base64 of a URL-encoded query string."""
    return b64(urlencode(tokens))


def url(path: str, **params) -> str:
    return f"{path}?{urlencode(params)}"


def content(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


def bad_request(response, param: str) -> list[str]:
    """A 400 whose JSON body (the export's is one NDJSON line) names ``param`` with messages."""
    assert response.status_code == 400, (response.status_code, content(response)[:500])
    body = json.loads(response.content)
    assert isinstance(body, dict) and param in body, body
    messages = body[param]
    assert isinstance(messages, list) and messages, body
    assert all(isinstance(message, str) and message.strip() for message in messages), body
    return messages


def not_found(response) -> str:
    assert response.status_code == 404, (response.status_code, content(response)[:500])
    detail = json.loads(response.content)["detail"]
    assert isinstance(detail, str) and detail
    return detail


# --- cursors -----------------------------------------------------------------------------------

BAD_CURSORS = {
    "position garbage": cursor(p="garbage"),
    "position a number": cursor(p="12345"),
    "position not ISO": cursor(p="15/01/2027 08:00"),
    "position a date": cursor(p="2027-01-15"),
    "position without its offset": cursor(p="2027-01-15 08:00:00"),
    "position impossible": cursor(p="2027-02-30 08:00:00+00:00"),
    "position past year 9999 in UTC": cursor(p="9999-12-31 23:59:59-23:59"),
    "position before year 1 in UTC": cursor(p="0001-01-01 00:00:00+23:59"),
    "position empty": cursor(p=""),
    "position None": cursor(p="None"),
    "position NUL": cursor(p="\x00"),
    "offset garbage": cursor(o="x"),
    "offset negative": cursor(o="-1"),
    "offset signed": cursor(o="+1"),
    "offset a float": cursor(o="1.5"),
    "offset huge": cursor(o="9" * 40),
    "offset past the cut-off": cursor(o="1001"),
    "reverse garbage": cursor(r="maybe"),
    "reverse 2": cursor(r="2"),
    "repeated field": b64("o=1&o=2"),
    "unknown field": cursor(q="1"),
    "no field at all": b64("garbage"),
    "not base64": "%%%not-base64",
    "base64 cut short": cursor(p="2027-01-15 08:00:00+00:00")[:-3],
    "base64 of binary": b64(b"\xff\xfe\x00\x80p=1"),
    "base64 of UTF-8": cursor(p="2027-01-15 08:00:00+00:00\u00e9"),
    "huge": cursor(o="1", p="2027-01-15 08:00:00+00:00" * 4_000),
    "huge garbage": "A" * 100_000,
}


@pytest.mark.parametrize("path", CURSOR_LISTS)
@pytest.mark.parametrize("bad", list(BAD_CURSORS.values()), ids=list(BAD_CURSORS))
def test_a_malformed_cursor_is_a_400_that_names_the_cursor(api, world, path, bad):
    bad_request(api.get(url(path, cursor=bad)), "cursor")


@pytest.mark.parametrize("ordering", ["created_at", "-created_at", "finished_at", "-finished_at"])
def test_a_malformed_position_is_a_400_under_any_ordering(api, world, ordering):
    for bad in (
        cursor(p="garbage"),
        cursor(r="1", p="12"),
        cursor(o="3", p="2027-99-01 00:00:00+00:00"),
        cursor(r="1", o="2", p="2027-01-15 08:00:00"),
    ):
        bad_request(api.get(url("/api/matches/", cursor=bad, ordering=ordering)), "cursor")


@pytest.mark.parametrize("ordering", ["created_at", "-created_at", "finished_at", "-finished_at"])
def test_the_cursors_the_api_hands_out_walk_every_list_both_ways(api, world, ordering):
    for path in (url("/api/matches/", page_size=1, ordering=ordering),
                 url("/api/players/ala/matches/", page_size=1, ordering=ordering),
                 url("/api/matches/live/", page_size=1)):  # fmt: skip
        forward, link, last = [], path, None
        while link:
            page = api.get(link)
            assert page.status_code == 200, page.content
            forward += [item["id"] for item in page.json()["results"]]
            last, link = page.json(), page.json()["next"]
        assert len(forward) == len(set(forward)) >= 1
        backward, link = list(reversed([item["id"] for item in last["results"]])), last["previous"]
        while link:
            page = api.get(link)
            assert page.status_code == 200, page.content
            backward += [item["id"] for item in reversed(page.json()["results"])]
            link = page.json()["previous"]
        assert backward == forward[::-1]


def test_a_well_formed_cursor_with_any_utc_offset_is_a_page(api, world):
    late = datetime(2100, 1, 1, tzinfo=timezone(timedelta(hours=-5)))
    far = datetime(2100, 1, 1, tzinfo=timezone(-timedelta(hours=23, minutes=59)))  # PostgreSQL
    for position in (str(late), late.isoformat(), "2100-01-01T00:00:00Z", str(far)):
        response = api.get(url("/api/matches/", cursor=cursor(p=position)))
        assert response.status_code == 200, response.content
        assert len(response.json()["results"]) == 4
    assert api.get(url("/api/matches/", cursor="")).status_code == 200  # empty: the first page


# --- page and page_size ------------------------------------------------------------------------

BAD_SIZES = ["abc", "-1", "0", "1.5", "1e3", "+5", " 5", "0x10", "201", "9" * 40, "\x00", "٣"]


@pytest.mark.parametrize("path", PAGE_SIZED)
@pytest.mark.parametrize("size", BAD_SIZES)
def test_a_bad_page_size_is_a_400(api, world, path, size):
    messages = bad_request(api.get(url(path, page_size=size)), "page_size")
    assert "200" in " ".join(messages)  # says the range


@pytest.mark.parametrize("path", PAGE_SIZED)
def test_page_size_from_1_to_200_is_a_page(api, world, path):
    for size in ("1", "200", "007"):
        assert api.get(url(path, page_size=size)).status_code == 200


@pytest.mark.parametrize("page", ["abc", "-1", "0", "1.5", "1e3", "+2", "9" * 40, "\x00", "٣"])
def test_a_bad_leaderboard_page_is_a_400(api, world, page):
    bad_request(api.get(url("/api/leaderboard/", page=page)), "page")


def test_a_leaderboard_page_past_the_end_is_a_404_and_last_is_the_last(api, world):
    assert not_found(api.get(url("/api/leaderboard/", page=999_999))) == "Invalid page."
    assert api.get(url("/api/leaderboard/", page="last")).status_code == 200
    assert api.get(url("/api/leaderboard/", page=1)).status_code == 200


# --- filters and ordering ----------------------------------------------------------------------

BAD_FILTERS = [
    ("rated", "maybe"), ("rated", "2"), ("rated", "yes please"), ("rated", "\x00"),
    ("since", "yesterday"), ("since", "2027-13-01"), ("since", "2027-01-15T25:00:00Z"),
    ("since", "9999-12-31T23:59:59-23:59"), ("since", "0001-01-01T00:00:00+23:59"),
    ("since", "1"), ("since", "\x00"), ("until", "2027-02-30"), ("until", "tomorrow"),
    ("until", "9999-12-31T23:59:59-12:00"),
    ("result", "draw"), ("result", "WIN"), ("reason", "boredom"), ("mode", "x"),
    ("mode", "\x00"), ("status", "live"), ("status", "finished,void"),
    ("player", "a b"), ("player", "ala;--"), ("player", "<script>"), ("player", "ala\x00"),
    ("player", "x" * 151), ("player", "ala\n"), ("opponent", "o'k"), ("opponent", "%00"),
    ("opponent", "\x00"), ("opponent", "y" * 1_000),
]  # fmt: skip


@pytest.mark.parametrize("path", FILTERED)
@pytest.mark.parametrize(("param", "value"), BAD_FILTERS)
def test_a_garbage_filter_value_is_a_400_that_names_the_filter(api, world, path, param, value):
    query = {param: value, "player": "ala"} if param == "result" else {param: value}
    bad_request(api.get(url(path, **query)), param)


@pytest.mark.parametrize("path", ORDERED)
@pytest.mark.parametrize(
    "ordering",
    ["garbage", "-", "--created_at", "created_at,garbage", "record", "player0__username", "id",
     "\x00", "created_at;drop"],
)  # fmt: skip
def test_an_unknown_ordering_is_a_400_that_lists_the_known_ones(api, world, path, ordering):
    messages = bad_request(api.get(url(path, ordering=ordering)), "ordering")
    assert "finished_at" in " ".join(messages)


def test_valid_spellings_still_filter(api, world):
    for query in ({"rated": "True"}, {"rated": "1"}, {"rated": "FALSE"}, {"rated": "0"},
                  {"player": "ala", "opponent": "nobody"}, {"player": "a.b@c+d-e_f"},
                  {"since": "2027-01-15"}, {"until": "2100-01-01T00:00:00+14:00"},
                  {"since": "2000-01-01T00:00:00-23:59"}, {"until": "2100-01-01T00:00:00+23:59"},
                  {"ordering": "created_at,-finished_at"}):  # fmt: skip
        assert api.get(url("/api/matches/", **query)).status_code == 200, query


@pytest.mark.parametrize("param", ["rated", "player", "since", "ordering", "cursor", "page_size"])
def test_an_empty_parameter_counts_as_absent(api, world, param):
    response = api.get(url("/api/matches/", **{param: ""}))
    assert response.status_code == 200
    assert len(response.json()["results"]) == 4


# --- repeated parameters -----------------------------------------------------------------------

REPEATS = [
    ("/api/matches/", "rated", ("true", "false")),
    ("/api/matches/", "player", ("ala", "olek")),
    ("/api/matches/", "opponent", ("ala", "ala")),
    ("/api/matches/", "result", ("win", "loss")),
    ("/api/matches/", "reason", ("points", "resign")),
    ("/api/matches/", "mode", ("online", "online")),
    ("/api/matches/", "status", ("finished", "void")),
    ("/api/matches/", "since", ("2027-01-01", "2027-01-02")),
    ("/api/matches/", "until", ("2100-01-01", "2100-01-01")),
    ("/api/matches/", "ordering", ("created_at", "finished_at")),
    ("/api/matches/", "cursor", (cursor(o="1"), cursor(o="2"))),
    ("/api/matches/", "page_size", ("1", "2")),
    ("/api/matches/live/", "cursor", (cursor(o="1"), cursor(o="1"))),
    ("/api/matches/live/", "page_size", ("1", "2")),
    ("/api/players/ala/matches/", "rated", ("true", "false")),
    ("/api/players/ala/matches/", "ordering", ("created_at", "created_at")),
    ("/api/players/ala/matches/", "cursor", (cursor(o="1"), cursor(o="2"))),
    ("/api/players/ala/matches/", "page_size", ("1", "1")),
    ("/api/players/ala/matches/export/", "mode", ("online", "hotseat")),
    ("/api/players/ala/matches/export/", "since", ("2027-01-01", "")),
    ("/api/leaderboard/", "page", ("1", "2")),
    ("/api/leaderboard/", "page_size", ("5", "5")),
]


@pytest.mark.parametrize(("path", "param", "values"), REPEATS)
def test_a_repeated_parameter_is_a_400_that_names_it(api, world, path, param, values):
    query = urlencode(
        [(param, value) for value in values] + [("player", "ala")] * (param == "result")
    )
    messages = bad_request(api.get(f"{path}?{query}"), param)
    assert "once" in " ".join(messages)


# --- usernames in the path ---------------------------------------------------------------------

ODD_USERNAMES = ["a b", "ala;--", "<script>", "ala\x00", "\x00", "x" * 151, "o'k", "ala\n", "%FF"]


@pytest.mark.parametrize("template", PLAYER_PATHS)
@pytest.mark.parametrize("username", ODD_USERNAMES)
def test_a_username_no_one_can_have_is_a_404_without_a_query(
    api, world, django_assert_num_queries, template, username
):
    with django_assert_num_queries(0):
        response = api.get(template.format(quote(username, safe="")))
    assert not_found(response) == "no such player"


@pytest.mark.parametrize("template", PLAYER_PATHS)
def test_an_unknown_username_is_a_404(api, world, template):
    assert not_found(api.get(template.format("nobody"))) == "no such player"


# --- fuzzed cursors ----------------------------------------------------------------------------


@pytest.fixture
def unthrottled(monkeypatch):
    rates = {scope: "1000000/min" for scope in ("anon", "user", "export")}
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", rates)


@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    path=st.sampled_from(CURSOR_LISTS),
    fuzzed=cursors(),
    ordering=st.sampled_from(["", "created_at", "-finished_at"]),
)
def test_any_cursor_is_a_page_or_a_400_that_names_the_cursor(
    api, world, unthrottled, path, fuzzed, ordering
):
    response = api.get(url(path, cursor=fuzzed, ordering=ordering))
    assert response.status_code in (200, 400), (response.status_code, response.content[:300])
    if response.status_code == 400:
        event(bad_request(response, "cursor")[0].split(":")[1][:25])  # --hypothesis-show-statistics
    else:
        event("a page")


# --- the schema says so ------------------------------------------------------------------------


def test_the_schema_documents_the_parameters_and_the_400(api):
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    for path in ("/api/matches/", "/api/matches/live/", "/api/players/{username}/matches/"):
        operation = schema["paths"][path]["get"]
        params = {param["name"]: param for param in operation["parameters"]}
        assert params["cursor"]["schema"]["type"] == "string"
        assert "400" in params["cursor"]["description"]
        assert params["page_size"]["schema"] == {"type": "integer", "minimum": 1, "maximum": 200}
        assert "400" in operation["responses"]
    ordering = schema["paths"]["/api/matches/"]["get"]["parameters"]
    ordering = next(param for param in ordering if param["name"] == "ordering")
    assert set(ordering["schema"]["enum"]) == {"created_at", "-created_at", "finished_at",
                                               "-finished_at"}  # fmt: skip
    leaderboard = schema["paths"]["/api/leaderboard/"]["get"]
    params = {param["name"]: param for param in leaderboard["parameters"]}
    assert params["page"]["schema"]["minimum"] == 1
    assert params["page_size"]["schema"] == {"type": "integer", "minimum": 1, "maximum": 200}
    assert {"400", "404"} <= set(leaderboard["responses"])
    export = schema["paths"]["/api/players/{username}/matches/export/"]["get"]
    assert {"400", "404"} <= set(export["responses"])

"""The archive API: the list and its filters, ordering and cursor pages; one record, with the
live round's secrets withheld and conditional GET; the live matches; the NDJSON export."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.utils.http import http_date

import engine
from engine.__main__ import main as engine_main
from matches import services
from matches.models import Match
from tests.api.conftest import T0_MS
from tests.support.dealing import contribution

pytestmark = pytest.mark.django_db

OVER = ("full", "resigned", "abandoned", "hotseat")


def ids(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [item["id"] for item in response.json()["results"]]


def of(world, *names) -> list[str]:
    """The named matches' ids, newest first (the default order)."""
    matches = sorted(
        (getattr(world, name) for name in names), key=lambda m: m.created_at, reverse=True
    )
    return [str(match.id) for match in matches]


def winner_of(match):
    return match.player0 if match.winner == 0 else match.player1


def test_the_world_has_the_shapes_its_docstring_names(world):
    """The fixture's deal stream fixes every match's course: a new stream (or a protocol
    change) that bends one of them out of shape fails here, not in a filter test far away."""

    def rounds(name):
        return getattr(world, name).record["rounds"]

    def last_types(name):
        return [event["type"] for event in rounds(name)[-1]["events"]]

    for name, reason in (("full", "points"), ("resigned", "resign"), ("abandoned", "abandon"),
                         ("hotseat", "resign")):  # fmt: skip
        match = getattr(world, name)
        assert (match.status, match.reason) == ("finished", reason), name
    assert world.live.status == "live" and len(rounds("live")) == 2
    assert len(rounds("full")) > 2
    for name in ("resigned", "abandoned", "hotseat", "live"):  # each in round 2, dealt
        assert len(rounds(name)) == 2 and rounds(name)[-1]["contributions"] is not None, name
    sources = {"full": "player", "resigned": "player", "abandoned": "player", "hotseat": "device"}
    for name, source in sources.items():  # every round dealt from both seats' contributions
        for round_record in rounds(name):
            assert [c["source"] for c in round_record["contributions"]] == [source] * 2, name
    assert last_types("resigned")[-1] == "resign" and world.resigned.winner == 0  # ewa resigned
    assert last_types("hotseat")[-1] == "resign" and "start" not in last_types("hotseat")
    assert last_types("abandoned")[-2:] == ["start", "abandon"]  # Continue, then the clock ran
    assert last_types("live").count("draw") == 2 and "start" in last_types("live")


def test_the_archive_lists_the_matches_that_are_over_newest_first(api, world):
    assert ids(api.get("/api/matches/")) == of(world, *OVER)


def test_a_summary_carries_players_ratings_result_final_balances_and_rounds(api, world):
    item = next(
        i for i in api.get("/api/matches/").json()["results"] if i["id"] == str(world.full.id)
    )
    match = world.full
    assert item["mode"] == "online" and item["rated"] is True and item["status"] == "finished"
    assert item["players"] == [
        {
            "seat": 0,
            "username": "ala",
            "computer": None,
            "rating_before": 1500,
            "rating_after": match.rating_after0,
        },
        {
            "seat": 1,
            "username": "olek",
            "computer": None,
            "rating_before": 1500,
            "rating_after": match.rating_after1,
        },
    ]
    assert item["result"] == {"winner": match.winner, "reason": "points"}
    assert item["balances"] == match.record["balances"] and sorted(item["balances"]) == [0, 300]
    assert item["rounds"] == len(match.record["rounds"])
    assert item["finished_at"] is not None and item["url"] == f"/api/matches/{match.id}/"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("player=ala", ("full", "abandoned")),
        ("player=ewa", ("resigned", "abandoned")),
        ("player=zed", ("hotseat",)),
        ("player=nobody", ()),
        ("opponent=olek", ("full", "resigned")),
        ("player=ala&opponent=ewa", ("abandoned",)),
        ("player=ewa&opponent=ala", ("abandoned",)),
        ("player=ala&opponent=nobody", ()),
        ("rated=true", ("full", "resigned")),
        ("rated=false", ("abandoned", "hotseat")),
        ("reason=points", ("full",)),
        ("reason=resign", ("resigned", "hotseat")),
        ("reason=abandon", ("abandoned",)),
        ("reason=time", ()),
        ("mode=hotseat", ("hotseat",)),
        ("mode=online", ("full", "resigned", "abandoned")),
        ("status=void", ()),
        ("since=2100-01-01", ()),
        ("until=2000-01-01T00:00:00Z", ()),
        ("player=ala&rated=true&reason=points&mode=online", ("full",)),
    ],
)
def test_each_filter_of_the_archive(api, world, query, expected):
    assert ids(api.get(f"/api/matches/?{query}")) == of(world, *expected)


def test_the_date_range_is_on_creation_since_inclusive_until_exclusive(api, world):
    def at(name):
        return getattr(world, name).created_at.isoformat().replace("+00:00", "Z")

    assert ids(api.get("/api/matches/", {"since": at("resigned")})) == of(
        world, "resigned", "abandoned", "hotseat"
    )
    assert ids(api.get("/api/matches/", {"until": at("resigned")})) == of(world, "full")
    both = {"since": at("resigned"), "until": at("abandoned")}
    assert ids(api.get("/api/matches/", both)) == of(world, "resigned")


def test_result_is_from_the_players_side(api, world):
    for name in ("full", "resigned", "abandoned"):
        match = getattr(world, name)
        winner, loser = (
            (match.player0, match.player1) if match.winner == 0 else (match.player1, match.player0)
        )
        assert str(match.id) in ids(api.get(f"/api/matches/?player={winner.username}&result=win"))
        assert str(match.id) not in ids(
            api.get(f"/api/matches/?player={winner.username}&result=loss")
        )
        assert str(match.id) in ids(api.get(f"/api/matches/?player={loser.username}&result=loss"))
    # pass-and-play is nobody's win or loss
    assert ids(api.get("/api/matches/?player=zed&result=win")) == []
    assert ids(api.get("/api/matches/?player=zed&result=loss")) == []


@pytest.mark.parametrize(
    "query",
    ["result=win", "result=draw", "reason=boredom", "mode=x", "status=live", "since=yesterday"],
)
def test_a_bad_filter_is_a_400_that_says_which(api, world, query):
    response = api.get(f"/api/matches/?{query}")
    assert response.status_code == 400
    assert query.split("=")[0] in response.json()


def test_ordering_by_creation_or_finish_either_way(api, world):
    newest_first = of(world, *OVER)
    assert ids(api.get("/api/matches/?ordering=created_at")) == newest_first[::-1]
    by_finish = sorted((getattr(world, n) for n in OVER), key=lambda m: m.finished_at)
    assert ids(api.get("/api/matches/?ordering=finished_at")) == [str(m.id) for m in by_finish]
    assert (
        ids(api.get("/api/matches/?ordering=-finished_at")) == [str(m.id) for m in by_finish][::-1]
    )


def test_cursor_pages_walk_the_whole_archive_once(api, world):
    seen, url = [], "/api/matches/?page_size=1&ordering=created_at"
    while url:
        page = api.get(url).json()
        assert "count" not in page  # a cursor page never counts the table
        seen += [item["id"] for item in page["results"]]
        url = page["next"]
    assert seen == of(world, *OVER)[::-1]
    back = api.get(api.get("/api/matches/?page_size=2").json()["next"]).json()["previous"]
    assert ids(api.get(back)) == of(world, *OVER)[:2]


def test_a_players_matches_take_the_same_filters(api, world):
    assert ids(api.get("/api/players/ala/matches/")) == of(world, "full", "abandoned")
    assert ids(api.get("/api/players/ala/matches/?opponent=olek")) == of(world, "full")
    assert ids(api.get("/api/players/ala/matches/?rated=false")) == of(world, "abandoned")
    assert ids(api.get("/api/players/ala/matches/?player=zed")) == of(world, "full", "abandoned")
    assert api.get("/api/players/nobody/matches/").status_code == 404


# --- one record -------------------------------------------------------------------------------


def test_a_finished_record_is_the_archive_record_with_ratings(api, world):
    match = world.full
    record = api.get(f"/api/matches/{match.id}/").json()
    assert set(record) >= {"id", "mode", "rated", "status", "created_at", "clock", "players",
                           "result", "balances", "rounds"}  # fmt: skip
    assert record["id"] == str(match.id) and record["status"] == "finished"
    assert record["rounds"] == match.record["rounds"]
    assert [p["rating_after"] for p in record["players"]] == [
        match.rating_after0,
        match.rating_after1,
    ]
    assert all(r["seed"] and r["hands"] and r["boneyard"] is not None for r in record["rounds"])
    _, problems = engine.audit(record)
    assert problems == []


def test_the_live_round_keeps_its_hands_boneyard_and_drawn_tiles_hidden(api, world):
    match = world.live
    record = api.get(f"/api/matches/{match.id}/").json()
    assert record["status"] == "live"
    played, playing = record["rounds"][0], record["rounds"][-1]
    assert played["seed"] and played["hands"] == match.record["rounds"][0]["hands"]
    assert playing["seed"] is None and playing["hands"] is None and playing["boneyard"] is None
    draws = [event for event in playing["events"] if event["type"] == "draw"]
    assert len(draws) == 2 and all("tile" not in event for event in draws)
    assert {"tile"} <= set(next(e for e in playing["events"] if e["type"] == "play"))  # plays show
    assert "ETag" not in api.get(f"/api/matches/{match.id}/").headers
    body = api.get(f"/api/matches/{match.id}/").content.decode()
    for tile in match.record["rounds"][-1]["boneyard"][:1]:
        assert json.dumps({"seq": draws[0]["seq"], "tile": tile})[:-1] not in body


def test_a_round_being_dealt_shows_no_contribution_until_both_are_in(api, world):
    """docs/fairness.md: neither player sees the other's value before the deal, so the live
    record withholds each value (and the round has no tiles) until the round is dealt."""
    users = get_user_model().objects
    first, second = users.create_user("dealer0"), users.create_user("dealer1")
    match = services.match_create(player0=first, player1=second, now_ms=T0_MS)
    one, other = contribution(0, 1), contribution(1, 1)
    services.match_submit(match_id=match.pk, user=first, command=one, arrival_ms=T0_MS + 1)
    body = api.get(f"/api/matches/{match.id}/").content.decode()
    dealing = json.loads(body)["rounds"][0]
    assert dealing["contributions"] is None and dealing["hands"] is None
    assert [(e["type"], e["seat"]) for e in dealing["events"]] == [("contribute", 0)]
    assert "value" not in dealing["events"][0] and one["value"] not in body
    services.match_submit(match_id=match.pk, user=second, command=other, arrival_ms=T0_MS + 2)
    dealt = api.get(f"/api/matches/{match.id}/").json()["rounds"][0]
    assert [e.get("value") for e in dealt["events"]] == [one["value"], other["value"]]
    assert [c["value"] for c in dealt["contributions"]] == [one["value"], other["value"]]
    assert dealt["hands"] is None and dealt["seed"] is None  # now the tiles are the secret


def test_no_such_match_is_a_404(api, world):
    assert api.get("/api/matches/00000000-0000-0000-0000-000000000000/").status_code == 404
    assert api.get("/api/matches/not-a-uuid/").status_code == 404


def test_a_finished_record_answers_304_to_its_etag_or_date(api, world):
    url = f"/api/matches/{world.resigned.id}/"
    first = api.get(url)
    etag, modified = first.headers["ETag"], first.headers["Last-Modified"]
    assert etag == f'"{world.resigned.id}-{world.resigned.seq}-finished"'
    assert "no-cache" in first.headers["Cache-Control"]
    not_modified = api.get(url, HTTP_IF_NONE_MATCH=etag)
    assert not_modified.status_code == 304 and not_modified.content == b""
    assert not_modified.headers["ETag"] == etag
    assert api.get(url, HTTP_IF_MODIFIED_SINCE=modified).status_code == 304
    assert api.get(url, HTTP_IF_NONE_MATCH='"stale"').status_code == 200
    last_event_s = world.resigned.record["rounds"][-1]["events"][-1]["at_ms"] // 1000
    assert api.get(url, HTTP_IF_MODIFIED_SINCE=http_date(last_event_s - 1)).status_code == 200


def test_a_finished_record_stands_and_a_voided_live_one_is_over_with_a_void_etag(api, world):
    finished = f"/api/matches/{world.resigned.id}/"
    etag = api.get(finished).headers["ETag"]
    last_ms = world.resigned.record["rounds"][-1]["events"][-1]["at_ms"]
    with pytest.raises(services.CommandRejected):  # a result, once reached, stands
        services.match_void(match_id=world.resigned.id, why="test", now_ms=last_ms + 5_000)
    assert api.get(finished, HTTP_IF_NONE_MATCH=etag).status_code == 304
    live = world.live
    last_ms = live.record["rounds"][-1]["events"][-1]["at_ms"]
    services.match_void(match_id=live.id, why="test", now_ms=last_ms + 5_000)
    voided = api.get(f"/api/matches/{live.id}/")
    record = voided.json()
    assert record["status"] == "void" and voided.headers["ETag"].endswith('-void"')
    assert [p["rating_after"] for p in record["players"]] == [None, None]
    assert ids(api.get("/api/matches/?status=void")) == [str(live.id)]


# --- live --------------------------------------------------------------------------------------


def test_live_lists_the_matches_that_can_be_watched(api, world):
    response = api.get("/api/matches/live/")
    assert ids(response) == [str(world.live.id)]
    item = response.json()["results"][0]
    assert item["status"] == "live" and item["result"] is None
    assert item["balances"] == world.live.record["balances"]
    assert item["rounds"] == len(world.live.record["rounds"]) >= 2


# --- export ------------------------------------------------------------------------------------


def test_the_export_streams_one_checked_record_a_line(api, world, tmp_path):
    response = api.get("/api/players/ala/matches/export/")
    assert response.status_code == 200 and response.streaming
    assert response.headers["Content-Type"] == "application/x-ndjson"
    body = b"".join(response.streaming_content)
    records = [json.loads(line) for line in body.splitlines()]
    assert [r["id"] for r in records] == of(world, "full", "abandoned")
    assert records[0] == api.get(f"/api/matches/{records[0]['id']}/").json()
    path = tmp_path / "ala.ndjson"
    path.write_bytes(body)
    assert engine_main(["check", str(path)]) == 0


def test_the_export_takes_the_archive_filters(api, world):
    def exported(query):
        response = api.get(f"/api/players/ewa/matches/export/?{query}")
        assert response.status_code == 200
        return [
            json.loads(line)["id"] for line in b"".join(response.streaming_content).splitlines()
        ]

    assert exported("") == of(world, "resigned", "abandoned")
    assert exported("rated=true") == of(world, "resigned")
    assert exported("opponent=ala&reason=abandon") == of(world, "abandoned")
    assert exported("since=2030-01-01T00:00:00Z") == []
    assert api.get("/api/players/ewa/matches/export/?result=tie").status_code == 400
    assert api.get("/api/players/nobody/matches/export/").status_code == 404


def test_the_export_is_throttled_on_its_own_scope(api, world, settings, monkeypatch):
    from rest_framework.throttling import ScopedRateThrottle

    monkeypatch.setattr(ScopedRateThrottle, "THROTTLE_RATES", {"export": "2/min"})
    codes = [api.get("/api/players/zed/matches/export/").status_code for _ in range(3)]
    assert codes == [200, 200, 429]
    assert api.get("/api/players/zed/matches/").status_code == 200  # other reads go on


def test_reads_are_throttled_per_client(api, world, monkeypatch):
    from rest_framework.throttling import AnonRateThrottle, UserRateThrottle

    monkeypatch.setattr(AnonRateThrottle, "THROTTLE_RATES", {"anon": "3/min", "user": "5/min"})
    monkeypatch.setattr(UserRateThrottle, "THROTTLE_RATES", {"anon": "3/min", "user": "5/min"})
    codes = [api.get("/api/matches/").status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    other = type(api)(REMOTE_ADDR="10.0.0.9")
    assert other.get("/api/matches/").status_code == 200
    api.force_authenticate(world.ala)
    assert [api.get("/api/leaderboard/").status_code for _ in range(6)][-2:] == [200, 429]


def test_match_rows_are_the_ones_the_service_wrote(world):
    assert Match.objects.filter(status__in=["finished", "void"]).count() == len(OVER)

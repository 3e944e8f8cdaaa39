"""Fair deals through the match service (docs/fairness.md): what the engine's own tests cannot
show. The deal's wait and its stand-ins as the service keeps time; the refusals changing
nothing; no view, broadcast, resync or record showing a contribution before its round is dealt
(and all of them showing both after); and the standalone verifier of docs/fairness.md
re-dealing matches played through the service from their public records. Real database,
Redis and channel layer, injected time (the consumer test reads the authority's)."""

from __future__ import annotations

import json
import uuid

import pytest
from django.contrib.auth.models import AnonymousUser
from django.test import Client

import engine
from engine.shuffle import server_contribution
from matches import broadcast, deadlines, selectors, services, timekeeping
from matches.models import Match
from matches.selectors import match_record
from realtime.redis_clients import sync_redis
from tests.matches.conftest import T0, Table
from tests.matches.test_consumer import new_match
from tests.matches.test_consumer_protocol import (
    assert_error,
    command,
    is_ack,
    is_state,
    open_socket,
    players,
    receive_all,
    receive_until,
    reloaded,
)
from tests.support.dealing import contribution
from tests.support.fairness_verifier import verify

DEAL_WAIT, GRACE, BANK = 5_000, 20_000, 120_000


def value_of(seat: int, round_no: int = 1) -> str:
    return contribution(seat, round_no)["value"]


def contribute(table: Table, seat: int, *, after_ms: int = 0, round_no: int = 1):
    return table.submit(seat, contribution(seat, round_no), after_ms=after_ms)


def contributions_of(table: Table, round_no: int = 1) -> list[dict]:
    table.match.refresh_from_db()
    events = table.match.record["rounds"][round_no - 1]["events"]
    return [e for e in events if e["type"] == "contribute"]


def snapshot(table: Table) -> tuple:
    table.match.refresh_from_db()
    m = table.match
    return (m.record, m.seq, m.status, m.deadline_ms, m.deadline_kind, m.cseq0, m.cseq1,
            bytes(m.snapshot))  # fmt: skip


@pytest.fixture
def stamped():
    """A pending arrival, as the consumer's Lua stamp registers it (removed after the test)."""
    keys = []

    def stamp(match, at_ms: int) -> None:
        keys.append(timekeeping.ARRIVALS_KEY.format(match_id=str(match.pk)))
        sync_redis().zadd(keys[-1], {uuid.uuid4().hex: at_ms})

    yield stamp
    if keys:
        sync_redis().delete(*keys)


# --- a withheld contribution neither stalls the match nor costs time ------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("contributors", [(0,), (1,), ()], ids=["seat1-absent", "seat0-absent",
                                                                  "both-absent"])  # fmt: skip
def test_the_server_stands_in_at_the_deal_deadline_for_the_missing_seats_only(
    dealing_table, contributors
):
    table = dealing_table
    deadline = T0 + DEAL_WAIT
    assert (table.match.deadline_kind, table.match.deadline_ms) == ("deal", deadline)
    clock = engine.view(table.state, None)["clock"]
    assert (clock["running"], clock["deadline_ms"]) == (False, None)
    for seat in contributors:
        contribute(table, seat, after_ms=1_500)
    # A contribution neither re-arms nor moves the wait: it runs from the round's start.
    assert (table.match.deadline_kind, table.match.deadline_ms) == ("deal", deadline)
    before = snapshot(table)
    assert services.match_expire(match_id=table.match.pk, now_ms=deadline - 1) == "early"
    assert snapshot(table) == before

    assert services.match_expire(match_id=table.match.pk, now_ms=deadline) == "contribute"
    table.match.refresh_from_db()
    state = table.state
    commitment = table.match.record["rounds"][0]["commitment"]
    expected = {
        seat: (value_of(seat), True, "player")
        if seat in contributors
        else (server_contribution(commitment, seat), False, "server")
        for seat in (0, 1)
    }
    events = contributions_of(table)
    assert {e["seat"]: (e["value"], e["from_player"], e["source"]) for e in events} == expected
    assert [e["seat"] for e in events[len(contributors) :]] == [
        s for s in (0, 1) if s not in contributors
    ]  # the stand-ins come last, each for a missing seat, none for a seat that contributed
    assert all(e["at_ms"] == deadline for e in events[len(contributors) :])
    # The round is dealt from exactly those values, and nobody's clock ran.
    dealt = engine.deal_with_contributions(
        table.match.secret_seed, expected[0][0], expected[1][0], 1,
        (expected[0][2], expected[1][2]),
    )  # fmt: skip
    assert (state.phase, state.hands) == ("ready", dealt.hands)
    assert state.banks_ms == (BANK, BANK)
    # Start's grace begins with the deal, not with the round.
    assert (table.match.deadline_kind, table.match.deadline_ms) == ("start", deadline + GRACE)
    assert services.match_expire(match_id=table.match.pk, now_ms=deadline + 1) == "early"


@pytest.mark.django_db
def test_a_contribution_stamped_before_the_deal_deadline_and_still_pending_is_applied_first(
    dealing_table, stamped
):
    table = dealing_table
    deadline = table.match.deadline_ms
    contribute(table, 0, after_ms=1_000)
    stamped(table.match, deadline - 1)  # seat 1's, waiting for the lock
    before = snapshot(table)
    for now in (deadline, deadline + 40):
        assert services.match_expire(match_id=table.match.pk, now_ms=now) == "command_pending"
    assert snapshot(table) == before
    table.now = deadline - 1
    contribute(table, 1)
    found = [(e["seat"], e["from_player"]) for e in contributions_of(table)]
    assert found == [(0, True), (1, True)]
    assert (table.state.phase, table.match.deadline_kind) == ("ready", "start")
    assert table.match.deadline_ms == deadline - 1 + GRACE
    assert services.match_expire(match_id=table.match.pk, now_ms=deadline + 40) == "early"


@pytest.mark.django_db
def test_an_arrival_pending_only_from_the_deal_deadline_on_does_not_hold_off_the_stand_in(
    dealing_table, stamped
):
    table = dealing_table
    deadline = table.match.deadline_ms
    stamped(table.match, deadline)  # at the deadline: not pending *before* it
    assert services.match_expire(match_id=table.match.pk, now_ms=deadline) == "contribute"
    assert [e["source"] for e in contributions_of(table)] == ["server", "server"]


@pytest.mark.django_db
def test_each_round_waits_for_its_own_deal_from_its_start(table):
    state = table.play_until(lambda s: s.round_no == 2, step_ms=2_000)
    settle = table.events()[-1]
    assert (state.phase, settle["type"]) == ("dealing", "settle")
    assert (table.match.deadline_kind, table.match.deadline_ms) == (
        "deal",
        settle["at_ms"] + DEAL_WAIT,
    )
    banks = state.banks_ms
    contribute(table, 1, after_ms=4_000, round_no=2)
    assert table.match.deadline_ms == settle["at_ms"] + DEAL_WAIT
    now = settle["at_ms"] + DEAL_WAIT
    assert services.match_expire(match_id=table.match.pk, now_ms=now) == "contribute"
    sources = [(e["seat"], e["source"]) for e in contributions_of(table, 2)]
    assert sources == [(1, "player"), (0, "server")]
    assert table.state.banks_ms == banks and table.state.phase == "ready"


# --- refusals change nothing -----------------------------------------------------------------


def assert_refused(table: Table, seat: int, command: dict, code: str) -> None:
    """Refused with ``code``: the record, seq, snapshot, deadline and cseqs are as before."""
    before = snapshot(table)
    with pytest.raises(services.CommandRejected) as refused:
        table.submit(seat, command, after_ms=100)
    assert refused.value.code == code, refused.value.message
    assert snapshot(table) == before
    table.cseq[seat] -= 1  # the refused command used up no cseq; number the next one again


MALFORMED = [
    {"type": "contribute"},
    {"type": "contribute", "value": None},
    {"type": "contribute", "value": 12345},
    {"type": "contribute", "value": "ab" * 31},  # 62 digits
    {"type": "contribute", "value": "ab" * 33},
    {"type": "contribute", "value": "AB" * 32},  # one spelling only: lowercase
    {"type": "contribute", "value": "zz" * 32},
    {"type": "contribute", "value": " " + "ab" * 32},
]


@pytest.mark.django_db
@pytest.mark.parametrize("command", MALFORMED, ids=range(len(MALFORMED)))
def test_a_malformed_contribution_is_refused_and_changes_nothing(dealing_table, command):
    assert_refused(dealing_table, 0, command, "bad_contribution")
    contribute(dealing_table, 0)  # the seat may still contribute a proper value
    assert [e["seat"] for e in contributions_of(dealing_table)] == [0]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "command",
    [{"type": "contribute", "drawn": True}, {**contribution(0, 1), "drawn": True}],
    ids=["drawn", "drawn-with-value"],
)
def test_a_player_may_not_send_the_servers_drawn_contribution(dealing_table, command):
    assert_refused(dealing_table, 0, {k: v for k, v in command.items() if k != "seat"},
                   "server_only")  # fmt: skip
    assert contributions_of(dealing_table) == []


@pytest.mark.django_db
def test_a_second_contribution_from_a_seat_is_refused_and_its_first_value_stands(dealing_table):
    contribute(dealing_table, 1)
    other = {"type": "contribute", "value": "0f" * 32}
    assert_refused(dealing_table, 1, other, "already_contributed")
    assert_refused(dealing_table, 1, contribution(1, 1), "already_contributed")
    assert [e["value"] for e in contributions_of(dealing_table)] == [value_of(1)]


@pytest.mark.django_db
def test_a_contribution_after_the_round_is_dealt_is_refused(table):
    assert table.state.phase == "ready"
    assert_refused(table, 0, {"type": "contribute", "value": "0f" * 32}, "not_dealing")
    table.start()
    assert_refused(table, table.state.decider, contribution(0, 1), "not_dealing")


@pytest.mark.django_db
def test_a_contribution_after_the_seed_is_revealed_is_refused(dealing_table):
    contribute(dealing_table, 0)
    dealing_table.submit(0, {"type": "resign"})  # ends the match in the round being dealt
    assert dealing_table.match.record["rounds"][0]["seed"] == dealing_table.match.secret_seed
    assert_refused(dealing_table, 1, contribution(1, 1), "match_over")
    assert dealing_table.match.record["rounds"][0]["contributions"] is None  # never dealt


# --- nobody sees another's value before the deal ----------------------------------------------


def everything_shown(table: Table) -> dict[str, str]:
    """Every way a value could be shown, as the text that goes out: each audience's view,
    broadcast of the last change and resync, the public record and the API's."""
    match = Match.objects.get(pk=table.match.pk)
    state = selectors.match_state(match)
    last_change = [e for e in selectors.events_since(match, 0) if e["seq"] == match.seq]
    shown = {"record": json.dumps(match_record(match)),
             "api": Client().get(f"/api/matches/{match.pk}/").content.decode()}  # fmt: skip
    for audience in (0, 1, broadcast.WATCHERS):
        viewer = broadcast.viewer_for(match, state, audience)
        message = broadcast.state_message(match, state, viewer, last_change)
        shown[f"broadcast {audience}"] = json.dumps(message)
        resync = selectors.state_message(str(match.pk), audience, 0)
        shown[f"resync {audience}"] = json.dumps(resync)
    return shown


@pytest.mark.django_db
def test_while_a_round_is_dealt_no_view_event_or_record_shows_a_contribution(dealing_table):
    table = dealing_table
    contribute(table, 0)
    for where, text in everything_shown(table).items():
        assert value_of(0) not in text, f"the {where} shows seat 0's value before the deal"
    # Which seat has contributed is public; the value is not.
    seen = engine.view(table.state, 1)["contributions"]
    assert [(c["source"], c["value"]) for c in seen] == [("player", None), (None, None)]
    resync = selectors.state_message(str(table.match.pk), broadcast.WATCHERS, 0)
    assert [(e["type"], e["seat"], "value" in e) for e in resync["events"]] == [
        ("contribute", 0, False)
    ]
    assert match_record(table.match)["rounds"][0]["contributions"] is None

    contribute(table, 1)
    for where, text in everything_shown(table).items():
        assert value_of(0) in text and value_of(1) in text, f"the {where} hides a dealt value"
    for audience in (0, 1, broadcast.WATCHERS):
        resync = selectors.state_message(str(table.match.pk), audience, 0)
        assert [e.get("value") for e in resync["events"]] == [value_of(0), value_of(1)]
        assert [c["value"] for c in resync["view"]["contributions"]] == [value_of(0), value_of(1)]
    values = [c["value"] for c in match_record(table.match)["rounds"][0]["contributions"]]
    assert values == [value_of(0), value_of(1)]


@pytest.mark.django_db
def test_while_the_next_round_is_dealt_the_earlier_rounds_values_stay_public(table):
    table.play_until(lambda s: s.round_no == 2)
    contribute(table, 1, round_no=2)
    shown = everything_shown(table)
    for where, text in shown.items():
        assert value_of(1, 2) not in text, f"the {where} shows round 2's value before its deal"
    for audience in (0, 1, broadcast.WATCHERS):  # a resync from the start of the match
        resync = selectors.state_message(str(table.match.pk), audience, 0)
        round_one = [e for e in resync["events"] if e["type"] == "contribute"][:2]
        assert [e.get("value") for e in round_one] == [value_of(0), value_of(1)]


# --- the same through the socket ------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
async def test_contributions_over_the_socket_are_acked_refused_and_withheld_until_the_deal(
    monkeypatch,
):
    key = f"sbo:deadlines:test-{uuid.uuid4().hex}"
    monkeypatch.setattr(deadlines, "DEADLINES_KEY", key)
    match = await new_match()
    users = await players(match)
    sockets = {seat: (await open_socket(match, users[seat]))[0] for seat in (0, 1)}
    watcher, first = await open_socket(match, AnonymousUser())
    assert (first["view"]["phase"], first["starter"], first["deadline"]["kind"]) == (
        "dealing", None, "deal")  # fmt: skip
    mine, theirs = value_of(0), value_of(1)

    await sockets[0].send_json_to({"type": "contribute", "value": mine, "cseq": 1})
    answer, own = await receive_all(sockets[0], is_ack(1), is_state)
    assert (answer["seq"], answer["duplicate"], answer["late"]) == (1, False, False)
    for message in (own, *[await receive_until(s, is_state) for s in (sockets[1], watcher)]):
        assert [(e["type"], e["seat"], e["source"]) for e in message["events"]] == [
            ("contribute", 0, "player")
        ]
        view = message["view"]
        assert view["phase"] == "dealing" and view["hand"] is None
        assert [(c["source"], c["value"]) for c in view["contributions"]] == [
            ("player", None), (None, None)]  # fmt: skip
        if message is not own:  # only its sender may know it
            assert mine not in json.dumps(message)
    again = await command(sockets[0], {"type": "contribute", "value": theirs, "cseq": 2})
    assert_error(again, "already_contributed", 2)
    bad = await command(sockets[1], {"type": "contribute", "value": mine.upper(), "cseq": 1})
    assert_error(bad, "bad_contribution", 1)
    drawn = await command(sockets[1], {"type": "contribute", "drawn": True, "cseq": 1})
    assert_error(drawn, "server_only", 1)
    start = await command(sockets[1], {"type": "start", "cseq": 1})
    assert_error(start, "dealing", 1)
    assert (await reloaded(match)).seq == 1

    await sockets[1].send_json_to({"type": "contribute", "value": theirs, "cseq": 1})
    answer, dealt_one = await receive_all(sockets[1], is_ack(1), is_state)
    assert answer["seq"] == 2 and not answer["duplicate"]
    for seat, socket in ((0, sockets[0]), (1, None), (None, watcher)):
        dealt = dealt_one if socket is None else await receive_until(socket, is_state)
        assert [(e["type"], e["seat"], e["value"]) for e in dealt["events"]] == [
            ("contribute", 1, theirs)
        ]
        view = dealt["view"]
        assert [c["value"] for c in view["contributions"]] == [mine, theirs]
        assert view["phase"] == "ready" and (view["hand"] is None) == (seat is None)
        assert dealt["starter"] in (0, 1) and dealt["deadline"]["kind"] == "start"
    late = await command(sockets[0], {"type": "contribute", "value": "0f" * 32, "cseq": 3})
    assert_error(late, "not_dealing", 3)
    for socket in (*sockets.values(), watcher):
        await socket.disconnect()
    sync_redis().delete(key, deadlines.built_key())


# --- the verifier of docs/fairness.md on matches played through the service -----------------


def play_to_the_end(table: Table, *, absent_in_round=None, resign_in_round=None, seed=0) -> Match:
    """Play the match out (or until seat 0 resigns once round ``resign_in_round`` is dealt); in
    round ``absent_in_round`` seat 1 sends no contribution and the server stands in for it at the
    deal deadline."""
    state = table.play_until(lambda s: s.phase == "dealing" and s.round_no == absent_in_round,
                             seed=seed)  # fmt: skip
    if state.result is None and absent_in_round is not None:
        contribute(table, 0, after_ms=500, round_no=state.round_no)
        table.now = table.match.deadline_ms
        assert services.match_expire(match_id=table.match.pk, now_ms=table.now) == "contribute"
    state = table.play_until(lambda s: s.phase == "ready" and s.round_no == resign_in_round,
                             seed=seed)  # fmt: skip
    if state.result is None:
        table.submit(0, {"type": "resign"}, after_ms=500)
    return table.match


def played_match(make_user, n: int, mode: str = "online", **how) -> Match:
    player0 = make_user(f"p{n}a")
    player1 = player0 if mode == "hotseat" else make_user(f"p{n}b")
    match = services.match_create(player0=player0, player1=player1, mode=mode, now_ms=T0)
    return play_to_the_end(Table(match, {0: player0, 1: player1}, T0), seed=n, **how)


@pytest.fixture
def played(make_user) -> list[Match]:
    """Matches played to the end through the service: one online, one with a stand-in in its
    second round and one pass-and-play, each resigned a few rounds in (so it surely ends)."""
    return [
        played_match(make_user, 0, resign_in_round=5),
        played_match(make_user, 1, absent_in_round=2, resign_in_round=4),
        played_match(make_user, 2, "hotseat", resign_in_round=3),
    ]


@pytest.mark.django_db
def test_the_verifier_re_deals_every_round_of_matches_played_through_the_service(
    played, verifier, tmp_path
):
    sources = set()
    for match in played:
        response = Client().get(f"/api/matches/{match.pk}/")
        assert response.status_code == 200
        record = response.json()
        assert record["status"] == "finished" and len(record["rounds"]) >= 2
        status, lines = verify(verifier, record, tmp_path)
        assert (status, lines) == (
            0,
            [f"round {r['number']}: deal verified" for r in record["rounds"]],
        ), lines
        sources |= {c["source"] for r in record["rounds"] for c in r["contributions"]}
    assert sources == {"player", "server", "device"}  # every kind of contribution was checked


@pytest.mark.django_db
def test_the_verifier_fails_a_served_record_whose_contribution_was_altered(
    make_user, verifier, tmp_path
):
    match = played_match(make_user, 3, absent_in_round=2, resign_in_round=3)
    with_stand_in = Client().get(f"/api/matches/{match.pk}/").json()
    assert verify(verifier, with_stand_in, tmp_path)[0] == 0
    stand_in = next(
        (r["number"], c["seat"])
        for r in with_stand_in["rounds"]
        for c in r["contributions"]
        if not c["from_player"]
    )
    for number, seat, verdict in [
        (1, 0, "FAIL: the deal does not follow"),  # a player's value
        (*stand_in, "stand-in is not the one committed to"),  # the server's
    ]:
        record = json.loads(json.dumps(with_stand_in))
        entry = record["rounds"][number - 1]["contributions"][seat]
        entry["value"] = f"{int(entry['value'], 16) ^ 1:064x}"  # one bit
        status, lines = verify(verifier, record, tmp_path)
        assert status == 1, lines
        assert verdict in lines[number - 1], lines
        assert all(line.endswith("deal verified") for i, line in enumerate(lines)
                   if i != number - 1)  # fmt: skip

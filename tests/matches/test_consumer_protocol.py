"""The match WebSocket's protocol (docs/protocol.md), message by message, in process: what a
connection is sent on connecting, ping, hello / sync, Start, acks (duplicate, late), cseq
checks, the rules' refusals and the one error shape. Real database, Redis, channel layer and
the consumer's own deadline loop; only the deadline set is made this test's own."""

import asyncio
import json
import time
import uuid

import pytest
from channels.db import database_sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser

import engine
from config.routing import websocket_urlpatterns
from matches import broadcast, deadlines, readings, services, timekeeping
from matches.models import Match
from matches.selectors import match_state
from realtime.redis_clients import sync_redis
from tests.accounts.factories import make_user
from tests.lobby.test_consumer import receive_all, receive_until
from tests.matches.test_consumer import TIMEOUT_S
from tests.support.dealing import deal_by_service

pytestmark = pytest.mark.django_db(transaction=True)

BASE_ERROR_KEYS = {"type", "code", "message", "cseq"}


@pytest.fixture(autouse=True)
def own_deadline_set(monkeypatch):
    """The consumer's deadline loop fires only this test's deadlines (other runs on the same
    Redis keep theirs), and this test may hold one back."""
    key = f"sbo:deadlines:test-{uuid.uuid4().hex}"
    monkeypatch.setattr(deadlines, "DEADLINES_KEY", key)
    yield key
    sync_redis().delete(key, deadlines.built_key())


# --- helpers -------------------------------------------------------------------------------------


@database_sync_to_async
def new_dealt_match() -> Match:
    """A new match whose first round both players have contributed to (docs/fairness.md), as
    their clients do on connecting: dealt, waiting for Start. The tests here take it from there;
    tests/matches/test_fair_deals.py contributes over the socket."""
    match = services.match_create(
        player0=make_user("ann"), player1=make_user("bob"), now_ms=timekeeping.now_ms()
    )
    assert deal_by_service(match, {0: match.player0, 1: match.player1}, timekeeping.now_ms())
    return Match.objects.get(pk=match.pk)


async def open_socket(match: Match, user) -> tuple[WebsocketCommunicator, dict]:
    """A connection and the state message it was sent on connecting."""
    communicator = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/match/{match.pk}/")
    communicator.scope["user"] = user
    connected, _ = await communicator.connect(timeout=TIMEOUT_S)
    assert connected
    first = await communicator.receive_json_from(timeout=TIMEOUT_S)
    assert first["type"] == "state"
    return communicator, first


players = database_sync_to_async(lambda match: (match.player0, match.player1))
reloaded = database_sync_to_async(lambda match: Match.objects.get(pk=match.pk))
other_user = database_sync_to_async(lambda: make_user("cleo"))


@database_sync_to_async
def engine_state(match: Match) -> engine.MatchState:
    return match_state(Match.objects.get(pk=match.pk))


@database_sync_to_async
def all_events(match: Match) -> list[dict]:
    record = Match.objects.get(pk=match.pk).record
    return [event for r in record["rounds"] for event in r["events"]]


async def seated(match: Match):
    """Both players connected: ({seat: communicator}, {seat: first state message})."""
    users = await players(match)
    sockets, firsts = {}, {}
    for seat in (0, 1):
        sockets[seat], firsts[seat] = await open_socket(match, users[seat])
    return sockets, firsts


async def close_all(*communicators) -> None:
    for communicator in communicators:
        await communicator.disconnect()


def is_ack(cseq):
    return lambda m: m["type"] == "ack" and m["cseq"] == cseq


def is_state(m) -> bool:
    return m["type"] == "state"


def is_resync(m) -> bool:
    return m["type"] == "state" and m.get("resync") is True


def assert_error(message: dict, code: str, cseq, **details) -> None:
    """The one error shape: type, code, message (text for people), cseq, and the details."""
    assert message["type"] == "error", message
    assert message["code"] == code, message
    assert set(message) == BASE_ERROR_KEYS | set(details), message
    assert isinstance(message["message"], str) and message["message"], message
    assert message["cseq"] == cseq, message
    for key, value in details.items():
        assert message[key] == value, message


async def command(socket, content: dict) -> dict:
    """Send a command and return the answer to it (an ack or an error), skipping broadcasts."""
    await socket.send_json_to(content)
    return await receive_until(socket, lambda m: m["type"] in ("ack", "error"))


async def press_start(sockets: dict, starter: int, cseq: int = 1) -> dict:
    """The starter presses Start; returns {seat: broadcast} after checking the ack."""
    await sockets[starter].send_json_to({"type": "start", "cseq": cseq})
    ack, mine = await receive_all(sockets[starter], is_ack(cseq), is_state)
    theirs = await receive_until(sockets[1 - starter], is_state)
    assert ack == {
        "type": "ack",
        "cseq": cseq,
        "seq": mine["seq"],
        "duplicate": False,
        "late": False,
    }
    return {starter: mine, 1 - starter: theirs}


def a_decision(view: dict) -> dict:
    """A legal command for the seat to act, read off its view's ``legal``."""
    legal = view["legal"]
    if view["must_play"] is not None:
        tile = view["must_play"]
        entry = next(p for p in legal["plays"] if p["tile"] == tile)
        return {"type": "play", "tile": tile, "place": entry["places"][0]}
    if legal["plays"]:
        return {
            "type": "play",
            "tile": legal["plays"][0]["tile"],
            "place": legal["plays"][0]["places"][0],
        }
    if legal["draw"]:
        return {"type": "draw"}
    if legal["waive"]:
        return {"type": "waive"}
    if legal["accept"]:
        return {"type": "accept"}
    if legal["start"]:
        return {"type": "start"}
    raise AssertionError(f"nothing legal in {legal}")


def listed_score(view: dict, decision: dict) -> int | None:
    """What the view's ``legal.plays`` says a play decision scores (None for other commands)."""
    if decision["type"] != "play":
        return None
    entry = next(p for p in view["legal"]["plays"] if p["tile"] == decision["tile"])
    return entry["scores"][entry["places"].index(decision["place"])]


# --- connecting ----------------------------------------------------------------------------------


async def test_each_player_gets_its_own_view_on_connecting_and_a_spectator_the_public_one():
    match = await new_dealt_match()
    state = await engine_state(match)
    sockets, firsts = await seated(match)
    watcher, public = await open_socket(match, AnonymousUser())
    outsider, outsider_first = await open_socket(match, await other_user())

    hidden = {"seat", "hand", "legal", "must_play"}  # all a seat's view adds to the public one
    for seat, first in firsts.items():
        assert (first["you"], first["resync"], first["events"]) == (seat, True, [])
        assert first["seq"] == first["view"]["seq"] == match.seq
        assert first["view"]["seat"] == seat
        assert first["view"]["hand"] == sorted(list(tile) for tile in state.hands[seat])
        assert first["starter"] == engine.starter(state)
        assert first["view"]["legal"]["start"] is (seat == engine.starter(state))
        assert first["view"]["legal"]["resign"] is True
        # Nothing of the other hand: the rest of the message is the spectators' message.
        assert {k: v for k, v in first["view"].items() if k not in hidden} == {
            k: v for k, v in public["view"].items() if k not in hidden
        }
        assert {k: v for k, v in first.items() if k not in ("you", "view")} == {
            k: v for k, v in public.items() if k not in ("you", "view")
        }
        other_hand = [list(tile) for tile in state.hands[1 - seat]]
        assert not any(tile in first["view"]["hand"] for tile in other_hand)
    assert firsts[0]["view"]["hand_counts"] == [len(state.hands[0]), len(state.hands[1])]

    for first in (public, outsider_first):  # a visitor, and a signed-in user with no seat
        assert (first["you"], first["resync"], first["seq"]) == (None, True, match.seq)
        view = first["view"]
        assert (view["seat"], view["hand"], view["legal"], view["must_play"]) == (
            None,
            None,
            None,
            None,
        )
        assert first["match"]["status"] == match.status  # as the database has it
        assert [p["username"] for p in first["match"]["players"]] == ["ann", "bob"]
    assert match.secret_seed not in str(public)  # the seed stays secret until the round ends
    await close_all(*sockets.values(), watcher, outsider)


async def test_a_connection_to_a_match_that_does_not_exist_is_closed_with_4404():
    user = await other_user()
    communicator = WebsocketCommunicator(
        URLRouter(websocket_urlpatterns), f"/ws/match/{uuid.uuid4()}/"
    )
    communicator.scope["user"] = user
    connected, _ = await communicator.connect(timeout=TIMEOUT_S)
    closed = await communicator.receive_output(timeout=TIMEOUT_S)
    # Accepted, then closed at once: the client sees why.
    assert (connected, closed) == (True, {"type": "websocket.close", "code": 4404})


# --- reads ---------------------------------------------------------------------------------------


async def test_ping_is_answered_with_the_authoritys_time_and_the_last_seq():
    match = await new_dealt_match()
    sockets, firsts = await seated(match)
    starter = firsts[0]["starter"]
    broadcasts = await press_start(sockets, starter)
    seq = broadcasts[starter]["seq"]
    assert seq > match.seq
    await readings.refresh()
    # Off by at most half the round trip of the process's reading (and a millisecond's rounding).
    slack_ms = readings.MEMORY.offset.round_trip_ms / 2 + 1
    for token in (1764496800123, "abc", None):
        before = timekeeping.now_ms()
        await sockets[1 - starter].send_json_to({"type": "ping", "t": token})
        pong = await sockets[1 - starter].receive_json_from(timeout=TIMEOUT_S)
        after = timekeeping.now_ms()
        assert set(pong) == {"type", "t", "server_ms", "seq"}
        assert (pong["type"], pong["t"], pong["seq"]) == ("pong", token, seq)
        assert before - slack_ms <= pong["server_ms"] <= after + slack_ms
    await close_all(*sockets.values())


async def test_a_ping_is_answered_from_the_last_reading_then_redis_then_the_database(monkeypatch):
    monkeypatch.setattr(readings, "REFRESH_S", 3600)  # the process reads when this test says
    match = await new_dealt_match()
    sockets, _ = await seated(match)
    key = readings.SEQ_KEY.format(match.pk)
    assert sync_redis().get(key) == str(match.seq)  # written with the match's last change

    async def pong_seq(token) -> int:
        await sockets[0].send_json_to({"type": "ping", "t": token})
        return (await sockets[0].receive_json_from(timeout=TIMEOUT_S))["seq"]

    await readings.refresh()
    sync_redis().set(key, 9_999)
    assert await pong_seq(1) == match.seq  # the last reading: Redis is not asked
    await readings.refresh()
    assert await pong_seq(2) == 9_999
    readings.MEMORY.read_at -= readings.FRESH_S + 1  # a reading too old to vouch for
    sync_redis().set(key, 10_000)
    assert await pong_seq(3) == 10_000  # Redis is asked
    sync_redis().delete(key)  # Redis lost it (a restart): the database says
    await readings.refresh()
    assert await pong_seq(4) == match.seq
    await close_all(*sockets.values())


def unwatched_as_read_now(match: Match) -> None:
    """This process reads, now, that nobody watches ``match`` (whoever is connected here)."""
    readings.MEMORY.watched_here.pop(str(match.pk), None)
    readings.MEMORY.note_matches([], [], [], time.monotonic())


async def test_changes_are_sent_to_spectators_only_where_a_match_is_watched(monkeypatch):
    monkeypatch.setattr(readings, "REFRESH_S", 3600)  # the process reads when this test says
    sent_to = []
    real_send_all = broadcast._send_all

    async def recording(messages, *writes):
        sent_to.append({group.rsplit(".", 1)[1] for group, _ in messages})
        await real_send_all(messages, *writes)

    monkeypatch.setattr(broadcast, "_send_all", recording)
    match = await new_dealt_match()
    sockets, firsts = await seated(match)
    await readings.refresh()
    sent_to.clear()  # the deal's broadcasts, made on creating the match
    broadcasts = await press_start(sockets, firsts[0]["starter"])
    assert sent_to == [{"seat0", "seat1"}]  # read: nobody watches
    watcher, _ = await open_socket(match, AnonymousUser())
    decider = (await engine_state(match)).decider
    answer = await command(sockets[decider], {**a_decision(broadcasts[decider]["view"]), "cseq": 5})
    assert answer["type"] == "ack", answer
    assert (await receive_until(watcher, is_state))["seq"] == answer["seq"]
    assert sent_to[1] == {"seat0", "seat1", "watch"}  # a spectator here: known at once
    await readings.refresh()  # the spectator is in Redis: every process reads it
    readings.MEMORY.watched_here.clear()
    assert not readings.MEMORY.unwatched(str(match.pk), time.monotonic())
    await close_all(watcher, *sockets.values())
    await readings.refresh()
    assert readings.MEMORY.unwatched(str(match.pk), time.monotonic())  # it left


async def test_a_new_spectator_catches_up_on_a_change_made_before_every_process_knew(monkeypatch):
    monkeypatch.setattr(readings, "REFRESH_S", 3600)
    monkeypatch.setattr(readings, "CATCH_UP_S", 1.0)
    match = await new_dealt_match()
    sockets, firsts = await seated(match)
    watcher, first = await open_socket(match, AnonymousUser())
    unwatched_as_read_now(match)  # another process's reading, made before the spectator came
    broadcasts = await press_start(sockets, firsts[0]["starter"])
    caught_up = await receive_until(watcher, is_state)  # nothing else came before it
    assert caught_up["resync"] is True
    assert caught_up["seq"] == broadcasts[0]["seq"] > first["seq"]
    assert [e["type"] for e in caught_up["events"]] == ["start"]
    await close_all(watcher, *sockets.values())


async def test_hello_and_sync_resend_the_state_with_the_events_after_last_seq():
    match = await new_dealt_match()
    sockets, firsts = await seated(match)
    starter = firsts[0]["starter"]
    seen = {0: [], 1: []}  # the events each seat was broadcast
    for seat, message in (await press_start(sockets, starter)).items():
        seen[seat] += message["events"]
    for n in range(3):  # a few decisions, by whoever is to act
        state = await engine_state(match)
        decider = state.decider
        await sockets[decider].send_json_to({"type": "hello"})
        current = await receive_until(sockets[decider], is_resync)
        view = current["view"]
        answer = await command(sockets[decider], {**a_decision(view), "cseq": 10 + n})
        assert answer["type"] == "ack", answer
        for seat in (0, 1):
            message = await receive_until(
                sockets[seat], lambda m: is_state(m) and not m.get("resync")
            )
            seen[seat] += message["events"]
    reloaded_match = await reloaded(match)
    for seat in (0, 1):
        for kind in ("hello", "sync"):
            await sockets[seat].send_json_to({"type": kind, "last_seq": match.seq})
            resync = await receive_until(sockets[seat], is_resync)
            assert (resync["resync"], resync["seq"], resync["you"]) == (
                True,
                reloaded_match.seq,
                seat,
            )
            assert [e["seq"] for e in resync["events"]] == list(
                range(match.seq + 1, reloaded_match.seq + 1)
            )
            assert resync["events"] == seen[seat]  # what the broadcasts brought, in order
        # From a later point only the rest; from the last event nothing.
        await sockets[seat].send_json_to({"type": "sync", "last_seq": reloaded_match.seq - 1})
        tail = await receive_until(sockets[seat], is_resync)
        assert [e["seq"] for e in tail["events"]] == [reloaded_match.seq]
        await sockets[seat].send_json_to({"type": "sync", "last_seq": reloaded_match.seq})
        assert (await receive_until(sockets[seat], is_resync))["events"] == []
        await sockets[seat].send_json_to({"type": "hello"})  # no last_seq: the state alone
        bare = await receive_until(sockets[seat], is_resync)
        assert (bare["resync"], bare["events"], bare["seq"]) == (True, [], reloaded_match.seq)
    await close_all(*sockets.values())


# --- start ---------------------------------------------------------------------------------------


async def test_the_starters_start_is_acked_and_both_seats_get_their_own_views_in_seq_order():
    match = await new_dealt_match()
    sockets, firsts = await seated(match)
    starter = firsts[0]["starter"]
    assert starter in (0, 1) and firsts[1]["starter"] == starter
    broadcasts = await press_start(sockets, starter)
    for seat, message in broadcasts.items():
        # Only the view: never the row the service shares between its processes with it.
        assert set(message) == {
            "type", "seq", "match", "you", "starter", "view", "events", "deadline"
        }  # fmt: skip
        assert message["seq"] == message["view"]["seq"] > match.seq
        assert "resync" not in message
        assert (message["you"], message["view"]["seat"]) == (seat, seat)
        assert message["view"]["hand"] == firsts[seat]["view"]["hand"]
        assert message["events"][0] == {**message["events"][0], "type": "start", "seat": starter}
        assert [e["seq"] for e in message["events"]] == list(
            range(match.seq + 1, message["seq"] + 1)
        )
        assert message["starter"] is None and message["view"]["clock"]["running"] is True
        assert message["match"]["status"] == "live"
        assert message["deadline"]["kind"] == "decision"
    # The one to act first is the starter, and its view lists its choices with their scores.
    mine = broadcasts[starter]["view"]
    assert mine["to_act"] == starter
    assert mine["legal"]["plays"] or mine["legal"]["offers"] or mine["legal"]["waive"]
    for entry in mine["legal"]["plays"]:
        assert len(entry["scores"]) == len(entry["places"])
        assert all(isinstance(score, int) for score in entry["scores"])
    for entry in mine["legal"]["offers"]:
        assert set(entry) == {"amount", "cost"} and entry["amount"] % 5 == 0

    # More decisions: every broadcast a seat gets continues the one before it.
    last = {seat: broadcasts[seat]["seq"] for seat in (0, 1)}
    views = {seat: broadcasts[seat]["view"] for seat in (0, 1)}
    for n in range(6):
        decider = views[0]["to_act"]
        if decider is None:
            break
        decision = a_decision(views[decider])
        score = listed_score(views[decider], decision)
        answer = await command(sockets[decider], {**decision, "cseq": 2 + n})
        assert (answer["type"], answer["late"], answer["duplicate"]) == ("ack", False, False)
        for seat in (0, 1):
            message = await receive_until(sockets[seat], is_state)
            assert "resync" not in message
            if score is not None:  # the play scored what the view listed for it
                played = message["events"][0]
                assert (played["type"], played["seat"]) == ("play", decider)
                assert (played["tile"], played["points"]) == (decision["tile"], score)
            assert message["events"][0]["seq"] == last[seat] + 1
            assert [e["seq"] for e in message["events"]] == list(
                range(last[seat] + 1, message["seq"] + 1)
            )
            assert (message["you"], message["view"]["seat"]) == (seat, seat)
            last[seat], views[seat] = message["seq"], message["view"]
        assert answer["seq"] == last[0] == last[1]
    assert last[0] == (await reloaded(match)).seq
    await close_all(*sockets.values())


async def test_the_other_players_start_is_refused_with_not_your_start():
    match = await new_dealt_match()
    sockets, firsts = await seated(match)
    other = 1 - firsts[0]["starter"]
    answer = await command(sockets[other], {"type": "start", "cseq": 1})
    assert_error(answer, "not_your_start", 1)
    assert await sockets[0].receive_nothing(timeout=0.2)
    assert await sockets[1].receive_nothing(timeout=0.2)
    after = await reloaded(match)
    assert (after.seq, after.status, after.cseq0, after.cseq1) == (match.seq, match.status, 0, 0)
    # The refusal used up nothing: the same cseq works for the starter's own Start later.
    await press_start(sockets, 1 - other, cseq=1)
    await close_all(*sockets.values())


async def test_the_mover_is_acked_before_the_moves_broadcasts_go_out(monkeypatch):
    """The ack is the answer to a command: it waits for the command's commit, not for the
    broadcasts to every audience (they follow at once, from the same event loop)."""
    match = await new_dealt_match()
    sockets, firsts = await seated(match)
    starter = firsts[0]["starter"]
    sent = []  # what happened, in order: "ack" sent to the starter, or the group published to
    send_all, to_starter = broadcast._send_all, sockets[starter].output_queue.put_nowait

    async def noting_send_all(messages, *writes):
        sent.extend(group.rsplit(".", 1)[1] for group, _ in messages)
        await send_all(messages, *writes)

    def noting_put(message):
        if "text" in message and json.loads(message["text"])["type"] == "ack":
            sent.append("ack")
        to_starter(message)

    monkeypatch.setattr(broadcast, "_send_all", noting_send_all)
    monkeypatch.setattr(sockets[starter].output_queue, "put_nowait", noting_put)
    broadcasts = await press_start(sockets, starter)
    # (and to spectators unless this process has read that nobody watches: matches/readings.py)
    assert (sent[0], sorted(set(sent[1:]) - {"watch"})) == ("ack", ["seat0", "seat1"])
    assert broadcasts[0]["seq"] == broadcasts[1]["seq"] > match.seq
    await close_all(*sockets.values())


# --- cseq ----------------------------------------------------------------------------------------


async def test_a_resent_cseq_is_acked_as_a_duplicate_and_not_applied_twice():
    match = await new_dealt_match()
    sockets, firsts = await seated(match)
    starter = firsts[0]["starter"]
    broadcasts = await press_start(sockets, starter, cseq=7)
    view = broadcasts[starter]["view"]
    decision = {**a_decision(view), "cseq": 8}
    first = await command(sockets[starter], decision)
    assert (first["type"], first["duplicate"]) == ("ack", False)
    await receive_until(sockets[1 - starter], is_state)
    await receive_until(sockets[starter], is_state)
    events = await all_events(match)
    for resent in ({"type": "start", "cseq": 7}, decision):  # e.g. after a reconnect
        again = await command(sockets[starter], resent)
        assert again == {
            "type": "ack",
            "cseq": resent["cseq"],
            "seq": first["seq"],
            "duplicate": True,
            "late": False,
        }
    assert await all_events(match) == events
    assert await sockets[1 - starter].receive_nothing(timeout=0.2)
    assert await sockets[starter].receive_nothing(timeout=0.1)
    await close_all(*sockets.values())


async def test_an_older_cseq_never_applied_is_stale_and_says_the_last_cseq():
    match = await new_dealt_match()
    sockets, firsts = await seated(match)
    starter = firsts[0]["starter"]
    broadcasts = await press_start(sockets, starter, cseq=8)  # another device went to 8
    decision = a_decision(broadcasts[starter]["view"])
    for old in (7, 1):
        answer = await command(sockets[starter], {**decision, "cseq": old})
        assert_error(answer, "stale_cseq", old, last_cseq=8)
    assert (await reloaded(match)).seq == broadcasts[starter]["seq"]
    assert await sockets[1 - starter].receive_nothing(timeout=0.2)
    # Numbered on from last_cseq, the very same command is taken.
    answer = await command(sockets[starter], {**decision, "cseq": 9})
    assert (answer["type"], answer["duplicate"]) == ("ack", False)
    assert answer["seq"] > broadcasts[starter]["seq"]
    # The other seat's numbers are its own: its cseq 1 is not stale (it resigns, always legal).
    other = 1 - starter
    answer = await command(sockets[other], {"type": "resign", "cseq": 1})
    assert (answer["type"], answer["duplicate"], answer["late"]) == ("ack", False, False)
    assert (await reloaded(match)).reason == "resign"
    await close_all(*sockets.values())


@pytest.mark.parametrize("cseq", [0, -1, "1", 2**53, 1.5, True])
async def test_a_cseq_that_is_not_a_positive_whole_number_is_a_bad_message(cseq):
    match = await new_dealt_match()
    sockets, firsts = await seated(match)
    starter = firsts[0]["starter"]
    answer = await command(sockets[starter], {"type": "start", "cseq": cseq})
    assert_error(answer, "bad_message", cseq)
    after = await reloaded(match)
    assert (after.seq, after.status) == (match.seq, match.status)
    assert not sync_redis().exists(timekeeping.ARRIVALS_KEY.format(match_id=match.pk))
    assert await sockets[1 - starter].receive_nothing(timeout=0.1)
    # The connection stays open and a proper cseq is taken.
    await press_start(sockets, starter, cseq=1)
    await close_all(*sockets.values())


# --- the rules' refusals -------------------------------------------------------------------------


async def test_illegal_plays_get_the_rules_codes_and_change_nothing():
    match = await new_dealt_match()
    sockets, firsts = await seated(match)
    starter = firsts[0]["starter"]
    await press_start(sockets, starter)
    state = await engine_state(match)
    decider, waiting = state.decider, 1 - state.decider
    own = [list(t) for t in state.hands[waiting]]
    theirs = [list(t) for t in state.hands[decider]]
    before = await all_events(match)
    refusals = [
        (waiting, {"type": "play", "tile": own[0], "place": None}, "not_your_turn"),
        (waiting, {"type": "draw"}, "not_your_turn"),
        (waiting, {"type": "start"}, "already_started"),
        (decider, {"type": "play", "tile": own[0], "place": None}, "tile_not_in_hand"),
        (decider, {"type": "play", "tile": [7, 9], "place": None}, "bad_command"),
        (decider, {"type": "pass"}, "unknown_command"),
        (decider, {"type": "timeout"}, "server_only"),
        (decider, {"cseq": 5}, "bad_command"),
    ]
    if state.phase == "play":
        refusals.append((decider, {"type": "waive"}, "no_auction"))
    for n, (seat, content, code) in enumerate(refusals, start=20):
        answer = await command(sockets[seat], {**content, "cseq": n})
        assert_error(answer, code, n)
    assert await all_events(match) == before
    after = await reloaded(match)
    assert (after.seq, after.cseq0, after.cseq1) == (
        state.seq,
        *((1, 0) if starter == 0 else (0, 1)),
    )
    assert await sockets[0].receive_nothing(timeout=0.2)
    assert await sockets[1].receive_nothing(timeout=0.1)
    assert theirs == [list(t) for t in (await engine_state(match)).hands[decider]]
    await close_all(*sockets.values())


async def test_a_spectators_commands_are_refused_with_not_a_player_and_it_may_still_read():
    match = await new_dealt_match()
    sockets, firsts = await seated(match)
    watcher, _ = await open_socket(match, AnonymousUser())
    for n, kind in enumerate(("start", "resign", "play"), start=1):
        answer = await command(watcher, {"type": kind, "cseq": n})
        assert_error(answer, "not_a_player", n)
    after = await reloaded(match)
    assert (after.seq, after.status) == (match.seq, match.status)
    # It still watches: Start pressed by the player reaches it, with the public view.
    await press_start(sockets, firsts[0]["starter"])
    seen = await receive_until(watcher, is_state)
    assert (seen["you"], seen["view"]["hand"], seen["view"]["legal"]) == (None, None, None)
    assert seen["events"][0]["type"] == "start"
    await watcher.send_json_to({"type": "sync", "last_seq": match.seq})
    resync = await receive_until(watcher, is_resync)
    assert resync["events"] == seen["events"] and resync["resync"] is True
    await close_all(watcher, *sockets.values())


# --- time ----------------------------------------------------------------------------------------


async def wait_for_authority(at_ms: int, timeout_s: float = TIMEOUT_S) -> int:
    """Until the time authority reads ``at_ms`` or later (polled, not slept blindly)."""

    async def wait():
        while True:
            now = timekeeping.now_ms()
            if now >= at_ms:
                return now
            await asyncio.sleep(0.005)

    return await asyncio.wait_for(wait(), timeout_s)


async def wait_for(predicate, timeout_s: float = TIMEOUT_S):
    async def wait():
        while not predicate():
            await asyncio.sleep(0.005)

    await asyncio.wait_for(wait(), timeout_s)


async def test_a_decision_that_arrives_after_the_deadline_is_acked_late_and_loses_on_time(
    settings, own_deadline_set
):
    settings.MATCH_BANK_MS, settings.MATCH_DELAY_MS = 300, 100
    match = await new_dealt_match()
    sockets, firsts = await seated(match)
    starter = firsts[0]["starter"]
    # The consumer's deadline loop has loaded the deadlines from the database; from here on the
    # match's deadline is held back from it, so the late command (not the loop) meets it.
    await wait_for(lambda: sync_redis().exists(deadlines.built_key()))
    broadcasts = await press_start(sockets, starter)
    sync_redis().zrem(own_deadline_set, str(match.pk))
    view = broadcasts[starter]["view"]
    decider, deadline = view["to_act"], view["clock"]["deadline_ms"]
    assert view["clock"]["running"] and deadline == view["clock"]["turn_start_ms"] + 400
    assert broadcasts[starter]["deadline"] == {"kind": "decision", "at_ms": deadline}

    await wait_for_authority(deadline)
    decision = {**a_decision(broadcasts[decider]["view"]), "cseq": 2}
    answer = await command(sockets[decider], decision)
    assert answer == {
        "type": "ack",
        "cseq": 2,
        "seq": answer["seq"],
        "duplicate": False,
        "late": True,
    }
    finals = {}
    for seat in (0, 1):
        final = finals[seat] = await receive_until(sockets[seat], is_state)
        assert final["seq"] == answer["seq"]
        timeout = final["events"][-1]
        assert (timeout["type"], timeout["seat"], timeout["at_ms"]) == (
            "timeout",
            decider,
            deadline,
        )
        assert final["view"]["result"] == {"winner": 1 - decider, "reason": "time"}
        assert final["match"]["status"] == "finished"
        assert final["deadline"] == {"kind": None, "at_ms": None}
        # The late decision was not applied.
        assert [e["type"] for e in final["events"]] == ["timeout"]
    if decision["type"] == "play":  # the tile is still in hand
        assert decision["tile"] in finals[decider]["view"]["hand"]
    after = await reloaded(match)
    assert (after.status, after.winner, after.reason) == ("finished", 1 - decider, "time")
    # Anything after the end is refused.
    answer = await command(sockets[decider], {**decision, "cseq": 3})
    assert_error(answer, "match_over", 3)
    await close_all(*sockets.values())

"""The lobby WebSocket (/ws/lobby/): snapshots on connect, live changes for everyone, requests,
and the match hand-over. Real database and Redis channel layer."""

import asyncio

import pytest
from channels.db import database_sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator

from config.routing import websocket_urlpatterns
from lobby.consumers import CLOSE_NOT_SIGNED_IN
from lobby.models import Seek
from matches.models import Match
from tests.accounts.factories import make_user

pytestmark = pytest.mark.django_db(transaction=True)

TIMEOUT_S = 5


async def connect(user) -> WebsocketCommunicator:
    communicator = WebsocketCommunicator(URLRouter(websocket_urlpatterns), "/ws/lobby/")
    communicator.scope["user"] = user
    connected, _ = await communicator.connect(timeout=TIMEOUT_S)
    assert connected
    first = await communicator.receive_json_from(timeout=TIMEOUT_S)
    second = await communicator.receive_json_from(timeout=TIMEOUT_S)
    assert (first["type"], second["type"]) == ("lobby", "personal")
    return communicator


async def receive_until(communicator, predicate):
    """The first message that satisfies ``predicate`` (earlier ones are skipped)."""

    async def wait():
        while True:
            message = await communicator.receive_json_from(timeout=TIMEOUT_S)
            if predicate(message):
                return message

    return await asyncio.wait_for(wait(), TIMEOUT_S)


async def receive_all(communicator, *predicates):
    """Messages satisfying each of ``predicates``, whatever order they arrive in."""
    found = [None] * len(predicates)

    async def wait():
        while None in found:
            message = await communicator.receive_json_from(timeout=TIMEOUT_S)
            for i, predicate in enumerate(predicates):
                if found[i] is None and predicate(message):
                    found[i] = message
        return found

    return await asyncio.wait_for(wait(), TIMEOUT_S)


def started(message) -> bool:
    return message["type"] == "match_started"


def seeks_by(*usernames):
    """A lobby snapshot whose open seeks are exactly those of ``usernames``."""
    return lambda m: (
        m["type"] == "lobby" and [s["owner"]["username"] for s in m["seeks"]] == list(usernames)
    )


users = database_sync_to_async(lambda *names: [make_user(name) for name in names])


async def test_a_visitor_is_refused():
    from django.contrib.auth.models import AnonymousUser

    communicator = WebsocketCommunicator(URLRouter(websocket_urlpatterns), "/ws/lobby/")
    communicator.scope["user"] = AnonymousUser()
    connected, _ = await communicator.connect(timeout=TIMEOUT_S)
    closed = await communicator.receive_output(timeout=TIMEOUT_S)
    # Accepted, then closed: the client sees why, not a bare HTTP 403.
    assert (connected, closed) == (True, {"type": "websocket.close", "code": CLOSE_NOT_SIGNED_IN})


async def test_two_clients_see_each_others_seeks_appear_and_disappear():
    ann, bob = await users("ann", "bob")
    ann_ws, bob_ws = await connect(ann), await connect(bob)

    await ann_ws.send_json_to({"type": "seek_create", "rated": False, "rating_min": 1400})
    await receive_until(ann_ws, lambda m: m == {"type": "ok", "request": "seek_create"})
    seen = await receive_until(bob_ws, seeks_by("ann"))
    assert seen["seeks"][0]["rating_min"] == 1400
    await receive_until(ann_ws, seeks_by("ann"))

    await bob_ws.send_json_to({"type": "seek_create", "rated": False})
    await receive_until(ann_ws, seeks_by("ann", "bob"))

    await ann_ws.send_json_to({"type": "seek_cancel", "seek_id": seen["seeks"][0]["id"]})
    await receive_until(bob_ws, seeks_by("bob"))
    await receive_until(ann_ws, seeks_by("bob"))

    await bob_ws.disconnect()  # bob's last lobby page closes: his seek goes
    await receive_until(ann_ws, seeks_by())
    await ann_ws.disconnect()


async def test_a_seek_stays_until_its_owners_last_lobby_socket_closes():
    ann, bob = await users("ann", "bob")
    first, second, watcher = await connect(ann), await connect(ann), await connect(bob)
    await first.send_json_to({"type": "seek_create", "rated": False})
    await receive_until(watcher, seeks_by("ann"))
    await first.disconnect()
    assert await database_sync_to_async(Seek.objects.filter(user=ann).exists)()
    await second.disconnect()
    await receive_until(watcher, seeks_by())
    assert not await database_sync_to_async(Seek.objects.exists)()
    await watcher.disconnect()


async def test_accepting_a_seek_sends_both_players_to_the_match():
    ann, bob = await users("ann", "bob")
    ann_ws, bob_ws = await connect(ann), await connect(bob)
    await ann_ws.send_json_to({"type": "seek_create", "rated": False})
    seek_id = (await receive_until(bob_ws, seeks_by("ann")))["seeks"][0]["id"]

    await ann_ws.send_json_to({"type": "seek_accept", "seek_id": seek_id})
    error = await receive_until(ann_ws, lambda m: m["type"] == "error")
    assert (error["code"], error["request"]) == ("own_seek", "seek_accept")

    await bob_ws.send_json_to({"type": "seek_accept", "seek_id": seek_id})
    to_ann = await receive_until(ann_ws, started)
    to_bob, _ = await receive_all(
        bob_ws, started, lambda m: m["type"] == "lobby" and m["seeks"] == [] and m["live"] == 1
    )
    assert to_ann["match_id"] == to_bob["match_id"]
    assert to_ann["url"] == f"/match/{to_ann['match_id']}/"
    match = await database_sync_to_async(Match.objects.get)(pk=to_ann["match_id"])
    assert {match.player0_id, match.player1_id} == {ann.pk, bob.pk}
    await ann_ws.disconnect()
    await bob_ws.disconnect()


async def test_a_seek_disappears_when_its_owner_starts_a_match():
    ann, bob = await users("ann", "bob")
    ann_ws, bob_ws = await connect(ann), await connect(bob)
    await ann_ws.send_json_to({"type": "seek_create", "rated": False})
    await receive_until(bob_ws, seeks_by("ann"))
    await ann_ws.send_json_to({"type": "hotseat_start"})
    hotseat = await receive_until(ann_ws, started)
    await receive_until(bob_ws, seeks_by())
    match = await database_sync_to_async(Match.objects.get)(pk=hotseat["match_id"])
    assert (match.mode, match.player0_id, match.player1_id) == ("hotseat", ann.pk, ann.pk)
    await ann_ws.disconnect()
    await bob_ws.disconnect()


async def test_quick_pairing_of_two_waiting_players():
    ann, bob = await users("ann", "bob")
    ann_ws, bob_ws = await connect(ann), await connect(bob)
    await ann_ws.send_json_to({"type": "quick_join"})
    waiting = await receive_until(ann_ws, lambda m: m["type"] == "personal" and m["quick_since_ms"])
    assert isinstance(waiting["quick_since_ms"], int)
    await receive_until(bob_ws, lambda m: m["type"] == "lobby" and m["waiting"] == 1)

    await bob_ws.send_json_to({"type": "quick_join"})
    to_ann, _ = await receive_all(
        ann_ws, started, lambda m: m["type"] == "lobby" and m["waiting"] == 0 and m["live"] == 1
    )
    to_bob = await receive_until(bob_ws, started)
    assert to_ann["match_id"] == to_bob["match_id"]
    await ann_ws.disconnect()
    await bob_ws.disconnect()


async def ann_challenges_bob():
    """Ann and Bob in the lobby, Ann's challenge seen by both: (ann_ws, bob_ws, the challenge)."""
    ann, bob = await users("ann", "bob")
    ann_ws, bob_ws = await connect(ann), await connect(bob)
    await ann_ws.send_json_to({"type": "challenge_create", "username": "bob", "rated": False})
    incoming = await receive_until(bob_ws, lambda m: m["type"] == "personal" and m["incoming"])
    await receive_until(ann_ws, lambda m: m["type"] == "personal" and m["outgoing"])
    return ann_ws, bob_ws, incoming["incoming"][0]


async def test_a_challenge_reaches_its_player_who_accepts_it():
    ann_ws, bob_ws, challenge = await ann_challenges_bob()
    assert challenge["player"]["username"] == "ann"
    await bob_ws.send_json_to({"type": "challenge_accept", "challenge_id": challenge["id"]})
    to_ann = await receive_until(ann_ws, started)
    to_bob = await receive_until(bob_ws, started)
    assert to_ann["url"] == to_bob["url"]
    await ann_ws.disconnect()
    await bob_ws.disconnect()


async def test_a_declined_challenge_disappears_for_the_challenger():
    ann_ws, bob_ws, challenge = await ann_challenges_bob()
    await bob_ws.send_json_to({"type": "challenge_decline", "challenge_id": challenge["id"]})
    await receive_until(ann_ws, lambda m: m["type"] == "personal" and m["outgoing"] == [])
    await ann_ws.disconnect()
    await bob_ws.disconnect()


async def test_unknown_and_malformed_requests_are_answered_with_an_error():
    [ann] = await users("ann")
    ann_ws = await connect(ann)
    await ann_ws.send_json_to({"type": "teleport"})
    assert (await receive_until(ann_ws, lambda m: m["type"] == "error"))[
        "code"
    ] == "unknown_request"
    await ann_ws.send_json_to({"type": "seek_create", "rated": False, "rating_min": "lots"})
    assert (await receive_until(ann_ws, lambda m: m["type"] == "error"))["code"] == "bad_message"
    await ann_ws.send_json_to([1, 2])
    assert (await receive_until(ann_ws, lambda m: m["type"] == "error"))["code"] == "bad_message"
    await ann_ws.disconnect()


async def test_a_socket_silent_for_90_s_no_longer_keeps_its_owner_present():
    from lobby import presence

    await presence.seen(991, "crashed-process-socket", 1_000)
    await presence.seen(991, "live-socket", 60_000)
    assert await presence.left(991, "live-socket", 91_001) == 0
    await presence.seen(992, "a", 1_000)
    await presence.seen(992, "b", 50_000)
    assert await presence.left(992, "a", 100_000) == 1


async def test_a_ping_is_answered():
    [ann] = await users("ann")
    ann_ws = await connect(ann)
    await ann_ws.send_json_to({"type": "ping"})
    await receive_until(ann_ws, lambda m: m == {"type": "pong"})
    await ann_ws.disconnect()

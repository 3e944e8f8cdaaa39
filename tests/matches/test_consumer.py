"""The match WebSocket (/ws/match/<id>/) in process: who may send what, and the order in which a
client gets a match's events. Real database, Redis and channel layer."""

import asyncio
import json
import threading

import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser

from config.routing import websocket_urlpatterns
from matches import broadcast, selectors, services, timekeeping
from matches.consumers import MatchConsumer
from matches.models import Match
from realtime.redis_clients import sync_redis
from tests.accounts.factories import make_user

pytestmark = pytest.mark.django_db(transaction=True)

TIMEOUT_S = 5


@database_sync_to_async
def new_match() -> Match:
    return services.match_create(
        player0=make_user("ann"), player1=make_user("bob"), now_ms=timekeeping.now_ms()
    )


async def connect(match: Match, user) -> WebsocketCommunicator:
    communicator = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/match/{match.pk}/")
    communicator.scope["user"] = user
    connected, _ = await communicator.connect(timeout=TIMEOUT_S)
    assert connected
    first = await communicator.receive_json_from(timeout=TIMEOUT_S)
    assert (first["type"], first["seq"]) == ("state", match.seq)
    return communicator


async def test_a_spectators_command_is_refused_before_it_reaches_the_time_authority():
    match = await new_match()
    watcher = await connect(match, AnonymousUser())
    arrivals = timekeeping.ARRIVALS_KEY.format(match_id=match.pk)
    for kind in ("resign", "start", "void"):
        await watcher.send_json_to({"type": kind, "cseq": 1})
        reply = await watcher.receive_json_from(timeout=TIMEOUT_S)
        assert (reply["type"], reply["code"], reply["cseq"]) == ("error", "not_a_player", 1)
    assert not sync_redis().exists(arrivals)  # nothing was ever stamped
    await watcher.send_json_to({"type": "ping", "t": 5})
    assert (await watcher.receive_json_from(timeout=TIMEOUT_S))["type"] == "pong"
    await watcher.disconnect()


async def test_a_spectator_has_a_small_message_budget(settings):
    settings.WS_SPECTATOR_RATE_BURST, settings.WS_SPECTATOR_RATE_PER_SECOND = 2, 0.001
    match = await new_match()
    watcher = await connect(match, AnonymousUser())
    codes = []
    for _ in range(4):
        await watcher.send_json_to({"type": "resign"})
        codes.append((await watcher.receive_json_from(timeout=TIMEOUT_S))["code"])
    assert codes == ["not_a_player", "not_a_player", "rate_limited", "rate_limited"]
    await watcher.disconnect()


def forged_view(first_seq: int, last_seq: int) -> dict:
    """A view as a broadcast carries it, claiming the events first_seq..last_seq."""
    events = [{"seq": n, "type": "start"} for n in range(first_seq, 1 + last_seq)]
    return {"type": "state", "seq": last_seq, "events": events}


def forged_broadcast(first_seq: int, last_seq: int) -> dict:
    """A broadcast as the service sends it, claiming the events first_seq..last_seq."""
    return broadcast.layer_message(forged_view(first_seq, last_seq))


def test_a_broadcast_crosses_the_layer_as_its_text_and_numbers_only():
    """Every process that hears a broadcast unpacks it: as nested dicts and lists, a view is a
    few hundred objects for each socket's process to allocate and its collector to walk; as
    the JSON text the socket sends, one string, encoded once by the sender."""
    view = forged_view(3, 5)
    message = broadcast.layer_message(view)
    flat = {key: type(value) for key, value in message.items()}
    assert flat == {"type": str, "seq": int, "first_seq": int, "text": str}
    assert (message["seq"], message["first_seq"], json.loads(message["text"])) == (5, 3, view)
    assert broadcast.layer_message({**view, "events": []})["first_seq"] is None


async def test_a_broadcast_that_skips_ahead_becomes_a_resync_from_the_record():
    match = await new_match()
    seat0 = await connect(match, await database_sync_to_async(lambda: match.player0)())
    group = broadcast.group_name(match.pk, 0)
    # Event 1 was lost (or is still on its way from another process); event 2 arrives first.
    await get_channel_layer().group_send(group, forged_broadcast(2, 2))
    resync = await seat0.receive_json_from(timeout=TIMEOUT_S)
    assert (resync["type"], resync.get("resync"), resync["seq"]) == ("state", True, match.seq)
    # What the record holds is what the client got: nothing older or newer comes after it.
    await get_channel_layer().group_send(group, forged_broadcast(0, 0))
    assert await seat0.receive_nothing(timeout=0.3)
    await seat0.disconnect()


async def test_a_broadcast_in_order_is_forwarded_as_it_is():
    match = await new_match()
    seat1 = await connect(match, await database_sync_to_async(lambda: match.player1)())
    message = forged_broadcast(1, 1)
    await get_channel_layer().group_send(broadcast.group_name(match.pk, 1), message)
    assert await seat1.receive_from(timeout=TIMEOUT_S) == message["text"]
    await seat1.disconnect()


async def test_a_broadcast_reaches_a_waiting_socket_as_the_layer_reads_it(monkeypatch):
    """realtime/forwarding.py: not through the consumer's queue and dispatch, three turns of a
    loaded event loop later."""
    dispatched = []
    queued_way = MatchConsumer.match_message

    async def counted(self, event):
        dispatched.append(event["seq"])
        await queued_way(self, event)

    monkeypatch.setattr(MatchConsumer, "match_message", counted)
    match = await new_match()
    seat1 = await connect(match, await database_sync_to_async(lambda: match.player1)())
    for seq in (1, 2):
        message = forged_broadcast(seq, seq)
        await get_channel_layer().group_send(broadcast.group_name(match.pk, 1), message)
        assert await seat1.receive_from(timeout=TIMEOUT_S) == message["text"]
    assert dispatched == []
    await seat1.disconnect()


async def test_broadcasts_to_a_socket_busy_with_a_message_come_after_its_reply_in_order(
    monkeypatch,
):
    """Taken as read, a broadcast would overtake the reply to a message the socket is handling
    (here a resync, waiting on the database): the client would get events, then a state older
    than them."""
    entered, release = threading.Event(), threading.Event()
    reads_state = selectors.state_message

    def slow_state_message(*args, **kwargs):
        entered.set()
        release.wait(TIMEOUT_S)
        return reads_state(*args, **kwargs)

    match = await new_match()
    seat1 = await connect(match, await database_sync_to_async(lambda: match.player1)())
    monkeypatch.setattr(selectors, "state_message", slow_state_message)
    await seat1.send_json_to({"type": "sync"})
    await asyncio.wait_for(asyncio.to_thread(entered.wait), TIMEOUT_S)  # handling it now
    group = broadcast.group_name(match.pk, 1)
    for seq in (match.seq + 1, match.seq + 2):
        await get_channel_layer().group_send(group, forged_broadcast(seq, seq))
    assert await seat1.receive_nothing(timeout=0.3)
    release.set()
    reply = await seat1.receive_json_from(timeout=TIMEOUT_S)
    assert (reply["type"], reply["seq"]) == ("state", match.seq)
    after = [json.loads(await seat1.receive_from(timeout=TIMEOUT_S))["seq"] for _ in "ab"]
    assert after == [match.seq + 1, match.seq + 2]
    await seat1.disconnect()


async def test_a_socket_joins_its_group_again_after_redis_lost_it(monkeypatch, settings):
    from config.env import redis_channel_layers
    from realtime.sockets import ConnectionCaps

    # The core layer keeps a group as a Redis key that a restart can lose (the pub/sub layer
    # subscribes again on its own when it reconnects).
    settings.CHANNEL_LAYERS = redis_channel_layers(settings.REDIS_URL, "core")
    monkeypatch.setattr(ConnectionCaps, "REFRESH_S", 0.05)
    match = await new_match()
    seat0 = await connect(match, await database_sync_to_async(lambda: match.player0)())
    group = broadcast.group_name(match.pk, 0)
    layer = get_channel_layer()
    sync_redis().delete(layer._group_key(group))  # as if Redis had restarted empty
    message = forged_broadcast(1, 1)
    for _ in range(100):  # until the socket is back in its group
        await layer.group_send(group, message)
        if not await seat0.receive_nothing(timeout=0.1):
            break
    assert await seat0.receive_from(timeout=TIMEOUT_S) == message["text"]
    await seat0.disconnect()


async def test_a_socket_is_served_while_the_one_sync_thread_is_busy():
    """Channels closes stale database connections on its one sync thread before every message
    it dispatches; the sockets' database calls close their own, so a slow call there (an
    admin action, a long query) must not hold up every socket of the process."""
    match = await new_match()
    watcher = await connect(match, AnonymousUser())
    release = threading.Event()
    busy = asyncio.ensure_future(sync_to_async(release.wait, thread_sensitive=True)())
    try:
        await watcher.send_json_to({"type": "ping", "t": 9})
        pong = await watcher.receive_json_from(timeout=TIMEOUT_S)
        assert (pong["type"], pong["t"], pong["seq"]) == ("pong", 9, match.seq)
    finally:
        release.set()
        await busy
    await watcher.disconnect()

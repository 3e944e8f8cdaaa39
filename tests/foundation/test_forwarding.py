"""A socket's channel-layer messages taken as the pub/sub layer reads them (realtime/forwarding.py),
on a real Redis: what the socket leaves, and whatever goes wrong, still reaches it through the
queue, in order."""

from __future__ import annotations

import asyncio
import gc

import pytest
from channels.layers import channel_layers, get_channel_layer

from config.env import redis_channel_layers
from realtime.forwarding import SendWaited, forward_as_read, send_now

TIMEOUT_S = 5


@pytest.fixture
def pubsub_layer(settings):
    settings.CHANNEL_LAYERS = redis_channel_layers(settings.REDIS_URL, "pubsub", shards=2)
    channel_layers.backends.clear()  # built again from the setting
    yield get_channel_layer()
    channel_layers.backends.clear()


class Taker:
    """A consumer's ``forward``: takes what ``wanted`` says, keeps what it took."""

    def __init__(self, layer, wanted=lambda message: True):
        self.layer, self.wanted, self.taken = layer, wanted, []

    def take(self, raw: bytes) -> bool:
        message = self.layer.deserialize(raw)
        if not self.wanted(message):
            return False
        self.taken.append(message["n"])
        return True


async def channel_of(layer) -> str:
    return await layer.new_channel()


async def until(condition) -> None:
    for _ in range(500):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the condition never held")


def queue_of(layer, channel: str) -> asyncio.Queue:
    return layer._get_layer().channels[channel]


async def parked_receive(layer, channel: str) -> asyncio.Task:
    """A consumer's task waiting on its queue, as Channels' dispatch loop waits."""
    receiving = asyncio.ensure_future(layer.receive(channel))
    await until(lambda: queue_of(layer, channel)._getters)
    return receiving


async def test_a_message_is_taken_as_it_is_read_while_the_consumer_waits_for_one(pubsub_layer):
    channel = await channel_of(pubsub_layer)
    taker = Taker(pubsub_layer, wanted=lambda message: message["n"] != 1)
    assert forward_as_read(pubsub_layer, channel, taker.take)
    receiving = await parked_receive(pubsub_layer, channel)
    await pubsub_layer.send(channel, {"type": "test", "n": 0})
    await until(lambda: taker.taken == [0])
    await pubsub_layer.send(channel, {"type": "test", "n": 1})  # left: queued for the task
    assert (await asyncio.wait_for(receiving, TIMEOUT_S))["n"] == 1
    # Nobody waits on the queue now (the task holds 1, not yet handled): 2 must not overtake
    # it, so it is queued, though the consumer would take it.
    await pubsub_layer.send(channel, {"type": "test", "n": 2})
    await until(lambda: queue_of(pubsub_layer, channel).qsize() == 1)
    assert (await asyncio.wait_for(pubsub_layer.receive(channel), TIMEOUT_S))["n"] == 2
    assert taker.taken == [0]


@pytest.mark.parametrize(
    "failure", [RuntimeError("a bug in a consumer's forward"), asyncio.CancelledError()]
)
async def test_a_take_that_fails_leaves_that_message_and_every_later_one_to_the_queue(
    pubsub_layer, caplog, failure
):
    channel = await channel_of(pubsub_layer)

    class Broken(Taker):
        def take(self, raw: bytes) -> bool:
            raise failure

    taker = Broken(pubsub_layer)
    assert forward_as_read(pubsub_layer, channel, taker.take)
    got = []
    for n in range(3):
        receiving = await parked_receive(pubsub_layer, channel)
        await pubsub_layer.send(channel, {"type": "test", "n": n})
        got.append((await asyncio.wait_for(receiving, TIMEOUT_S))["n"])
    assert got == [0, 1, 2]
    assert sum("could not forward" in r.getMessage() for r in caplog.records) == 1


async def test_the_layer_does_not_keep_a_consumer_alive(pubsub_layer):
    channel = await channel_of(pubsub_layer)
    taker = Taker(pubsub_layer)
    assert forward_as_read(pubsub_layer, channel, taker.take)
    del taker
    gc.collect()
    receiving = await parked_receive(pubsub_layer, channel)
    await pubsub_layer.send(channel, {"type": "test", "n": 7})
    assert (await asyncio.wait_for(receiving, TIMEOUT_S))["n"] == 7


async def test_the_core_layer_keeps_its_own_way(settings):
    settings.CHANNEL_LAYERS = redis_channel_layers(settings.REDIS_URL, "core")
    channel_layers.backends.clear()
    try:
        layer = get_channel_layer()
        channel = await layer.new_channel()
        taker = Taker(layer)
        assert not forward_as_read(layer, channel, taker.take)
        receiving = asyncio.ensure_future(layer.receive(channel))
        await layer.send(channel, {"type": "test", "n": 1})
        assert (await asyncio.wait_for(receiving, TIMEOUT_S))["n"] == 1
        assert taker.taken == []
    finally:
        channel_layers.backends.clear()


async def test_a_send_that_never_waits_is_run_to_its_end_at_once():
    sent = []

    async def daphne_like_send(message):  # Daphne's handle_reply: no await on its way
        sent.append(message)

    send_now(daphne_like_send, {"type": "websocket.send", "text": "x"})
    assert sent == [{"type": "websocket.send", "text": "x"}]


async def test_a_send_that_waits_is_refused_and_closed():
    steps = []

    async def waiting_send(message):
        try:
            await asyncio.sleep(0)  # a send that waits for room, say
            steps.append("sent")
        finally:
            steps.append("closed")

    with pytest.raises(SendWaited):
        send_now(waiting_send, {"type": "websocket.send", "text": "x"})
    assert steps == ["closed"]  # closed where it waited, never sent


async def test_a_send_that_is_no_coroutine_is_refused():
    def future_send(message):
        return asyncio.get_running_loop().create_future()

    with pytest.raises(SendWaited):
        send_now(future_send, {"type": "websocket.send", "text": "x"})

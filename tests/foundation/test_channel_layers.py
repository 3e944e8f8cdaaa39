"""Both channel layers serve the site: the health check's round trip works on Redis lists
(``core``) and on Redis PUBLISH (``pubsub``), and leaves no subscription behind."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from channels.layers import channel_layers, get_channel_layer

from config.env import redis_channel_layers
from config.health import check_channel_layer


@pytest.fixture(params=["core", "pubsub"])
def layer_kind(request, settings):
    settings.CHANNEL_LAYERS = redis_channel_layers(settings.REDIS_URL, request.param)
    channel_layers.backends.clear()  # built again from the setting
    yield request.param
    channel_layers.backends.clear()


async def test_the_health_check_round_trips_through_either_layer(layer_kind):
    for _ in range(3):
        await check_channel_layer()
    if layer_kind == "pubsub":
        # The layer of this event loop: no channel of the checks is still subscribed.
        assert get_channel_layer()._get_layer().channels == {}


def test_an_unknown_layer_is_refused_with_the_choices():
    from django.core.exceptions import ImproperlyConfigured

    with pytest.raises(ImproperlyConfigured, match="core"):
        redis_channel_layers("redis://127.0.0.1:6379/0", "memory")


async def test_the_pubsub_layer_spreads_its_groups_over_shards_and_delivers_a_burst(settings):
    # One shard publishes one message at a time and reads one per turn of the loop: a loaded
    # web process fell seconds behind on broadcasts. Every group still reaches its member.
    settings.CHANNEL_LAYERS = redis_channel_layers(settings.REDIS_URL, "pubsub", shards=8)
    channel_layers.backends.clear()
    try:
        layer = get_channel_layer()
        groups = [f"burst-{uuid.uuid4().hex}" for _ in range(40)]
        members = {}
        for group in groups:
            members[group] = await layer.new_channel()
            await layer.group_add(group, members[group])
        inner = layer._get_layer()
        assert len({id(inner._get_shard(inner._get_group_channel_name(g))) for g in groups}) > 1
        await asyncio.gather(
            *(layer.group_send(g, {"type": "burst", "n": n}) for g in groups for n in range(5))
        )
        for group in groups:
            got = [await asyncio.wait_for(layer.receive(members[group]), 5) for _ in range(5)]
            assert sorted(message["n"] for message in got) == list(range(5))
        for group in groups:
            await layer.group_discard(group, members[group])
    finally:
        await get_channel_layer().flush()
        channel_layers.backends.clear()


def test_shards_are_the_pubsub_layers_and_at_least_one():
    from django.core.exceptions import ImproperlyConfigured

    hosts = lambda kind: redis_channel_layers("redis://h:6379/0", kind, shards=4)["default"][  # noqa: E731
        "CONFIG"
    ]["hosts"]
    assert (len(hosts("pubsub")), len(hosts("core"))) == (4, 1)
    with pytest.raises(ImproperlyConfigured, match="at least 1"):
        redis_channel_layers("redis://h:6379/0", "pubsub", shards=0)

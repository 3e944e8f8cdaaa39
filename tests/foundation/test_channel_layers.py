"""Both channel layers serve the site: the health check's round trip works on Redis lists
(``core``) and on Redis PUBLISH (``pubsub``), and leaves no subscription behind."""

from __future__ import annotations

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

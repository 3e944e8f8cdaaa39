"""/healthz reports the database, Redis and the channel layer, and the worker heartbeat."""

import pytest
from django.test import override_settings

from config.env import redis_channel_layers
from config.health import heartbeat_status, record_heartbeat, redis_client
from scripts.proc import free_port


@pytest.mark.django_db
async def test_healthz_is_200_when_every_part_answers(async_client):
    response = await async_client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["failed"] == []
    assert {name: part["status"] for name, part in body["checks"].items()} == {
        "database": "ok",
        "redis": "ok",
        "channel_layer": "ok",
    }


@pytest.mark.django_db
async def test_healthz_is_503_naming_redis_and_the_layer_when_redis_is_unreachable(async_client):
    dead = f"redis://127.0.0.1:{free_port()}/0"
    with override_settings(REDIS_URL=dead, CHANNEL_LAYERS=redis_channel_layers(dead)):
        response = await async_client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["failed"] == ["redis", "channel_layer"]
    assert body["checks"]["database"]["status"] == "ok"
    assert "Connection" in body["checks"]["redis"]["error"]


@pytest.fixture
def redis():
    client = redis_client()
    yield client
    client.close()


def test_a_recent_heartbeat_is_ok_and_an_old_one_is_stale(redis):
    record_heartbeat(redis, now_s=1000.0, interval_s=10)
    assert heartbeat_status(redis, now_s=1015.0, interval_s=10) == {"status": "ok", "age_s": 15.0}
    assert heartbeat_status(redis, now_s=1021.0, interval_s=10)["status"] == "stale"


def test_a_missing_heartbeat_is_reported_as_missing(redis):
    from config.health import HEARTBEAT_KEY

    redis.delete(HEARTBEAT_KEY)
    assert heartbeat_status(redis, now_s=0.0, interval_s=10) == {"status": "missing"}

"""/healthz reports the database, Redis and the channel layer, and the worker heartbeat."""

import pytest
from django.test import override_settings

from config.env import redis_channel_layers
from config.health import heartbeat_status, record_heartbeat, redis_client
from scripts.proc import free_port


@pytest.fixture
def worker_beat():
    """A fresh worker heartbeat, as if a worker had just run beat's task."""
    import time

    client = redis_client()
    record_heartbeat(client, now_s=time.time(), interval_s=10)
    yield
    client.close()


@pytest.fixture
def no_worker():
    from config.health import HEARTBEAT_KEY

    client = redis_client()
    client.delete(HEARTBEAT_KEY)
    yield
    client.close()


@pytest.mark.django_db
async def test_healthz_is_200_when_every_part_answers(async_client, worker_beat):
    response = await async_client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["failed"] == []
    assert body["worker_heartbeat"]["status"] == "ok"
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
    assert (body["status"], body["failed"]) == ("error", ["redis", "channel_layer", "worker"])
    assert body["worker_heartbeat"] == {"status": "unknown"}  # its heartbeat is in Redis
    assert body["checks"]["database"]["status"] == "ok"
    assert "Connection" in body["checks"]["redis"]["error"]


@pytest.mark.django_db
async def test_without_a_worker_healthz_serves_degraded_and_the_monitor_fails(
    async_client, no_worker
):
    balancer = await async_client.get("/healthz")
    monitor = await async_client.get("/healthz/monitor")
    assert (balancer.status_code, monitor.status_code) == (200, 503)
    for body in (balancer.json(), monitor.json()):
        assert (body["status"], body["failed"]) == ("degraded", ["worker"])
        assert body["worker_heartbeat"] == {"status": "missing"}


@pytest.mark.django_db
async def test_the_monitor_is_200_when_every_part_and_the_worker_answer(async_client, worker_beat):
    response = await async_client.get("/healthz/monitor")
    assert (response.status_code, response.json()["status"]) == (200, "ok")


@pytest.fixture
def redis():
    client = redis_client()
    yield client
    client.close()


def test_a_recent_heartbeat_is_ok_and_an_old_one_is_stale(redis):
    record_heartbeat(redis, now_s=1000.0, interval_s=10)
    assert heartbeat_status(redis, now_s=1030.0, interval_s=10) == {"status": "ok", "age_s": 30.0}
    assert heartbeat_status(redis, now_s=1030.5, interval_s=10)["status"] == "stale"


def test_a_missing_heartbeat_is_reported_as_missing(redis):
    from config.health import HEARTBEAT_KEY

    redis.delete(HEARTBEAT_KEY)
    assert heartbeat_status(redis, now_s=0.0, interval_s=10) == {"status": "missing"}

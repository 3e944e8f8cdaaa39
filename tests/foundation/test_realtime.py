"""The real parts, wired: WebSockets through Daphne and channels-redis, tasks through a worker."""

import json
import time

import pytest
import websockets

from config.health import HEARTBEAT_KEY, redis_client
from config.tasks import heartbeat
from tests.support.servers import http_get

pytestmark = pytest.mark.slow


async def test_a_websocket_message_goes_through_the_redis_channel_layer_and_back(daphne_server):
    async with websockets.connect(
        f"{daphne_server.ws_url}/ws/echo/", origin=daphne_server.url, open_timeout=10
    ) as socket:
        await socket.send(json.dumps({"hello": "fives", "n": 15}))
        reply = json.loads(await socket.recv())
    assert reply == {"type": "echo", "body": {"hello": "fives", "n": 15}}


async def test_a_websocket_from_a_foreign_origin_is_refused(daphne_server):
    with pytest.raises(websockets.exceptions.InvalidStatus) as refused:
        async with websockets.connect(
            f"{daphne_server.ws_url}/ws/echo/", origin="http://evil.example", open_timeout=10
        ):
            pass
    assert refused.value.response.status_code == 403


def test_the_real_server_reports_healthy(daphne_server):
    status, body = http_get(f"{daphne_server.url}/healthz")
    assert status == 200, body
    assert json.loads(body)["checks"]["channel_layer"] == {"status": "ok"}


def test_a_task_runs_on_a_real_worker_through_the_redis_broker(celery_worker_process):
    client = redis_client()
    try:
        client.delete(HEARTBEAT_KEY)
        before = time.time()
        result = heartbeat.delay()
        recorded = result.get(timeout=30)
        assert recorded >= before
        assert float(client.get(HEARTBEAT_KEY)) == recorded
    finally:
        client.close()
    assert celery_worker_process.poll() is None

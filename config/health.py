"""Health checks: the database, Redis, the channel layer, and the worker heartbeat.

``/healthz`` is for a load balancer: 503 only when this web process cannot serve (database,
Redis or channel layer down); a missing worker makes it "degraded" but still 200, since another
web process would not help. ``/healthz/monitor`` is for monitoring and paging: 503 unless every
part is fine, the worker included (heard from within three heartbeat intervals)."""

from __future__ import annotations

import asyncio
import contextlib
import secrets

import redis
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import connection

from config.env import CHANNEL_LAYER_BACKENDS, REDIS_SOCKET_TIMEOUT_S

HEARTBEAT_KEY = "sbo:heartbeat:worker"
CHANNEL_LAYER_TIMEOUT_S = 2.0
HEARTBEAT_MISSED_INTERVALS = 3  # a worker not heard from for this many intervals is down


def redis_client(url: str | None = None) -> redis.Redis:
    """A Redis client with short timeouts: a dead Redis fails in about a second."""
    return redis.Redis.from_url(
        url or settings.REDIS_URL,
        socket_timeout=REDIS_SOCKET_TIMEOUT_S,
        socket_connect_timeout=REDIS_SOCKET_TIMEOUT_S,
    )


def record_heartbeat(client: redis.Redis, *, now_s: float, interval_s: float) -> None:
    """Store the worker's latest heartbeat (Unix seconds); it expires after a few missed beats."""
    client.set(HEARTBEAT_KEY, repr(now_s), ex=max(1, round(interval_s * 6)))


def heartbeat_status(client: redis.Redis, *, now_s: float, interval_s: float) -> dict:
    """How long ago a worker last ran beat's heartbeat task: "ok" within
    ``HEARTBEAT_MISSED_INTERVALS`` intervals, else "stale" (or "missing" once the key expired)."""
    raw = client.get(HEARTBEAT_KEY)
    if raw is None:
        return {"status": "missing"}
    age_s = max(0.0, now_s - float(raw))
    fresh = age_s <= HEARTBEAT_MISSED_INTERVALS * interval_s
    return {"status": "ok" if fresh else "stale", "age_s": round(age_s, 3)}


def check_database() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()


def check_redis(*, now_s: float) -> dict:
    """Ping Redis; return the worker heartbeat (informational) read through the same client."""
    client = redis_client()
    try:
        client.ping()
        return heartbeat_status(
            client, now_s=now_s, interval_s=float(settings.HEARTBEAT_INTERVAL_S)
        )
    finally:
        client.close()


async def check_channel_layer() -> None:
    """Send one message to a fresh channel through the configured layer and read it back."""
    layer = get_channel_layer()
    nonce = secrets.token_hex(8)
    # A plain channel, not a process-local one from new_channel(): channels-redis serves those
    # through one shared receive loop that a consumer's cancelled receive can hold up for
    # seconds, which made this check fail at random while the layer was fine.
    if _publishes(layer):
        message = await _round_trip_published(layer, nonce)
    else:
        channel = f"healthz.{nonce}"
        await layer.send(channel, {"type": "healthz.ping", "nonce": nonce})
        message = await layer.receive(channel)
    if message.get("nonce") != nonce:
        raise RuntimeError("the channel layer returned another message")


def _publishes(layer) -> bool:
    return settings.CHANNEL_LAYERS["default"]["BACKEND"] == CHANNEL_LAYER_BACKENDS["pubsub"]


async def _round_trip_published(layer, nonce: str) -> dict:
    """Redis PUBLISH keeps nothing for a channel nobody listens to: subscribe first. The layer
    unsubscribes a channel only when a receive on it is cancelled, so the check ends with one."""
    channel = await layer.new_channel("healthz.")
    try:
        await layer.send(channel, {"type": "healthz.ping", "nonce": nonce})
        return await layer.receive(channel)
    finally:
        leaving = asyncio.ensure_future(layer.receive(channel))
        await asyncio.sleep(0)
        leaving.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await leaving  # its clean-up (the unsubscribe) runs as it is cancelled


async def _outcome(awaitable, timeout_s: float) -> tuple[dict, object]:
    try:
        result = await asyncio.wait_for(awaitable, timeout_s)
    except TimeoutError:
        return {"status": "error", "error": f"timed out after {timeout_s} s"}, None
    except Exception as exc:  # noqa: BLE001 - any failure is reported, not raised
        return {"status": "error", "error": f"{type(exc).__name__}: {exc}"}, None
    return {"status": "ok"}, result


async def run_checks(*, now_s: float) -> dict:
    """All checks at once; the report names each part and whether it failed."""
    (database, _), (redis_part, heartbeat), (layer, _) = await asyncio.gather(
        # On the request's own thread: its connection is closed as the request finishes
        # (realtime/database.py close_request_connections).
        _outcome(database_sync_to_async(check_database)(), 3.0),
        _outcome(sync_to_async(check_redis, thread_sensitive=False)(now_s=now_s), 3.0),
        _outcome(check_channel_layer(), CHANNEL_LAYER_TIMEOUT_S),
    )
    checks = {"database": database, "redis": redis_part, "channel_layer": layer}
    failed = [name for name, part in checks.items() if part["status"] != "ok"]
    worker = heartbeat or {"status": "unknown"}
    if worker["status"] != "ok":
        failed.append("worker")
    # "degraded": this web process serves, but no worker runs the timeouts and re-checks.
    status = "error" if set(failed) - {"worker"} else ("degraded" if failed else "ok")
    return {"status": status, "failed": failed, "checks": checks, "worker_heartbeat": worker}

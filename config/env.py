"""Typed readers for environment variables, and the Redis/database settings built from them.

Only the process environment is read here: no files, no network.
"""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

# Seconds: a dead Redis must turn into a fast error (healthz answers 503 quickly).
REDIS_SOCKET_TIMEOUT_S = 1.0
# The channel layer's receive blocks in BZPOPMIN for up to 5 s (channels-redis brpop_timeout):
# a read timeout below that kills every consumer left idle for a second.
CHANNEL_LAYER_SOCKET_TIMEOUT_S = 10.0
# redis-py's default of 100 raises (and the broadcast is lost) when a burst of moves sends at
# once: the core layer holds a connection for three round trips per group send.
CHANNEL_LAYER_MAX_CONNECTIONS = 1000
# Connections of each web process to Redis for the pub/sub layer (see redis_channel_layers).
PUBSUB_SHARDS = 16

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use 1/0, true/false, on/off)")


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from None


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return list(default)
    return [item.strip() for item in raw.split(",") if item.strip()]


def database_config(url: str, *, conn_max_age: int = 0) -> dict:
    """DATABASES["default"] for a URL; SQLite gets WAL and IMMEDIATE transactions.

    WAL lets readers and one writer work at once; IMMEDIATE takes the write lock at BEGIN, so the
    web process and the Celery worker queue on busy_timeout instead of failing with
    "database is locked" when a read transaction later tries to write.
    """
    # Persistent connections (a PostgreSQL connect costs ~2 ms, more than a move's queries),
    # checked before each reuse so a restarted server costs one failed ping, not an error.
    config = dj_database_url.parse(url, conn_max_age=conn_max_age, conn_health_checks=True)
    if config["ENGINE"] == "django.db.backends.sqlite3":
        name = Path(config["NAME"])
        config["OPTIONS"] = {
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,  # seconds to wait for the write lock
            "init_command": (
                "PRAGMA journal_mode=WAL;PRAGMA synchronous=NORMAL;PRAGMA busy_timeout=20000"
            ),
        }
        # A file, not ":memory:", so test servers in subprocesses (Daphne, Celery) share it.
        config["TEST"] = {"NAME": str(name.with_name(f"test_{name.name}"))}
    elif config["ENGINE"] == "django.db.backends.postgresql":
        config["OPTIONS"] = {
            **POSTGRESQL_TCP_OPTIONS,
            # Django turns psycopg's prepared statements off (for poolers that lose them); the
            # match's statements ask for them (matches/rows.py). The ORM's, bound by the
            # client, are never prepared whatever this says.
            "prepare_threshold": 5,
            # Those statements look a match up by its key: planned once, not at every run (a
            # custom plan for each of a statement's first five runs cost 0.3 ms of its 0.7 ms).
            "options": "-c plan_cache_mode=force_generic_plan",
            **config.get("OPTIONS", {}),
        }
    return config


# libpq's TCP settings (ignored over a Unix socket). A server that vanishes without a goodbye (a
# network cut, a host down, a failover) would leave an idle connection looking healthy for the
# system's two hours of keepalive, and a call on it waiting minutes for TCP to give up: the
# kernel now notices within 25 s of quiet (realtime/database.py then checks that connection
# before use), and a call whose bytes go unacknowledged for 10 s fails.
POSTGRESQL_TCP_OPTIONS = {
    "connect_timeout": 5,
    "keepalives": 1,
    "keepalives_idle": 10,
    "keepalives_interval": 5,
    "keepalives_count": 3,
    "tcp_user_timeout": 10_000,
}


CHANNEL_LAYER_BACKENDS = {
    "core": "channels_redis.core.RedisChannelLayer",
    "pubsub": "channels_redis.pubsub.RedisPubSubChannelLayer",
}


def redis_channel_layers(redis_url: str, kind: str = "pubsub", shards: int = PUBSUB_SHARDS) -> dict:
    """CHANNEL_LAYERS for channels-redis on one Redis, with short socket timeouts. ``kind``:
    ``pubsub`` (Redis PUBLISH, the default: one command a message, and faster in every
    measurement of docs/benchmarks.md) or ``core`` (lists and sorted sets).

    The pub/sub layer gets ``shards`` connections to the same Redis, each with its channels
    and groups (by a hash of the name). A shard publishes one message at a time, each waiting
    for its round trip, and reads one message per turn of the event loop: one shard held a
    loaded process to a few hundred broadcasts a second, seconds behind its acks."""
    if kind not in CHANNEL_LAYER_BACKENDS:
        raise ImproperlyConfigured(f"CHANNEL_LAYER is one of {sorted(CHANNEL_LAYER_BACKENDS)}")
    if shards < 1:
        raise ImproperlyConfigured("CHANNEL_LAYER_SHARDS is a whole number of at least 1")
    host = {
        "address": redis_url,
        "socket_timeout": CHANNEL_LAYER_SOCKET_TIMEOUT_S,
        "socket_connect_timeout": REDIS_SOCKET_TIMEOUT_S,
        "max_connections": CHANNEL_LAYER_MAX_CONNECTIONS,
    }
    return {
        "default": {
            "BACKEND": CHANNEL_LAYER_BACKENDS[kind],
            "CONFIG": {
                "hosts": [dict(host) for _ in range(shards if kind == "pubsub" else 1)],
                "prefix": "sbo:asgi",
            },
        }
    }

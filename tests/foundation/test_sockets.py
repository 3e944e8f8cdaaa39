"""The shared guard of every WebSocket (realtime/sockets.py) and the Redis pools behind it."""

import asyncio
import json
import random

import pytest
import redis

from realtime import redis_clients
from realtime.redis_clients import PoolBusy
from realtime.sockets import BadFrame, encode_json, json_depth, origin_allowed, parse_frame

# --- frames ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        ('{"type": "ping"}', 1),
        ('{"place": {"tile": [1, 2]}}', 3),
        ('{"s": "[[[[{{{{"}', 1),  # brackets inside a string do not nest
        ('{"s": "a \\" [[[[ b"}', 1),  # nor after an escaped quote
        ("[" * 1000 + "]" * 1000, 1000),
        ("7", 0),
        ('"\\' * 1365, 0),  # quotes and backslashes: one pass, however they alternate
        ('{"a": "\\\\"}', 1),  # an escaped backslash does not escape the closing quote
    ],
)
def test_nesting_is_measured_without_parsing(text, depth):
    assert json_depth(text) == depth


def test_a_frame_nested_a_thousand_deep_is_a_bad_message_not_a_recursion_error():
    deep = '{"a":' * 1000 + "1" + "}" * 1000
    assert len(deep) < 7_000
    with pytest.raises(BadFrame) as bad:
        parse_frame("[" * 1000 + "]" * 1000, None)
    assert bad.value.code == "bad_message"
    with pytest.raises(BadFrame):
        parse_frame(deep[:4_000], None)


@pytest.mark.parametrize(
    ("text", "data", "code"),
    [
        (None, b"\x00\x01", "bad_message"),
        ("", None, "bad_message"),
        ("not json", None, "bad_message"),
        ("[1, 2]", None, "bad_message"),
        ('"a string"', None, "bad_message"),
        ("x" * 4_097, None, "too_large"),
        ('{"t": "' + "ż" * 2_100 + '"}', None, "too_large"),  # 4,200 bytes in fewer characters
    ],
)
def test_what_is_not_a_small_json_object_is_refused_with_its_code(text, data, code):
    with pytest.raises(BadFrame) as bad:
        parse_frame(text, data)
    assert bad.value.code == code


def test_a_small_json_object_is_parsed():
    message = {"type": "play", "cseq": 3, "tile": [1, 4], "place": {"tile": [4, 4], "side": "a"}}
    assert parse_frame(json.dumps(message), None) == message


def test_a_message_is_encoded_compactly_with_its_keys_as_strings():
    encoded = encode_json({"type": "state", "text": "é \u2028", 3: [1, 4], "none": None})
    assert json.loads(encoded) == {"type": "state", "text": "é \u2028", "3": [1, 4], "none": None}
    assert ", " not in encoded  # orjson's compact form, not json's


def test_a_message_orjson_refuses_is_encoded_all_the_same():
    message = {"type": "error", "cseq": 10**21}  # past 64 bits: a client's cseq, echoed back
    assert json.loads(encode_json(message)) == message


# --- origins -----------------------------------------------------------------------------------


def scope(origin: str | None, host: str = "localhost:8000", scheme: str = "ws") -> dict:
    headers = [(b"host", host.encode())]
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    return {"type": "websocket", "scheme": scheme, "headers": headers}


@pytest.mark.parametrize(
    ("origin", "allowed"),
    [
        ("http://localhost:8000", True),
        ("HTTP://LocalHost:8000", True),
        ("http://localhost:9999", False),  # another port of an allowed host
        ("http://localhost", False),
        ("https://localhost:8000", False),  # another scheme
        ("http://evil.example:8000", False),
        ("null", False),
        ("http://[::1", False),  # not even a URL
        ("http://localhost:port", False),
        ("", False),
        (None, False),
    ],
)
def test_only_the_pages_own_origin_opens_a_socket(origin, allowed):
    assert origin_allowed(scope(origin)) is allowed


def test_the_default_port_may_be_left_out(settings):
    settings.ALLOWED_HOSTS = ["bid.example"]
    assert origin_allowed(scope("http://bid.example", host="bid.example"))
    assert origin_allowed(scope("http://bid.example:80", host="bid.example"))


def test_behind_https_the_page_is_https(settings):
    settings.ALLOWED_HOSTS, settings.HTTPS = ["bid.example"], True
    assert origin_allowed(scope("https://bid.example", host="bid.example"))
    assert not origin_allowed(scope("http://bid.example", host="bid.example"))


def test_a_host_outside_allowed_hosts_is_refused_whatever_the_origin(settings):
    settings.ALLOWED_HOSTS = ["bid.example"]
    assert not origin_allowed(scope("http://evil.example", host="evil.example"))


def test_trusted_origins_are_allowed_exactly(settings):
    settings.WS_TRUSTED_ORIGINS = ["https://app.bid.example"]
    assert origin_allowed(scope("https://app.bid.example"))
    assert not origin_allowed(scope("https://app.bid.example:8443"))


# --- the Redis pools ---------------------------------------------------------------------------


def test_a_busy_sync_pool_answers_pool_busy_after_its_wait(tiny_redis_pool):
    client = redis_clients.sync_redis()
    held = client.connection_pool.get_connection()
    try:
        with pytest.raises(PoolBusy):
            client.ping()
    finally:
        client.connection_pool.release(held)
    assert client.ping() is True


async def test_a_busy_async_pool_answers_pool_busy_and_a_dead_redis_does_not(
    tiny_redis_pool, settings
):
    client = redis_clients.async_redis()
    held = await client.connection_pool.get_connection()
    try:
        with pytest.raises(PoolBusy):
            await client.ping()
    finally:
        await client.connection_pool.release(held)
    assert await client.ping() is True
    await client.aclose()
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens there
    redis_clients.reset_clients()
    with pytest.raises(redis.exceptions.ConnectionError) as down:
        await redis_clients.async_redis().ping()
    assert not isinstance(down.value, PoolBusy)


async def test_a_socket_kept_open_keeps_its_place_under_the_cap_for_longer_than_the_stale_time(
    settings, monkeypatch
):
    from realtime.sockets import ConnectionCaps

    settings.WS_MAX_CONNECTIONS_PER_ADDRESS, settings.WS_MAX_CONNECTIONS_PER_USER = 1, 1
    monkeypatch.setattr(ConnectionCaps, "STALE_MS", 300)
    address = f"203.0.113.{random.randint(1, 250)}"  # an address of this run alone
    first = ConnectionCaps(address, None, "first-socket")
    assert await first.admit()
    for _ in range(4):  # confirmed every 100 ms for 400 ms: its set must not expire under it
        await asyncio.sleep(0.1)
        await first.confirm()
    assert not await ConnectionCaps(address, None, "second-socket").admit()
    await first.release()
    assert await ConnectionCaps(address, None, "third-socket").admit()

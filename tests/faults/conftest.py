"""Fixtures for fault tests: a Redis of the test's own that the test may kill and restart.

- `broker_redis`: a redis-server on a free port (no persistence), with `.kill()` (SIGKILL, as a
  crash), `.start()` (again on the same port), `.url` and `.client()`.
- `fault_env`: the server environment (test database) with REDIS_URL on that Redis and a 1 s
  heartbeat, for a worker and beat started with `start_worker` / `start_beat`.
- `probe_app`: a Celery app that sends tasks to, and pings workers on, that Redis.
"""

from __future__ import annotations

import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import redis
from celery import Celery

from scripts.localredis import find_redis_server, ping, redis_command
from scripts.proc import Supervisor, free_port, wait_until
from tests.support.servers import PYTHON, ROOT, tail


@dataclass
class BrokerRedis:
    """One redis-server that a test can crash (kill -9) and bring back on the same port."""

    supervisor: Supervisor
    data_dir: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, socket_timeout=1, socket_connect_timeout=1)

    def start(self) -> None:
        with open(self.data_dir / "redis.log", "ab") as log:
            self.process = self.supervisor.start(
                "redis",
                redis_command(find_redis_server(), port=self.port, data_dir=self.data_dir),
                stdout=log,
            )
        process = self.process
        wait_until(
            lambda: process.poll() is None and ping(self.port),
            10,
            message=f"redis-server to answer on port {self.port}",
        )

    def kill(self) -> None:
        """A crash: SIGKILL, no shutdown, every connection reset, every key lost."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)


@pytest.fixture
def broker_redis(tmp_path):
    with Supervisor() as supervisor:
        server = BrokerRedis(supervisor, tmp_path / "redis")
        server.data_dir.mkdir()
        server.start()
        yield server


@pytest.fixture
def fault_env(server_env, broker_redis) -> dict[str, str]:
    return {**server_env, "REDIS_URL": broker_redis.url, "HEARTBEAT_INTERVAL_S": "1"}


@pytest.fixture
def probe_app(broker_redis):
    app = Celery("probe", broker=broker_redis.url, set_as_current=False)
    app.conf.broker_connection_retry_on_startup = True
    yield app
    app.close()


def wait_for_the_task(worker, log_path: Path, task_id: str, state: str) -> None:
    """Wait until the worker's log says the task reached ``state`` (``received``, ``succeeded``);
    the worker must still be running."""
    wait_until(
        lambda: (
            worker.poll() is not None
            or f"[{task_id}] {state}" in log_path.read_text(errors="replace")
        ),
        30,
        message=f"the worker's task {task_id} to be {state}; its log:\n{tail(log_path)}",
    )
    assert worker.poll() is None, f"the worker exited:\n{tail(log_path)}"


def start_worker(
    supervisor: Supervisor,
    env: dict[str, str],
    log_path: Path,
    probe_app: Celery,
    *,
    pool: str = "solo",
) -> subprocess.Popen:
    """A real worker on the test's Redis (`pool`: solo, or prefork with two processes as in
    production); returns once it answers a ping."""
    with open(log_path, "ab") as log:
        process = supervisor.start(
            "celery-worker",
            [PYTHON, "-m", "celery", "-A", "config", "worker", f"--pool={pool}",
             "--concurrency=2", "--loglevel=INFO", "--hostname", f"fault-{free_port()}@%h"],
            env=env,
            cwd=ROOT,
            stdout=log,
        )  # fmt: skip
    wait_until(
        lambda: process.poll() is not None or probe_app.control.ping(timeout=0.5),
        60,
        message="the Celery worker to answer a ping",
    )
    assert process.poll() is None, f"the worker exited:\n{tail(log_path)}"
    return process


def start_beat(supervisor: Supervisor, env: dict[str, str], run_dir: Path) -> subprocess.Popen:
    """A real beat with its schedule file in `run_dir`."""
    with open(run_dir / "beat.log", "ab") as log:
        return supervisor.start(
            "celery-beat",
            [PYTHON, "-m", "celery", "-A", "config", "beat", "--loglevel=INFO",
             "--schedule", str(run_dir / "beat-schedule")],
            env=env,
            cwd=ROOT,
            stdout=log,
        )  # fmt: skip

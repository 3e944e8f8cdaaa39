"""`make run`'s orchestrator: serves the site with a worker and beat, restarts a child that
exits (with backoff), keeps the local Redis's data across its restarts, and stops every child."""

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import redis

from config.health import HEARTBEAT_KEY
from scripts.loadbalancer import haproxy_binary
from scripts.localredis import ping, start_local_redis
from scripts.proc import Backoff, Supervisor, group_members
from tests.support import wait_until
from tests.support.servers import ROOT, http_get, redis_url_with_db

pytestmark = pytest.mark.slow

STARTUP_S = 90  # migrate, collectstatic, then Daphne listening and a worker heartbeat


def _stat_fields(pid: int) -> list[str] | None:
    """/proc/<pid>/stat after the command name: [state, ppid, pgrp, ...]; None once gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return stat[stat.rindex(")") + 2 :].split()


def _alive(pid: int) -> bool:
    fields = _stat_fields(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def _role(pid: int) -> str | None:
    """Which of make run's children `pid` is, from its command line."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (FileNotFoundError, ProcessLookupError):
        return None
    text = b" ".join(argv)
    if b"redis-server" in text:
        return "redis"
    if b"haproxy" in text:
        return "haproxy"
    if b"config.serve" in argv:  # Daphne on uvloop
        return "daphne"
    if b"keep_deadlines" in argv:
        return "deadlines"
    if b"celery" in argv:
        return "worker" if b"worker" in argv else ("beat" if b"beat" in argv else None)
    return None


def children_of(parent: int) -> dict[str, int]:
    """make run's live children by role, found by parent PID (each has its own session, so
    they are not in the orchestrator's process group)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(int(entry.name))
        if fields and fields[0] not in ("Z", "X") and int(fields[1]) == parent:
            if role := _role(int(entry.name)):
                found[role] = int(entry.name)
    return found


def _healthz(url: str) -> dict | None:
    try:
        status, body = http_get(url)
    except OSError:
        return None
    return json.loads(body) if status == 200 else None


class RunningDevserver:
    def __init__(self, process: subprocess.Popen, port: int, run_dir: Path, log_path: Path):
        self.process, self.port, self.run_dir, self.log_path = process, port, run_dir, log_path
        self.base = f"http://127.0.0.1:{port}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def children(self) -> dict[str, int]:
        return children_of(self.process.pid)

    def healthz(self) -> dict | None:
        assert self.process.poll() is None, f"devserver exited:\n{self.log()}"
        return _healthz(f"{self.base}/healthz")

    def wait_healthy(self, timeout: float = STARTUP_S) -> dict:
        """/healthz 200, every part ok, the worker heard from."""
        return wait_until(
            lambda: (report := self.healthz()) and report["status"] == "ok" and report,
            timeout,
            message=f"{self.base}/healthz to report ok",
        )

    def wait_new_child(self, role: str, old_pid: int, timeout: float = 30) -> int:
        return wait_until(
            lambda: (pid := self.children().get(role)) not in (None, old_pid) and pid,
            timeout,
            message=f"a new {role} process",
        )


@contextmanager
def devserver(env: dict[str, str], port: int, tmp: Path):
    run_dir = tmp / "run"
    log_path = tmp / "devserver.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "scripts/devserver.py", "run", "--port", str(port),
             "--run-dir", str(run_dir)],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    server = RunningDevserver(process, port, run_dir, log_path)
    try:
        yield server
    finally:
        if process.poll() is None:
            leftovers = list(server.children().values())
            process.terminate()
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                for pid in leftovers:
                    try:
                        os.killpg(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                process.kill()
                process.wait()


def _env(
    server_env: dict[str, str], tmp: Path, *, local_redis: bool, redis_db: int = 15, web: int = 1
):
    env = {
        **server_env,
        "HEARTBEAT_INTERVAL_S": "1",
        "STATIC_ROOT": str(tmp / "static"),
        "WEB_PROCESSES": str(web),  # one Daphne on the port, unless the test is about several
    }
    if local_redis:
        del env["REDIS_URL"]  # devserver starts its own redis-server
    else:
        # Its own Redis database: its queue and heartbeat are not shared with other tests.
        env["REDIS_URL"] = redis_url_with_db(server_env["REDIS_URL"], redis_db)
    return env


@pytest.fixture(scope="module")
def local_run(server_env, tmp_path_factory):
    """One `devserver.py run` with its own local Redis, shared by the kill -9 tests (each first
    waits for it to be healthy again)."""
    from scripts.proc import free_port

    tmp = tmp_path_factory.mktemp("devserver-local")
    with devserver(_env(server_env, tmp, local_redis=True), free_port(), tmp) as server:
        yield server


def test_run_serves_the_site_with_a_worker_and_beat_and_stops_them_all(
    server_env, free_port, tmp_path
):
    env = _env(server_env, tmp_path, local_redis=False)
    with devserver(env, free_port, tmp_path) as server:
        # The heartbeat only turns "ok" once beat has sent a task and a worker has run it.
        report = server.wait_healthy()
        assert report["worker_heartbeat"]["status"] == "ok"
        assert http_get(f"{server.base}/")[0] == 200
        pids = json.loads((server.run_dir / "processes.json").read_text())
        assert set(pids) == {"daphne", "deadlines", "worker", "beat"}
        assert server.children() == pids
        assert all(_alive(pid) for pid in pids.values())
        worker_pool = [pid for pid in group_members(pids["worker"]) if pid != pids["worker"]]
        assert worker_pool, "the prefork worker has pool processes"

        server.process.send_signal(signal.SIGINT)
        assert server.process.wait(timeout=60) == 0, server.log()
        assert not any(_alive(pid) for pid in [*pids.values(), *worker_pool])
        assert not any(group_members(pid) for pid in pids.values())
        assert "All stopped." in server.log()


@pytest.mark.skipif(
    haproxy_binary() is None and os.environ.get("CI") != "true",
    reason="haproxy is not installed (.ci/run installs it)",
)
def test_run_serves_through_haproxy_with_two_web_processes_and_restarts_a_killed_one(
    server_env, free_port, tmp_path
):
    env = _env(server_env, tmp_path, local_redis=False, redis_db=14, web=2)
    with devserver(env, free_port, tmp_path) as server:
        server.wait_healthy()
        pids = json.loads((server.run_dir / "processes.json").read_text())
        assert {"daphne-1", "daphne-2", "haproxy", "worker", "beat"} <= set(pids)
        assert "2 web processes behind HAProxy" in server.log()
        # The balancer spreads requests over both (it names who answered), once its checks
        # have seen both up.
        served = set()

        def both_served():
            served.add(urllib.request.urlopen(f"{server.base}/healthz").headers["X-Served-By"])
            return served == {"daphne-1", "daphne-2"}

        wait_until(both_served, 20, message="requests answered by both web processes")
        os.kill(pids["daphne-1"], signal.SIGKILL)
        # The other goes on serving meanwhile, and the killed one is started again.
        assert http_get(f"{server.base}/")[0] == 200
        wait_until(
            lambda: (
                json.loads((server.run_dir / "processes.json").read_text())["daphne-1"]
                != pids["daphne-1"]
            ),
            30,
            message="a new daphne-1",
        )
        assert "daphne-1 exited with code -9 (SIGKILL); restarting in" in server.log()
        server.wait_healthy(30)


def test_a_killed_worker_is_restarted_and_the_site_stays_up(local_run):
    local_run.wait_healthy()
    old = local_run.children()["worker"]
    os.kill(old, signal.SIGKILL)

    assert local_run.healthz() is not None, "Daphne answers while the worker is down"
    new = local_run.wait_new_child("worker", old)
    restarted_at = time.time()
    assert "worker exited with code -9 (SIGKILL); restarting in" in local_run.log()
    assert not group_members(old), "the killed worker's pool processes are gone too"
    # The new worker runs beat's tasks: a heartbeat newer than its start.
    client = redis.Redis.from_url((local_run.run_dir / "redis_url").read_text())
    wait_until(
        lambda: float(client.get(HEARTBEAT_KEY) or 0) > restarted_at,
        30,
        message="a heartbeat from the new worker",
    )
    assert local_run.children()["worker"] == new
    assert local_run.wait_healthy()["status"] == "ok"


def test_a_killed_daphne_is_restarted_and_serves_again(local_run):
    local_run.wait_healthy()
    old = local_run.children()["daphne"]
    os.kill(old, signal.SIGKILL)

    local_run.wait_new_child("daphne", old)
    assert "daphne exited with code -9 (SIGKILL); restarting in" in local_run.log()
    local_run.wait_healthy(30)
    assert http_get(f"{local_run.base}/")[0] == 200


def test_a_killed_local_redis_comes_back_on_its_port_with_its_keys(local_run):
    local_run.wait_healthy()
    url = (local_run.run_dir / "redis_url").read_text().strip()
    port = urlsplit(url).port
    client = redis.Redis.from_url(url)
    client.set("devserver-test:survivor", "still here")
    # appendfsync everysec: wait until the write has reached the append-only file (a kill -9
    # of redis-server keeps what it wrote; only the OS's own crash could lose it).
    data_dir = local_run.run_dir / "redis"
    wait_until(
        lambda: any(b"devserver-test:survivor" in f.read_bytes() for f in data_dir.rglob("*.aof")),
        10,
        message="the key in the append-only file",
    )
    old = local_run.children()["redis"]
    os.kill(old, signal.SIGKILL)

    local_run.wait_new_child("redis", old)
    wait_until(lambda: ping(port), 30, message=f"redis to answer on port {port} again")
    assert redis.Redis.from_url(url).get("devserver-test:survivor") == b"still here"
    assert "redis exited with code -9 (SIGKILL); restarting in" in local_run.log()
    # The site recovers with it (a worker that lost its broker is restarted too).
    local_run.wait_healthy(60)


def test_sigterm_stops_every_child_with_no_orphans(server_env, free_port, tmp_path):
    env = _env(server_env, tmp_path, local_redis=True)
    with devserver(env, free_port, tmp_path) as server:
        server.wait_healthy()
        children = server.children()
        assert set(children) == {"redis", "daphne", "deadlines", "worker", "beat"}
        family = {pid for child in children.values() for pid in group_members(child)}
        assert len(family) > len(children), "the worker's pool processes are counted too"

        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(timeout=90) == 0, server.log()
        assert not [pid for pid in family if _alive(pid)]
        assert not any(group_members(pid) for pid in children.values())
        assert "All stopped." in server.log()


def test_run_says_clearly_when_the_port_is_taken(free_port):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", free_port))
        taken.listen()
        result = subprocess.run(
            [sys.executable, "scripts/devserver.py", "run", "--port", str(free_port)],
            cwd=ROOT,
            env={k: v for k, v in os.environ.items() if k != "REDIS_URL"},
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 2
    assert f"Port {free_port} on 127.0.0.1 is already in use" in result.stdout


def test_backoff_doubles_to_its_cap_and_resets_after_a_long_enough_run():
    backoff = Backoff(initial_s=1, factor=2, cap_s=30, reset_after_s=60)
    delays = [backoff.next_delay(uptime_s=0.5) for _ in range(8)]
    assert delays == [1, 2, 4, 8, 16, 30, 30, 30]
    assert backoff.next_delay(uptime_s=61) == 1
    assert backoff.next_delay(uptime_s=2) == 2


def test_a_child_that_cannot_start_keeps_being_retried_and_the_log_says_why(tmp_path):
    lines = []
    output = tmp_path / "child.log"
    fast = Backoff(initial_s=0.05, factor=2, cap_s=0.2, reset_after_s=60)
    with Supervisor(log=lines.append) as supervisor:
        supervisor.start(
            "broken",
            ["sh", "-c", "echo 'cannot bind: Address already in use'; exit 3"],
            stdout=output,
            restart=fast,
        )

        def five_exits() -> bool:
            supervisor.poll()  # what the orchestrator's loop does
            return sum("broken exited" in line for line in lines) >= 5

        wait_until(five_exits, 10, message="five exits")
    exits = [line for line in lines if "broken exited" in line]
    assert exits[0].startswith("broken exited with code 3; restarting in 0.05 s")
    assert "restarting in 0.2 s" in exits[4], "the delay doubles up to its cap"
    assert all("Address already in use" in line for line in exits), "the log says why"
    assert sum("broken restarted" in line for line in lines) >= 4


def test_a_child_is_not_restarted_once_its_supervisor_stops(tmp_path):
    lines = []
    with Supervisor(log=lines.append) as supervisor:
        process = supervisor.start(
            "sleeper", ["sleep", "60"], restart=Backoff(initial_s=0.01, cap_s=0.01)
        )
    assert process.returncode is not None
    assert supervisor.poll() == [] and supervisor.children["sleeper"] is process
    assert not any("restarting" in line for line in lines)


def test_a_local_redis_starts_on_a_free_port_and_stops_with_its_supervisor(tmp_path):
    with Supervisor() as supervisor:
        url = start_local_redis(supervisor, tmp_path / "redis")
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        assert ping(port)
        process = supervisor.children["redis"]
    assert process.returncode is not None
    assert not _alive(process.pid)
    assert not list((tmp_path / "redis").rglob("*.aof")), "the test pipeline's Redis keeps none"


def test_manage_refuses_when_no_server_runs_and_no_redis_is_named(tmp_path, monkeypatch, capsys):
    from scripts import devserver

    monkeypatch.delenv("REDIS_URL", raising=False)
    assert devserver.main(["manage", "--run-dir", str(tmp_path), "check"]) == 2
    assert "No `make run` is serving" in capsys.readouterr().out


def test_manage_runs_a_command_with_the_running_servers_redis(tmp_path, monkeypatch):
    from django.conf import settings

    from scripts import devserver

    monkeypatch.delenv("REDIS_URL", raising=False)
    (tmp_path / "redis_url").write_text(settings.REDIS_URL)
    assert devserver.main(["manage", "--run-dir", str(tmp_path), "check"]) == 0

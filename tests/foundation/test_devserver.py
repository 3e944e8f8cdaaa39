"""`make run`'s orchestrator: serves the site with a worker and beat, and stops every child."""

import json
import os
import signal
import subprocess
import sys

import pytest

from scripts.localredis import ping, start_local_redis
from scripts.proc import Supervisor, group_members, wait_until
from tests.support.servers import ROOT, http_get, redis_url_with_db

pytestmark = pytest.mark.slow


def _alive(pid: int) -> bool:
    try:
        state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


def _healthz(url: str) -> dict | None:
    status, body = http_get(url)
    return json.loads(body) if status == 200 else None


def test_run_serves_the_site_with_a_worker_and_beat_and_stops_them_all(
    server_env, free_port, tmp_path
):
    env = {
        **server_env,
        # Its own Redis database: its queue and heartbeat are not shared with other tests.
        "REDIS_URL": redis_url_with_db(server_env["REDIS_URL"], 15),
        "HEARTBEAT_INTERVAL_S": "1",
        "STATIC_ROOT": str(tmp_path / "static"),
    }
    run_dir = tmp_path / "run"
    log_path = tmp_path / "devserver.log"
    with open(log_path, "wb") as log:
        orchestrator = subprocess.Popen(
            [sys.executable, "scripts/devserver.py", "run", "--port", str(free_port),
             "--run-dir", str(run_dir)],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        base = f"http://127.0.0.1:{free_port}"

        # The heartbeat only turns "ok" once beat has sent a task and a worker has run it.
        def healthy_with_a_fresh_heartbeat():
            if orchestrator.poll() is not None:
                return "exited"
            report = _healthz(f"{base}/healthz")
            return report if report and report["worker_heartbeat"]["status"] == "ok" else None

        report = wait_until(
            healthy_with_a_fresh_heartbeat, 90, message="healthz 200 with a fresh worker heartbeat"
        )
        assert orchestrator.poll() is None, log_path.read_text()
        assert report["status"] == "ok"
        assert http_get(f"{base}/")[0] == 200
        pids = json.loads((run_dir / "processes.json").read_text())
        assert set(pids) == {"daphne", "worker", "beat"}
        assert all(_alive(pid) for pid in pids.values())
        worker_pool = [pid for pid in group_members(pids["worker"]) if pid != pids["worker"]]
        assert worker_pool, "the prefork worker has pool processes"

        orchestrator.send_signal(signal.SIGINT)
        assert orchestrator.wait(timeout=60) == 0, log_path.read_text()
        assert not any(_alive(pid) for pid in [*pids.values(), *worker_pool])
        assert not any(group_members(pid) for pid in pids.values())
        assert "All stopped." in log_path.read_text()
    finally:
        if orchestrator.poll() is None:
            orchestrator.kill()
            orchestrator.wait()


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


def test_a_local_redis_starts_on_a_free_port_and_stops_with_its_supervisor(tmp_path):
    with Supervisor() as supervisor:
        url = start_local_redis(supervisor, tmp_path / "redis")
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        assert ping(port)
        process = supervisor.children["redis"]
    assert process.returncode is not None
    assert not _alive(process.pid)


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

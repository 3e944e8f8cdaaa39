"""The worker and beat survive a broker (Redis) crash and restart on the same port.

Seen in the field: after `kill -9` of redis-server and a restart, the worker died with
`Unrecoverable error: AttributeError("'NoneType' object has no attribute 'hostname'")`, so no
timeout task ran until someone restarted it (docs/deploy.md, "Broker restarts"). It happens when
the worker holds an unacknowledged message as the connection drops: a task with a countdown or an
ETA, which it holds unacknowledged until it is due, or (acks_late) a task still running. So each
test first gives the worker such a task, due long after the test.
"""

from __future__ import annotations

import re
import time

import pytest

from config.health import HEARTBEAT_KEY
from scripts.proc import Supervisor
from tests.faults.conftest import start_beat, start_worker, wait_for_the_task
from tests.support import wait_until
from tests.support.servers import tail

pytestmark = pytest.mark.slow

# How long a task sent after the restart may take to run. The worker retries the broker 2 s after
# losing it, then 4 s, 6 s, ... later (up to 30 s), and mingles for 1 s once connected: after a
# 5 s outage it runs tasks again about 2 s after Redis is back.
AFTER_RESTART_S = 10
# Beat's deadline sweep reached the worker (what the sweep then does is tested elsewhere).
SWEEP_RECEIVED = re.compile(r"Task matches\.tasks\.sweep_deadlines\[[^\]]+\] received")
OUTAGES = pytest.mark.parametrize("down_s", [0, 5], ids=["restarted-at-once", "down-5s"])


def crash_and_restart(broker_redis, down_s: float) -> float:
    """kill -9 the Redis, keep it down `down_s` seconds, start it on the same port; when it was
    back (Unix seconds)."""
    broker_redis.kill()
    if down_s:
        time.sleep(down_s)  # the outage itself, not a wait for a condition
    broker_redis.start()
    return time.time()


def hold_a_task_with_a_countdown(probe_app, worker, log_path) -> None:
    """A heartbeat due in 10 minutes; returns once the worker holds it (received, not yet
    acknowledged)."""
    result = probe_app.send_task("config.tasks.heartbeat", countdown=600, expires=900)
    wait_for_the_task(worker, log_path, result.id, "received")


def heartbeat_after(broker_redis, since_s: float) -> float | None:
    """The worker's latest heartbeat (Unix seconds) if it ran at or after `since_s`."""
    client = broker_redis.client()
    try:
        raw = client.get(HEARTBEAT_KEY)
    finally:
        client.close()
    return float(raw) if raw is not None and float(raw) >= since_s else None


def run_heartbeat(probe_app, broker_redis, worker, log_path, *, timeout_s: float) -> None:
    """Send config.tasks.heartbeat through the broker; the worker must run it in time."""
    sent_s = time.time()
    probe_app.send_task("config.tasks.heartbeat")
    wait_until(
        lambda: worker.poll() is not None or heartbeat_after(broker_redis, sent_s),
        timeout_s,
        message=f"the worker to run a heartbeat task; its log:\n{tail(log_path)}",
    )
    assert worker.poll() is None, f"the worker exited ({worker.returncode}):\n{tail(log_path)}"


@OUTAGES
@pytest.mark.parametrize("pool", ["solo", "prefork"])
def test_the_worker_survives_a_broker_restart_and_runs_a_task_sent_after_it(
    fault_env, broker_redis, probe_app, tmp_path, down_s, pool
):
    log_path = tmp_path / "worker.log"
    with Supervisor() as supervisor:
        worker = start_worker(supervisor, fault_env, log_path, probe_app, pool=pool)
        run_heartbeat(probe_app, broker_redis, worker, log_path, timeout_s=30)
        hold_a_task_with_a_countdown(probe_app, worker, log_path)

        crash_and_restart(broker_redis, down_s)

        assert worker.poll() is None, f"the worker exited:\n{tail(log_path)}"
        run_heartbeat(probe_app, broker_redis, worker, log_path, timeout_s=AFTER_RESTART_S)
        with probe_app.connection_for_write() as fresh:  # the probe's own pool went stale
            assert probe_app.control.ping(timeout=1, connection=fresh), "no ping after restart"
        assert worker.poll() is None, f"the worker exited:\n{tail(log_path)}"
        assert "Unrecoverable error" not in log_path.read_text(errors="replace")


@OUTAGES
def test_beat_keeps_sending_its_periodic_tasks_after_a_broker_restart(
    fault_env, broker_redis, probe_app, tmp_path, down_s
):
    worker_log = tmp_path / "worker.log"
    beat_log = tmp_path / "beat.log"
    with Supervisor() as supervisor:
        worker = start_worker(supervisor, fault_env, worker_log, probe_app)
        beat = start_beat(supervisor, fault_env, tmp_path)
        # Beat sends the heartbeat (HEARTBEAT_INTERVAL_S = 1 s) and the deadline sweep (1 s).
        started_s = time.time()
        wait_until(
            lambda: beat.poll() is not None or heartbeat_after(broker_redis, started_s),
            30,
            message=f"beat's first heartbeat; beat log:\n{tail(beat_log)}",
        )
        hold_a_task_with_a_countdown(probe_app, worker, worker_log)

        back_s = crash_and_restart(broker_redis, down_s)
        swept_from = len(worker_log.read_bytes())

        def beating_again():
            if beat.poll() is not None or worker.poll() is not None:
                return "exited"
            swept = worker_log.read_bytes()[swept_from:].decode(errors="replace")
            return SWEEP_RECEIVED.search(swept) and heartbeat_after(broker_redis, back_s)

        wait_until(
            beating_again,
            AFTER_RESTART_S,
            message=(
                f"beat's tasks to run after the restart\nbeat log:\n{tail(beat_log)}"
                f"\nworker log:\n{tail(worker_log)}"
            ),
        )
        assert beat.poll() is None, f"beat exited ({beat.returncode}):\n{tail(beat_log)}"
        assert worker.poll() is None, f"the worker exited:\n{tail(worker_log)}"

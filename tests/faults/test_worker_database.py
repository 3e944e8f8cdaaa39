"""The worker keeps its database connection from one task to the next, as the web processes do,
and still recovers when the server ends it.

Celery's Django fixup closes every connection after each task unless told otherwise: with beat's
tasks every second, that was a new PostgreSQL backend (a fork and a login) a few times a second
on a machine whose two cores also serve the matches.
"""

from __future__ import annotations

import uuid

import pytest
from django.db import connection

from scripts.proc import Supervisor
from tests.faults.conftest import start_worker, wait_for_the_task

# Outside a transaction: inside one, PostgreSQL shows the sessions as they were at its start.
pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

TASK = "lobby.tasks.quick_pair"  # beat's, every second; it reads the lobby's queue


@pytest.fixture
def worker_backends(fault_env, probe_app, tmp_path):
    """A real worker whose database sessions carry a name of their own; yields a function
    that runs one task on it and returns the worker's backend pids afterwards."""
    if connection.vendor != "postgresql":
        pytest.skip("the server's view of its sessions: PostgreSQL")
    name = f"worker-{uuid.uuid4().hex[:12]}"
    log_path = tmp_path / "worker.log"
    with Supervisor() as supervisor:
        worker = start_worker(supervisor, {**fault_env, "PGAPPNAME": name}, log_path, probe_app)

        def run_task() -> set[int]:
            wait_for_the_task(worker, log_path, probe_app.send_task(TASK).id, "succeeded")
            return backends_named(name)

        yield run_task


def backends_named(name: str) -> set[int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pid FROM pg_stat_activity WHERE application_name = %s", [name])
        return {pid for (pid,) in cursor.fetchall()}


def test_the_worker_runs_task_after_task_on_one_database_connection(worker_backends):
    first = worker_backends()
    assert len(first) == 1, "the task's connection is kept open after it"
    for _ in range(4):
        assert worker_backends() == first


def test_a_worker_connection_the_server_ended_is_replaced_before_the_next_task(worker_backends):
    (pid,) = worker_backends()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s, 5000)", [pid])
        assert cursor.fetchone()[0]
    replaced = worker_backends()  # succeeded: the task did not fail on the dead connection
    assert len(replaced) == 1 and pid not in replaced

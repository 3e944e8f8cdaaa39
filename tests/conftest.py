"""Fixtures shared by every test layer.

- `free_port`: an unused local TCP port.
- `collected_static` (session, autouse): static files collected once, so pages render.
- `daphne_server` (session): a real Daphne on a free port (`.url`, `.ws_url`), test database,
  configured Redis. Use `transactional_db` in tests whose rows the server must see.
- `celery_worker_process` (session): a real `celery worker --pool=solo` on the configured broker.
- `one_database_thread_in_this_process` (autouse): see realtime/database.py.
- `no_rows_kept_in_this_process` (autouse): sockets served in the test process keep no rows
  (matches/rows.py), whatever imported config.asgi before; tests of kept rows turn it on.
- `private_web_beats` (autouse): the web tier's beats (matches/webbeats.py) that this test
  process reads are its own, so beats of servers from other tests neither vouch for nor count
  against the service in a test that injects its own time.
- `wait_until(predicate, timeout)` lives in tests.support: poll a condition, never sleep blindly.
"""

import os
import uuid
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.signals import setting_changed
from django.dispatch import receiver

from realtime.redis_clients import reset_clients
from scripts.proc import Supervisor
from tests.support import free_port as _free_port
from tests.support.fairness_verifier import verifier_source
from tests.support.servers import server_environment, start_celery_worker, start_daphne, tail


@pytest.fixture
def free_port() -> int:
    return _free_port()


@pytest.fixture
def tiny_redis_pool(settings):
    """Redis pools of one connection that wait 50 ms for it: a test holds it to make the
    pool busy."""
    settings.REDIS_POOL_SIZE, settings.REDIS_POOL_TIMEOUT_MS = 1, 50
    reset_clients()
    yield
    reset_clients()


@receiver(setting_changed)
def forget_redis_clients(setting, **kwargs):
    """A test that points REDIS_URL at a Redis of its own (and kills it) leaves no client behind
    on it: the clients are built again from the URL in force, restored or not."""
    if setting == "REDIS_URL":
        reset_clients()


@pytest.fixture(autouse=True)
def one_database_thread_in_this_process(settings):
    """Sockets served inside the test process make their database calls on one thread, as
    Channels does: a pool thread's persistent connection would hold up pytest-django's reset
    of the database between tests. Servers in subprocesses (Daphne) keep their pool."""
    settings.DB_THREADS = 1


@pytest.fixture(autouse=True)
def no_rows_kept_in_this_process(monkeypatch):
    """Importing config.asgi where Twisted's reactor is loaded (channels.testing loads it)
    makes this process keep rows as a Daphne does: every later test's moves would then take
    another way (matches/services.py ``match_submit_on_loop``) depending on the order tests
    ran in."""
    from matches import rows

    monkeypatch.setattr(rows.recent, "enabled", False)
    rows.recent.clear()


@pytest.fixture(scope="session", autouse=True)
def collected_static():
    """The manifest storage needs collectstatic before any page with {% static %} renders."""
    call_command("collectstatic", "--noinput", verbosity=0)


@pytest.fixture(scope="session")
def server_env(django_db_setup) -> dict[str, str]:
    return server_environment(dict(os.environ))


# The logs of the session's servers, by fixture: a failed test that used one shows its end.
SERVER_LOGS: dict[str, Path] = {}


@pytest.fixture(scope="session")
def daphne_server(server_env, tmp_path_factory):
    log = SERVER_LOGS["daphne_server"] = tmp_path_factory.mktemp("daphne") / "log"
    with Supervisor() as supervisor:
        yield start_daphne(supervisor, server_env, log)


@pytest.fixture(scope="session")
def celery_worker_process(server_env, tmp_path_factory):
    log = SERVER_LOGS["celery_worker_process"] = tmp_path_factory.mktemp("celery") / "log"
    with Supervisor() as supervisor:
        start_celery_worker(supervisor, server_env, log)
        yield supervisor.children["celery-worker"]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A test that failed beside the session's servers shows the end of their logs: what the
    server did meanwhile is often the why (a deadline it fired, a fault it suspected)."""
    report = (yield).get_result()
    if report.when != "call" or not report.failed:
        return
    for fixture, log in SERVER_LOGS.items():
        if fixture in item.fixturenames:
            report.sections.append((f"{fixture}: the end of its log ({log})", tail(log, 80)))


def _private_beats_key() -> str:
    return f"sbo:web:beats:test-{uuid.uuid4().hex}"


@pytest.fixture(scope="session", autouse=True)
def private_web_beats_for_the_session():
    """Fixtures wider than one test (the API's world of matches) read private beats too: the
    real key may hold beats of servers long gone, which would say the web tier is down."""
    from matches import webbeats

    real, webbeats.BEATS_KEY = webbeats.BEATS_KEY, _private_beats_key()
    yield
    webbeats.BEATS_KEY = real


@pytest.fixture(autouse=True)
def private_web_beats(monkeypatch):
    from matches import webbeats
    from realtime.redis_clients import sync_redis

    key = _private_beats_key()
    monkeypatch.setattr(webbeats, "BEATS_KEY", key)
    yield key
    try:
        sync_redis().delete(key)
    except Exception:  # a test that pointed REDIS_URL at a Redis that is gone
        pass


@pytest.fixture(scope="module")
def verifier(tmp_path_factory):
    """docs/fairness.md's standalone verifier, copied into a file of its own (``verify.py``)."""
    path = tmp_path_factory.mktemp("verifier") / "verify.py"
    path.write_text(verifier_source(), encoding="utf-8")
    return path

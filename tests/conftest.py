"""Fixtures shared by every test layer.

- `free_port`: an unused local TCP port.
- `collected_static` (session, autouse): static files collected once, so pages render.
- `daphne_server` (session): a real Daphne on a free port (`.url`, `.ws_url`), test database,
  configured Redis. Use `transactional_db` in tests whose rows the server must see.
- `celery_worker_process` (session): a real `celery worker --pool=solo` on the configured broker.
- `wait_until(predicate, timeout)` lives in tests.support: poll a condition, never sleep blindly.
"""

import os

import pytest
from django.core.management import call_command

from scripts.proc import Supervisor
from tests.support import free_port as _free_port
from tests.support.servers import server_environment, start_celery_worker, start_daphne


@pytest.fixture
def free_port() -> int:
    return _free_port()


@pytest.fixture(scope="session", autouse=True)
def collected_static():
    """The manifest storage needs collectstatic before any page with {% static %} renders."""
    call_command("collectstatic", "--noinput", verbosity=0)


@pytest.fixture(scope="session")
def server_env(django_db_setup) -> dict[str, str]:
    return server_environment(dict(os.environ))


@pytest.fixture(scope="session")
def daphne_server(server_env, tmp_path_factory):
    with Supervisor() as supervisor:
        yield start_daphne(supervisor, server_env, tmp_path_factory.mktemp("daphne") / "log")


@pytest.fixture(scope="session")
def celery_worker_process(server_env, tmp_path_factory):
    with Supervisor() as supervisor:
        start_celery_worker(supervisor, server_env, tmp_path_factory.mktemp("celery") / "log")
        yield supervisor.children["celery-worker"]

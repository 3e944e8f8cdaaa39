"""Real servers for end-to-end tests: Daphne and a Celery worker in subprocesses.

They use the test database (the one pytest-django created) and the configured Redis, so tests
that need the server to see their rows must use `transactional_db`.
"""

from __future__ import annotations

import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

from django.conf import settings
from django.db import connection

from scripts.proc import Supervisor, accepts_connections, daphne_command, free_port, wait_until

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable


def database_url(settings_dict: dict) -> str:
    """A DATABASE_URL naming the database that `settings_dict` points at."""
    engine = settings_dict["ENGINE"]
    if engine == "django.db.backends.sqlite3":
        return f"sqlite:///{Path(settings_dict['NAME']).resolve()}"
    if engine == "django.db.backends.postgresql":
        user = quote(settings_dict.get("USER") or "", safe="")
        password = quote(settings_dict.get("PASSWORD") or "", safe="")
        auth = f"{user}:{password}@" if password else (f"{user}@" if user else "")
        port = f":{settings_dict['PORT']}" if settings_dict.get("PORT") else ""
        host = settings_dict.get("HOST") or "localhost"
        return f"postgres://{auth}{host}{port}/{quote(settings_dict['NAME'], safe='')}"
    raise ValueError(f"no URL form known for {engine}")


def redis_url_with_db(url: str, db: int) -> str:
    """The same Redis server, another numbered database (to keep a test's keys and queues apart)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, f"/{db}", parts.query, parts.fragment))


def server_environment(base: dict[str, str], **overrides: str) -> dict[str, str]:
    """The environment for a server subprocess: the test database and the configured Redis."""
    return {
        **base,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": database_url(connection.settings_dict),
        "REDIS_URL": settings.REDIS_URL,
        "SECRET_KEY": settings.SECRET_KEY,
        "PYTHONUNBUFFERED": "1",
        **overrides,
    }


def http_get(url: str, timeout_s: float = 5) -> tuple[int, bytes]:
    """(status, body) of a GET, including error statuses."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def tail(path: Path, lines: int = 60) -> str:
    """The end of a child's log, for a failure message."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return "(no log)"


@dataclass
class DaphneServer:
    host: str
    port: int

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://{self.host}:{self.port}"


def start_daphne(
    supervisor: Supervisor,
    env: dict[str, str],
    log_path: Path,
    *,
    name: str = "daphne",
    behind_proxy: bool = False,
) -> DaphneServer:
    server = DaphneServer("127.0.0.1", free_port())
    with open(log_path, "ab") as log:
        process = supervisor.start(
            name,
            daphne_command(server.host, server.port, PYTHON, behind_proxy=behind_proxy),
            env=env,
            cwd=ROOT,
            stdout=log,
        )  # fmt: skip
    wait_until(
        lambda: process.poll() is not None or accepts_connections(server.host, server.port),
        30,
        message="Daphne to listen",
    )
    assert process.poll() is None, f"Daphne exited; see {log_path}"
    return server


def start_celery_worker(supervisor: Supervisor, env: dict[str, str], log_path: Path) -> None:
    """A real worker (solo pool) on the configured broker; returns once it answers a ping."""
    from config.celery import app

    with open(log_path, "ab") as log:
        process = supervisor.start(
            "celery-worker",
            [PYTHON, "-m", "celery", "-A", "config", "worker", "--pool=solo",
             "--loglevel=INFO", "--hostname", f"test-{free_port()}@%h"],
            env=env,
            cwd=ROOT,
            stdout=log,
        )  # fmt: skip
    wait_until(
        lambda: process.poll() is not None or app.control.ping(timeout=0.5),
        60,
        message="the Celery worker to answer a ping",
    )
    assert process.poll() is None, f"the Celery worker exited; see {log_path}"

"""What the in-process benchmarks share: Django set up on a database of the run's own beside a
Redis started for it. (Their percentile is the engine's, ``engine.tournament.percentile``.)"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def configure(run_dir: Path, redis_url: str) -> str:
    """Django on a database (SQLite in ``run_dir`` unless DATABASE_URL says) and ``redis_url``;
    returns which database."""
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{run_dir / 'bench.sqlite3'}")
    os.environ["REDIS_URL"] = redis_url
    os.environ.setdefault("SECRET_KEY", "bench-only")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    return "postgresql" if "postgres" in os.environ["DATABASE_URL"] else "sqlite"


@contextmanager
def django_for_run(prefix: str) -> Iterator[str]:
    """Django configured (``configure``) in a temporary directory named ``prefix``..., with a
    local Redis that stops when the block ends; yields which database."""
    from scripts.localredis import start_local_redis
    from scripts.proc import Supervisor

    with tempfile.TemporaryDirectory(prefix=prefix) as run_dir, Supervisor() as supervisor:
        yield configure(Path(run_dir), start_local_redis(supervisor, Path(run_dir)))


def run_async(prefix: str, measure) -> dict:
    """``measure()``, a coroutine function, on an event loop of its own, in ``django_for_run``."""
    with django_for_run(prefix):
        return asyncio.run(measure())

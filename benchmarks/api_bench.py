"""The REST API's latency with 10,000 players and 100,000 finished matches in PostgreSQL.

Builds (once; kept while its row counts are right) the database ``bench_api`` on
``BENCH_PG`` (postgres://postgres@127.0.0.1:5432): users bulk-inserted, matches COPYed from a
pool of simulated records (engine.simulate) with ids and usernames rewritten. Then measures,
in-process through ``django.test.Client`` (the whole Django + DRF stack, no network), p50/p99 of
the leaderboard page, a player's match list, the archive's first page and one match record,
interleaved with a bare DRF endpoint that returns a constant (the floor of the stack).
"""

from __future__ import annotations

import json
import os
import random
import statistics
import time
import uuid
from datetime import UTC, datetime, timedelta

from engine.tournament import percentile

PG = os.environ.get("BENCH_PG", "postgres://postgres@127.0.0.1:5432")
DB_NAME = "bench_api"
PLAYERS = int(os.environ.get("BENCH_PLAYERS", 10_000))
MATCHES = int(os.environ.get("BENCH_MATCHES", 100_000))
POOL = 300  # distinct simulated records, reused with new ids and players
REQUESTS = int(os.environ.get("BENCH_REQUESTS", 400))  # per endpoint, after WARMUP
WARMUP = 30
TARGET_P99_MS = 50.0
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


def _configure() -> None:
    os.environ["DATABASE_URL"] = f"{PG}/{DB_NAME}"
    os.environ.setdefault("SECRET_KEY", "bench-only")
    os.environ["DEBUG"] = "0"
    os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/6")
    for scope in ("ANON", "USER"):  # one client makes every request: lift the throttles
        os.environ[f"API_THROTTLE_{scope}"] = "100000000/min"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()


def _ensure_database() -> None:
    import psycopg

    with psycopg.connect(f"{PG}/postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [DB_NAME]).fetchone():
            conn.execute(f'CREATE DATABASE "{DB_NAME}"')


def _drop_database() -> None:
    import psycopg
    from django.db import connections

    connections.close_all()
    with psycopg.connect(f"{PG}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{DB_NAME}"')


def _counts() -> tuple[int, int]:
    from django.contrib.auth import get_user_model

    from matches.models import Match

    return get_user_model().objects.count(), Match.objects.filter(status="finished").count()


def _load() -> dict:
    """Insert the players and the matches; returns how long each part took."""
    from django.contrib.auth import get_user_model
    from django.db import connection

    from engine.simulate import simulate
    from matches.models import Match

    rng = random.Random(7)
    started = time.perf_counter()
    now = datetime.now(UTC)
    User = get_user_model()
    users = []
    for n in range(PLAYERS):
        games = rng.randint(0, 60)
        wins = rng.randint(0, games)
        users.append(User(
            username=f"player{n:05d}", password="!", rating=int(rng.gauss(1500, 150)),
            rated_games=games, rated_wins=wins, rated_losses=games - wins,
            on_ladder=rng.random() < 0.9,
            last_rated_at=now - timedelta(days=rng.randint(0, 40)) if games else None,
        ))  # fmt: skip
    User.objects.bulk_create(users, batch_size=2_000)
    ids = list(User.objects.order_by("pk").values_list("pk", flat=True))
    users_s = time.perf_counter() - started

    pool = []
    for record in simulate(POOL, "bench", ("greedy", "greedy")):
        last_seq = max(e["seq"] for r in record["rounds"] for e in r["events"])
        pool.append((json.dumps(record["rounds"], separators=(",", ":")), record, last_seq))
    columns = (
        "id", "mode", "rated", "status", "created_at", "finished_at", "player0_id", "player1_id",
        "header", "seq", "secret_seed", "deadline_kind", "cseq0", "cseq1", "winner", "reason",
        "rating_before0", "rating_before1", "rating_after0", "rating_after1",
        "balances", "round_count",
    )  # fmt: skip
    table = Match._meta.db_table
    with connection.cursor() as cursor:
        raw = cursor.connection  # psycopg: COPY is several times faster than INSERT here
        with raw.cursor() as pg, pg.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
            for n in range(MATCHES):
                rounds_json, record, last_seq = pool[n % POOL]
                p0, p1 = rng.sample(range(PLAYERS), 2)
                match_id = uuid.UUID(int=rng.getrandbits(128), version=4)
                created = EPOCH + timedelta(minutes=5 * n)
                finished = created + timedelta(minutes=rng.randint(5, 60))
                r0, r1 = rng.randint(1200, 1800), rng.randint(1200, 1800)
                winner = record["result"]["winner"]
                head = {
                    "id": str(match_id), "mode": "online", "rated": True, "status": "finished",
                    "created_at": created.isoformat().replace("+00:00", "Z"),
                    "clock": record["clock"],
                    "players": [{"seat": 0, "username": f"player{p0:05d}"},
                                {"seat": 1, "username": f"player{p1:05d}"}],
                    "result": record["result"], "balances": record["balances"],
                }  # fmt: skip
                text = (
                    json.dumps(head, separators=(",", ":"))[:-1] + ',"rounds":' + rounds_json + "}"
                )
                delta = 10 if winner == 0 else -10
                copy.write_row((
                    match_id, "online", True, "finished", created, finished, ids[p0], ids[p1], text,
                    last_seq, "", "", 0, 0, winner, record["result"]["reason"],
                    r0, r1, r0 + delta, r1 - delta,
                    json.dumps(record["balances"]), len(record["rounds"]),
                ))  # fmt: skip
        cursor.execute(f"ANALYZE {table}")
        cursor.execute(f"ANALYZE {User._meta.db_table}")
    return {"users_s": round(users_s, 1), "total_s": round(time.perf_counter() - started, 1)}


def _measure() -> dict:
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.test.utils import override_settings

    from matches.models import Match

    rng = random.Random(11)
    usernames = list(
        get_user_model().objects.values_list("username", flat=True)[:: max(1, PLAYERS // 500)]
    )
    match_ids = [str(pk) for pk in Match.objects.order_by("?").values_list("pk", flat=True)[:500]]
    from accounts.selectors import leaderboard

    pages = max(1, leaderboard().count() // 50)
    endpoints = {
        "constant": lambda: "/bench/constant/",
        "leaderboard": lambda: f"/api/leaderboard/?page={rng.randint(1, pages)}",
        "player_matches": lambda: f"/api/players/{rng.choice(usernames)}/matches/",
        "archive_first_page": lambda: "/api/matches/",
        "match_record": lambda: f"/api/matches/{rng.choice(match_ids)}/",
    }
    samples = {name: [] for name in endpoints}
    sizes = {name: [] for name in endpoints}
    client = Client(HTTP_HOST="localhost")
    with override_settings(ROOT_URLCONF="benchmarks.api_bench_urls"):
        for i in range(WARMUP + REQUESTS):
            for name, url in endpoints.items():  # interleaved: every endpoint sees the same load
                path = url()
                t0 = time.perf_counter()
                response = client.get(path)
                content = response.content
                elapsed = (time.perf_counter() - t0) * 1000
                assert response.status_code == 200, (path, response.status_code, content[:200])
                if i >= WARMUP:
                    samples[name].append(elapsed)
                    sizes[name].append(len(content))
    floor = samples["constant"]
    result = {}
    for name, times in samples.items():
        p50, p99 = percentile(times, 0.50), percentile(times, 0.99)
        result[name] = {
            "p50_ms": round(p50, 2), "p99_ms": round(p99, 2),
            "mean_ms": round(statistics.fmean(times), 2),
            "p50_ratio_to_constant": round(p50 / percentile(floor, 0.50), 1),
            "p99_ratio_to_constant": round(p99 / percentile(floor, 0.99), 1),
            "mean_bytes": round(statistics.fmean(sizes[name])),
            "p99_under_target": p99 < TARGET_P99_MS,
        }  # fmt: skip
    return result


def run() -> dict:
    _configure()
    from django.core.management import call_command

    _ensure_database()
    call_command("migrate", verbosity=0)
    loaded = None
    if _counts() != (PLAYERS, MATCHES):
        _drop_database()
        call_command("migrate", verbosity=0)
        loaded = _load()
    return {
        "benchmark": "api",
        "method": "in-process django.test.Client (full Django + DRF stack, no network), "
        "PostgreSQL, requests interleaved across endpoints",
        "players": PLAYERS,
        "finished_matches": MATCHES,
        "requests_per_endpoint": REQUESTS,
        "target_p99_ms": TARGET_P99_MS,
        "loaded": loaded or "kept (row counts matched)",
        "endpoints": _measure(),
    }


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))

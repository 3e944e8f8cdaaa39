"""``make bench-live``: live matches at a human pace against the whole stack, beside two echoes.

    make bench-live ARGS="--matches 10,500,1000 --seconds 120"

It starts the stack itself, as `make run` does (scripts/devserver.py): a fresh local Redis, N
web processes (Daphne, one per core by default) behind HAProxy, a Celery worker and beat, on
PostgreSQL when DATABASE_URL is set (in a fresh database beside the one it names; else a fresh
SQLite file). For each size M it creates M matches and plays them with bot clients
(clients/match_client.py) in separate processes: each decision 2-4 s after the player's turn
came, a ping every 5 s, contributions to each deal at once. A share of the matches
(``--forfeits``) has one player fall silent at a random moment, so their clocks run out and
the forfeits are timed. Nothing is counted during the first ``--warmup`` seconds: every match
contributes and presses Start at once then, and their first rounds end together 40-50 s later
(at 1,000 matches that wave doubled the broadcast p99 of a window that began 15 s in).
Throughout, two probes measure the floor: (a) ``ws/echo/`` through the channel layer on the
same web processes, (b) a bare ASGI echo on a Daphne of its own. It writes
benchmarks/results/live.json (each run: ``matches``, ``ack_ms``, ``broadcast_ms``,
``echo_layer_ms``, ``echo_bare_ms``, ``forfeit_late_ms``, ``cpu``, ``errors``; also
``ack_ms_by_kind``, each command's acks, and ``machine_cpu``, how busy the whole machine was
and how much of its time a shared host gave to other guests) and, with
``--docs``, docs/benchmarks.md with its plots.

Why not locust: a session here is two long-lived WebSockets taking turns on one match, with the
server's state deciding who sends what; the project's own client plays it exactly, and these
processes are the load generator (locust would wrap the same client for no gain).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import multiprocessing
import os
import random
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import urlsplit

from benchmarks import profiles
from config.env import PUBSUB_SHARDS
from engine.tournament import percentile
from realtime.collector import settle_after_startup

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "live.json"
PACE_S = (2.0, 4.0)
PING_S = 5.0
ECHO_TIMEOUT_S = 10.0
CONNECT_BATCH = 100  # sockets opened at once while a run ramps up
GO_TIMEOUT_S = 300  # for every bot process to open its sockets
FORFEIT_CLOCK = {"bank_ms": 5_000, "delay_ms": 5_000}  # a silent player loses within 10 s


@dataclass(frozen=True)
class Seat:
    match_id: str
    seat: int
    session: str
    silent_after_s: float | None  # this player stops deciding then (a forfeit to time)


# --- the bot processes -------------------------------------------------------------------------


def percentiles(samples: list[float]) -> dict:
    if not samples:
        return {"p50": None, "p99": None, "n": 0}
    return {
        "p50": round(percentile(samples, 0.50), 2),
        "p99": round(percentile(samples, 0.99), 2),
        "n": len(samples),
    }


def by_second(timed: list[tuple[float, float]]) -> list[dict]:
    """Each second of the measured window: how many samples, their p50 and their max (a stall
    of the whole site shows as a second whose p50 jumps, one slow command as a max)."""
    if not timed:
        return []
    start, seconds = min(at for at, _ in timed), defaultdict(list)
    for at, ms in timed:
        seconds[int(at - start)].append(ms)
    return [
        {"s": second, **percentiles(samples), "max": round(max(samples), 2)}
        for second, samples in sorted(seconds.items())
    ]


def wall_ms() -> float:
    return time.time() * 1000


def bot_process(seats: list[dict], url: str, window: tuple, seed: int, out: str, ready, go) -> None:
    """Connect ``seats`` (then set ``ready``), and once every bot process is connected (``go``)
    play them for the ``window`` of (warm-up, measured) seconds; write what was measured after
    the warm-up to ``out``."""
    import uvloop  # the bots share the CPU with the stack they measure: theirs should be small

    uvloop.run(_play_all([Seat(**seat) for seat in seats], url, window, seed, out, ready, go))


async def _play_all(seats: list[Seat], url: str, window: tuple, seed: int, out: str, ready, go):
    from clients.match_client import MatchClient

    stats = Stats()

    class TimedClient(MatchClient):
        """Times each event made by the other seat (or the server) from its stamp to here."""

        watching_forfeits = None  # the silent seat's own client times its forfeit

        async def _on_state(self, message: dict) -> None:
            now = wall_ms()
            for event in message["events"]:
                if event["seq"] <= self.seq:
                    continue
                if event["type"] in ("timeout", "abandon"):
                    if self.watching_forfeits is not None and self.seat == self.watching_forfeits:
                        stats.forfeit(now - event["at_ms"])
                elif self.seat is not None and event.get("seat") not in (None, self.seat):
                    stats.sample("broadcast", now - event["at_ms"])
            await super()._on_state(message)

        async def send(self, message: dict) -> None:
            if message.get("type") == "sync":
                stats.resync()
            await super().send(message)

    clients = []
    for start in range(0, len(seats), CONNECT_BATCH):
        batch = seats[start : start + CONNECT_BATCH]
        opened = await asyncio.gather(
            *(TimedClient.connect(url, s.match_id, sessionid=s.session) for s in batch),
            return_exceptions=True,
        )
        for seat, client in zip(batch, opened, strict=True):
            if isinstance(client, BaseException):
                stats.errors[f"connect: {type(client).__name__}"] += 1
                continue
            if seat.silent_after_s is not None:
                client.watching_forfeits = seat.seat
            clients.append((seat, client))
    # The bots are the instrument: while a collection runs, a bot reads no reply, and that wait
    # would be timed as the server's. Their clients keep every message they are sent, so each
    # collection walks more (young ones took up to 0.9 s at 1,000 matches). Cycles wait for the
    # end of the run instead; the rest is freed as it dies, as always.
    gc.freeze()
    gc.disable()
    ready.set()
    rng = random.Random(seed)
    loop = asyncio.get_running_loop()
    end = await open_window(stats, go, window)
    await asyncio.gather(*(_play_seat(s, c, rng, loop, end, stats) for s, c in clients))
    Path(out).write_text(json.dumps(stats.as_dict()))


async def open_window(stats: Stats, go, window: tuple) -> float:
    """Wait for ``go`` (set once every bot process is connected), then open the measured window
    of (warm-up, measured) seconds; returns its end, in loop time. One signal for every process:
    a window timed from each process's own readiness ended seconds apart, and the matches that
    the early processes resigned at their end were measured as broadcasts by the late ones."""
    if not await asyncio.to_thread(go.wait, GO_TIMEOUT_S):
        raise TimeoutError(f"the other bot processes were not connected in {GO_TIMEOUT_S} s")
    warmup, seconds = window
    stats.measure_from = asyncio.get_running_loop().time() + warmup
    stats.measure_until = stats.measure_from + seconds
    return stats.measure_until


class Stats:
    """What the bots of one process measured between the end of the warm-up and the end of
    the run: neither the first seconds, when every match contributes and presses Start at
    once, nor the last, when every match still live resigns at once, are a steady state."""

    def __init__(self):
        self.samples = {"ack": [], "ack_at": [], "broadcast": [], "forfeit": []}
        self.ack_by_kind: dict[str, list[float]] = {}
        self.early = self.n = self.resyncs = 0
        self.errors = Counter()
        self.measure_from = self.measure_until = float("inf")

    def measuring(self) -> bool:
        return self.measure_from <= asyncio.get_running_loop().time() < self.measure_until

    def sample(self, kind: str, ms: float) -> None:
        if self.measuring():
            self.samples[kind].append(ms)

    def forfeit(self, late_ms: float) -> None:
        if self.measuring():
            self.samples["forfeit"].append(late_ms)
            self.early += late_ms < 0

    def resync(self) -> None:
        if self.measuring():
            self.resyncs += 1

    def command(self, kind: str, reply: dict, ms: float) -> None:
        if not self.measuring():
            return
        self.n += 1
        if reply["type"] == "ack":
            self.samples["ack"].append(ms)
            self.samples["ack_at"].append((time.time(), ms))
            self.ack_by_kind.setdefault(kind, []).append(ms)
        else:
            self.errors[reply["code"]] += 1

    def as_dict(self) -> dict:
        return {
            **self.samples, "early": self.early, "n": self.n, "resyncs": self.resyncs,
            "errors": dict(self.errors), "ack_by_kind": self.ack_by_kind,
        }  # fmt: skip


async def _play_seat(seat: Seat, client, rng, loop, end, stats) -> None:
    pinger = asyncio.create_task(_ping(client, first_after_s=rng.uniform(0, PING_S)))
    silent_at = None if seat.silent_after_s is None else loop.time() + seat.silent_after_s
    acted_at, applied_at = None, 0  # the state this seat acted on; the seq its last ack named
    try:
        await client.wait_for(lambda c: c.state is not None, 30)
        while loop.time() < end and not client.over:
            seen = (acted_at, applied_at)
            try:
                await client.wait_for(
                    # A state from before this seat's own last command is no turn, even if it
                    # arrives after the ack (the opponent's contribution, say).
                    lambda c, seen=seen: (
                        c.over
                        or (c.my_turn() and c.state["seq"] != seen[0] and c.state["seq"] >= seen[1])
                    ),
                    max(0.1, end - loop.time()),
                )
            except TimeoutError:
                break
            if client.over or (silent_at is not None and loop.time() >= silent_at):
                await _until(client, loop, end)  # silent: the clock runs out
                break
            acted_at = client.state["seq"]
            if not client.contribution_due:  # a person's thinking time; a deal's is the browser's
                await asyncio.sleep(rng.uniform(*PACE_S))
                if client.over or loop.time() >= end:
                    break
            command = client.next_command("greedy", rng)
            started = time.perf_counter()
            reply = await client.command(command, timeout=30)
            stats.command(command["type"], reply, (time.perf_counter() - started) * 1000)
            if reply["type"] == "ack":
                applied_at = reply["seq"]
            else:
                acted_at = None
                await asyncio.sleep(0.2)
    except Exception as exc:  # noqa: BLE001 - counted, reported in the results
        stats.errors[type(exc).__name__] += 1
    finally:
        pinger.cancel()
        if not client.over:
            await client.send({"type": "resign"})  # leave nothing live for the next run
        await client.close()


async def _until(client, loop, end) -> None:
    try:
        await client.wait_for(lambda c: c.over, max(0.1, end - loop.time()))
    except TimeoutError:
        pass


async def _ping(client, first_after_s: float, every_s: float = PING_S) -> None:
    """Every ``every_s``, from a moment of its own: people's browsers connect at different
    moments, so their pings are not in step (with every bot pinging at once, the runs measured
    that burst every 5 s instead)."""
    await asyncio.sleep(first_after_s)
    while True:
        await client.send({"type": "ping", "t": wall_ms()})
        await asyncio.sleep(every_s)


# --- the echo probes ---------------------------------------------------------------------------


async def echo_probe(ws_url: str, seconds: float, period_s: float = 0.2) -> dict:
    """Round trips of small frames, one every ``period_s``: their times, how many were lost (no
    answer within ECHO_TIMEOUT_S; a late answer is told from the next by its ``t``) and how
    many times the socket could not be opened or was dropped (an overloaded site's load
    balancer answers 503 once its health checks time out); it connects again until the end."""
    import websockets

    figures = {"samples": [], "lost": 0, "refused": 0}
    origin = ws_url.replace("ws://", "http://").split("/ws/")[0]
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds
    while loop.time() < end:
        try:
            async with websockets.connect(ws_url, origin=origin) as ws:
                await _echo_until(ws, end, period_s, figures)
        except (OSError, TimeoutError, websockets.InvalidHandshake, websockets.ConnectionClosed):
            figures["refused"] += 1
            await asyncio.sleep(period_s)
    return figures


async def _echo_until(ws, end: float, period_s: float, figures: dict) -> None:
    """Echo on ``ws`` until the loop's time ``end``, counting into ``figures`` as it goes (a
    socket dropped halfway keeps what it measured)."""
    while asyncio.get_running_loop().time() < end:
        started = time.perf_counter()
        await ws.send(json.dumps({"type": "echo", "t": started}))
        try:
            await asyncio.wait_for(_echo_of(ws, started), ECHO_TIMEOUT_S)
            figures["samples"].append((time.perf_counter() - started) * 1000)
        except TimeoutError:
            figures["lost"] += 1
        await asyncio.sleep(period_s)


async def _echo_of(ws, sent_t: float) -> None:
    while True:
        reply = json.loads(await ws.recv())
        if reply.get("body", reply).get("t") == sent_t:  # (the layer's echo wraps the frame)
            return


# --- the stack ---------------------------------------------------------------------------------


class Stack:
    """The processes of `make run` (and a bare echo), started for the benchmark."""

    def __init__(self, run_dir: Path, *, web: int, layer: str, shards: int):
        from scripts.devserver import prepare_environment
        from scripts.proc import Supervisor, free_port

        self.run_dir = run_dir
        self.supervisor = Supervisor(log=lambda message: print(f"[stack] {message}", flush=True))
        self.supervisor.__enter__()
        os.environ.pop("REDIS_URL", None)  # always a fresh Redis of the benchmark's own
        env = prepare_environment(self.supervisor, run_dir)
        env.update(
            WEB_PROCESSES=str(web),
            CHANNEL_LAYER=layer,
            CHANNEL_LAYER_SHARDS=str(shards),
            # Every bot connects from 127.0.0.1: the per-address cap is for the internet.
            WS_MAX_CONNECTIONS_PER_ADDRESS="1000000",
            DATABASE_URL=os.environ.get("DATABASE_URL") or f"sqlite:///{run_dir / 'bench.sqlite3'}",
            LOG_LEVEL="WARNING",
            # The bots connect after their matches are made: no stand-in while they do.
            DEAL_CONTRIBUTION_MS="120000",
        )
        self.env = env
        self.port = free_port()
        self.bare_port = free_port()

    def start(self) -> None:
        from scripts.devserver import manage, start_children
        from scripts.proc import daphne_command, wait_until

        manage(self.env, "migrate", "--noinput", "--verbosity", "0")
        args = argparse.Namespace(host="127.0.0.1", port=self.port)
        with children_output(self.run_dir / "stack.log"):
            start_children(self.supervisor, self.env, args, self.run_dir)
            bare = daphne_command("127.0.0.1", self.bare_port, sys.executable)
            bare[-1] = "benchmarks.bare_echo:application"
            self.supervisor.start("bare-echo", bare, env=self.env, cwd=ROOT)
        wait_until(lambda: healthy(f"{self.url}/healthz"), 60, message="the site")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def pids(self) -> dict[str, int]:
        return {name: process.pid for name, process in self.supervisor.children.items()}

    def stop(self) -> None:
        self.supervisor.__exit__(None, None, None)


@contextlib.contextmanager
def children_output(path: Path):
    """Processes started inside write to ``path`` (Daphne logs every request), not to ours."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(path, "ab") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
    try:
        yield
    finally:
        for fd, copy in zip((1, 2), saved, strict=True):
            os.dup2(copy, fd)
            os.close(copy)


def healthy(url: str) -> bool:
    import urllib.request

    with urllib.request.urlopen(url, timeout=5) as response:
        return response.status == 200


def fresh_postgres_database(url: str) -> str:
    """A new, empty database beside the one ``url`` names (``<name>_bench_live``, dropped first
    if an earlier run left it): each run starts from nothing, and the database the URL names
    is never touched. Returns its URL."""
    from urllib.parse import urlsplit, urlunsplit

    import psycopg

    parts = urlsplit(url)
    name = f"{parts.path.lstrip('/') or 'postgres'}_bench_live"
    with psycopg.connect(urlunsplit(parts._replace(path="/postgres")), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    return urlunsplit(parts._replace(path=f"/{name}"))


def cpu_seconds(pids: dict[str, int]) -> dict[str, float]:
    """CPU time (user + system) of each process and its children so far."""
    import psutil

    used = {}
    for name, pid in pids.items():
        try:
            process = psutil.Process(pid)
            family = [process, *process.children(recursive=True)]
            used[name] = sum(p.cpu_times().user + p.cpu_times().system for p in family)
        except psutil.NoSuchProcess:
            used[name] = 0.0
    return used


def machine_times():
    import psutil

    return psutil.cpu_times()


def machine_shares(before, after) -> dict[str, float]:
    """How much of the machine's time (all cores: 100 is every core busy) went to work, and how
    much its hypervisor gave to other guests (steal), between two ``psutil.cpu_times()``. On a
    shared host, a run with a higher steal was measured on a slower machine."""
    spent = {field: getattr(after, field) - getattr(before, field) for field in after._fields}
    total = sum(spent.values()) or 1.0
    idle = spent["idle"] + spent.get("iowait", 0.0)
    return {
        "busy": round(100 * (total - idle - spent.get("steal", 0.0)) / total, 1),
        "steal": round(100 * spent.get("steal", 0.0) / total, 1),
    }


def local_postgres() -> int | None:
    """The postmaster of the PostgreSQL on this machine that the run uses, if it does: its
    backends are its children, so its CPU counts beside the stack's."""
    import psutil

    host = urlsplit(os.environ.get("DATABASE_URL") or "").hostname
    if host not in ("127.0.0.1", "localhost", "::1"):
        return None
    for process in psutil.process_iter(["name", "ppid"]):
        try:
            if (
                process.info["name"] == "postgres"
                and psutil.Process(process.info["ppid"]).name() != "postgres"
            ):
                return process.pid
        except psutil.Error:
            continue
    return None


# --- one run -----------------------------------------------------------------------------------


def setup_django(env: dict[str, str]) -> None:
    os.environ.update(
        {
            k: env[k]
            for k in (
                "DATABASE_URL",
                "REDIS_URL",
                "SECRET_KEY",
                "CHANNEL_LAYER",
                "CHANNEL_LAYER_SHARDS",
                "DEAL_CONTRIBUTION_MS",  # the matches are dealt here, with the stack's timing
            )
        }
    )
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()


def create_matches(count: int, forfeit_share: float, window: tuple, run: int, rng) -> list:
    """``count`` matches between fresh users, each player with a session; their seats."""
    from django.conf import settings
    from django.contrib.auth import (
        BACKEND_SESSION_KEY,
        HASH_SESSION_KEY,
        SESSION_KEY,
        get_user_model,
    )
    from django.utils.module_loading import import_string

    import engine
    from matches import services, timekeeping

    warmup, seconds = window
    User = get_user_model()
    users = []
    for n in range(2 * count):
        user = User(username=f"bench{run}x{n}")
        user.set_unusable_password()  # no password hashing: 2,000 users in a second
        users.append(user)
    User.objects.bulk_create(users)
    users = list(User.objects.filter(username__startswith=f"bench{run}x").order_by("pk"))
    store = import_string(f"{settings.SESSION_ENGINE}.SessionStore")
    sessions = {}
    for user in users:
        session = store()
        session[SESSION_KEY] = str(user.pk)
        session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
        session[HASH_SESSION_KEY] = user.get_session_auth_hash()
        session.create()
        sessions[user.pk] = session.session_key
    seats = []
    for n in range(count):
        player0, player1 = users[2 * n], users[2 * n + 1]
        forfeit = rng.random() < forfeit_share
        clock = engine.ClockConfig(**FORFEIT_CLOCK) if forfeit else None
        match = services.match_create(
            player0=player0, player1=player1, now_ms=timekeeping.now_ms(), clock=clock
        )
        silent_seat = rng.randrange(2) if forfeit else None
        for seat, player in enumerate((player0, player1)):
            silent_at = rng.uniform(warmup, warmup + max(1, seconds - 15))
            silent = silent_at if seat == silent_seat else None
            seats.append(Seat(str(match.pk), seat, sessions[player.pk], silent))
    return seats


def one_run(stack: Stack, matches: int, args, run: int) -> dict:
    rng = random.Random(args.seed + run)
    window = (args.warmup, args.seconds)
    seats = create_matches(matches, args.forfeits, window, run, rng)
    shares = [seats[n :: args.bots] for n in range(args.bots)]
    outputs = [Path(stack.run_dir) / f"bots-{run}-{n}.json" for n in range(args.bots)]
    context = multiprocessing.get_context("spawn")
    readies = [context.Event() for _ in shares]
    go = context.Event()
    bots = [
        context.Process(
            target=bot_process,
            args=(
                [asdict(s) for s in share],
                stack.url,
                window,
                args.seed + n,
                str(out),
                readies[n],
                go,
            ),
        )  # fmt: skip
        for n, (share, out) in enumerate(zip(shares, outputs, strict=True))
    ]
    for bot in bots:
        bot.start()
    for ready in readies:  # every socket open: the warm-up starts, then the measured window
        ready.wait(timeout=GO_TIMEOUT_S)
    # The probes' own process, before the window: its collection of what setting up made took
    # 130-200 ms of a core, which fell on the window's first second when made there.
    settle_after_startup()
    go.set()
    time.sleep(args.warmup)
    pids = {**stack.pids(), **{f"bots-{n}": bot.pid for n, bot in enumerate(bots)}}
    if (postmaster := local_postgres()) is not None:
        pids["postgresql"] = postmaster
    raw_profile = Path(stack.run_dir) / f"profile-{run}.txt"
    sampler = None
    if args.profile_seconds:  # where the first web process spends its time meanwhile
        web = pids.get("daphne-1") or pids["daphne"]
        sampler = profiles.record(
            web, min(args.profile_seconds, int(args.seconds) - 5), raw_profile
        )
    before, started = cpu_seconds(pids), time.monotonic()
    machine_before = machine_times()
    ws = stack.url.replace("http://", "ws://")
    probe_s = max(5.0, args.seconds - 5)
    bare_url = f"ws://127.0.0.1:{stack.bare_port}/"
    layer, bare = asyncio.run(_probes(f"{ws}/ws/echo/", bare_url, probe_s))
    after, elapsed = cpu_seconds(pids), time.monotonic() - started
    machine = machine_shares(machine_before, machine_times())
    for bot in bots:
        bot.join(timeout=args.seconds + 120)  # (the warm-up is over)
    merged = {
        "ack": [], "ack_at": [], "broadcast": [], "forfeit": [], "early": 0,
        "errors": Counter(),
        "n": 0, "resyncs": 0, "ack_by_kind": {},
    }  # fmt: skip
    for out in outputs:
        part = json.loads(out.read_text()) if out.exists() else {"errors": {"bot died": 1}}
        for key in ("ack", "broadcast", "forfeit"):
            merged[key] += part.get(key, [])
        merged["early"] += part.get("early", 0)
        merged["n"] += part.get("n", 0)
        merged["resyncs"] += part.get("resyncs", 0)
        merged["errors"].update(part.get("errors", {}))
        merged["ack_at"] += part.get("ack_at", [])
        for kind, samples in part.get("ack_by_kind", {}).items():
            merged["ack_by_kind"].setdefault(kind, []).extend(samples)
    forfeits = percentiles(merged["forfeit"])
    profile = None
    if sampler is not None:
        sampler.wait(timeout=60)
        profile = profiles.summary(raw_profile) if raw_profile.exists() else None
    return {
        "profile": profile,
        "matches": matches,
        "seconds": args.seconds,
        "warmup_s": args.warmup,
        "commands": merged["n"],
        "commands_per_s": round(merged["n"] / args.seconds, 1),
        "resyncs": merged["resyncs"],  # asked for by the bots: a gap seen, or a pong ahead
        "ack_ms": percentiles(merged["ack"]),
        "ack_ms_by_second": by_second(merged["ack_at"]),
        # Which commands make the tail: each kind takes its own path (a deal's is longest).
        "ack_ms_by_kind": {
            kind: percentiles(samples) for kind, samples in sorted(merged["ack_by_kind"].items())
        },
        # When "s": 0 begins (Unix time), to line the seconds up with other logs.
        "by_second_from_unix": round(min(at for at, _ in merged["ack_at"]), 3)
        if merged["ack_at"]
        else None,
        "broadcast_ms": percentiles(merged["broadcast"]),
        "echo_layer_ms": _echo_figures(layer),
        "echo_bare_ms": _echo_figures(bare),
        "forfeit_late_ms": {
            **forfeits,
            "max": round(max(merged["forfeit"]), 2) if merged["forfeit"] else None,
            "early": merged["early"],
        },
        "cpu": {
            name: round(100 * (after[name] - before.get(name, 0)) / elapsed, 1) for name in after
        },
        "machine_cpu": machine,
        "errors": dict(merged["errors"]),
    }


def _echo_figures(probe: dict) -> dict:
    return {**percentiles(probe["samples"]), "lost": probe["lost"], "refused": probe["refused"]}


async def _probes(layer_url: str, bare_url: str, seconds: float):
    return await asyncio.gather(echo_probe(layer_url, seconds), echo_probe(bare_url, seconds))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matches", default="10,100", help="comma-separated sizes")
    parser.add_argument("--seconds", type=float, default=60.0, help="measured, after the warm-up")
    parser.add_argument("--warmup", type=float, default=60.0, help="seconds played unmeasured")
    parser.add_argument("--web", type=int, default=os.cpu_count() or 1, help="web processes")
    parser.add_argument("--bots", type=int, default=2, help="bot processes")
    parser.add_argument("--layer", choices=("core", "pubsub"), default="pubsub")
    parser.add_argument(
        "--shards", type=int, default=PUBSUB_SHARDS, help="the pub/sub layer's connections"
    )
    parser.add_argument("--forfeits", type=float, default=0.25, help="share of matches")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument("--label", default="", help="a name for this set of runs")
    parser.add_argument("--profile-seconds", type=int, default=0, help="py-spy a web process")
    args = parser.parse_args(argv)
    sizes = [int(size) for size in args.matches.split(",")]
    if "postgres" in (os.environ.get("DATABASE_URL") or ""):
        os.environ["DATABASE_URL"] = fresh_postgres_database(os.environ["DATABASE_URL"])
    with tempfile.TemporaryDirectory(prefix="bench-live-") as run_dir:
        stack = Stack(Path(run_dir), web=args.web, layer=args.layer, shards=args.shards)
        try:
            stack.start()
            setup_django(stack.env)
            runs = []
            for run, size in enumerate(sizes):
                print(f"[bench-live] {size} matches for {args.seconds:.0f} s ...", flush=True)
                runs.append(one_run(stack, size, args, run))
                print(json.dumps(runs[-1]), flush=True)
        finally:
            stack.stop()
    database = "postgresql" if "postgres" in (os.environ.get("DATABASE_URL") or "") else "sqlite"
    result = {
        "label": args.label,
        "database": database,
        "web_processes": args.web,
        "channel_layer": args.layer,
        "channel_layer_shards": args.shards if args.layer == "pubsub" else 1,
        "cores": os.cpu_count(),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "runs": runs,
    }
    out = Path(args.out)
    previous = json.loads(out.read_text()) if out.exists() else {}
    sets = [s for s in previous.get("sets", []) if s.get("label") != args.label]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"sets": [*sets, result]}, indent=2) + "\n")
    print(f"[bench-live] wrote {out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

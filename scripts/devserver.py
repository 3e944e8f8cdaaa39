"""One machine, everything: the orchestrator behind `make run` and `make test`.

    python scripts/devserver.py run [--port 8000] [--host 127.0.0.1] [--run-dir .run]
    python scripts/devserver.py test [--run-dir .run]

Both prepare the same environment: SECRET_KEY (generated once into <run-dir>/secret_key unless
set) and REDIS_URL (a local redis-server on a free port, unless set). `run` then migrates,
collects static files, and supervises Daphne, a Celery worker and Celery beat (and its Redis,
which keeps its data in an append-only file in <run-dir>/redis): a child that exits is logged and
restarted after a delay that doubles from 1 s to 30 s (scripts/proc.py). Only Ctrl-C (or
SIGTERM) stops them all: beat, the worker, Daphne, then Redis. `test` runs the test pipeline
with a throwaway Redis.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import math
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if __package__ in (None, ""):  # run as a file: make the project importable
    sys.path.insert(0, str(ROOT))

from scripts.loadbalancer import Backend, haproxy_binary, start_haproxy  # noqa: E402
from scripts.localredis import start_local_redis  # noqa: E402
from scripts.proc import (  # noqa: E402
    Backoff,
    Supervisor,
    accepts_connections,
    daphne_command,
    free_port,
    port_is_free,
)

PYTHON = sys.executable
CHROMIUM_PATHS = ("/usr/lib/chromium/chromium", "/usr/bin/chromium")
STARTUP_TIMEOUT_S = 60  # then say that Daphne is still not listening (and keep trying)
POLL_INTERVAL_S = 0.2
# A child that exits waits 1 s, 2 s, 4 s ... up to 30 s before its restart; a minute up resets it.
RESTART = Backoff(initial_s=1, factor=2, cap_s=30, reset_after_s=60)


def log(message: str) -> None:
    print(f"[devserver] {message}", flush=True)


def secret_key(run_dir: Path) -> str:
    """The development key: generated once, kept in the git-ignored run folder."""
    path = run_dir / "secret_key"
    if not path.exists():
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


def prepare_environment(
    supervisor: Supervisor, run_dir: Path, *, stop: threading.Event | None = None
) -> dict[str, str]:
    """The children's environment. With `stop` (make run) a local Redis keeps its data and is
    restarted by `supervisor`; we wait for it until it answers or `stop` is set."""
    env = dict(os.environ)
    env.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    env["PYTHONUNBUFFERED"] = "1"
    if not env.get("SECRET_KEY"):
        env["SECRET_KEY"] = secret_key(run_dir)
    if env.get("REDIS_URL"):
        log(f"Redis: {env['REDIS_URL']} (from REDIS_URL)")
    elif stop is None:
        env["REDIS_URL"] = start_local_redis(supervisor, run_dir / "redis")
        log(f"Redis: started a local redis-server at {env['REDIS_URL']}")
    else:
        env["REDIS_URL"] = start_local_redis(
            supervisor,
            run_dir / "redis",
            persistent=True,
            restart=RESTART,
            timeout_s=math.inf,
            give_up=stop.is_set,
        )
        log(
            f"Redis: started a local redis-server at {env['REDIS_URL']} "
            f"(data kept in {run_dir / 'redis'})"
        )
    return env


def manage(env: dict[str, str], *args: str) -> None:
    subprocess.run([PYTHON, "manage.py", *args], cwd=ROOT, env=env, check=True)


def install_stop_signals() -> threading.Event:
    stop = threading.Event()

    def on_signal(signum, frame):
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    return stop


def lock_run_dir(run_dir: Path):
    """Hold <run-dir>/run.lock while serving: two runs must not share a Redis data folder."""
    lock = open(run_dir / "run.lock", "w")  # noqa: SIM115 - held until the run ends
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.close()
        return None
    return lock


def web_process_count() -> int:
    """WEB_PROCESSES, or one per core; several need HAProxy in front (else one serves)."""
    wanted = max(1, int(os.environ.get("WEB_PROCESSES") or os.cpu_count() or 1))
    if wanted > 1 and haproxy_binary() is None:
        log(
            f"haproxy is not installed: serving with 1 web process instead of {wanted} "
            "(Debian: apt-get install haproxy; or WEB_PROCESSES=1 to silence this)"
        )
        return 1
    return wanted


def start_web(supervisor: Supervisor, env: dict[str, str], args, run_dir: Path) -> None:
    """One Daphne on the port, or N on internal ports behind HAProxy on it."""
    count = web_process_count()
    if count == 1:
        supervisor.start(
            "daphne", daphne_command(args.host, args.port, PYTHON), env=env, cwd=ROOT,
            restart=RESTART,
        )  # fmt: skip
        return
    backends = [Backend(f"daphne-{n}", "127.0.0.1", free_port()) for n in range(1, count + 1)]
    # Behind HAProxy, which sets X-Forwarded-For to the client: sign-in throttling counts it.
    web_env = {**env, "SIGNIN_TRUSTED_PROXIES": "1"}
    for backend in backends:
        command = daphne_command(backend.host, backend.port, PYTHON, behind_proxy=True)
        supervisor.start(backend.name, command, env=web_env, cwd=ROOT, restart=RESTART)
    stats = start_haproxy(supervisor, run_dir, args.host, args.port, backends, restart=RESTART)
    log(f"{count} web processes behind HAProxy (its stats: {stats})")


def start_children(supervisor: Supervisor, env: dict[str, str], args, run_dir: Path) -> None:
    start_web(supervisor, env, args, run_dir)
    celery = [PYTHON, "-m", "celery", "-A", "config"]
    # Beat sends three tasks every second: at INFO their lines would bury everything else.
    celery_log_level = os.environ.get("CELERY_LOG_LEVEL", "WARNING")
    commands = {
        # Fires the deadlines the moment they fall due (the web processes stand in for it).
        "deadlines": [PYTHON, "manage.py", "keep_deadlines"],
        "worker": [*celery, "worker", f"--loglevel={celery_log_level}", "--concurrency=2"],
        "beat": [
            *celery,
            "beat",
            f"--loglevel={celery_log_level}",
            "--schedule",
            str(run_dir / "celerybeat-schedule"),
        ],
    }
    for name, command in commands.items():
        supervisor.start(name, command, env=env, cwd=ROOT, restart=RESTART)


def write_pids(supervisor: Supervisor, run_dir: Path) -> None:
    pids = {name: process.pid for name, process in supervisor.children.items()}
    (run_dir / "processes.json").write_text(json.dumps(pids))


def supervise(supervisor: Supervisor, stop: threading.Event, args, run_dir: Path) -> None:
    """Restart whatever exits until Ctrl-C or SIGTERM; say when the site first answers."""
    write_pids(supervisor, run_dir)
    started, announced, warned = time.monotonic(), False, False
    while not stop.wait(POLL_INTERVAL_S):
        if supervisor.poll():
            write_pids(supervisor, run_dir)
        if announced:
            continue
        if accepts_connections(args.host, args.port, timeout_s=POLL_INTERVAL_S):
            log(f"Spectacular Bid online is running at http://{args.host}:{args.port}/")
            log("Press Ctrl-C to stop.")
            announced = True
        elif not warned and time.monotonic() - started > STARTUP_TIMEOUT_S:
            log(
                f"Daphne is still not listening on {args.host}:{args.port} after "
                f"{STARTUP_TIMEOUT_S} s; its lines above say why. Still trying; Ctrl-C stops."
            )
            warned = True


def run(args: argparse.Namespace) -> int:
    run_dir = Path(args.run_dir).resolve()
    run_dir.mkdir(parents=True, exist_ok=True)
    if not port_is_free(args.host, args.port):
        log(
            f"Port {args.port} on {args.host} is already in use. Stop whatever is using it, "
            f"or pick another port: PORT={args.port + 1} make run"
        )
        return 2
    lock = lock_run_dir(run_dir)
    if lock is None:
        log(f"Another `make run` is using {run_dir}: stop it first, or give this one --run-dir.")
        return 2
    stop = install_stop_signals()
    code = 0
    with lock, Supervisor(log=log) as supervisor:
        try:
            env = prepare_environment(supervisor, run_dir, stop=stop)
            # Where `make manage` finds the Redis of this run (removed again when the run stops).
            (run_dir / "redis_url").write_text(env["REDIS_URL"])
            if not stop.is_set():
                manage(env, "migrate", "--noinput")
                manage(env, "collectstatic", "--noinput", "--verbosity", "0")
            if not stop.is_set():
                start_children(supervisor, env, args, run_dir)
                supervise(supervisor, stop, args, run_dir)
        except FileNotFoundError as error:  # no redis-server to start
            log(str(error))
            code = 2
        except subprocess.CalledProcessError as error:
            if not stop.is_set():
                log(f"Stopping: `manage.py {error.cmd[2]}` failed (exit {error.returncode}).")
                code = 1
        finally:
            if supervisor.children:
                log(f"Stopping {', '.join(reversed(supervisor.children))}...")
            (run_dir / "redis_url").unlink(missing_ok=True)
    log("All stopped.")
    return code


def browser_tests(env: dict[str, str]) -> str | None:
    """Run tests/browser in its own pytest (Playwright keeps an event loop); a failure or None."""
    if not any((ROOT / "tests" / "browser").glob("**/test_*.py")):
        log("tests/browser has no tests yet: browser step skipped")
        return None
    chromium = next((path for path in CHROMIUM_PATHS if os.access(path, os.X_OK)), None)
    if chromium is None:
        print("Chromium not found: browser tests SKIPPED", flush=True)
        return None
    browser_env = {**env, "DJANGO_ALLOW_ASYNC_UNSAFE": "true", "CHROMIUM_PATH": chromium}
    code = subprocess.call([PYTHON, "-m", "pytest", "tests/browser"], cwd=ROOT, env=browser_env)
    return f"browser tests: pytest exited {code}" if code else None


def test(args: argparse.Namespace) -> int:
    failures = []
    run_dir = Path(args.run_dir).resolve()
    run_dir.mkdir(parents=True, exist_ok=True)
    with Supervisor() as supervisor:
        env = prepare_environment(supervisor, run_dir)
        code = subprocess.call(
            [PYTHON, "-m", "coverage", "run", "-m", "pytest", "--ignore=tests/browser"],
            cwd=ROOT,
            env=env,
        )
        if code:
            reason = " (no tests collected)" if code == 5 else ""
            failures.append(f"test suite: pytest exited {code}{reason}")
        if subprocess.call([PYTHON, "-m", "coverage", "report"], cwd=ROOT, env=env):
            failures.append("coverage: engine/ is below 100% branch coverage (or has no data)")
        if failure := browser_tests(env):
            failures.append(failure)
    for failure in failures:
        log(f"FAILED {failure}")
    if not failures:
        log("All test steps passed.")
    return 1 if failures else 0


def manage_command(args: argparse.Namespace) -> int:
    """A manage.py command in the environment of the running `make run` (its key and Redis)."""
    run_dir = Path(args.run_dir).resolve()
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="config.settings", PYTHONUNBUFFERED="1")
    env.setdefault("SECRET_KEY", secret_key(run_dir) if run_dir.exists() else "")
    if not env.get("REDIS_URL"):
        url_file = run_dir / "redis_url"
        if not url_file.exists():
            log("No `make run` is serving: start it first (or set REDIS_URL).")
            return 2
        env["REDIS_URL"] = url_file.read_text().strip()
    return subprocess.run([PYTHON, "manage.py", *args.arguments], cwd=ROOT, env=env).returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run_parser = commands.add_parser("run", help="serve the site with a worker and beat")
    run_parser.add_argument("--port", type=int, default=int(os.environ.get("PORT") or 8000))
    run_parser.add_argument("--host", default=os.environ.get("HOST") or "127.0.0.1")
    test_parser = commands.add_parser("test", help="run the whole test pipeline")
    manage_parser = commands.add_parser("manage", help="manage.py, beside a running `make run`")
    manage_parser.add_argument("arguments", nargs=argparse.REMAINDER)
    for sub in (run_parser, test_parser, manage_parser):
        sub.add_argument("--run-dir", default=str(ROOT / ".run"))
    args = parser.parse_args(argv)
    return {"run": run, "test": test, "manage": manage_command}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())

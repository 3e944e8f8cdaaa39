"""Several web processes on one port: HAProxy (deploy/haproxy.cfg.in) in front of N Daphnes.

The one way `make run`, the tests and the live benchmark put a load balancer in front of their
web processes. HAProxy comes from the system (Debian's `haproxy`); without it, one Daphne serves
the port itself.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from scripts.proc import Supervisor, accepts_connections, free_port, wait_until

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "deploy" / "haproxy.cfg.in"


@dataclass(frozen=True)
class Backend:
    name: str
    host: str
    port: int


def haproxy_binary() -> str | None:
    return shutil.which("haproxy") or next(
        (path for path in ("/usr/sbin/haproxy",) if Path(path).exists()), None
    )


def render(bind: str, backends: list[Backend], stats: str) -> str:
    """The HAProxy configuration serving ``bind`` (``host:port``) from ``backends``."""
    servers = "\n".join(
        f"    server {backend.name} {backend.host}:{backend.port} check" for backend in backends
    )
    return (
        TEMPLATE.read_text()
        .replace("@BIND@", bind)
        .replace("@SERVERS@", servers)
        .replace("@STATS@", stats)
    )


def start_haproxy(
    supervisor: Supervisor,
    run_dir: Path,
    host: str,
    port: int,
    backends: list[Backend],
    *,
    restart=None,
    stdout=None,
    name: str = "haproxy",
) -> str:
    """Serve ``host:port`` from ``backends`` with a supervised HAProxy; returns its stats URL."""
    binary = haproxy_binary()
    if binary is None:
        raise FileNotFoundError("haproxy is not installed (Debian: apt-get install haproxy)")
    stats = f"127.0.0.1:{free_port()}"
    config = run_dir / f"{name}.cfg"
    config.write_text(render(f"{host}:{port}", backends, stats))
    # -db: stay in the foreground, so the supervisor sees it exit and restarts it.
    process = supervisor.start(
        name, [binary, "-db", "-f", str(config)], cwd=ROOT, restart=restart, stdout=stdout
    )
    wait_until(
        lambda: process.poll() is not None or accepts_connections(host, port),
        20,
        message="HAProxy to listen",
    )
    if process.poll() is not None:
        raise RuntimeError(f"HAProxy exited (code {process.returncode}); its lines above say why")
    return f"http://{stats}/"

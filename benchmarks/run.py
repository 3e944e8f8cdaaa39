"""``make bench``: run the benchmarks and write their JSON results under benchmarks/results/.

Usage: ``python -m benchmarks.run [NAME ...]`` with names from ``BENCHMARKS``; with none, all
but the optional ones (``tournament_1s``, a long sample of the expert at 1 s per decision).
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def _engine() -> dict:
    from benchmarks.engine_bench import run

    return run()


def _api() -> dict:
    from benchmarks.api_bench import run

    return run()


def _tournament() -> dict:
    from benchmarks.tournament_bench import run

    return run()


def _expert_timing() -> dict:
    from benchmarks.tournament_bench import run_timing

    return run_timing()


def _tournament_1s() -> dict:
    from benchmarks.tournament_bench import run_strong

    return run_strong()


def _move_cost() -> dict:
    from benchmarks.move_cost_bench import run

    return run()


def _ping_cost() -> dict:
    from benchmarks.ping_cost_bench import run

    return run()


def _forwarding() -> dict:
    from benchmarks.forwarding_bench import run

    return run()


BENCHMARKS = {
    "engine": _engine,
    "api": _api,
    "tournament": _tournament,
    "expert_timing": _expert_timing,
    "tournament_1s": _tournament_1s,
    "move_cost": _move_cost,
    "ping_cost": _ping_cost,
    "forwarding": _forwarding,
}
OPTIONAL = ("tournament_1s",)


def main(names: list[str]) -> int:
    unknown = [name for name in names if name not in BENCHMARKS]
    if unknown:
        print(f"no benchmark {', '.join(unknown)}; choose from {', '.join(BENCHMARKS)}")
        return 2
    RESULTS.mkdir(exist_ok=True)
    chosen = names or [name for name in BENCHMARKS if name not in OPTIONAL]
    if len(chosen) > 1:  # each in a process of its own: Django is set up once a process
        for name in chosen:
            subprocess.run([sys.executable, "-m", "benchmarks.run", name], check=True)
        return 0
    (name,) = chosen
    result = BENCHMARKS[name]()
    result["python"] = platform.python_implementation() + " " + platform.python_version()
    result["measured_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # `python benchmarks/run.py`
    sys.exit(main(sys.argv[1:]))

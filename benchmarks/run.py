"""``make bench``: run the benchmarks and write their JSON results under benchmarks/results/.

Usage: ``python -m benchmarks.run [NAME ...]`` with names from ``BENCHMARKS``; with none, all
but the optional ones (``tournament_1s``, a long sample of the expert at 1 s per decision).
"""

from __future__ import annotations

import importlib
import json
import platform
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


# Each benchmark by name: the module and function that run it.
BENCHMARKS = {
    "engine": ("benchmarks.engine_bench", "run"),
    "api": ("benchmarks.api_bench", "run"),
    "tournament": ("benchmarks.tournament_bench", "run"),
    "expert_timing": ("benchmarks.tournament_bench", "run_timing"),
    "tournament_1s": ("benchmarks.tournament_bench", "run_strong"),
    "move_cost": ("benchmarks.move_cost_bench", "run"),
    "ping_cost": ("benchmarks.ping_cost_bench", "run"),
    "forwarding": ("benchmarks.forwarding_bench", "run"),
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
    module, function = BENCHMARKS[name]
    result = getattr(importlib.import_module(module), function)()
    result["python"] = platform.python_implementation() + " " + platform.python_version()
    result["measured_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # `python benchmarks/run.py`
    sys.exit(main(sys.argv[1:]))

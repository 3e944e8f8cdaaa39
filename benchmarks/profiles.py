"""py-spy profiles for the benchmarks: sample a process, then say where its time went.

``record(pid, seconds, out)`` samples a running process (a web process under bench-live);
``record_command(argv, out)`` a command from start to end (a benchmark in a process of its
own). ``summary(raw)`` reads py-spy's collapsed stacks: each function's share of the samples,
on the stack at all (inclusive) and at the top (self), and the share spent in JSON.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

TOP = 25


def _py_spy() -> str:
    found = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(found).exists():
        raise FileNotFoundError("py-spy is not installed: pip install -e '.[dev,bench]'")
    return found


def record(pid: int, seconds: int, out: Path) -> subprocess.Popen:
    """Start sampling ``pid`` for ``seconds`` into ``out`` (collapsed stacks); returns at once."""
    command = [_py_spy(), "record", "--pid", str(pid), "--duration", str(seconds), "--rate",
               "200", "--format", "raw", "--output", str(out), "--nonblocking"]  # fmt: skip
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def record_command(argv: list[str], out: Path, cwd: Path) -> int:
    command = [_py_spy(), "record", "--rate", "200", "--format", "raw", "--output", str(out),
               "--", *argv]  # fmt: skip
    return subprocess.call(command, cwd=cwd, stdout=subprocess.DEVNULL)


def summary(raw: Path) -> dict:
    """Each function's share of all samples: ``inclusive`` (anywhere on the stack) and ``self``
    (where the time was spent), the top ``TOP`` of each."""
    inclusive, own, total, in_json = Counter(), Counter(), 0, 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        samples, frames = int(count), stack.split(";")
        total += samples
        for frame in set(frames):
            inclusive[frame] += samples
        own[frames[-1]] += samples
        in_json += samples if any(_is_json(frame) for frame in frames) else 0
    share = lambda counter: [  # noqa: E731
        {"function": frame, "share": round(n / total, 4)} for frame, n in counter.most_common(TOP)
    ]
    return {
        "samples": total,
        "json_share": round(in_json / total, 4) if total else None,
        "inclusive": share(inclusive),
        "self": share(own),
    }


def _is_json(frame: str) -> bool:
    """Encoding or decoding JSON (the record, once rewritten by every move)."""
    return "json/encoder.py" in frame or "json/decoder.py" in frame

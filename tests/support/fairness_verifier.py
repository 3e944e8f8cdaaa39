"""The standalone verifier of docs/fairness.md, as anyone would copy it: the page's first
```python block, written to a file (the ``verifier`` fixture of tests/conftest.py) and run on a
record in a process of its own."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "fairness.md"


def verifier_source() -> str:
    return re.search(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S).group(1)


def verify(verifier: Path, record: dict, tmp_path: Path) -> tuple[int, list[str]]:
    """``python verify.py record.json``: its exit code and its lines."""
    path = tmp_path / "record.json"
    path.write_text(json.dumps(record), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(verifier), str(path)], capture_output=True, text=True, timeout=60
    )
    assert done.stderr == ""
    return done.returncode, done.stdout.splitlines()

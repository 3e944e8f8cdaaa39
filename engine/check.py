"""``python -m engine check``: replay records through the rules and report every broken rule."""

from __future__ import annotations

import json

from .replay import audit


def load_records(path: str) -> list[dict]:
    """A JSON file holding one record (or a list of them), or JSON lines."""
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    return data if isinstance(data, list) else [data]


def check_files(paths: list[str], out) -> int:
    """Print every problem of every record; exit status 1 if any record breaks a rule."""
    broken = 0
    checked = 0
    for path in paths:
        for number, record in enumerate(load_records(path), start=1):
            checked += 1
            _, problems = audit(record)
            match_id = record.get("id") if isinstance(record, dict) else None
            label = f"{path}#{number} (match {match_id})"
            if problems:
                broken += 1
                for problem in problems:
                    print(f"{label}: {problem}", file=out)
    print(f"{checked} record(s) checked, {broken} breaking the rules", file=out)
    return 1 if broken else 0

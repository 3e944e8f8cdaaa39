"""``python -m engine check``: replay records through the rules and report every broken rule,
then, apart, every round whose deal the fairness proof does not bear out."""

from __future__ import annotations

import json

from .replay import FAIRNESS, RULES, UNCHECKED, audit

HEADINGS = {RULES: "rules", FAIRNESS: "fairness", UNCHECKED: "not checked"}


def load_records(path: str) -> list[dict]:
    """A JSON file holding one record (or a list of them), or JSON lines."""
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    return data if isinstance(data, list) else [data]


def check_files(paths: list[str], out, *, rules_only: bool = False) -> int:
    """Print every problem of every record, each under what it is about; exit status 1 if any
    record breaks a rule or (unless ``rules_only``) fails the fairness proof. What could not be
    checked (withheld tiles) is said, and fails nothing."""
    shown = (RULES, UNCHECKED) if rules_only else (RULES, FAIRNESS, UNCHECKED)
    failing = {RULES: 0, FAIRNESS: 0}
    checked = 0
    for path in paths:
        for number, record in enumerate(load_records(path), start=1):
            checked += 1
            _, problems = audit(record)
            match_id = record.get("id") if isinstance(record, dict) else None
            label = f"{path}#{number} (match {match_id})"
            problems = [problem for problem in problems if problem.about in shown]
            for problem in problems:
                print(f"{label}: {HEADINGS[problem.about]}: {problem}", file=out)
            for about in failing:
                failing[about] += any(problem.about == about for problem in problems)
    fairness = (
        "fairness not checked" if rules_only else f"{failing[FAIRNESS]} failing the fairness proof"
    )
    print(f"{checked} record(s) checked, {failing[RULES]} breaking the rules, {fairness}", file=out)
    return 1 if any(failing.values()) else 0

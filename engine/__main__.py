"""Command line: ``python -m engine simulate …``, ``python -m engine check FILE…`` and
``python -m engine tournament …``."""

from __future__ import annotations

import argparse
import json
import os
import sys

from .bots import BOTS
from .check import check_files
from .expert import DEFAULT_BUDGET_MS
from .simulate import simulate
from .tournament import describe, tournament


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m engine", description="Spectacular Bid rules engine"
    )
    commands = parser.add_subparsers(dest="command", required=True)
    sim = commands.add_parser(
        "simulate", help="print computer-vs-computer match records as JSON lines"
    )
    sim.add_argument("--matches", type=int, default=1)
    sim.add_argument("--seed", default="0")
    sim.add_argument("--bots", choices=tuple(BOTS), default="random")
    check = commands.add_parser(
        "check",
        help="replay match records and report every broken rule, then the fairness proof",
    )
    check.add_argument("files", nargs="+")
    check.add_argument(
        "--rules-only",
        action="store_true",
        help="check the rules alone, not the seeds, commitments and contributions",
    )
    duel = commands.add_parser(
        "tournament", help="every pairing of the bots, in duplicate: points per round, win rate"
    )
    duel.add_argument("--bots", type=_bot_names, default=list(BOTS))
    duel.add_argument("--rounds", type=int, default=100, help="single rounds per pairing")
    duel.add_argument("--matches", type=int, default=10, help="whole matches per pairing")
    duel.add_argument("--budget-ms", type=float, default=DEFAULT_BUDGET_MS)
    duel.add_argument("--seed", default="0")
    duel.add_argument("--json", action="store_true", help="one JSON object per pairing")
    duel.add_argument("--workers", type=int, default=os.cpu_count())
    args = parser.parse_args(argv)
    if args.command == "simulate":
        for record in simulate(args.matches, args.seed, (args.bots, args.bots)):
            sys.stdout.write(json.dumps(record, separators=(",", ":")) + "\n")
        return 0
    if args.command == "tournament":
        return _tournament(args)
    return check_files(args.files, sys.stdout, rules_only=args.rules_only)


def _bot_names(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in BOTS]
    if unknown or len(names) < 2:
        raise argparse.ArgumentTypeError(f"two or more of {', '.join(BOTS)}")
    return names


def _tournament(args) -> int:
    for summary in tournament(
        args.bots,
        rounds=args.rounds,
        matches=args.matches,
        budget_ms=args.budget_ms,
        seed=args.seed,
        workers=args.workers,
    ):
        print(json.dumps(summary) if args.json else describe(summary))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

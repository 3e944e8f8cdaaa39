"""Command line: ``python -m engine simulate …`` and ``python -m engine check FILE…``."""

from __future__ import annotations

import argparse
import json
import sys

from .check import check_files
from .simulate import simulate


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
    sim.add_argument("--bots", choices=("random", "greedy"), default="random")
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
    args = parser.parse_args(argv)
    if args.command == "simulate":
        for record in simulate(args.matches, args.seed, (args.bots, args.bots)):
            sys.stdout.write(json.dumps(record, separators=(",", ":")) + "\n")
        return 0
    return check_files(args.files, sys.stdout, rules_only=args.rules_only)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""What counts (RULES §4, §5): the one place that says which end totals score and how a blocked
round's pips are rounded. Rules, bots, views and clients all take their numbers from here."""

from __future__ import annotations

SCORING_MULTIPLE = 5


def points_for(end_total: int) -> int:
    """What an end total scores (before the cap of the opponent's balance): a positive
    multiple of 5 scores itself, anything else nothing."""
    return end_total if end_total > 0 and end_total % SCORING_MULTIPLE == 0 else 0


def round_to_5(pip_sum: int) -> int:
    """The nearest multiple of 5: remainders 1 and 2 round down, 3 and 4 round up."""
    return (pip_sum + 2) // SCORING_MULTIPLE * SCORING_MULTIPLE

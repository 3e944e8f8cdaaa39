"""Elo ratings: pure arithmetic, no Django.

- Everyone starts at ``INITIAL_RATING`` (1500).
- Expected score of A against B: ``1 / (1 + 10 ** ((B - A) / 400))``.
- K schedule: ``K = 40`` while a player is provisional (fewer than ``PROVISIONAL_GAMES`` = 20
  rated matches before this one), then ``K = 20``. Each player uses their own K, so a
  provisional player's result moves their rating twice as fast as their established opponent's.
- New rating: ``old + K * (score - expected)``, rounded half away from zero to a whole number
  (``round_half_away``; Python's ``round`` would round halves to even).

Worked figures (tested): two established 1500s: the winner 1510, the loser 1490; two
newcomers: 1520 and 1480; 1800 beats 1500 (established): 1803 and 1497; 1500 beats 1800: 1517
and 1783; a provisional 1500 beats an established 1600: 1526 and 1587 (loses: 1486 and 1607).
"""

from __future__ import annotations

import math

INITIAL_RATING = 1500
PROVISIONAL_GAMES = 20
K_PROVISIONAL = 40
K_ESTABLISHED = 20


def expected_score(rating: int, opponent: int) -> float:
    return 1.0 / (1.0 + 10.0 ** ((opponent - rating) / 400.0))


def is_provisional(rated_games: int) -> bool:
    return rated_games < PROVISIONAL_GAMES


def k_factor(rated_games: int) -> int:
    """K for a player who has finished ``rated_games`` rated matches before this one."""
    return K_PROVISIONAL if is_provisional(rated_games) else K_ESTABLISHED


def round_half_away(value: float) -> int:
    return int(math.copysign(math.floor(abs(value) + 0.5), value))


def new_rating(rating: int, opponent: int, score: float, rated_games: int) -> int:
    """The rating after one match; ``score`` is 1 for a win, 0 for a loss."""
    change = k_factor(rated_games) * (score - expected_score(rating, opponent))
    return round_half_away(rating + change)


def match_ratings(
    ratings: tuple[int, int], rated_games: tuple[int, int], winner: int
) -> tuple[int, int]:
    """Both seats' ratings after a match ``winner`` (0 or 1) won."""
    r0, r1 = ratings
    return (
        new_rating(r0, r1, 1.0 if winner == 0 else 0.0, rated_games[0]),
        new_rating(r1, r0, 1.0 if winner == 1 else 0.0, rated_games[1]),
    )

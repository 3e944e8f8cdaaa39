"""Elo arithmetic with exact figures (accounts/elo.py)."""

import pytest

from accounts import elo


@pytest.mark.parametrize(
    ("ratings", "games", "winner", "expected"),
    [
        ((1500, 1500), (30, 30), 0, (1510, 1490)),  # equal, established: K=20, E=0.5
        ((1500, 1500), (0, 0), 1, (1480, 1520)),  # equal, both provisional: K=40
        ((1800, 1500), (30, 30), 0, (1803, 1497)),  # the favourite wins: +/-20*0.151
        ((1800, 1500), (30, 30), 1, (1783, 1517)),  # the upset: +/-20*0.849
        ((1500, 1600), (3, 40), 0, (1526, 1587)),  # provisional (K=40) beats established (K=20)
        ((1500, 1600), (3, 40), 1, (1486, 1607)),
    ],
)
def test_ratings_after_a_match(ratings, games, winner, expected):
    assert elo.match_ratings(ratings, games, winner) == expected


def test_the_expected_score_of_1800_against_1500():
    assert elo.expected_score(1800, 1500) == pytest.approx(0.849020, abs=1e-6)
    assert elo.expected_score(1500, 1800) == pytest.approx(0.150980, abs=1e-6)


def test_k_is_40_for_the_first_20_rated_matches_then_20():
    assert [elo.k_factor(games) for games in (0, 19, 20, 500)] == [40, 40, 20, 20]
    assert elo.is_provisional(19) and not elo.is_provisional(20)


@pytest.mark.parametrize(
    ("value", "rounded"), [(1502.5, 1503), (1497.5, 1498), (-2.5, -3), (1.49, 1)]
)
def test_rounding_is_half_away_from_zero(value, rounded):
    assert elo.round_half_away(value) == rounded

"""Quick pairing ("Play now"): which waiting players to pair. Pure: time is a parameter.

A waiting player accepts opponents within ``window(wait_ms)`` rating points: ±100 at first,
widening by 20 points for every second waited, up to ±1000 (reached after 45 s). A pair may
form when the rating difference is within the window of the one who has waited longer.
Candidate pairs are taken closest ratings first; ties go to the pair whose earlier joiner
joined first, then by user id, so the outcome is deterministic.
"""

from __future__ import annotations

WINDOW_START = 100
WINDOW_GROWTH_PER_S = 20
WINDOW_MAX = 1000


def window(wait_ms: int) -> int:
    return min(WINDOW_START + WINDOW_GROWTH_PER_S * (max(wait_ms, 0) // 1000), WINDOW_MAX)


def pick_pairs(waiting: list[tuple[int, int, int]], now_ms: int) -> list[tuple[int, int]]:
    """``waiting`` holds (user_id, rating, joined_ms); returns disjoint (user_id, user_id) pairs."""
    candidates = []
    for i, (a_id, a_rating, a_joined) in enumerate(waiting):
        for b_id, b_rating, b_joined in waiting[i + 1 :]:
            difference = abs(a_rating - b_rating)
            if difference <= window(now_ms - min(a_joined, b_joined)):
                candidates.append(
                    (difference, min(a_joined, b_joined), min(a_id, b_id), max(a_id, b_id))
                )
    candidates.sort()
    paired: set[int] = set()
    pairs = []
    for _difference, _joined, a_id, b_id in candidates:
        if a_id not in paired and b_id not in paired:
            paired |= {a_id, b_id}
            pairs.append((a_id, b_id))
    return pairs

"""The rating-history chart: an inline SVG laid out on the server (no JavaScript library)."""

from __future__ import annotations

from dataclasses import dataclass

WIDTH, HEIGHT = 640, 220
PAD_LEFT, PAD_RIGHT, PAD_TOP, PAD_BOTTOM = 48, 12, 12, 24


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    points: str  # the polyline's "x,y x,y ..."
    dots: list[tuple[float, float, int]]  # (x, y, rating) per match
    ticks: list[tuple[float, int]]  # (y, rating) of the horizontal grid lines
    left: int
    right: int
    bottom: int


def _nice_step(span: int) -> int:
    for step in (10, 20, 25, 50, 100, 200, 250, 500):
        if span / step <= 5:
            return step
    return 1000


def rating_chart(ratings: list[int]) -> Chart | None:
    """The chart of ``ratings`` in order (the starting rating first); None with no changes."""
    if len(ratings) < 2:
        return None
    step = _nice_step(max(max(ratings) - min(ratings), 1))
    low = (min(ratings) // step) * step
    high = -(-max(ratings) // step) * step
    if high == low:
        high = low + step
    inner_w = WIDTH - PAD_LEFT - PAD_RIGHT
    inner_h = HEIGHT - PAD_TOP - PAD_BOTTOM

    def x(i: int) -> float:
        return round(PAD_LEFT + inner_w * i / (len(ratings) - 1), 1)

    def y(rating: int) -> float:
        return round(PAD_TOP + inner_h * (high - rating) / (high - low), 1)

    dots = [(x(i), y(r), r) for i, r in enumerate(ratings)]
    return Chart(
        width=WIDTH,
        height=HEIGHT,
        points=" ".join(f"{px},{py}" for px, py, _ in dots),
        dots=dots,
        ticks=[(y(r), r) for r in range(low, high + 1, step)],
        left=PAD_LEFT,
        right=WIDTH - PAD_RIGHT,
        bottom=HEIGHT - PAD_BOTTOM,
    )

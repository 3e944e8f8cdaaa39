"""Tiles of the double-six set: a tile is a tuple ``(low, high)`` with ``low <= high``."""

from __future__ import annotations

Tile = tuple[int, int]

FULL_SET: tuple[Tile, ...] = tuple((low, high) for low in range(7) for high in range(low, 7))
HAND_SIZE = 7


def make_tile(a: int, b: int) -> Tile:
    return (a, b) if a <= b else (b, a)


def pips(tiles) -> int:
    return sum(low + high for low, high in tiles)


def opening_rank(tile: Tile) -> tuple[int, int, int]:
    """Rank for the forced opening (RULES §2): any double beats any other tile,
    then the higher pip sum, then the larger half."""
    low, high = tile
    return (1 if low == high else 0, low + high, high)


# Every way of writing a tile, halves in either order, to its canonical form.
_CANONICAL = {(a, b): make_tile(a, b) for a in range(7) for b in range(7)}


def parse_tile(value) -> Tile:
    """A tile from its JSON form ``[a, b]``; raises ValueError on anything else."""
    if (
        type(value) in (list, tuple)
        and len(value) == 2
        and type(value[0]) is int
        and type(value[1]) is int
    ):
        tile = _CANONICAL.get((value[0], value[1]))
        if tile is not None:
            return tile
    raise ValueError(f"not a tile: {value!r}")

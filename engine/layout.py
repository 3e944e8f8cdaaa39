"""The layout: placed tiles, open places, the spinner and the counted ends (RULES §3).

A place is the tile it hangs on plus a side: ``high``/``low`` (a non-double's free half),
``chain_a``/``chain_b`` (a double's in-line sides) and ``arm_a``/``arm_b`` (the spinner's arms,
open only once both of its chain sides are taken). Only the first double of a round is the
spinner; every later double is played in line through its ``chain_a``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from .tiles import Tile

HIGH, LOW = "high", "low"
CHAIN_A, CHAIN_B = "chain_a", "chain_b"
ARM_A, ARM_B = "arm_a", "arm_b"
SIDES = (HIGH, LOW, CHAIN_A, CHAIN_B, ARM_A, ARM_B)
CHAIN_SIDES = (CHAIN_A, CHAIN_B)

Place = tuple[Tile, str]
# An open place with the pip value a tile must match there.
OpenPlace = tuple[Tile, str, int]


class Placement(NamedTuple):
    tile: Tile
    place: Place | None  # None for the opening tile
    joined: str | None  # the side of ``tile`` that touches ``place``


class Counted(NamedTuple):
    """One counted end: ``side`` is None for the spinner, which counts as a whole."""

    tile: Tile
    side: str | None
    value: int


@dataclass(frozen=True)
class Layout:
    placements: tuple[Placement, ...] = ()
    open_places: tuple[OpenPlace, ...] = ()
    spinner: Tile | None = None

    @property
    def is_empty(self) -> bool:
        return not self.placements

    def places_for(self, tile: Tile) -> list[Place]:
        """Every open place where ``tile`` fits (RULES §3), in layout order."""
        low, high = tile
        return [(t, side) for t, side, value in self.open_places if value == low or value == high]

    def fits(self, tile: Tile) -> bool:
        low, high = tile
        for _, _, value in self.open_places:
            if value == low or value == high:
                return True
        return False

    def fits_any(self, tiles) -> bool:
        """Whether any of ``tiles`` fits somewhere (the layout is not empty)."""
        values = {value for _, _, value in self.open_places}
        for low, high in tiles:
            if low in values or high in values:
                return True
        return False

    def open_value(self, place: Place) -> int | None:
        """The pip value a tile must match at ``place``, or None if the place is not open."""
        index = self._index_of(place)
        return None if index < 0 else self.open_places[index][2]

    def _index_of(self, place: Place) -> int:
        tile, side = place
        for index, open_place in enumerate(self.open_places):
            if open_place[0] == tile and open_place[1] == side:
                return index
        return -1

    def counted(self) -> list[Counted]:
        """The counted ends and their contributions, in layout order."""
        return [Counted(tile, side, value) for tile, side, value in self._counted_ends()]

    def end_total(self) -> int:
        """The sum of the counted ends."""
        return sum(value for _tile, _side, value in self._counted_ends())

    def _counted_ends(self):
        spinner = self.spinner
        spinner_seen = False
        for tile, side, value in self.open_places:
            if side == HIGH or side == LOW:
                yield tile, side, value
            elif side == CHAIN_A or side == CHAIN_B:
                if tile != spinner:
                    yield tile, side, 2 * value
                elif not spinner_seen:
                    # The spinner counts both halves once while any chain side is free.
                    spinner_seen = True
                    yield tile, None, 2 * value
            # An open arm counts nothing until a tile is played on it.

    def to_view(self) -> dict:
        """The layout as JSON: what every client draws and what the bots choose from."""
        return {
            "tiles": [
                {
                    "tile": list(p.tile),
                    "place": None
                    if p.place is None
                    else {"tile": list(p.place[0]), "side": p.place[1]},
                    "joined": p.joined,
                }
                for p in self.placements
            ],
            "spinner": None if self.spinner is None else list(self.spinner),
            "places": [
                {"tile": list(tile), "side": side, "value": value}
                for tile, side, value in self.open_places
            ],
            "counted": [
                {"tile": list(c.tile), "side": c.side, "value": c.value} for c in self.counted()
            ],
            "end_total": self.end_total(),
        }

    def open_with(self, tile: Tile) -> Layout:
        """The layout after the opening tile."""
        low, high = tile
        if low == high:
            return _layout(
                (Placement(tile, None, None),), ((tile, CHAIN_A, low), (tile, CHAIN_B, low)), tile
            )
        return _layout((Placement(tile, None, None),), ((tile, HIGH, high), (tile, LOW, low)), None)

    def play(self, tile: Tile, place: Place, value: int) -> Layout:
        """The layout after ``tile`` is placed on the open ``place`` whose value is ``value``
        (the caller has checked that it fits)."""
        low, high = tile
        spinner = self.spinner
        index = self._index_of(place)
        remaining = self.open_places[:index] + self.open_places[index + 1 :]
        if low == high:
            joined = CHAIN_A
            added = ((tile, CHAIN_B, low),)
            if spinner is None:
                spinner = tile
        elif value == low:
            joined, added = LOW, ((tile, HIGH, high),)
        else:
            joined, added = HIGH, ((tile, LOW, low),)
        if place[0] == self.spinner and place[1] in CHAIN_SIDES:
            if not any(t == spinner and s in CHAIN_SIDES for t, s, _ in remaining):
                added += ((spinner, ARM_A, value), (spinner, ARM_B, value))
        return _layout(
            self.placements + (Placement(tile, place, joined),), remaining + added, spinner
        )


def _layout(placements, open_places, spinner) -> Layout:
    """Build a Layout without the frozen dataclass's slower ``__init__`` (this runs every play)."""
    layout = object.__new__(Layout)
    object.__setattr__(
        layout,
        "__dict__",
        {"placements": placements, "open_places": open_places, "spinner": spinner},
    )
    return layout

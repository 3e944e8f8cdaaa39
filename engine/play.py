"""The play (RULES §3, §4): turns, tiles placed and scored, draws and mandatory passes."""

from __future__ import annotations

from .errors import IllegalCommand
from .layout import Layout, Place
from .scoring import points_for
from .settlement import settle_block, settle_domino
from .state import PLAY, POINTS, Draft
from .steps import (
    charge,
    finish,
    move_points,
    other,
    parse_command_tile,
    parse_place,
    require_decision,
)
from .tiles import Tile


def begin_turn(d: Draft, seat: int, now_ms: int) -> None:
    d.decider = seat
    d.turn_start_ms = now_ms
    d.drawn = None
    if not d.boneyard and not _can_play(d, seat):
        _mandatory_pass(d, seat, now_ms)


def play_score(layout: Layout, tile: Tile, place: Place | None) -> int:
    """What playing ``tile`` at ``place`` (None: the opening tile) would score."""
    return points_for(placed(layout, tile, place).end_total())


def placed(layout: Layout, tile: Tile, place: Place | None) -> Layout:
    """The layout after a legal placement."""
    if place is None:
        return layout.open_with(tile)
    return layout.play(tile, place, layout.open_value(place))


def _can_play(d: Draft, seat: int) -> bool:
    layout = d.layout
    return not layout.placements or layout.fits_any(d.hands[seat])


def _with_hand(d: Draft, seat: int, hand: tuple[Tile, ...]) -> None:
    d.hands = (hand, d.hands[1]) if seat == 0 else (d.hands[0], hand)


def _mandatory_pass(d: Draft, seat: int, now_ms: int) -> None:
    """Made by the engine itself; time already used drawing in this turn stays charged."""
    charge(d, seat, now_ms)
    d.emit("pass", seat, now_ms, {"banks_ms": list(d.banks_ms), "auto": True})
    d.passes += 1
    if d.passes == 2:
        settle_block(d, now_ms)
    else:
        begin_turn(d, other(seat), now_ms)


def play(d: Draft, seat: int, command: dict, now_ms: int) -> None:
    require_decision(d, seat, PLAY, now_ms)
    tile = parse_command_tile(command.get("tile"))
    place = parse_place(command.get("place"))
    hand = d.hands[seat]
    if tile not in hand:
        raise IllegalCommand("tile_not_in_hand", f"{list(tile)} is not in your hand")
    index = hand.index(tile)
    if d.drawn is not None and tile != d.drawn:
        raise IllegalCommand("must_play_drawn", f"you must play the tile you drew, {list(d.drawn)}")
    d.layout = _checked_placement(d, tile, place)
    charge(d, seat, now_ms)
    _with_hand(d, seat, hand[:index] + hand[index + 1 :])
    d.forced_tile = None
    d.drawn = None
    d.passes = 0
    opponent = other(seat)
    ends = d.layout.end_total()
    points = move_points(d, opponent, points_for(ends))
    d.emit(
        "play",
        seat,
        now_ms,
        {
            "tile": list(tile),
            "place": None if place is None else {"tile": list(place[0]), "side": place[1]},
            "points": points,
            "ends": ends,
            "balances": list(d.balances),
            "banks_ms": list(d.banks_ms),
        },
    )
    if d.balances[opponent] == 0:
        finish(d, seat, POINTS)
    elif not d.hands[seat]:
        settle_domino(d, seat, now_ms)
    else:
        begin_turn(d, opponent, now_ms)


def _checked_placement(d: Draft, tile: Tile, place: Place | None) -> Layout:
    layout = d.layout
    if layout.is_empty:
        if place is not None:
            raise IllegalCommand("opening_has_no_place", "the opening tile is played with no place")
        if d.forced_tile is not None and tile != d.forced_tile:
            raise IllegalCommand(
                "wrong_opening_tile",
                f"this round opens by rank: you must open with {list(d.forced_tile)}",
            )
        return layout.open_with(tile)
    if place is None:
        raise IllegalCommand("place_required", "say where the tile goes")
    value = layout.open_value(place)
    if value is None:
        raise IllegalCommand("place_not_open", f"{list(place[0])} {place[1]} is not an open place")
    if value not in tile:
        raise IllegalCommand(
            "halves_do_not_match", f"{list(tile)} has no {value} to match that place"
        )
    return layout.play(tile, place, value)


def draw(d: Draft, seat: int, command: dict, now_ms: int) -> None:
    require_decision(d, seat, PLAY, now_ms)
    if d.drawn is not None:
        raise IllegalCommand("must_play_drawn", f"you must play the tile you drew, {list(d.drawn)}")
    if _can_play(d, seat):
        raise IllegalCommand("can_play", "you can play, so you may not draw")
    tile = d.boneyard[0]
    d.boneyard = d.boneyard[1:]
    _with_hand(d, seat, tuple(sorted(d.hands[seat] + (tile,))))
    d.emit("draw", seat, now_ms, {"tile": list(tile)})
    if d.layout.fits(tile):
        d.drawn = tile
    elif not d.boneyard:
        _mandatory_pass(d, seat, now_ms)

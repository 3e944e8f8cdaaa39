"""A mutable simulation of one round in play, for search: the rules of RULES §3–§5 without
events, clocks or validation, about ten times faster than ``apply``.

Only simulations use it (the expert's playouts, the engine benchmark); the match itself always
goes through ``apply``. It re-implements the layout and scoring rules for speed, so
tests/engine/test_fastsim.py replays thousands of random rounds through both and requires the
same legal moves, points, balances and round ends at every step.

A move is ``(tile, index)``: ``index`` is a position in ``places`` (None for the opening tile).
"""

from __future__ import annotations

from .layout import ARM_A, ARM_B, CHAIN_A, CHAIN_B, HIGH, LOW
from .scoring import points_for, round_to_5
from .state import PLAY, MatchState
from .tiles import Tile

# How an open place counts towards the end total (RULES §3).
HALF = 0  # a non-double's free half counts its value
DOUBLE = 1  # a non-spinner double's free chain side counts both halves
SPINNER = 2  # the spinner counts both halves once while any chain side is free
ARM = 3  # an open arm counts nothing

_KINDS = {HIGH: HALF, LOW: HALF, ARM_A: ARM, ARM_B: ARM}


def _kind(tile: Tile, side: str, spinner: Tile | None) -> int:
    if side == CHAIN_A or side == CHAIN_B:
        return SPINNER if tile == spinner else DOUBLE
    return _KINDS[side]


def end_total(places) -> int:
    """The sum of the counted ends of ``places`` (each ``(tile, side, value, kind)``)."""
    total = 0
    spinner_counted = False
    for _, _, value, kind in places:
        if kind == HALF:
            total += value
        elif kind == DOUBLE:
            total += value + value
        elif kind == SPINNER and not spinner_counted:
            spinner_counted = True
            total += value + value
    return total


class Sim:
    """One round from some moment of play on. ``boneyard`` is kept reversed (the next tile to be
    drawn is last) so that a draw is a ``pop``. After the round, ``over`` is True; ``winner`` is
    the seat that won the match on points (or None), ``end`` is ``"domino"``/``"block"`` when the
    round was settled, and ``round_winner`` that settlement's winner."""

    __slots__ = (
        "hands",
        "boneyard",
        "places",
        "spinner",
        "balances",
        "turn",
        "passes",
        "forced",
        "drawn",
        "total",
        "spinner_sides",
        "over",
        "end",
        "round_winner",
        "winner",
    )

    def __init__(
        self,
        hands,
        boneyard,
        *,
        balances,
        turn: int,
        places=(),
        spinner: Tile | None = None,
        passes: int = 0,
        forced: Tile | None = None,
        drawn: Tile | None = None,
    ):
        self.hands = [list(hands[0]), list(hands[1])]
        self.boneyard = list(reversed(boneyard))
        self.places = [
            (tile, side, value, _kind(tile, side, spinner)) for tile, side, value in places
        ]
        self.spinner = spinner
        self.balances = list(balances)
        self.turn = turn
        self.passes = passes
        self.forced = forced
        self.drawn = drawn
        self._recount()
        self.over = False
        self.end = None
        self.round_winner = None
        self.winner = None

    @classmethod
    def from_state(cls, state: MatchState) -> Sim:
        """The round of a state in play (the phase PLAY, a turn due)."""
        assert state.phase == PLAY
        layout = state.layout
        return cls(
            state.hands,
            state.boneyard,
            balances=state.balances,
            turn=state.decider,
            places=layout.open_places,
            spinner=layout.spinner,
            passes=state.passes,
            forced=state.forced_tile,
            drawn=state.drawn,
        )

    def copy(self) -> Sim:
        other = object.__new__(Sim)
        other.hands = [self.hands[0][:], self.hands[1][:]]
        other.boneyard = self.boneyard[:]
        other.places = self.places[:]
        other.spinner = self.spinner
        other.balances = self.balances[:]
        other.turn = self.turn
        other.passes = self.passes
        other.forced = self.forced
        other.drawn = self.drawn
        other.total = self.total
        other.spinner_sides = self.spinner_sides
        other.over = self.over
        other.end = self.end
        other.round_winner = self.round_winner
        other.winner = self.winner
        return other

    # --- what may be done -----------------------------------------------------------------

    def moves(self) -> list:
        """The legal plays of the seat to move; empty when it must draw."""
        places = self.places
        if not places:
            if self.forced is not None:
                return [(self.forced, None)]
            return [(tile, None) for tile in self.hands[self.turn]]
        tiles = (self.drawn,) if self.drawn is not None else self.hands[self.turn]
        return [
            (tile, index)
            for tile in tiles
            for index, place in enumerate(places)
            if place[2] == tile[0] or place[2] == tile[1]
        ]

    def points_of(self, tile: Tile, index: int | None) -> int:
        """What playing ``tile`` at ``index`` would score, capped (the state is unchanged).
        The end total is updated from the current one rather than recounted: this runs for
        every option of every greedy playout step."""
        low, high = tile
        if index is None:
            total = low + high  # an opening double and an opening non-double both count both
        else:
            _, _, value, kind = self.places[index]
            total = self.total
            if kind == HALF:
                total -= value
            elif kind == DOUBLE or (kind == SPINNER and self.spinner_sides == 1):
                total -= value + value
            # A double counts both halves, in line or as the new spinner; else the free half.
            total += low + high if low == high else low + high - value
        return min(points_for(total), self.balances[1 - self.turn])

    # --- changes --------------------------------------------------------------------------

    def play(self, tile: Tile, index: int | None) -> int:
        """Play a legal move; returns the points it moved."""
        seat = self.turn
        opponent = 1 - seat
        self.places = self._placed(tile, index)
        if self.spinner is None and tile[0] == tile[1]:
            self.spinner = tile
        hand = self.hands[seat]
        hand.remove(tile)
        self.forced = None
        self.drawn = None
        self.passes = 0
        self._recount()
        points = min(points_for(self.total), self.balances[opponent])
        self.balances[seat] += points
        self.balances[opponent] -= points
        if not self.balances[opponent]:
            self.over = True
            self.winner = seat
        elif not hand:
            self.over = True
            self.end = "domino"
            self.round_winner = seat
        else:
            self._begin_turn(opponent)
        return points

    def draw(self) -> Tile:
        """Draw one tile for the seat to move (it has no play); returns it."""
        tile = self.boneyard.pop()
        self.hands[self.turn].append(tile)
        low, high = tile
        for place in self.places:
            if place[2] == low or place[2] == high:
                self.drawn = tile
                return tile
        if not self.boneyard:
            self._pass()
        return tile

    def _recount(self) -> None:
        self.total = end_total(self.places)
        self.spinner_sides = sum(1 for place in self.places if place[3] == SPINNER)

    def _placed(self, tile: Tile, index: int | None) -> list:
        """The open places after ``tile`` is played at ``index`` (RULES §3)."""
        low, high = tile
        if index is None:
            if low == high:
                return [(tile, CHAIN_A, low, SPINNER), (tile, CHAIN_B, low, SPINNER)]
            return [(tile, HIGH, high, HALF), (tile, LOW, low, HALF)]
        places = self.places
        on, _, value, kind = places[index]
        remaining = places[:index] + places[index + 1 :]
        if low == high:
            remaining.append((tile, CHAIN_B, low, DOUBLE if self.spinner else SPINNER))
        elif value == low:
            remaining.append((tile, HIGH, high, HALF))
        else:
            remaining.append((tile, LOW, low, HALF))
        if kind == SPINNER and not any(place[3] == SPINNER for place in remaining):
            # Both chain sides of the spinner are taken: its arms open.
            remaining.append((on, ARM_A, value, ARM))
            remaining.append((on, ARM_B, value, ARM))
        return remaining

    def _begin_turn(self, seat: int) -> None:
        self.turn = seat
        self.drawn = None
        if not self.boneyard and not self._can_play(seat):
            self._pass()

    def _can_play(self, seat: int) -> bool:
        # Only asked after a play, so the layout is never empty here.
        values = {place[2] for place in self.places}
        for low, high in self.hands[seat]:
            if low in values or high in values:
                return True
        return False

    def _pass(self) -> None:
        self.passes += 1
        if self.passes == 2:
            self._settle_block()
        else:
            self._begin_turn(1 - self.turn)

    def _settle_block(self) -> None:
        self.over = True
        self.end = "block"
        pips = [sum(a + b for a, b in hand) for hand in self.hands]
        if pips[0] == pips[1]:
            return
        winner = 0 if pips[0] < pips[1] else 1
        loser = 1 - winner
        points = min(round_to_5(pips[loser]), self.balances[loser])
        self.balances[winner] += points
        self.balances[loser] -= points
        self.round_winner = winner
        if not self.balances[loser]:
            self.winner = winner

    # --- playouts -------------------------------------------------------------------------

    def play_out(self) -> None:
        """Finish the round with both seats playing the greedy policy: the most points now,
        then the heaviest tile."""
        while not self.over:
            moves = self.moves()
            if not moves:
                self.draw()
                continue
            if len(moves) == 1:
                self.play(*moves[0])
                continue
            best = None
            best_key = (-1, -1)
            for move in moves:
                tile = move[0]
                key = (self.points_of(tile, move[1]), tile[0] + tile[1])
                if key > best_key:
                    best, best_key = move, key
            self.play(*best)

    def play_out_random(self, rng) -> None:
        """Finish the round with uniformly random legal plays (the benchmark's policy)."""
        while not self.over:
            moves = self.moves()
            if moves:
                self.play(*rng.choice(moves))
            else:
                self.draw()

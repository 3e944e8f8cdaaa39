"""Short ways to build exact situations for the rules' tests, all with injected time."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest

from engine import IllegalCommand, apply, new_match, next_round
from engine.shuffle import Deal
from engine.state import SETTLED, MatchState
from engine.tiles import FULL_SET

T0 = 1_764_496_800_000  # any fixed instant: tests never read the clock


def deal(hand0, hand1, boneyard=None, *, draw_first=()) -> Deal:
    """A deal of two hands; the boneyard is ``draw_first`` then the rest of the set in order,
    unless ``boneyard`` is given exactly (``()`` for an empty one)."""
    hands = (tuple(sorted(hand0)), tuple(sorted(hand1)))
    if boneyard is None:
        used = set(hands[0] + hands[1] + tuple(draw_first))
        boneyard = tuple(draw_first) + tuple(t for t in FULL_SET if t not in used)
    return Deal(hands, tuple(boneyard))


def place(tile, side) -> dict:
    return {"tile": list(tile), "side": side}


def play_cmd(tile, on=None, side=None) -> dict:
    return {"type": "play", "tile": list(tile), "place": None if on is None else place(on, side)}


class Table:
    """A match driven command by command with a fake clock: ``advance`` moves time, ``send``
    applies a command at the current time and keeps the events."""

    def __init__(self, state: MatchState, now_ms: int = T0):
        self.state = state
        self.now = now_ms
        self.events: list[dict] = []

    def advance(self, ms: int) -> Table:
        self.now += ms
        return self

    def send(self, seat, command: dict, after_ms: int = 0) -> list[dict]:
        self.advance(after_ms)
        self.state, events = apply(self.state, seat, command, self.now)
        self.events.extend(events)
        return events

    def start(self, after_ms: int = 0) -> list[dict]:
        return self.send(None, {"type": "start"}, after_ms)

    def play(self, seat, tile, on=None, side=None, after_ms: int = 1_000) -> list[dict]:
        return self.send(seat, play_cmd(tile, on, side), after_ms)

    def draw(self, seat, after_ms: int = 1_000) -> list[dict]:
        return self.send(seat, {"type": "draw"}, after_ms)

    def offer(self, seat, amount, after_ms: int = 1_000) -> list[dict]:
        return self.send(seat, {"type": "offer", "amount": amount}, after_ms)

    def accept(self, seat, after_ms: int = 1_000) -> list[dict]:
        return self.send(seat, {"type": "accept"}, after_ms)

    def waive(self, seat, after_ms: int = 1_000) -> list[dict]:
        return self.send(seat, {"type": "waive"}, after_ms)

    def reject(self, seat, command: dict, code: str, after_ms: int = 0) -> IllegalCommand:
        """The command is refused with ``code`` and nothing changes (the time neither)."""
        return assert_rejected(self.state, seat, command, self.now + after_ms, code)


def assert_rejected(state: MatchState, seat, command, now_ms, code: str) -> IllegalCommand:
    before = copy.deepcopy(state)
    with pytest.raises(IllegalCommand) as caught:
        apply(state, seat, command, now_ms)
    assert caught.value.code == code, caught.value
    assert caught.value.as_dict() == {"code": code, "message": caught.value.message}
    assert state == before
    return caught.value


def table(hand0, hand1, boneyard=None, *, balances=(150, 150), hotseat=False, **kw) -> Table:
    """A first round (rank opening) with the given hands, not yet started."""
    state = new_match(deal(hand0, hand1, boneyard, **kw), hotseat=hotseat)
    return Table(replace(state, balances=balances))


def auction_table(
    hand0, hand1, *, jockey: int, balances=(150, 150), boneyard=None, hotseat=False
) -> Table:
    """A round after a domino by ``jockey`` (so it opens by auction), not yet started."""
    settled = replace(new_match(deal((), ())), phase=SETTLED, next_jockey=jockey, balances=balances)
    return Table(next_round(replace(settled, hotseat=hotseat), deal(hand0, hand1, boneyard)))


def hidden_tiles_redealt(state: MatchState, seat: int, rng) -> MatchState:
    """The same table for ``seat``: the opponent's hand and the boneyard dealt again from their
    own tiles, so ``view(state, seat)`` is unchanged and only hidden information differs."""
    other = 1 - seat
    hidden = list(state.hands[other] + state.boneyard)
    rng.shuffle(hidden)
    size = len(state.hands[other])
    hands = list(state.hands)
    hands[other] = tuple(sorted(hidden[:size]))
    return replace(state, hands=tuple(hands), boneyard=tuple(hidden[size:]))

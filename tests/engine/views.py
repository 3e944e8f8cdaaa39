"""What a view may show: the tiles that appear in it, walked out of its JSON-like structure."""

from __future__ import annotations

import json

from engine import view
from engine.state import MatchState

# Lists of two small numbers that are not tiles.
NUMBER_PAIRS = {"hand_counts", "balances", "banks_ms", "pips"}


def tiles_in(value, key=None) -> set:
    """Every ``[a, b]`` with halves 0..6 in a view, outside the keys known to hold numbers."""
    found = set()
    if key in NUMBER_PAIRS:
        return found
    if isinstance(value, dict):
        for k, v in value.items():
            found |= tiles_in(v, k)
    elif isinstance(value, list):
        if len(value) == 2 and all(type(x) is int and 0 <= x <= 6 for x in value):
            found.add(tuple(value))
        for item in value:
            found |= tiles_in(item, key)
    return found


def assert_view_hides_secrets(state: MatchState, seat) -> dict:
    """The view for ``seat`` shows the layout and at most that seat's own hand: no opponent's
    tile, no boneyard tile, no seed."""
    seen = view(state, seat)
    text = json.dumps(seen)
    shows_hand = seat is not None and state.phase != "handover"
    own = set(state.hands[seat]) if shows_hand else set()
    assert seen["hand"] == ([list(t) for t in state.hands[seat]] if shows_hand else None)
    assert tiles_in(seen) <= {p.tile for p in state.layout.placements} | own
    for other in (0, 1):
        if other != seat and state.hands[other]:
            assert json.dumps([list(t) for t in state.hands[other]]) not in text
    assert "boneyard" not in seen and "seed" not in seen
    if state.deal.seed:
        assert state.deal.seed not in text
    return seen

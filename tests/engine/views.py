"""What a view may show: the tiles that appear in it, walked out of its JSON-like structure."""

from __future__ import annotations

import json
import re

from engine import view
from engine.state import MatchState

# Lists of two small numbers that are not tiles.
NUMBER_PAIRS = re.compile(r'"(?:hand_counts|balances|banks_ms|pips|scores)": \[[^\]]*\]')
TILE = re.compile(r"\[(\d), (\d)\]")


def tiles_in(seen: dict | str) -> set:
    """Every ``[a, b]`` of single digits in a view (or its JSON), outside the number pairs."""
    text = seen if isinstance(seen, str) else json.dumps(seen)
    return {(int(a), int(b)) for a, b in TILE.findall(NUMBER_PAIRS.sub("", text))}


def assert_view_hides_secrets(state: MatchState, seat) -> dict:
    """The view for ``seat`` shows the layout and at most that seat's own hand: no opponent's
    tile, no boneyard tile, no seed."""
    seen = view(state, seat)
    # The last settlement shows a finished round's hands: never the round being played.
    settlement = seen["settlement"]
    assert settlement is None or state.round_over or settlement["round"] < state.round_no
    text = json.dumps({**seen, "settlement": None})
    shows_hand = seat is not None and state.phase not in ("handover", "dealing")
    own = set(state.hands[seat]) if shows_hand else set()
    assert seen["hand"] == ([list(t) for t in state.hands[seat]] if shows_hand else None)
    assert tiles_in(text) <= {p.tile for p in state.layout.placements} | own
    for other in (0, 1):
        if other != seat and state.hands[other]:
            assert json.dumps([list(t) for t in state.hands[other]]) not in text
    assert "boneyard" not in seen and "seed" not in seen
    if state.phase == "dealing":
        assert [c["value"] for c in seen["contributions"]] == [None, None]
    if state.deal.seed:
        assert state.deal.seed not in text
    return seen

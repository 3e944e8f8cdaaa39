"""How a round ends (RULES §5): a domino or a block, and what it pays."""

from __future__ import annotations

from .scoring import round_to_5
from .state import POINTS, SETTLED, Draft
from .steps import finish, move_points, other
from .tiles import pips


def settle_domino(d: Draft, seat: int, now_ms: int) -> None:
    """``seat`` played its last tile: it wins the round and holds the next auction's jockey."""
    d.next_jockey = seat
    _settle(d, now_ms, end="domino", winner=seat, owed=0, rounded=None)


def settle_block(d: Draft, now_ms: int) -> None:
    """Nobody can play: the lighter hand wins the heavier hand's pips, rounded to 5."""
    pips0, pips1 = pips(d.hands[0]), pips(d.hands[1])
    if pips0 == pips1:
        _settle(d, now_ms, end="block", winner=None, owed=0, rounded=None)
        return
    winner = 0 if pips0 < pips1 else 1
    rounded = round_to_5(max(pips0, pips1))
    _settle(d, now_ms, end="block", winner=winner, owed=rounded, rounded=rounded)
    if d.balances[other(winner)] == 0:
        finish(d, winner, POINTS)


def _settle(
    d: Draft, now_ms: int, *, end: str, winner: int | None, owed: int, rounded: int | None
) -> None:
    points = move_points(d, other(winner), owed) if owed else 0
    d.phase = SETTLED
    d.decider = None
    settle = d.emit(
        "settle",
        None,
        now_ms,
        {
            "end": end,
            "winner": winner,
            "pips": [pips(d.hands[0]), pips(d.hands[1])],
            "points": points,
            "balances": list(d.balances),
        },
    )
    # The settlement panel's story (a copy: the event itself goes to the caller, who may add
    # fields to it): the final hands and layout, the rounding and what the balance cap let pass.
    d.settlement = {
        **settle,
        "round": d.round_no,
        "pips": list(settle["pips"]),
        "balances": list(settle["balances"]),
        "hands": [[list(tile) for tile in hand] for hand in d.hands],
        "layout": d.layout.to_view(),
        "rounded": rounded,
        "owed": owed,
    }

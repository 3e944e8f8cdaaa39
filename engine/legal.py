"""What a seat may do now: the commands ``apply`` would accept (the clock aside)."""

from __future__ import annotations

from .auction import OFFER_STEP, max_offer, min_offer
from .layout import Place
from .state import AUCTION, FINISHED, HANDOVER, PLAY, READY, MatchState
from .tiles import Tile


def legal_plays(state: MatchState, seat: int) -> list[tuple[Tile, Place | None]]:
    """Every (tile, place) the seat may play now; place is None for the opening tile."""
    if state.phase != PLAY or seat != state.decider:
        return []
    layout = state.layout
    if layout.is_empty:
        if state.forced_tile is not None:
            return [(state.forced_tile, None)]
        return [(tile, None) for tile in state.hands[seat]]
    tiles = (state.drawn,) if state.drawn is not None else state.hands[seat]
    # Inlined Layout.places_for: this query runs before every decision of every bot.
    return [
        (tile, (on, side))
        for tile in tiles
        for on, side, value in layout.open_places
        if value == tile[0] or value == tile[1]
    ]


def offer_range(state: MatchState, seat: int) -> range:
    """The offers (or raises) the seat may make now; empty when it may not."""
    if state.phase != AUCTION or seat != state.decider:
        return range(0)
    return range(min_offer(state), max_offer(state, seat) + 1, OFFER_STEP)


def legal_decisions(state: MatchState, seat: int) -> list[dict]:
    """The seat's decisions (plays, draws, auction moves), each a command dict."""
    if state.phase == AUCTION and seat == state.decider:
        first = "waive" if state.auction.offer is None else "accept"
        offers = [{"type": "offer", "amount": amount} for amount in offer_range(state, seat)]
        return [{"type": first}, *offers]
    plays = [play_command(tile, place) for tile, place in legal_plays(state, seat)]
    if plays or state.phase != PLAY or seat != state.decider:
        return plays
    return [{"type": "draw"}]


def legal_commands(state: MatchState, seat: int) -> list[dict]:
    """Everything the seat may send now, Start and Resign included. A contribution to the deal
    is not listed: its value is the sender's own (``view``'s ``legal.contribute`` says when one
    is due)."""
    if state.phase == FINISHED:
        return []
    standing = [{"type": "start"}] if state.phase in (READY, HANDOVER) else []
    return standing + legal_decisions(state, seat) + [{"type": "resign"}]


def play_command(tile: Tile, place: Place | None) -> dict:
    return {
        "type": "play",
        "tile": list(tile),
        "place": None if place is None else {"tile": list(place[0]), "side": place[1]},
    }

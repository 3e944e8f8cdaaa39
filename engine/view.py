"""What one seat may know: ``view(state, seat)``; ``view(state, None)`` is the spectators' view.

Nobody but its owner ever sees a hand, and nobody sees the boneyard's order (or the round's
seed) before the round is over; in a pass-and-play hand-over no hand is shown at all.
"""

from __future__ import annotations

from dataclasses import replace

from .bots import points_for
from .legal import legal_plays, offer_range
from .rules import net_payment, next_round, round_to_5
from .shuffle import Deal
from .state import AUCTION, CLOCK_RUNNING_PHASES, HANDOVER, PLAY, READY, MatchState


def view(state: MatchState, seat: int | None) -> dict:
    own_hand = seat is not None and state.phase != HANDOVER
    return {
        "seq": state.seq,
        "round": state.round_no,
        "phase": state.phase,
        "opening": state.opening,
        "jockey": state.jockey,
        "seat": seat,
        "hand": [list(tile) for tile in state.hands[seat]] if own_hand else None,
        "hand_counts": [len(state.hands[0]), len(state.hands[1])],
        "boneyard_count": len(state.boneyard),
        "commitment": state.deal.commitment,
        "layout": layout_view(state.layout),
        "balances": list(state.balances),
        "banks_ms": list(state.banks_ms),
        "clock": clock_view(state),
        "to_act": state.decider,
        "auction": auction_view(state),
        "must_play": list(state.drawn)
        if own_hand and seat == state.decider and state.drawn
        else None,
        "legal": None if seat is None else legal_view(state, seat),
        "settlement": settlement_view(state),
        "result": None
        if state.result is None
        else {"winner": state.result.winner, "reason": state.result.reason},
    }


def layout_view(layout) -> dict:
    return {
        "tiles": [
            {
                "tile": list(p.tile),
                "place": None
                if p.place is None
                else {"tile": list(p.place[0]), "side": p.place[1]},
                "joined": p.joined,
            }
            for p in layout.placements
        ],
        "spinner": None if layout.spinner is None else list(layout.spinner),
        "places": [
            {"tile": list(tile), "side": side, "value": value}
            for tile, side, value in layout.open_places
        ],
        "counted": [
            {"tile": list(c.tile), "side": c.side, "value": c.value} for c in layout.counted()
        ],
        "end_total": layout.end_total(),
    }


def clock_view(state: MatchState) -> dict:
    running = state.phase in CLOCK_RUNNING_PHASES
    return {
        "running": running,
        "seat": state.decider if running else None,
        "turn_start_ms": state.turn_start_ms if running else None,
        "delay_ms": state.clock.delay_ms,
        "deadline_ms": state.deadline_ms,
    }


def auction_view(state: MatchState) -> dict | None:
    if state.auction is None or state.opening != "auction":
        return None
    return {"offer": state.auction.offer, "offerer": state.auction.offerer}


def legal_view(state: MatchState, seat: int) -> dict:
    """The seat's choices, compact enough for a client to draw its controls."""
    plays: dict = {}
    for tile, place in legal_plays(state, seat):
        places, scores = plays.setdefault(tuple(tile), ([], []))
        places.append(None if place is None else {"tile": list(place[0]), "side": place[1]})
        scores.append(_score_of(state.layout, tile, place))
    deciding = seat == state.decider and state.phase in CLOCK_RUNNING_PHASES
    offers = offer_range(state, seat)
    auction_open = deciding and state.phase == AUCTION
    return {
        "start": state.phase in (READY, HANDOVER),
        "plays": [
            {"tile": list(tile), "places": places, "scores": scores}
            for tile, (places, scores) in plays.items()
        ],
        "draw": deciding and state.phase == PLAY and not plays,
        "waive": auction_open and state.auction.offer is None,
        "accept": auction_open and state.auction.offer is not None,
        "offer": {"min": offers.start, "max": offers[-1], "step": offers.step} if offers else None,
        "offers": [
            {"amount": amount, "cost": net_payment(state.jockey, seat, amount)} for amount in offers
        ],
        "resign": state.result is None,
    }


def _score_of(layout, tile, place) -> int:
    """What playing ``tile`` at ``place`` would score (before the cap of the opponent's balance)."""
    after = (
        layout.open_with(tile)
        if place is None
        else layout.play(tile, place, layout.open_value(place))
    )
    return points_for(after.end_total())


def final_table(state: MatchState) -> dict:
    """Both hands face up and the layout as the round ended: shown once the round is over."""
    return {
        "hands": [[list(tile) for tile in hand] for hand in state.hands],
        "layout": layout_view(state.layout),
    }


def settlement_view(state: MatchState) -> dict | None:
    """The last round's settlement, explained: ``rounded`` is the loser's pip sum rounded to 5
    (None on a domino or a tie), ``owed`` what was due before the payer's balance capped it
    (``points``, what moved). ``hands`` and ``layout`` show the table as the round ended."""
    settlement = state.settlement
    if settlement is None:
        return None
    winner = settlement["winner"]
    rounded = None
    if settlement["end"] == "block" and winner is not None:
        rounded = round_to_5(settlement["pips"][1 - winner])
    table = final_table(state) if settlement["seq"] == state.seq and state.phase != READY else {}
    return {"rounded": rounded, "owed": rounded or 0, **settlement, **table}


def next_round_keeping_final_table(state: MatchState, deal: Deal) -> MatchState:
    """COMPATIBILITY SHIM (issue 13, until the rules keep the final table in the settlement
    themselves): ``next_round`` whose settlement still shows the hands and layout the round
    ended with."""
    dealt = next_round(state, deal)
    if dealt.settlement is None:  # a state built by hand (tests) may settle nothing
        return dealt
    return replace(dealt, settlement={**dealt.settlement, **final_table(state)})

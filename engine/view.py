"""What one seat may know: ``view(state, seat)``; ``view(state, None)`` is the spectators' view.

Nobody but its owner ever sees a hand, and nobody sees the boneyard's order (or the round's
seed) before the round is over; in a pass-and-play hand-over, and while a round waits for its
players' contributions, no hand is shown at all.
"""

from __future__ import annotations

from .auction import net_payment
from .fairness import contributions_json, may_contribute
from .legal import legal_plays, offer_range
from .play import play_score
from .rules import starter
from .state import AUCTION, CLOCK_RUNNING_PHASES, DEALING, HANDOVER, PLAY, MatchState


def view(state: MatchState, seat: int | None) -> dict:
    own_hand = seat is not None and state.phase not in (HANDOVER, DEALING)
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
        # Each seat's contribution: its source once in, its value once the round is dealt.
        "contributions": contributions_json(state.deal, reveal_values=state.phase != DEALING),
        "layout": state.layout.to_view(),
        "balances": list(state.balances),
        "banks_ms": list(state.banks_ms),
        "clock": clock_view(state),
        "to_act": state.decider,
        "auction": auction_view(state),
        "must_play": list(state.drawn)
        if own_hand and seat == state.decider and state.drawn
        else None,
        "legal": None if seat is None else legal_view(state, seat),
        "settlement": state.settlement,
        "result": None
        if state.result is None
        else {"winner": state.result.winner, "reason": state.result.reason},
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
        scores.append(play_score(state.layout, tile, place))
    deciding = seat == state.decider and state.phase in CLOCK_RUNNING_PHASES
    offers = offer_range(state, seat)
    auction_open = deciding and state.phase == AUCTION
    return {
        # Only the seat that presses Start / Continue (or reveals) may: the other one waits.
        "start": starter(state) == seat,
        "contribute": may_contribute(state, seat),
        # ``scores[i]`` is what playing the tile at ``places[i]`` would score.
        "plays": [
            {"tile": list(tile), "places": places, "scores": scores}
            for tile, (places, scores) in plays.items()
        ],
        "draw": deciding and state.phase == PLAY and not plays,
        "waive": auction_open and state.auction.offer is None,
        "accept": auction_open and state.auction.offer is not None,
        "offer": {"min": offers.start, "max": offers[-1], "step": offers.step} if offers else None,
        # Each allowed amount with what it would cost this seat (the jockey's discount applied).
        "offers": [
            {"amount": amount, "cost": net_payment(state.jockey, seat, amount)} for amount in offers
        ],
        "resign": state.result is None,
    }

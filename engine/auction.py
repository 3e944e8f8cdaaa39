"""The auction for the opening (RULES §6): offers, raises, accepts and waives."""

from __future__ import annotations

from .errors import IllegalCommand
from .play import begin_turn
from .state import AUCTION, PLAY, POINTS, Auction, Draft
from .steps import charge, finish, move_points, other, require_decision

MIN_OFFER = 15
MIN_RAISE = 5
OFFER_STEP = 5
JOCKEY_DISCOUNT = 15


def net_payment(jockey: int | None, seat: int, amount: int) -> int:
    """What an accepted offer costs its author: the jockey's own offer is discounted by 15."""
    return max(0, amount - JOCKEY_DISCOUNT) if seat == jockey else amount


def max_offer(state, seat: int) -> int:
    """The largest offer ``seat`` could pay, as a multiple of 5."""
    limit = state.balances[seat] + (JOCKEY_DISCOUNT if seat == state.jockey else 0)
    return limit - limit % OFFER_STEP


def min_offer(state) -> int:
    offer = state.auction.offer
    return MIN_OFFER if offer is None else offer + MIN_RAISE


def begin_auction(d: Draft, first: int, now_ms: int) -> None:
    d.phase = AUCTION
    d.auction = Auction()
    _begin_auction_turn(d, first, now_ms)


def _begin_auction_turn(d: Draft, seat: int, now_ms: int) -> None:
    d.decider = seat
    d.turn_start_ms = now_ms
    if min_offer(d) <= max_offer(d, seat):
        return
    # Forced decisions cost no time (RULES §6.6).
    if d.auction.offer is None:
        _resolve_waive(d, seat, now_ms, auto=True)
    else:
        _resolve_accept(d, seat, now_ms, auto=True)


def offer(d: Draft, seat: int, command: dict, now_ms: int) -> None:
    require_decision(d, seat, AUCTION, now_ms)
    amount = command.get("amount")
    if type(amount) is not int:
        raise IllegalCommand("bad_command", "an offer has a whole-number 'amount'")
    if amount % OFFER_STEP:
        raise IllegalCommand("offer_not_multiple_of_5", "offers are multiples of 5")
    minimum = min_offer(d)
    if amount < minimum:
        raise IllegalCommand("offer_below_minimum", f"the smallest offer you may make is {minimum}")
    if amount > max_offer(d, seat):
        raise IllegalCommand("offer_unaffordable", "you could not pay that offer")
    charge(d, seat, now_ms)
    d.auction = Auction(amount, seat)
    d.emit("offer", seat, now_ms, {"amount": amount, "banks_ms": list(d.banks_ms)})
    _begin_auction_turn(d, other(seat), now_ms)


def accept(d: Draft, seat: int, command: dict, now_ms: int) -> None:
    require_decision(d, seat, AUCTION, now_ms)
    if d.auction.offer is None:
        raise IllegalCommand("nothing_to_accept", "there is no offer to accept: offer or waive")
    charge(d, seat, now_ms)
    _resolve_accept(d, seat, now_ms, auto=False)


def waive(d: Draft, seat: int, command: dict, now_ms: int) -> None:
    require_decision(d, seat, AUCTION, now_ms)
    if d.auction.offer is not None:
        raise IllegalCommand("cannot_waive", "an offer stands: accept it or raise")
    charge(d, seat, now_ms)
    _resolve_waive(d, seat, now_ms, auto=False)


def _decision_fields(d: Draft, auto: bool, **fields) -> dict:
    """The balances and banks after an auction decision, and ``auto`` if the server made it."""
    fields["balances"] = list(d.balances)
    fields["banks_ms"] = list(d.banks_ms)
    if auto:
        fields["auto"] = True
    return fields


def _resolve_accept(d: Draft, seat: int, now_ms: int, *, auto: bool) -> None:
    payer = d.auction.offerer
    paid = move_points(d, payer, net_payment(d.jockey, payer, d.auction.offer))
    d.emit("accept", seat, now_ms, _decision_fields(d, auto, paid=paid))
    if d.balances[payer] == 0:
        finish(d, seat, POINTS)
    else:
        _begin_opening(d, payer, now_ms)


def _resolve_waive(d: Draft, seat: int, now_ms: int, *, auto: bool) -> None:
    d.emit("waive", seat, now_ms, _decision_fields(d, auto))
    _begin_opening(d, d.jockey, now_ms)


def _begin_opening(d: Draft, opener: int, now_ms: int) -> None:
    """The auction's winner opens with any tile; the jockey discount has expired."""
    d.phase = PLAY
    begin_turn(d, opener, now_ms)

"""Steps shared by the auction, the play and the settlement: they change a ``Draft``."""

from __future__ import annotations

from .errors import IllegalCommand
from .layout import SIDES, Place
from .state import AUCTION, FINISHED, HANDOVER, READY, SETTLED, Draft, Result
from .tiles import Tile, parse_tile


def other(seat: int) -> int:
    return 1 - seat


def charge(d: Draft, seat: int, now_ms: int) -> None:
    """Pay for the decision that ends now: the delay is free, the rest comes from the bank."""
    banks = list(d.banks_ms)
    banks[seat] = d.clock.bank_after(d.turn_start_ms, banks[seat], now_ms)
    d.banks_ms = (banks[0], banks[1])


def move_points(d: Draft, payer: int, amount: int) -> int:
    """Move up to ``amount`` from ``payer`` to the other player; returns what moved (RULES §1)."""
    moved = min(amount, d.balances[payer])
    balances = list(d.balances)
    balances[payer] -= moved
    balances[other(payer)] += moved
    d.balances = (balances[0], balances[1])
    return moved


def finish(d: Draft, winner: int | None, reason: str) -> None:
    d.result = Result(winner, reason)
    d.phase = FINISHED
    d.decider = None
    d.drawn = None


def require_decision(d: Draft, seat: int, phase: str, now_ms: int) -> None:
    """A player's decision needs running clocks, the turn, the time and the right phase. A
    decision that arrives late never reaches its handler: ``apply`` flags it first."""
    if d.phase in (READY, HANDOVER):
        raise IllegalCommand("clocks_standing", "the clocks stand: press Start first")
    if d.phase == SETTLED:
        raise IllegalCommand("round_over", "the round is over")
    if seat != d.decider:
        raise IllegalCommand("not_your_turn", "it is not your turn")
    if d.phase != phase:
        if d.phase == AUCTION:
            raise IllegalCommand("auction_on", "the auction comes first: offer, accept or waive")
        raise IllegalCommand("no_auction", "there is no auction now: play a tile or draw")


def parse_place(raw) -> Place | None:
    if raw is None:
        return None
    if not isinstance(raw, dict) or raw.get("side") not in SIDES:
        raise IllegalCommand(
            "bad_command", "a place is {'tile': [a, b], 'side': one of " + ", ".join(SIDES) + "}"
        )
    return (parse_command_tile(raw.get("tile")), raw["side"])


def parse_command_tile(raw) -> Tile:
    try:
        return parse_tile(raw)
    except ValueError:
        raise IllegalCommand("bad_command", "a tile is [a, b] with halves from 0 to 6") from None

"""The one entry point for change: ``apply(state, seat, command, now_ms) -> (state, events)``.

Commands are JSON-like dicts. Validation runs in a fixed order (is the command known and well
formed, who may send it, is time moving forward, is the match over, is the clock running, is
it your turn, is it late, then the rules of the command); the first failure raises
``IllegalCommand`` and the given state is untouched, since states are frozen.
"""

from __future__ import annotations

from dataclasses import replace

from .clock import ClockConfig
from .errors import IllegalCommand
from .fairness import check_dealing, contribute
from .layout import SIDES, Layout, Place
from .shuffle import Deal
from .state import (
    ABANDON,
    AUCTION,
    FINISHED,
    HANDOVER,
    PLAY,
    POINTS,
    READY,
    RESIGN,
    SETTLED,
    TIME,
    VOID,
    Auction,
    Draft,
    MatchState,
    Result,
)
from .tiles import Tile, opening_rank, parse_tile, pips

MIN_OFFER = 15
MIN_RAISE = 5
OFFER_STEP = 5
JOCKEY_DISCOUNT = 15

PLAYER_DECISIONS = ("play", "draw", "offer", "accept", "waive")
SERVER_COMMANDS = ("timeout", "abandon", "void")
# Sent by a player, or by the server on a player's behalf when it is overdue.
SERVER_OR_PLAYER_COMMANDS = ("start", "contribute")


def new_match(deal: Deal, *, clock: ClockConfig | None = None, hotseat: bool = False) -> MatchState:
    """A match with its first round dealt; clocks stand until Start."""
    clock = clock or ClockConfig()
    return MatchState(
        clock=clock,
        hotseat=hotseat,
        round_no=1,
        phase=READY,
        deal=deal,
        opening="rank",
        jockey=None,
        hands=deal.hands,
        boneyard=deal.boneyard,
        banks_ms=(clock.bank_ms, clock.bank_ms),
    )


def next_round(state: MatchState, deal: Deal) -> MatchState:
    """The next round dealt after a settlement; clocks stand until Continue."""
    if state.phase != SETTLED:
        raise IllegalCommand("wrong_phase", "a new round is dealt only after a settlement")
    jockey = state.next_jockey
    return replace(
        state,
        round_no=state.round_no + 1,
        phase=READY,
        deal=deal,
        opening="rank" if jockey is None else "auction",
        jockey=jockey,
        hands=deal.hands,
        boneyard=deal.boneyard,
        layout=Layout(),
        decider=None,
        turn_start_ms=None,
        resume_phase=None,
        forced_tile=None,
        drawn=None,
        passes=0,
        auction=None,
        next_jockey=None,
    )


def apply(state: MatchState, seat: int | None, command: dict, now_ms: int):
    """Apply one command sent by ``seat`` (0, 1, or None for the server) that reached the server
    at ``now_ms``. Returns the new state and the events it produced, numbered from
    ``state.seq + 1``; raises ``IllegalCommand`` and changes nothing if the command is illegal."""
    kind = _command_kind(command)
    _check_sender(kind, seat)
    _check_time(state, now_ms)
    _check_not_over(state)
    check_dealing(state, kind)
    draft = Draft(state)
    _HANDLERS[kind](draft, seat, command, now_ms)
    if state.hotseat and kind in PLAYER_DECISIONS:
        _hand_over_if_needed(draft, seat)
    return draft.freeze(), draft.events


# --- validation --------------------------------------------------------------------------


def _command_kind(command) -> str:
    if not isinstance(command, dict) or not isinstance(command.get("type"), str):
        raise IllegalCommand("bad_command", "a command is an object with a string 'type'")
    kind = command["type"]
    if kind not in _HANDLERS:
        raise IllegalCommand("unknown_command", f"there is no command {kind!r}")
    return kind


def _check_sender(kind: str, seat) -> None:
    if kind in SERVER_COMMANDS:
        if seat is not None:
            raise IllegalCommand("server_only", f"only the server may send {kind!r}")
    elif seat not in (0, 1) and not (kind in SERVER_OR_PLAYER_COMMANDS and seat is None):
        raise IllegalCommand("not_a_player", "only a seated player may send this command")


def _check_time(state: MatchState, now_ms) -> None:
    if type(now_ms) is not int:
        raise IllegalCommand("bad_time", "the arrival time is whole milliseconds")
    if state.last_ms is not None and now_ms < state.last_ms:
        raise IllegalCommand("time_went_backwards", "the arrival time is before the last event")


def _check_not_over(state: MatchState) -> None:
    if state.result is not None:
        # A void too: a result, once reached, stands (RULES §7: a finished match is never voided).
        raise IllegalCommand("match_over", "the match is over")


def _require_decision(d: Draft, seat: int, phase: str, now_ms: int) -> None:
    if d.phase in (READY, HANDOVER):
        raise IllegalCommand("clocks_standing", "the clocks stand: press Start first")
    if d.phase == SETTLED:
        raise IllegalCommand("round_over", "the round is over")
    if seat != d.decider:
        raise IllegalCommand("not_your_turn", "it is not your turn")
    if d.clock.is_late(d.turn_start_ms, d.banks_ms[seat], now_ms):
        raise IllegalCommand("time_over", "your time ran out before this command arrived")
    if d.phase != phase:
        if d.phase == AUCTION:
            raise IllegalCommand("auction_on", "the auction comes first: offer, accept or waive")
        raise IllegalCommand("no_auction", "there is no auction now: play a tile or draw")


def _parse_place(raw) -> Place | None:
    if raw is None:
        return None
    if not isinstance(raw, dict) or raw.get("side") not in SIDES:
        raise IllegalCommand(
            "bad_command", "a place is {'tile': [a, b], 'side': one of " + ", ".join(SIDES) + "}"
        )
    return (_parse_tile(raw.get("tile")), raw["side"])


def _parse_tile(raw) -> Tile:
    try:
        return parse_tile(raw)
    except ValueError:
        raise IllegalCommand("bad_command", "a tile is [a, b] with halves from 0 to 6") from None


# --- shared steps ------------------------------------------------------------------------


def _other(seat: int) -> int:
    return 1 - seat


def _charge(d: Draft, seat: int, now_ms: int) -> None:
    """Pay for the decision that ends now: the delay is free, the rest comes from the bank."""
    banks = list(d.banks_ms)
    banks[seat] = d.clock.bank_after(d.turn_start_ms, banks[seat], now_ms)
    d.banks_ms = (banks[0], banks[1])


def _move_points(d: Draft, payer: int, amount: int) -> int:
    """Move up to ``amount`` from ``payer`` to the other player; returns what moved (RULES §1)."""
    moved = min(amount, d.balances[payer])
    balances = list(d.balances)
    balances[payer] -= moved
    balances[_other(payer)] += moved
    d.balances = (balances[0], balances[1])
    return moved


def _finish(d: Draft, winner: int | None, reason: str) -> None:
    d.result = Result(winner, reason)
    d.phase = FINISHED
    d.decider = None
    d.drawn = None


def _can_play(d: Draft, seat: int) -> bool:
    layout = d.layout
    return not layout.placements or layout.fits_any(d.hands[seat])


def _with_hand(d: Draft, seat: int, hand: tuple[Tile, ...]) -> None:
    d.hands = (hand, d.hands[1]) if seat == 0 else (d.hands[0], hand)


def _hand_over_if_needed(d: Draft, actor: int) -> None:
    """Pass-and-play: when the decision moves to the other seat, hide the hands and stop the
    clocks until that player reveals their tiles."""
    if d.phase in (AUCTION, PLAY) and d.decider != actor:
        d.resume_phase = d.phase
        d.phase = HANDOVER


# --- the turn ----------------------------------------------------------------------------


def _begin_turn(d: Draft, seat: int, now_ms: int) -> None:
    d.decider = seat
    d.turn_start_ms = now_ms
    d.drawn = None
    if not d.boneyard and not _can_play(d, seat):
        _mandatory_pass(d, seat, now_ms)


def _mandatory_pass(d: Draft, seat: int, now_ms: int) -> None:
    """Made by the engine itself; time already used drawing in this turn stays charged."""
    _charge(d, seat, now_ms)
    d.emit("pass", seat, now_ms, {"banks_ms": list(d.banks_ms), "auto": True})
    d.passes += 1
    if d.passes == 2:
        _settle_block(d, now_ms)
    else:
        _begin_turn(d, _other(seat), now_ms)


def _play(d: Draft, seat: int, command: dict, now_ms: int) -> None:
    _require_decision(d, seat, PLAY, now_ms)
    tile = _parse_tile(command.get("tile"))
    place = _parse_place(command.get("place"))
    hand = d.hands[seat]
    if tile not in hand:
        raise IllegalCommand("tile_not_in_hand", f"{list(tile)} is not in your hand")
    index = hand.index(tile)
    if d.drawn is not None and tile != d.drawn:
        raise IllegalCommand("must_play_drawn", f"you must play the tile you drew, {list(d.drawn)}")
    d.layout = _placed(d, tile, place)
    _charge(d, seat, now_ms)
    _with_hand(d, seat, hand[:index] + hand[index + 1 :])
    d.forced_tile = None
    d.drawn = None
    d.passes = 0
    opponent = _other(seat)
    ends = d.layout.end_total()
    points = _move_points(d, opponent, ends) if ends > 0 and ends % 5 == 0 else 0
    d.emit(
        "play",
        seat,
        now_ms,
        {
            "tile": list(tile),
            "place": None if place is None else {"tile": list(place[0]), "side": place[1]},
            "points": points,
            "ends": ends,
            "balances": list(d.balances),
            "banks_ms": list(d.banks_ms),
        },
    )
    if d.balances[opponent] == 0:
        _finish(d, seat, POINTS)
    elif not d.hands[seat]:
        _settle_domino(d, seat, now_ms)
    else:
        _begin_turn(d, opponent, now_ms)


def _placed(d: Draft, tile: Tile, place: Place | None) -> Layout:
    layout = d.layout
    if layout.is_empty:
        if place is not None:
            raise IllegalCommand("opening_has_no_place", "the opening tile is played with no place")
        if d.forced_tile is not None and tile != d.forced_tile:
            raise IllegalCommand(
                "wrong_opening_tile",
                f"this round opens by rank: you must open with {list(d.forced_tile)}",
            )
        return layout.open_with(tile)
    if place is None:
        raise IllegalCommand("place_required", "say where the tile goes")
    value = layout.open_value(place)
    if value is None:
        raise IllegalCommand("place_not_open", f"{list(place[0])} {place[1]} is not an open place")
    if value not in tile:
        raise IllegalCommand(
            "halves_do_not_match", f"{list(tile)} has no {value} to match that place"
        )
    return layout.play(tile, place, value)


def _draw(d: Draft, seat: int, command: dict, now_ms: int) -> None:
    _require_decision(d, seat, PLAY, now_ms)
    if d.drawn is not None:
        raise IllegalCommand("must_play_drawn", f"you must play the tile you drew, {list(d.drawn)}")
    if _can_play(d, seat):
        raise IllegalCommand("can_play", "you can play, so you may not draw")
    tile = d.boneyard[0]
    d.boneyard = d.boneyard[1:]
    _with_hand(d, seat, tuple(sorted(d.hands[seat] + (tile,))))
    d.emit("draw", seat, now_ms, {"tile": list(tile)})
    if d.layout.fits(tile):
        d.drawn = tile
    elif not d.boneyard:
        _mandatory_pass(d, seat, now_ms)


# --- round ends (RULES §5) ---------------------------------------------------------------


def round_to_5(pip_sum: int) -> int:
    """The nearest multiple of 5: remainders 1 and 2 round down, 3 and 4 round up."""
    return (pip_sum + 2) // 5 * 5


def _settle_domino(d: Draft, seat: int, now_ms: int) -> None:
    d.next_jockey = seat
    _settle(d, now_ms, end="domino", winner=seat, points=0)


def _settle_block(d: Draft, now_ms: int) -> None:
    pips0, pips1 = pips(d.hands[0]), pips(d.hands[1])
    if pips0 == pips1:
        _settle(d, now_ms, end="block", winner=None, points=0)
        return
    winner = 0 if pips0 < pips1 else 1
    loser = _other(winner)
    points = _move_points(d, loser, round_to_5(pips(d.hands[loser])))
    _settle(d, now_ms, end="block", winner=winner, points=points)
    if d.balances[loser] == 0:
        _finish(d, winner, POINTS)


def _settle(d: Draft, now_ms: int, *, end: str, winner: int | None, points: int) -> None:
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
    # A copy: the event itself goes to the caller, who may add fields to it.
    d.settlement = {**settle, "pips": list(settle["pips"]), "balances": list(settle["balances"])}


# --- start, hand-over ---------------------------------------------------------------------


def _start(d: Draft, seat, command: dict, now_ms: int) -> None:
    if d.phase == HANDOVER:
        d.emit("start", seat, now_ms)
        d.phase = d.resume_phase
        d.resume_phase = None
        d.turn_start_ms = now_ms
        return
    if d.phase == SETTLED:
        raise IllegalCommand("round_over", "the round is over; the next one is not dealt yet")
    if d.phase != READY:
        raise IllegalCommand("already_started", "the clocks are already running")
    d.emit("start", seat, now_ms)
    first = first_to_act(d)
    if d.opening == "auction":
        d.phase = AUCTION
        d.auction = Auction()
        _begin_auction_turn(d, first, now_ms)
    else:
        d.phase = PLAY
        d.forced_tile = rank_opening_tile(d.hands)
        _begin_turn(d, first, now_ms)


def rank_opening_tile(hands) -> Tile:
    """The tile that must open a rank round: the highest double, else the heaviest tile."""
    return max(hands[0] + hands[1], key=opening_rank)


def first_to_act(state) -> int:
    """Who decides first once the clocks run: in a hand-over the waiting player; in an auction
    the jockey's opponent; otherwise the holder of the rank-opening tile."""
    if state.phase == HANDOVER:
        return state.decider
    if state.opening == "auction":
        return _other(state.jockey)
    return 0 if rank_opening_tile(state.hands) in state.hands[0] else 1


# --- the auction (RULES §6) ----------------------------------------------------------------


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


def _offer(d: Draft, seat: int, command: dict, now_ms: int) -> None:
    _require_decision(d, seat, AUCTION, now_ms)
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
    _charge(d, seat, now_ms)
    d.auction = Auction(amount, seat)
    d.emit("offer", seat, now_ms, {"amount": amount, "banks_ms": list(d.banks_ms)})
    _begin_auction_turn(d, _other(seat), now_ms)


def _accept(d: Draft, seat: int, command: dict, now_ms: int) -> None:
    _require_decision(d, seat, AUCTION, now_ms)
    if d.auction.offer is None:
        raise IllegalCommand("nothing_to_accept", "there is no offer to accept: offer or waive")
    _charge(d, seat, now_ms)
    _resolve_accept(d, seat, now_ms, auto=False)


def _waive(d: Draft, seat: int, command: dict, now_ms: int) -> None:
    _require_decision(d, seat, AUCTION, now_ms)
    if d.auction.offer is not None:
        raise IllegalCommand("cannot_waive", "an offer stands: accept it or raise")
    _charge(d, seat, now_ms)
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
    paid = _move_points(d, payer, net_payment(d.jockey, payer, d.auction.offer))
    d.emit("accept", seat, now_ms, _decision_fields(d, auto, paid=paid))
    if d.balances[payer] == 0:
        _finish(d, seat, POINTS)
    else:
        _begin_opening(d, payer, now_ms)


def _resolve_waive(d: Draft, seat: int, now_ms: int, *, auto: bool) -> None:
    d.emit("waive", seat, now_ms, _decision_fields(d, auto))
    _begin_opening(d, d.jockey, now_ms)


def _begin_opening(d: Draft, opener: int, now_ms: int) -> None:
    """The auction's winner opens with any tile; the jockey discount has expired."""
    d.phase = PLAY
    _begin_turn(d, opener, now_ms)


# --- the end of the match ------------------------------------------------------------------


def _resign(d: Draft, seat: int, command: dict, now_ms: int) -> None:
    d.emit("resign", seat, now_ms)
    _finish(d, _other(seat), RESIGN)


def _expire(d: Draft, seat, command: dict, now_ms: int) -> None:
    """The server's timeout (or abandonment) of the player whose clock has run out."""
    if d.phase not in (AUCTION, PLAY):
        raise IllegalCommand("clock_not_running", "no clock is running")
    loser = d.decider
    if not d.clock.is_late(d.turn_start_ms, d.banks_ms[loser], now_ms):
        raise IllegalCommand("not_expired", "the deadline has not been reached")
    banks = list(d.banks_ms)
    banks[loser] = 0
    d.banks_ms = (banks[0], banks[1])
    d.emit(command["type"], loser, now_ms, {"banks_ms": banks})
    _finish(d, _other(loser), TIME if command["type"] == "timeout" else ABANDON)


def _void(d: Draft, seat, command: dict, now_ms: int) -> None:
    why = command.get("why")
    if not isinstance(why, str) or not why:
        raise IllegalCommand("bad_command", "a void says why")
    d.emit("void", None, now_ms, {"why": why})
    _finish(d, None, VOID)


_HANDLERS = {
    "contribute": contribute,
    "start": _start,
    "play": _play,
    "draw": _draw,
    "offer": _offer,
    "accept": _accept,
    "waive": _waive,
    "resign": _resign,
    "timeout": _expire,
    "abandon": _expire,
    "void": _void,
}

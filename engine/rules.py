"""The one entry point for change: ``apply(state, seat, command, now_ms)``.

Commands are JSON-like dicts. Validation runs in a fixed order (is the command known and well
formed, who may send it, is time moving forward, is the match over, is a decision late, then
the rules of the command); the first failure raises ``IllegalCommand`` and the given state is
untouched, since states are frozen. A decision that arrives after its sender's deadline is not
an error but a result: ``Flagged``, the match lost on time at the deadline (as lila's
``MovePlayer`` answers ``Flagged``). The rules themselves live in ``auction``, ``play`` and
``settlement``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple

from . import auction, play
from .clock import ClockConfig
from .errors import IllegalCommand
from .fairness import check_dealing, contribute
from .layout import Layout
from .shuffle import Deal
from .state import (
    ABANDON,
    AUCTION,
    CLOCK_RUNNING_PHASES,
    HANDOVER,
    PLAY,
    READY,
    RESIGN,
    SETTLED,
    TIME,
    VOID,
    Draft,
    MatchState,
)
from .steps import finish, other
from .tiles import Tile, opening_rank

PLAYER_DECISIONS = ("play", "draw", "offer", "accept", "waive")
SERVER_COMMANDS = ("timeout", "abandon", "void")
# Sent by a player, or by the server on a player's behalf when it is overdue.
SERVER_OR_PLAYER_COMMANDS = ("start", "contribute")
# Either player may send these whenever the match is live, so one may reach the server just
# before the other's and be applied after it: it is then taken at that one's time. No clock of
# its sender is charged for it, and a record's times never go back.
AT_ANY_TIME = ("contribute", "resign")


class Applied(NamedTuple):
    """The command was applied: the new state and the events it produced."""

    state: MatchState
    events: list[dict]


class Flagged(NamedTuple):
    """The decision reached the server after its sender's deadline: it was not applied, and its
    sender lost on time at the deadline; ``events`` hold that timeout."""

    state: MatchState
    events: list[dict]


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


def apply(state: MatchState, seat: int | None, command: dict, now_ms: int) -> Applied | Flagged:
    """Apply one command sent by ``seat`` (0, 1, or None for the server) that reached the server
    at ``now_ms``. Returns ``Applied`` or ``Flagged`` (both unpack as ``state, events``; events
    numbered from ``state.seq + 1``); raises ``IllegalCommand`` and changes nothing if the
    command is illegal."""
    kind = _command_kind(command)
    _check_sender(kind, seat)
    if kind in AT_ANY_TIME:
        now_ms = _not_before_the_last_event(state, now_ms)
    _check_time(state, now_ms)
    _check_not_over(state)
    check_dealing(state, kind)
    if kind in PLAYER_DECISIONS and is_late(state, seat, now_ms):
        return Flagged(*apply(state, None, {"type": "timeout"}, state.deadline_ms))
    holder = device_holder(state) if kind == "start" else seat
    draft = Draft(state)
    _HANDLERS[kind](draft, seat, command, now_ms)
    if state.hotseat and (kind in PLAYER_DECISIONS or kind == "start"):
        _hand_over_if_needed(draft, holder)
    return Applied(draft.freeze(), draft.events)


def is_late(state: MatchState, seat: int | None, now_ms: int) -> bool:
    """Has the clock of ``seat``, which is to decide, run out by ``now_ms``?"""
    return (
        state.phase in CLOCK_RUNNING_PHASES
        and seat == state.decider
        and state.clock.is_late(state.turn_start_ms, state.banks_ms[seat], now_ms)
    )


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


def _not_before_the_last_event(state: MatchState, now_ms):
    if type(now_ms) is int and state.last_ms is not None:
        return max(now_ms, state.last_ms)
    return now_ms


def _check_time(state: MatchState, now_ms) -> None:
    if type(now_ms) is not int:
        raise IllegalCommand("bad_time", "the arrival time is whole milliseconds")
    if state.last_ms is not None and now_ms < state.last_ms:
        raise IllegalCommand("time_went_backwards", "the arrival time is before the last event")


def _check_not_over(state: MatchState) -> None:
    if state.result is not None:
        # A void too: a result, once reached, stands (RULES §7: a finished match is never voided).
        raise IllegalCommand("match_over", "the match is over")


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
        auction.begin_auction(d, first, now_ms)
    else:
        d.phase = PLAY
        d.forced_tile = rank_opening_tile(d.hands)
        play.begin_turn(d, first, now_ms)


def _hand_over_if_needed(d: Draft, holder: int) -> None:
    """Pass-and-play: when the decision moves away from the seat holding the device (after the
    holder's decision, or after a Start whose automatic decisions hand the move on), hide the
    hands and stop the clocks until the next player reveals their tiles."""
    if d.phase in (AUCTION, PLAY) and d.decider != holder:
        d.resume_phase = d.phase
        d.phase = HANDOVER


def rank_opening_tile(hands) -> Tile:
    """The tile that must open a rank round: the highest double, else the heaviest tile."""
    return max(hands[0] + hands[1], key=opening_rank)


def first_to_act(state) -> int:
    """Who decides first once the clocks run: in a hand-over the waiting player; in an auction
    the jockey's opponent; otherwise the holder of the rank-opening tile."""
    if state.phase == HANDOVER:
        return state.decider
    if state.opening == "auction":
        return other(state.jockey)
    return 0 if rank_opening_tile(state.hands) in state.hands[0] else 1


def starter(state: MatchState) -> int | None:
    """The seat that presses Start / Continue (or reveals, in pass-and-play) now, or None while
    no one may."""
    return first_to_act(state) if state.phase in (READY, HANDOVER) else None


def device_holder(state: MatchState) -> int | None:
    """Pass-and-play: whose tiles the shared device may show now: the player to act, or the one
    who presses Start (hidden anyway during a hand-over, until they reveal)."""
    if state.decider is not None:
        return state.decider
    return first_to_act(state) if state.phase == READY else None


# --- the end of the match ------------------------------------------------------------------


def _resign(d: Draft, seat: int, command: dict, now_ms: int) -> None:
    d.emit("resign", seat, now_ms)
    finish(d, other(seat), RESIGN)


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
    finish(d, other(loser), TIME if command["type"] == "timeout" else ABANDON)


def _void(d: Draft, seat, command: dict, now_ms: int) -> None:
    why = command.get("why")
    if not isinstance(why, str) or not why:
        raise IllegalCommand("bad_command", "a void says why")
    d.emit("void", None, now_ms, {"why": why})
    finish(d, None, VOID)


_HANDLERS = {
    "contribute": contribute,
    "start": _start,
    "play": play.play,
    "draw": play.draw,
    "offer": auction.offer,
    "accept": auction.accept,
    "waive": auction.waive,
    "resign": _resign,
    "timeout": _expire,
    "abandon": _expire,
    "void": _void,
}

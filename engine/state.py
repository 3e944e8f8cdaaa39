"""The match state: one frozen value; ``apply`` returns a new one and never changes the old."""

from __future__ import annotations

from dataclasses import dataclass, field

from .clock import ClockConfig
from .layout import Layout
from .shuffle import Deal
from .tiles import Tile

START_BALANCE = 150

# Phases of a match.
DEALING = "dealing"  # committed; waits for both players' contributions (engine/fairness.py)
READY = "ready"  # dealt; clocks stand until Start / Continue
AUCTION = "auction"  # the auction for the opening (after a domino)
PLAY = "play"  # tiles are being played
HANDOVER = "handover"  # pass-and-play: clocks stand until the next player reveals their tiles
SETTLED = "settled"  # the round is over; the next deal is due
FINISHED = "finished"  # the match is over (won, or void)

CLOCK_RUNNING_PHASES = (AUCTION, PLAY)

# Results.
POINTS, TIME, RESIGN, ABANDON, VOID = "points", "time", "resign", "abandon", "void"


@dataclass(frozen=True)
class Auction:
    offer: int | None = None
    offerer: int | None = None


@dataclass(frozen=True)
class Result:
    winner: int | None
    reason: str


@dataclass(frozen=True)
class MatchState:
    clock: ClockConfig
    hotseat: bool
    round_no: int
    phase: str
    deal: Deal
    opening: str  # "rank" | "auction"
    jockey: int | None
    hands: tuple[tuple[Tile, ...], tuple[Tile, ...]]
    boneyard: tuple[Tile, ...]
    layout: Layout = field(default_factory=Layout)
    balances: tuple[int, int] = (START_BALANCE, START_BALANCE)
    banks_ms: tuple[int, int] = (0, 0)
    decider: int | None = None
    turn_start_ms: int | None = None
    resume_phase: str | None = None  # the phase a pass-and-play hand-over returns to
    forced_tile: Tile | None = None  # the rank opening's tile, while it is due
    drawn: Tile | None = None  # a drawn tile that fits and so must be played
    passes: int = 0  # mandatory passes in a row
    auction: Auction | None = None
    next_jockey: int | None = None
    seq: int = 0  # number of the last event
    last_ms: int | None = None  # time of the last event
    result: Result | None = None
    settlement: dict | None = None  # the last round's settle event, for the settlement panel

    @property
    def deadline_ms(self) -> int | None:
        if self.phase not in CLOCK_RUNNING_PHASES:
            return None
        return self.clock.deadline_ms(self.turn_start_ms, self.banks_ms[self.decider])

    @property
    def round_over(self) -> bool:
        return self.phase in (SETTLED, FINISHED)


class Draft:
    """A mutable copy of a state, used inside one ``apply`` call and then frozen."""

    def __init__(self, state: MatchState):
        self.__dict__.update(state.__dict__)
        self.events: list[dict] = []

    def freeze(self) -> MatchState:
        """The new state; the draft is spent (its fields now belong to the frozen state)."""
        fields = self.__dict__
        self.__dict__ = {"events": fields.pop("events")}
        frozen = object.__new__(MatchState)
        object.__setattr__(frozen, "__dict__", fields)
        return frozen

    def emit(self, kind: str, seat: int | None, now_ms: int, extra: dict | None = None) -> dict:
        """Record an event; each has ``seq``, ``type``, ``seat`` and ``at_ms`` (ARCHIVE.md)."""
        self.seq += 1
        self.last_ms = now_ms
        event = {"seq": self.seq, "type": kind, "seat": seat, "at_ms": now_ms}
        if extra:
            event.update(extra)
        self.events.append(event)
        return event

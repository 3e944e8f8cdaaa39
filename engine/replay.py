"""Replaying a match record through the rules: the same state as playing it, or the list of
every rule the record breaks.

Each problem says what it is about: the rules (the events replayed on the recorded tiles), the
fairness proof (the seed against its commitment, the tiles against the seed and the players'
contributions), or what could not be checked at all (a round whose tiles are withheld).
"""

from __future__ import annotations

from dataclasses import dataclass

from .clock import ClockConfig
from .errors import IllegalCommand
from .fairness import begin_dealing, contributions_json
from .record import status_of
from .rules import Flagged, apply, new_match, next_round
from .shuffle import (
    Deal,
    commitment_of,
    deal_from_seed,
    deal_with_contributions,
    server_contribution,
)
from .state import SETTLED, MatchState
from .tiles import FULL_SET, HAND_SIZE, parse_tile

AUTOMATIC = ("pass", "settle")

# What a problem is about.
RULES, FAIRNESS, UNCHECKED = "rules", "fairness", "unchecked"

# The fields ARCHIVE.md requires of each event type beyond those of every event; any other
# field the engine would write is checked only when the record has it.
EVERY_EVENT = ("seq", "type", "seat", "at_ms")
REQUIRED_FIELDS = {
    "offer": ("amount",),
    "accept": ("paid", "balances"),
    "waive": ("balances",),
    "play": ("tile", "place", "ends", "points", "balances", "banks_ms"),
    "draw": ("tile",),
    "settle": ("end", "pips", "points", "balances"),
    "void": ("why",),
    "contribute": ("value", "from_player"),
}


@dataclass(frozen=True)
class Problem:
    round: int | None
    seq: int | None
    seat: int | None
    message: str
    about: str = RULES

    def __str__(self) -> str:
        where = []
        if self.round is not None:
            where.append(f"round {self.round}")
        if self.seq is not None:
            where.append(f"event {self.seq}")
        if self.seat is not None:
            where.append(f"seat {self.seat}")
        return f"{', '.join(where) or 'match'}: {self.message}"


class ReplayError(Exception):
    def __init__(self, problems: list[Problem]):
        super().__init__("; ".join(map(str, problems)))
        self.problems = problems


class _Stop(Exception):
    """The record cannot be followed any further."""


def replay(record: dict) -> MatchState:
    """The state the record leads to; raises ReplayError if it breaks any rule."""
    state, problems = audit(record)
    if problems:
        raise ReplayError(problems)
    return state


def audit(record: dict, on_step=None) -> tuple[MatchState | None, list[Problem]]:
    """Replay the record and collect every rule it breaks (after an illegal command the rest of
    the record cannot be followed, so the audit stops there). ``on_step(round_no, event, state)``
    sees the state after each deal (event None) and after each event (the replay viewer's
    frames)."""
    auditor = _Auditor(record, on_step or _ignore_step)
    try:
        auditor.run()
    except _Stop:
        pass
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        auditor.problem(f"malformed record: {exc!r}")
    return auditor.state, auditor.problems


def command_of(event: dict) -> tuple[int | None, dict]:
    """The command (and its sender) that a recorded event stands for."""
    kind = event["type"]
    if kind == "play":
        return event["seat"], {"type": "play", "tile": event["tile"], "place": event["place"]}
    if kind == "offer":
        return event["seat"], {"type": "offer", "amount": event["amount"]}
    if kind == "contribute":
        if not event["from_player"]:  # the server's stand-in
            return None, {"type": "contribute", "drawn": True}
        return event["seat"], {"type": "contribute", "value": event["value"]}
    if kind in ("timeout", "abandon"):
        return None, {"type": kind}
    if kind == "void":
        return None, {"type": "void", "why": event.get("why")}
    return event["seat"], {"type": kind}


def _ignore_step(round_no, event, state) -> None:
    """The default ``on_step``: nothing to see."""


class _Auditor:
    def __init__(self, record: dict, on_step):
        self.record = record
        self.on_step = on_step
        self.state: MatchState | None = None
        self.problems: list[Problem] = []
        self.round_no: int | None = None

    def problem(self, message: str, event: dict | None = None, seat=None, about=RULES) -> None:
        seq = event.get("seq") if isinstance(event, dict) else None
        self.problems.append(Problem(self.round_no, seq, seat, message, about))

    def run(self) -> None:
        record = self.record
        clock = ClockConfig(record["clock"]["bank_ms"], record["clock"]["delay_ms"])
        for round_record in record["rounds"]:
            self.round_no = round_record["number"]
            deal = self._deal(round_record)
            if self.state is None:
                self.state = new_match(deal, clock=clock, hotseat=record["mode"] == "hotseat")
            elif self.state.phase != SETTLED:
                self.problem("a new round is dealt before the previous one ended")
                raise _Stop
            else:
                self.state = next_round(self.state, deal)
            if "contributions" in round_record:
                self.state = begin_dealing(self.state)
            self._header(round_record)
            self._fairness(round_record, deal)
            self.on_step(self.round_no, None, self.state)
            self._events(round_record["events"])
            self._contributions_as_sent(round_record)
            if self.state.round_over and round_record.get("seed") is None:
                self.problem("the round is over but its seed was not revealed", about=FAIRNESS)
        self.round_no = None
        if self.state is None:
            self.problem("the record has no rounds")
            raise _Stop
        self._result()

    def _deal(self, round_record: dict) -> Deal:
        """The recorded tiles, taken on trust for the rules (``_fairness`` checks them)."""
        seed = round_record.get("seed")
        commitment = round_record.get("commitment")
        if round_record.get("hands") is None:
            if "contributions" in round_record and round_record["contributions"] is None:
                # Not dealt yet (or never: the match ended while the round waited).
                return Deal(((), ()), (), commitment, seed)
            self.problem(
                "the round's hands are withheld, so the record cannot be checked further",
                about=UNCHECKED,
            )
            raise _Stop
        hands = tuple(tuple(sorted(parse_tile(t) for t in hand)) for hand in round_record["hands"])
        boneyard = tuple(parse_tile(t) for t in round_record["boneyard"])
        if len(hands) != 2 or any(len(h) != HAND_SIZE for h in hands):
            self.problem("each player is dealt exactly 7 tiles")
            raise _Stop
        if sorted(hands[0] + hands[1] + boneyard) != list(FULL_SET):
            self.problem("the hands and the boneyard are not the double-six set")
            raise _Stop
        return Deal(hands, boneyard, commitment, seed)

    def _fairness(self, round_record: dict, deal: Deal) -> None:
        """The proof: the revealed seed matches its commitment, and the tiles follow from it
        (and from the players' contributions, in a round that has them)."""
        seed, commitment = deal.seed, deal.commitment
        if seed is None:
            return
        if commitment_of(seed) != commitment:
            self.problem(f"the seed does not match the commitment {commitment}", about=FAIRNESS)
        if deal.is_sealed:
            return
        if "contributions" not in round_record:
            dealt, source = deal_from_seed(seed), "the seed"
        else:
            contributions = round_record["contributions"]
            self._stand_ins(contributions, commitment)
            values = [contribution["value"] for contribution in contributions]
            dealt = deal_with_contributions(seed, *values, self.round_no)
            source = "the seed and the contributions"
        if (dealt.hands, dealt.boneyard) != (deal.hands, deal.boneyard):
            self.problem(f"the deal does not follow from {source}", about=FAIRNESS)

    def _stand_ins(self, contributions: list[dict], commitment: str) -> None:
        for contribution in contributions:
            seat = contribution["seat"]
            if not contribution["from_player"] and contribution["value"] != server_contribution(
                commitment, seat
            ):
                self.problem(
                    "the server's stand-in contribution is not the one its commitment fixes",
                    seat=seat,
                    about=FAIRNESS,
                )

    def _contributions_as_sent(self, round_record: dict) -> None:
        """The round's contributions are those its ``contribute`` events carried."""
        recorded = round_record.get("contributions")
        sent = contributions_json(self.state.deal, reveal_values=True)
        if recorded is not None and recorded != sent:
            self.problem(
                f"contributions: the contribute events sent {sent!r}, recorded {recorded!r}",
                about=FAIRNESS,
            )

    def _header(self, round_record: dict) -> None:
        for key, expected in (("opening", self.state.opening), ("jockey", self.state.jockey)):
            if round_record.get(key) != expected:
                self.problem(f"{key}: expected {expected!r}, recorded {round_record.get(key)!r}")

    def _events(self, events: list[dict]) -> None:
        pending: list[dict] = []
        for event in events:
            if not isinstance(event, dict):
                self.problem(f"an event is not an object: {event!r}")
                raise _Stop
            if pending:
                self._compare(pending.pop(0), event)
                self.on_step(self.round_no, event, self.state)
                continue
            if event["type"] in AUTOMATIC or event.get("auto"):
                self.problem(
                    f"unexpected {event['type']}: the rules did not call for it here",
                    event,
                    event.get("seat"),
                )
                raise _Stop
            seat, command = command_of(event)
            try:
                result = apply(self.state, seat, command, event["at_ms"])
            except IllegalCommand as exc:
                self.problem(
                    f"{event['type']} is illegal here: {exc.message} ({exc.code})",
                    event,
                    event.get("seat"),
                )
                raise _Stop from None
            if isinstance(result, Flagged):
                self.problem(
                    f"{event['type']} came after its player's deadline ({self.state.deadline_ms})",
                    event,
                    event.get("seat"),
                )
                raise _Stop
            self.state, produced = result
            self._compare(produced[0], event)
            pending = produced[1:]
            self.on_step(self.round_no, event, self.state)
        if pending:
            self.problem(
                f"missing {pending[0]['type']} event (expected {pending[0]})",
                None,
                pending[0]["seat"],
            )
            raise _Stop

    def _compare(self, expected: dict, recorded: dict) -> None:
        required = EVERY_EVENT + REQUIRED_FIELDS.get(expected["type"], ())
        for key, value in expected.items():
            if key not in recorded and key not in required:
                continue
            found = recorded.get(key, "(absent)")
            if found != value:
                self.problem(
                    f"{expected['type']}: {key} should be {value!r}, recorded {found!r}",
                    recorded,
                    expected["seat"],
                )

    def _result(self) -> None:
        state = self.state
        result = (
            None
            if state.result is None
            else {"winner": state.result.winner, "reason": state.result.reason}
        )
        for key, expected in (
            ("result", result),
            ("balances", list(state.balances)),
            ("status", status_of(state)),
        ):
            if self.record.get(key) != expected:
                self.problem(f"{key}: expected {expected!r}, recorded {self.record.get(key)!r}")

"""The match record of ARCHIVE.md, kept in step with a match as it is played.

The record holds the deals and the accepted events; everything else follows by replaying them.
A round's seed is revealed only once that round is over. A round dealt from the players'
contributions has a ``contributions`` entry: None while it waits for them, then both, written
with the tiles when the round is dealt.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime

from .fairness import contributions_json
from .shuffle import Deal
from .state import VOID, MatchState


def iso_timestamp(ms: int) -> str:
    """A time in ms since the epoch as the record writes it: ISO 8601 in UTC with a Z."""
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat().replace("+00:00", "Z")


def tiles_json(tiles) -> list[list[int]]:
    return [list(tile) for tile in tiles]


def round_header(state: MatchState) -> dict:
    return {
        "number": state.round_no,
        "opening": state.opening,
        "commitment": state.deal.commitment,
        "seed": None,
        "jockey": state.jockey,
        **deal_fields(state.deal),
        "events": [],
    }


def deal_fields(deal: Deal) -> dict:
    """The round's tiles (None until it is dealt) and, if it has them, its contributions."""
    if deal.is_sealed:
        fields = {"hands": None, "boneyard": None}
    else:
        fields = {
            "hands": [tiles_json(deal.hands[0]), tiles_json(deal.hands[1])],
            "boneyard": tiles_json(deal.boneyard),
        }
    if deal.contributions is not None:
        fields["contributions"] = (
            None if deal.is_sealed else contributions_json(deal, reveal_values=True)
        )
    return fields


def new_record(state: MatchState, *, match_id, mode, rated, created_at, players) -> dict:
    """The record of a match whose first round ``state`` has just dealt. ``players`` are dicts with
    at least ``seat`` and ``username``."""
    record = {
        "id": match_id,
        "mode": mode,
        "rated": rated,
        "status": status_of(state),
        "created_at": created_at,
        "clock": {"bank_ms": state.clock.bank_ms, "delay_ms": state.clock.delay_ms},
        "players": players,
        "result": None,
        "balances": list(state.balances),
        "rounds": [],
    }
    add_round(record, state)
    return record


def add_round(record: dict, state: MatchState) -> None:
    """Append the round ``state`` has just dealt."""
    record["rounds"].append(round_header(state))


def add_events(record: dict, state: MatchState, events: list[dict]) -> None:
    """Append the events that produced ``state``; reveal the seed and the result when due."""
    record["rounds"][-1]["events"].extend(events)
    update_header(record, state)


def header_changes(state: MatchState, events: list[dict]) -> bool:
    """Do the ``events`` that produced ``state`` change anything in the record but its events
    and balances: the round's tiles (dealt by a contribution), its seed (revealed when it is
    over) or the result? A store that keeps events apart writes its header only then."""
    return state.round_over or state.result is not None or _contributed(events)


def _contributed(events: list[dict]) -> bool:
    return any(event["type"] == "contribute" for event in events)


@dataclass(frozen=True)
class HeaderChange:
    """What ``update_header`` (and, after a round's end, ``add_round``) writes into a record,
    known without the record: fields of its last round and of the record itself, and the
    round added after it. A store that keeps the record whole can make the change where it is
    kept, without reading the record first."""

    last_round: dict
    record: dict
    added_round: dict | None = None


def header_change(state: MatchState, events: list[dict]) -> HeaderChange | None:
    """The change that the ``events`` which produced ``state`` make to the record, None if
    they change nothing in it but events and balances (``header_changes``). For a round
    over, the next round is still to be added (``add_round``)."""
    if not header_changes(state, events):
        return None
    # Dealt by these events: a contribution among them, and the round's tiles known now.
    return _change(state, dealt_now=_contributed(events) and not state.deal.is_sealed)


def with_round_added(change: HeaderChange, state: MatchState) -> HeaderChange:
    """``change`` (a round's end) followed by ``add_round`` of the next round ``state`` deals."""
    return replace(change, added_round=round_header(state))


def update_header(record: dict, state: MatchState) -> None:
    """Write into the record what ``state`` has made known beyond its events: the round's tiles
    and contributions once dealt, its seed once over, the balances, status and result."""
    current = record["rounds"][-1]
    change = _change(state, dealt_now=current["hands"] is None and not state.deal.is_sealed)
    current.update(change.last_round)
    record.update(change.record)


def _change(state: MatchState, *, dealt_now: bool) -> HeaderChange:
    last_round = deal_fields(state.deal) if dealt_now else {}
    if state.round_over:
        last_round["seed"] = state.deal.seed
    record = {"balances": list(state.balances), "status": status_of(state)}
    if state.result is not None:
        record["result"] = {"winner": state.result.winner, "reason": state.result.reason}
    return HeaderChange(last_round, record)


def status_of(state: MatchState) -> str:
    if state.result is None:
        return "waiting" if state.seq == 0 else "live"
    return "void" if state.result.reason == VOID else "finished"

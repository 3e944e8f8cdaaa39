"""A move costs the same in round 1 and deep into a match: the service appends the move's events
and never reads or rewrites the whole record on the way (the record is assembled when read)."""

from __future__ import annotations

import json
import random

import pytest
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext

import engine
from matches import services
from matches.models import Match, MatchEvent
from matches.selectors import match_record

LATE_ROUND = 12
MOVE_SQL_BYTES = 10_000  # the most one move may send to the database


def one_decision(table, rng) -> list[dict]:
    """The queries of the next decision in the round being played (dealing and Start first)."""
    table.play_until(lambda state: engine.starter(state) is None and state.phase != "dealing")
    state = table.state
    command = engine.GreedyBot().choose(state, state.decider, rng)
    table.now += 1_000
    with CaptureQueriesContext(connection) as queries:
        services.match_submit(
            match_id=table.match.pk, user=table.users[state.decider], command=command,
            arrival_ms=table.now,
        )  # fmt: skip
    table.match.refresh_from_db()
    return queries.captured_queries


def sql_bytes(queries) -> int:
    return sum(len(query["sql"]) for query in queries)


def test_a_move_late_in_a_match_costs_what_a_move_in_round_one_costs(table):
    rng = random.Random(7)
    early = one_decision(table, rng)
    table.play_until(lambda state: state.round_no >= LATE_ROUND, seed=3)
    assert not table.match.is_over, "the fixture's match ends before the late round: pick a seed"
    late = one_decision(table, rng)
    assert len(late) == len(early)
    # A move's SQL carries its events, the snapshot (~2 kB) and the last cseqs (at most 64 a
    # seat), never the record, which by now is many times that.
    record_bytes = len(json.dumps(match_record(table.match, withhold_live=False)))
    assert sql_bytes(late) < MOVE_SQL_BYTES < record_bytes / 3
    assert all("header" not in query["sql"] for query in late), "a move read or wrote the record"


def test_the_assembled_record_is_every_event_in_order_once(table):
    table.play_until(lambda state: state.round_no >= 3, seed=5)
    record = match_record(table.match, withhold_live=False)
    seqs = [event["seq"] for round_record in record["rounds"] for event in round_record["events"]]
    assert seqs == list(range(1, table.match.seq + 1))
    stored = MatchEvent.objects.filter(match=table.match).order_by("seq")
    assert [event.data for event in stored] == [
        event for round_record in record["rounds"] for event in round_record["events"]
    ]
    assert [event.round_number for event in stored] == [
        number
        for number, round_record in enumerate(record["rounds"], start=1)
        for _ in round_record["events"]
    ]
    # What the record says now is what replaying it says: it is the truth, not a copy.
    replayed = engine.replay(record)
    assert list(replayed.balances) == record["balances"] == table.match.balances
    assert replayed.seq == table.match.seq


def test_an_event_is_stored_once_per_match_and_number(table):
    first = MatchEvent.objects.filter(match=table.match).order_by("seq").first()
    with pytest.raises(IntegrityError), transaction.atomic():
        MatchEvent.objects.create(match=table.match, seq=first.seq, round_number=1, data=first.data)
    assert Match.objects.get(pk=table.match.pk).seq == table.match.seq


def test_a_match_that_ends_keeps_its_whole_record_in_one_piece(table):
    table.play_until(lambda state: state.round_no >= 2, seed=5)
    live = match_record(table.match, withhold_live=False)
    assert MatchEvent.objects.filter(match=table.match).count() == table.match.seq
    table.submit(0, {"type": "resign"}, after_ms=1_000)
    over = Match.objects.get(pk=table.match.pk)
    assert not MatchEvent.objects.filter(match=over).exists()
    folded = over.header  # read in one piece from now on, as the archive reads it
    assert [e["seq"] for r in folded["rounds"] for e in r["events"]] == list(range(1, over.seq + 1))
    assert folded["rounds"][:-1] == live["rounds"][:-1]  # the rounds already over, unchanged
    assert folded["result"] == {"winner": 1, "reason": "resign"} == over.record["result"]
    assert engine.audit(json.loads(json.dumps(over.record)))[1] == []

"""A player's move on PostgreSQL: read without the match's lock and written in one statement
only if nothing changed the match since (matches/services.py ``match_submit``). A change that
lands between the read and the write is never overwritten: the move is made again, under the
lock, on top of it."""

from __future__ import annotations

import random
import threading
import time

import pytest
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext

import engine
from matches import rows, services
from matches.models import Match, MatchEvent
from matches.selectors import match_state
from tests.support.dealing import contribution

postgresql_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="SQLite serialises every writer with its lock"
)


@postgresql_only
def test_a_move_is_one_read_and_one_write_and_takes_no_lock(table):
    table.start(after_ms=1_000)
    state = table.state
    command = engine.GreedyBot().choose(state, state.decider, random.Random(0))
    with CaptureQueriesContext(connection) as queries:
        services.match_submit(
            match_id=table.match.pk, user=table.users[state.decider], command=command,
            arrival_ms=table.now + 1_000,
        )  # fmt: skip
    statements = [q["sql"] for q in queries.captured_queries if "SAVEPOINT" not in q["sql"]]
    read, write = statements
    assert read.startswith("SELECT") and not read.endswith("FOR UPDATE"), read
    assert write.startswith("WITH updated AS (UPDATE"), write
    assert table.state.seq > state.seq


def commit_meanwhile(monkeypatch, change) -> list[int]:
    """Run ``change`` on another connection, committed, right after the next unlocked read of
    a match (between a command's read and its write); returns the seq each read saw."""
    seen, real_read = [], rows.read

    def read_then_change(match_id, *, lock):
        match = real_read(match_id, lock=lock)
        seen.append(match.seq)
        if not lock and len(seen) == 1:
            other = threading.Thread(target=_on_own_connection, args=(change,))
            other.start()
            other.join()
        return match

    monkeypatch.setattr(rows, "read", read_then_change)
    return seen


def _on_own_connection(change) -> None:
    try:
        change()
    finally:
        connections.close_all()


@postgresql_only
@pytest.mark.django_db(transaction=True)
def test_a_contribution_read_before_the_others_commit_is_made_again_on_top_of_it(
    dealing_table, monkeypatch
):
    table = dealing_table
    match_id = table.match.pk
    at = table.now + 100
    submit = services.match_submit
    seen = commit_meanwhile(
        monkeypatch,
        lambda: submit(match_id=match_id, user=table.users[1],
                       command=contribution(1, 1), arrival_ms=at),
    )  # fmt: skip
    submit(match_id=match_id, user=table.users[0], command=contribution(0, 1), arrival_ms=at)
    first_read, meanwhile, again = seen
    assert (meanwhile, again) == (first_read, first_read + 1)  # ours again, under the lock
    events = table.events()
    contributions = [(e["type"], e["seat"]) for e in events if e["type"] == "contribute"]
    assert contributions == [("contribute", 1), ("contribute", 0)]
    seqs = list(MatchEvent.objects.filter(match_id=match_id).values_list("seq", flat=True))
    assert seqs == sorted(set(seqs)) and seqs[-1] == Match.objects.get(pk=match_id).seq
    assert table.state.phase == "ready"  # both contributions taken: the round is dealt


@postgresql_only
@pytest.mark.django_db(transaction=True)
def test_a_move_read_before_a_resignation_commits_does_not_bring_the_match_back(table, monkeypatch):
    table.start(after_ms=1_000)
    state = table.state
    decider, other = state.decider, 1 - state.decider
    match_id, at = table.match.pk, table.now + 500
    commit_meanwhile(
        monkeypatch,
        lambda: services.match_submit(match_id=match_id, user=table.users[other],
                                      command={"type": "resign"}, arrival_ms=at),
    )  # fmt: skip
    with pytest.raises(services.CommandRejected) as refused:
        table.decide(after_ms=1_000)
    assert refused.value.code == "match_over"
    table.match.refresh_from_db()
    assert (table.match.winner, table.match.reason, table.match.status) == (
        decider, "resign", Match.Status.FINISHED,
    )  # fmt: skip
    assert not MatchEvent.objects.filter(match_id=match_id).exists()  # folded into the record


class _Clock:
    """The authority's time, shared by the players' threads: every command a little later."""

    def __init__(self, start_ms: int):
        self.ms, self.lock = start_ms, threading.Lock()

    def tick(self) -> int:
        with self.lock:
            self.ms += 50
            return self.ms


def _play_seat(match_id, seat: int, user, clock: _Clock, outcomes: list) -> None:
    """One player as fast as the service answers: contribute, press Start, decide; every
    command sent twice (the second is a resend of the same cseq), and a command out of turn
    now and then. Until the match is over. (A whole match made here saw about 7 of its ~500
    unlocked writes find the match changed since their read, and made them again.)"""
    rng, bot, cseq = random.Random(seat), engine.GreedyBot(), 0
    give_up_at = time.monotonic() + 240
    try:
        while time.monotonic() < give_up_at:
            state = match_state(Match.objects.get(pk=match_id))
            if state.result is not None:
                return
            if state.phase == engine.DEALING:
                if not engine.may_contribute(state, seat):
                    continue
                command = contribution(seat, state.round_no)
            elif engine.starter(state) is not None:
                if engine.starter(state) != seat:
                    continue
                command = {"type": "start"}
            elif state.decider == seat or rng.random() < 0.05:
                command = bot.choose(state, state.decider, rng)
            else:
                continue
            cseq += 1
            for _resend in range(2):
                try:
                    outcomes.append(services.match_submit(
                        match_id=match_id, user=user, command=command,
                        arrival_ms=clock.tick(), cseq=cseq,
                    ))  # fmt: skip
                except services.CommandRejected as refused:
                    outcomes.append(refused.code)
                    break
        outcomes.append(TimeoutError(f"seat {seat}: the match was not over in time"))
    except Exception as failure:  # noqa: BLE001 - the test reports it
        outcomes.append(failure)
    finally:
        connections.close_all()


@postgresql_only
@pytest.mark.django_db(transaction=True)
def test_two_players_sending_at_once_and_twice_play_a_whole_match_that_replays(
    dealing_table, monkeypatch
):
    table = dealing_table
    clock, outcomes, stale = _Clock(table.now), {0: [], 1: []}, []
    real_store = rows.store

    def counted_store(*args, **kwargs):
        try:
            return real_store(*args, **kwargs)
        except rows.Stale as found:
            stale.append(found)
            raise

    monkeypatch.setattr(rows, "store", counted_store)
    players = [
        threading.Thread(
            target=_play_seat,
            args=(table.match.pk, seat, table.users[seat], clock, outcomes[seat]),
        )
        for seat in (0, 1)
    ]
    for player in players:
        player.start()
    for player in players:
        player.join(timeout=300)
    assert not any(player.is_alive() for player in players)
    failures = [o for seat in (0, 1) for o in outcomes[seat] if isinstance(o, Exception)]
    assert failures == []
    table.match.refresh_from_db()
    assert table.match.status == Match.Status.FINISHED, table.match.status
    events = [e for r in table.match.record["rounds"] for e in r["events"]]
    assert [e["seq"] for e in events] == list(range(1, table.match.seq + 1))
    applied = [o for seat in (0, 1) for o in outcomes[seat] if isinstance(o, services.Outcome)]
    resent = [o for o in applied if o.duplicate]
    assert resent and len(applied) - len(resent) >= table.match.round_count * 3
    assert stale  # some writes met the other player's change, and were made again
    # The autouse audit replays the finished record through the rules.

"""A web process keeps the row of each match as it last wrote it (matches/rows.py ``_Recent``),
and its next move of that match starts from it instead of reading the row again. The copy is
never trusted: the write is conditional on the row's version, which any writer changes, so a
row written since by anyone (another process, a timeout, an operator with a SQL console) is
never overwritten: the move is made again under the lock, on top of it."""

from __future__ import annotations

import random
import uuid

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

import engine
from engine.replay import replay
from matches import rows, services
from matches.models import Match

pytestmark = [
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="rows are kept where the database versions them"
    ),
    pytest.mark.usefixtures("rows_kept_as_in_a_web_process"),
    pytest.mark.django_db(transaction=True),  # kept once committed: autocommit, as in a server
]


def statements_of_next_move(table) -> list[str]:
    state = table.state
    command = engine.GreedyBot().choose(state, state.decider, random.Random(0))
    with CaptureQueriesContext(connection) as queries:
        table.submit(state.decider, command, after_ms=1_000)
    # The table's own refresh after the move is not the service's.
    return [q["sql"] for q in queries.captured_queries if "SAVEPOINT" not in q["sql"]][:-1]


def reads_of_the_match(statements: list[str]) -> list[str]:
    return [sql for sql in statements if sql.startswith("SELECT")]


def test_the_next_move_of_a_match_this_process_wrote_reads_no_row(table):
    table.start(after_ms=1_000)
    statements = statements_of_next_move(table)
    assert reads_of_the_match(statements) == []
    assert [sql[:22] for sql in statements] == ["WITH updated AS (UPDAT"]


def test_a_broadcast_of_a_later_seq_makes_the_next_move_read_the_row(table):
    table.start(after_ms=1_000)
    services.match_seen_at(str(table.match.pk), table.match.seq + 1)  # moved on elsewhere
    statements = statements_of_next_move(table)
    assert len(reads_of_the_match(statements)) == 1


def rows_sent(sent, match) -> dict[str, bytes | None]:
    """The row each audience's group was sent with the match's last broadcast."""
    last = [(group, message) for group, message in sent if message["seq"] == match.seq]
    return {group.rsplit(".", 1)[1]: message.get("row") for group, message in last}


def hear(match, row) -> None:
    """This process's socket of the match got its broadcast at the match's seq, with ``row``."""
    services.match_seen_at(str(match.pk), match.seq, row)


def test_a_row_heard_with_the_opponents_broadcast_makes_the_next_move_read_no_row(table, sent):
    # The players sit on two web processes: the mover's process kept the row it wrote, the
    # other process learns it from the broadcast alone.
    table.start(after_ms=1_000)
    shared = rows_sent(sent, table.match)
    # A spectator's process never moves (and where this process has just read that nobody
    # watches, the spectators are sent nothing at all: matches/readings.py).
    assert shared.get("watch") is None
    assert shared["seat0"] == shared["seat1"] is not None
    rows.recent.clear()  # the other process kept nothing of this match
    hear(table.match, shared["seat0"])
    assert reads_of_the_match(statements_of_next_move(table)) == []
    # And the other way round, move after move.
    for _ in range(3):
        shared = rows_sent(sent, table.match)["seat1"]
        rows.recent.clear()
        hear(table.match, shared)
        assert reads_of_the_match(statements_of_next_move(table)) == []
    assert replay(Match.objects.get(pk=table.match.pk).record).seq == table.match.seq


def test_a_heard_row_made_stale_by_a_later_write_is_not_overwritten(table, sent):
    table.start(after_ms=1_000)
    shared = rows_sent(sent, table.match)["seat0"]
    rows.recent.clear()
    Match.objects.filter(pk=table.match.pk).update(rated=True)  # an operator, seq unchanged
    hear(table.match, shared)
    statements = statements_of_next_move(table)
    assert any(sql.endswith("FOR UPDATE") for sql in statements)  # redone under the lock
    assert Match.objects.get(pk=table.match.pk).rated


@pytest.mark.parametrize(
    "garbage",
    [
        "a string",
        b"",
        b"short",
        12,
        ["a", "list"],
        None,
    ],
)
def test_a_row_that_is_not_one_is_not_kept_and_the_older_kept_row_goes(table, sent, garbage):
    table.start(after_ms=1_000)
    rows.recent.clear()
    rows.recent.put(str(table.match.pk), table.match.seq - 1, "1:(0,1)", [])  # from before
    hear(table.match, garbage)
    assert str(table.match.pk) not in rows.recent.rows
    assert len(reads_of_the_match(statements_of_next_move(table))) == 1


def test_a_row_not_signed_with_the_sites_key_is_never_unpickled(table, sent, monkeypatch):
    # A pickle from Redis would run whatever it names: only a row this site signed is opened.
    table.start(after_ms=1_000)
    shared = rows_sent(sent, table.match)["seat0"]
    rows.recent.clear()
    opened = []
    monkeypatch.setattr(rows.pickle, "loads", lambda body: opened.append(body))
    hear(table.match, shared[:-1] + bytes([shared[-1] ^ 1]))
    forged_signature = bytes(32) + shared[32:]
    hear(table.match, forged_signature)
    assert opened == []
    assert str(table.match.pk) not in rows.recent.rows


def test_a_row_of_another_seq_or_another_layout_of_the_table_is_not_kept(table, sent, monkeypatch):
    table.start(after_ms=1_000)
    shared = rows_sent(sent, table.match)["seat0"]
    rows.recent.clear()
    services.match_seen_at(str(table.match.pk), table.match.seq + 1, shared)
    assert str(table.match.pk) not in rows.recent.rows
    # A rolling upgrade: the sender's code had other columns than this process's.
    reader = rows._reader(connection.alias)
    with monkeypatch.context() as upgraded:
        upgraded.setattr(reader, "layout", reader.layout + ",a_new_column")
        hear(table.match, shared)
    assert str(table.match.pk) not in rows.recent.rows
    hear(table.match, shared)
    assert str(table.match.pk) in rows.recent.rows


def test_the_row_of_a_finished_match_is_shared_as_none_and_drops_the_kept_one(table, sent):
    table.start(after_ms=1_000)
    rows.recent.clear()
    hear(table.match, rows_sent(sent, table.match)["seat0"])
    assert str(table.match.pk) in rows.recent.rows
    table.submit(table.state.decider, {"type": "resign"}, after_ms=1_000)
    shared = rows_sent(sent, table.match)["seat1"]
    rows.recent.clear()
    rows.recent.put(str(table.match.pk), table.match.seq - 1, "1:(0,1)", [])
    hear(table.match, shared)
    assert str(table.match.pk) not in rows.recent.rows


def test_a_broadcast_of_the_kept_seq_or_an_older_one_keeps_the_row(table):
    table.start(after_ms=1_000)
    services.match_seen_at(str(table.match.pk), table.match.seq)  # this process's own move
    services.match_seen_at(str(table.match.pk), table.match.seq - 1)
    services.match_seen_at("not a match id", 10**6)  # garbage changes nothing
    assert reads_of_the_match(statements_of_next_move(table)) == []


def test_a_row_an_operator_changed_without_a_new_seq_is_not_overwritten(table):
    # A clumsy operator's UPDATE leaves the seq alone: a condition on the seq alone would let
    # the kept copy write the old value back over theirs.
    table.start(after_ms=1_000)
    before = Match.objects.get(pk=table.match.pk)
    assert not before.rated
    Match.objects.filter(pk=before.pk).update(rated=True)
    statements = statements_of_next_move(table)
    after = Match.objects.get(pk=before.pk)
    assert after.seq > before.seq  # the move was made, under the lock
    assert after.rated
    assert any(sql.endswith("FOR UPDATE") for sql in statements)
    # The row written under the lock is the one kept now: the next move reads nothing.
    assert reads_of_the_match(statements_of_next_move(table)) == []


def test_a_move_made_elsewhere_since_is_kept_and_the_move_made_again_on_top(table):
    table.start(after_ms=1_000)
    kept_seq = table.match.seq
    state = table.state
    command = engine.GreedyBot().choose(state, state.decider, random.Random(0))
    with rows.recent.lock:  # the other process's move: this process's copy is not told
        kept = dict(rows.recent.rows)
    services.match_submit(
        match_id=table.match.pk, user=table.users[state.decider], command=command,
        arrival_ms=table.now + 1_000,
    )  # fmt: skip
    with rows.recent.lock:
        rows.recent.rows.clear()
        rows.recent.rows.update(kept)
    table.now += 2_000
    table.decide()
    assert table.match.seq > kept_seq + 1  # both moves are in
    events = [e for r in Match.objects.get(pk=table.match.pk).record["rounds"] for e in r["events"]]
    assert [e["seq"] for e in events] == list(range(1, table.match.seq + 1))
    assert replay(Match.objects.get(pk=table.match.pk).record).seq == table.match.seq


def test_a_write_rolled_back_is_not_kept(table):
    table.start(after_ms=1_000)
    match = rows.read(table.match.pk, lock=False)
    kept_version = getattr(match, rows.VERSION)
    with pytest.raises(RuntimeError), transaction.atomic():
        locked = rows.read(table.match.pk, lock=True)
        locked.balances = [0, 300]
        rows.store(locked, [], round_no=locked.round_count)
        raise RuntimeError("the rest of the change failed")
    again = rows.read(table.match.pk, lock=False)
    assert (getattr(again, rows.VERSION), again.balances) == (kept_version, match.balances)


def test_a_finished_match_is_not_kept_and_the_oldest_go_first(table, monkeypatch):
    table.start(after_ms=1_000)
    assert str(table.match.pk) in rows.recent.rows
    table.submit(table.state.decider, {"type": "resign"}, after_ms=1_000)
    assert str(table.match.pk) not in rows.recent.rows

    small = rows._Recent(size=2)
    small.enabled = True
    keys = [str(uuid.uuid4()) for _ in range(3)]
    for key in keys:
        small.put(key, 1, "1:(0,1)", [])
    assert list(small.rows) == keys[1:]  # the row written longest ago went


def test_a_process_that_hears_no_broadcasts_keeps_no_rows(table, monkeypatch):
    # A Celery worker (the computer's turns, the sweeper) is never told of a later move: a
    # row it kept would be stale at its next move, and redone under the lock every time.
    monkeypatch.setattr(rows.recent, "enabled", False)
    rows.recent.clear()
    table.start(after_ms=1_000)
    assert rows.recent.rows == {}
    assert len(reads_of_the_match(statements_of_next_move(table))) == 1


def test_a_row_kept_from_before_the_database_restarted_or_failed_over_is_not_written_over(table):
    # A replica promoted after a failover may not have had every write, and may give the same
    # transaction id and place to another write: the server's start tells the two apart.
    table.start(after_ms=1_000)
    key = str(table.match.pk)
    seq, version, values = rows.recent.rows[key]
    written, started = version.split("@", 1)
    rows.recent.rows[key] = (seq, f"{written}@2001-01-01 00:00:00+00", values)
    statements = statements_of_next_move(table)
    assert any(sql.endswith("FOR UPDATE") for sql in statements)  # redone under the lock
    assert Match.objects.get(pk=table.match.pk).seq == table.match.seq > seq
    assert rows.recent.rows[key][1].endswith(f"@{started}")


def test_a_row_kept_is_not_replaced_by_an_older_one():
    # Two database threads' commits may be kept out of order.
    key = str(uuid.uuid4())
    rows.recent.put(key, 7, "7:(0,1)", ["seven"])
    rows.recent.put(key, 6, "6:(0,1)", ["six"])
    assert rows.recent.rows[key] == (7, "7:(0,1)", ["seven"])


def test_a_move_of_a_match_deleted_since_its_row_was_kept_is_refused_as_no_such_match(table):
    table.start(after_ms=1_000)
    state = table.state
    command = engine.GreedyBot().choose(state, state.decider, random.Random(0))
    Match.objects.filter(pk=table.match.pk).delete()
    with pytest.raises(services.CommandRejected) as refused:
        services.match_submit(
            match_id=table.match.pk, user=table.users[state.decider], command=command,
            arrival_ms=table.now + 1_000,
        )  # fmt: skip
    assert refused.value.code == "no_such_match"
    assert str(table.match.pk) not in rows.recent.rows

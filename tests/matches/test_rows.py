"""The match's row and its events as the hot path reads and writes them (matches/rows.py):
the same row the ORM would load and save, in fewer statements, and nothing half-written."""

from __future__ import annotations

import datetime

import pytest
from django.db import DatabaseError, IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext

import engine
from matches import rows
from matches.models import Match, MatchEvent


def event(seq: int, **data) -> dict:
    return {"seq": seq, "type": "test", **data}


@pytest.mark.parametrize("lock", [True, False])
def test_the_read_match_is_its_row_without_the_header_and_its_lock_is_taken_if_asked(table, lock):
    table.play_until(lambda state: state.seq >= 3)
    stored = Match.objects.get(pk=table.match.pk)
    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        read = rows.read(str(table.match.pk), lock=lock)
    assert read.get_deferred_fields() == {"header"}
    for field in Match._meta.concrete_fields:
        if field.name != "header":
            assert getattr(read, field.attname) == getattr(stored, field.attname), field.name
    (query,) = queries.captured_queries
    locking = lock and connection.features.has_select_for_update
    assert query["sql"].endswith("FOR UPDATE") == locking
    assert read.record == stored.record  # the header still loads when asked for


@pytest.mark.parametrize("match_id", ["", None, 7, ["x"], "'; DROP TABLE matches_match; --"])
def test_a_malformed_id_locks_nothing(table, match_id):
    with transaction.atomic():
        assert rows.read(match_id, lock=True) is None
    assert Match.objects.filter(pk=table.match.pk).exists()


def test_a_stored_match_reads_back_field_for_field_and_its_header_is_left_alone(table):
    header_before = Match.objects.get(pk=table.match.pk).header
    with transaction.atomic():
        match = rows.read(table.match.pk, lock=True)
        match.seq += 2
        match.snapshot = b"\x00\xffsnapshot"
        match.balances = [140, 160]
        match.status = Match.Status.WAITING  # not finished: the fixture would audit its rules
        match.winner, match.reason = 1, "points"
        match.finished_at = datetime.datetime(2027, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
        match.deadline_ms, match.deadline_kind = None, ""
        match.cseq0, match.recent_cseqs = 9, {"0": [8, 9]}
        match.secret_seed = "ab" * 32
        rows.store(match, [event(match.seq - 1, n=1), event(match.seq, n=[2, "x"])], round_no=4)
    reread = Match.objects.get(pk=table.match.pk)
    for field in Match._meta.concrete_fields:
        if field.name != "header":
            assert getattr(reread, field.attname) == getattr(match, field.attname), field.name
    assert reread.header == header_before
    added = list(MatchEvent.objects.filter(match=reread, seq__gte=reread.seq - 1))
    assert [(e.seq, e.round_number, e.data) for e in added] == [
        (reread.seq - 1, 4, event(reread.seq - 1, n=1)),
        (reread.seq, 4, event(reread.seq, n=[2, "x"])),
    ]


def test_a_loaded_header_is_written_with_the_row(table):
    with transaction.atomic():
        match = rows.read(table.match.pk, lock=True)
        match.header = {**match.header, "note": "changed"}
        rows.store(match, [], round_no=1)
    assert Match.objects.get(pk=table.match.pk).header["note"] == "changed"


def test_the_row_and_its_events_are_one_statement_on_postgresql(table):
    with transaction.atomic():
        match = rows.read(table.match.pk, lock=True)
        match.seq += 1
        with CaptureQueriesContext(connection) as queries:
            rows.store(match, [event(match.seq)], round_no=1)
    written = [q for q in queries.captured_queries if "SAVEPOINT" not in q["sql"]]
    assert len(written) == (1 if connection.vendor == "postgresql" else 2), written


@pytest.mark.parametrize("returning", [True, False], ids=["returning", "old-sqlite"])
def test_the_events_taken_at_a_match_end_are_the_orms_in_seq_order_and_then_gone(
    table, returning, monkeypatch
):
    table.play_until(lambda state: state.round_no == 2 and engine.starter(state) is None
                     and state.phase != engine.DEALING)  # fmt: skip
    # SQLite before 3.35 (which Django still supports) has no DELETE ... RETURNING.
    monkeypatch.setattr(connection.features, "can_return_columns_from_insert", returning)
    stored = MatchEvent.objects.filter(match=table.match).order_by("seq")
    expected = [(event.round_number, event.data) for event in stored]
    assert {round_number for round_number, _ in expected} == {1, 2}
    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        taken = rows.taken_events(table.match)
    assert taken == expected
    statements = [q for q in queries.captured_queries if "SAVEPOINT" not in q["sql"]]
    assert len(statements) == (1 if returning else 2)
    assert not MatchEvent.objects.filter(match=table.match).exists()


def test_an_event_whose_seq_is_taken_changes_nothing(table):
    before = Match.objects.get(pk=table.match.pk)
    events_before = list(MatchEvent.objects.filter(match=before).values_list("seq", "data"))
    taken = events_before[-1][0]
    with pytest.raises(IntegrityError), transaction.atomic():
        match = rows.read(table.match.pk, lock=True)
        match.seq += 1
        match.balances = [0, 300]
        rows.store(match, [event(match.seq), event(taken)], round_no=1)
    after = Match.objects.get(pk=table.match.pk)
    assert (after.seq, after.balances) == (before.seq, before.balances)
    assert list(MatchEvent.objects.filter(match=after).values_list("seq", "data")) == events_before


def test_storing_a_match_whose_row_is_gone_raises(table):
    with transaction.atomic():
        match = rows.read(table.match.pk, lock=True)
    Match.objects.filter(pk=table.match.pk).delete()
    match.seq += 1
    with pytest.raises(DatabaseError, match="no row"), transaction.atomic():
        rows.store(match, [], round_no=1)
    assert not Match.objects.filter(pk=table.match.pk).exists()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("refused", ["row", "event"])
def test_outside_a_transaction_a_refused_row_or_event_leaves_nothing_written(table, refused):
    before = Match.objects.get(pk=table.match.pk)
    events_before = list(MatchEvent.objects.filter(match=before).values_list("seq", "data"))
    match = rows.read(table.match.pk, lock=False)
    match.seq += 1
    new = [event(match.seq)]
    if refused == "row":
        match.round_count = -1  # the database's own check refuses the row
    else:
        new.append(event(events_before[-1][0]))  # a taken seq: refused after the row's write
    with pytest.raises(IntegrityError):  # autocommit: nothing of the caller's holds them
        rows.store(match, new, round_no=1)
    after = Match.objects.get(pk=table.match.pk)
    assert (after.seq, after.round_count) == (before.seq, before.round_count)
    assert list(MatchEvent.objects.filter(match=after).values_list("seq", "data")) == (
        events_before
    )


def changed_elsewhere(match_id) -> None:
    """Another command's change, committed between a read and its write."""
    match = rows.read(match_id, lock=True)
    match.seq += 1
    rows.store(match, [event(match.seq, by="elsewhere")], round_no=1)


@pytest.mark.parametrize("new_events", [0, 2])
def test_a_write_conditional_on_a_seq_since_changed_is_refused_and_writes_nothing(
    table, new_events
):
    match = rows.read(table.match.pk, lock=False)
    read_seq = match.seq
    changed_elsewhere(table.match.pk)
    between = Match.objects.get(pk=table.match.pk)
    events_between = list(MatchEvent.objects.filter(match=between).values_list("seq", "data"))
    match.seq += new_events
    match.balances = [0, 300]
    new = [event(read_seq + n + 1, by="stale") for n in range(new_events)]
    with pytest.raises(rows.Stale):
        rows.store(match, new, round_no=1, read_seq=read_seq)
    after = Match.objects.get(pk=table.match.pk)
    assert (after.seq, after.balances) == (between.seq, between.balances)
    assert list(MatchEvent.objects.filter(match=after).values_list("seq", "data")) == (
        events_between
    )


def test_a_write_conditional_on_the_seq_still_there_is_made(table):
    match = rows.read(table.match.pk, lock=False)
    read_seq = match.seq
    match.seq += 1
    match.balances = [10, 290]
    rows.store(match, [event(match.seq, n=1)], round_no=1, read_seq=read_seq)
    after = Match.objects.get(pk=table.match.pk)
    assert (after.seq, after.balances) == (read_seq + 1, [10, 290])
    assert MatchEvent.objects.get(match=after, seq=after.seq).data == event(after.seq, n=1)


def test_a_conditional_write_of_a_match_that_is_gone_is_stale_and_an_unconditional_one_fails(
    table,
):
    # Stale: the move is made again under the lock, which finds no match and says so.
    match = rows.read(table.match.pk, lock=False)
    read_seq = match.seq
    Match.objects.filter(pk=table.match.pk).delete()
    match.seq += 1
    with pytest.raises(rows.Stale):
        rows.store(match, [event(match.seq)], round_no=1, read_seq=read_seq)
    with pytest.raises(DatabaseError, match="no row") as raised:
        rows.store(match, [event(match.seq)], round_no=1)
    assert not isinstance(raised.value, rows.Stale)


postgresql_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="only PostgreSQL's statements are prepared"
)


def prepared_statements(cursor) -> dict[str, int]:
    """This connection's prepared statements: how many times each was run (PostgreSQL)."""
    cursor.execute("SELECT statement, generic_plans + custom_plans FROM pg_prepared_statements")
    return dict(cursor.fetchall())


@postgresql_only
def test_the_rows_statements_are_prepared_once_per_connection_and_run_many_times(table):
    seq = table.state.seq
    table.play_until(lambda state: state.seq >= seq + 6)
    with connection.cursor() as cursor:
        prepared = prepared_statements(cursor)
    writes = [runs for statement, runs in prepared.items() if "WITH updated AS" in statement]
    assert writes and max(writes) >= 2, prepared
    # The ORM's statements are left as they were: bound by the client, never prepared.
    assert all('"matches_match"' in statement for statement in prepared), prepared


@postgresql_only
@pytest.mark.django_db(transaction=True)
def test_a_new_connection_prepares_the_statements_again(table):
    seq = table.state.seq
    table.play_until(lambda state: state.seq >= seq + 2)
    connection.close()  # as after a failover: the server knows none of the old statements
    table.play_until(lambda state: state.seq >= seq + 5)
    with connection.cursor() as cursor:
        prepared = prepared_statements(cursor)
    assert [statement for statement in prepared if "WITH updated AS" in statement], prepared
    assert Match.objects.get(pk=table.match.pk).seq >= seq + 5


def update_of(queries) -> str:
    (update,) = [q["sql"] for q in queries.captured_queries if "UPDATE" in q["sql"]]
    return update.split(" WHERE ")[0]


def test_a_move_writes_only_the_columns_it_changes(table):
    table.play_until(lambda state: state.seq >= 3)
    with CaptureQueriesContext(connection) as queries:
        table.decide()
    written = update_of(queries)
    for column in ("snapshot", "seq", "recent_cseqs"):
        assert f'"{column}' in written, written
    for column in ("mode", "created_at", "player0_id", "player1_id", "rating_before0"):
        assert f'"{column}"' not in written, written


@pytest.mark.parametrize("lock", [True, False])
def test_a_value_changed_in_place_after_the_read_is_written(table, lock):
    match = rows.read(table.match.pk, lock=lock)
    read_seq = match.seq
    match.recent_cseqs.setdefault("0", []).append(77)  # the same dict, changed
    match.balances[0] -= 5
    match.seq += 1
    rows.store(match, [], round_no=1, read_seq=None if lock else read_seq)
    stored = Match.objects.get(pk=table.match.pk)
    assert 77 in stored.recent_cseqs["0"]
    assert stored.balances == match.balances
    again = rows.read(table.match.pk, lock=lock)  # and what is kept is what was written
    assert (again.recent_cseqs, again.balances) == (stored.recent_cseqs, stored.balances)


def test_a_match_the_orm_loaded_is_written_whole(table):
    match = Match.objects.defer("header").get(pk=table.match.pk)
    match.seq += 1
    with CaptureQueriesContext(connection) as queries:
        rows.store(match, [], round_no=1)
    assert '"player0_id"' in update_of(queries) and '"header"' not in update_of(queries)
    assert Match.objects.get(pk=table.match.pk).seq == match.seq

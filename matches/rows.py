"""A match's row and its new events as every command reads and writes them: SQL written once
per database rather than compiled by the ORM for each command. Under load, building these
three statements took a web process more CPU than PostgreSQL took to run them (py-spy --gil:
the lock 13%, the save 6.9%, the events' insert 5.3%). Everything else uses the ORM.

The rows are the ORM's own: values go through each field's ``pre_save``/``get_db_prep_save``
and come back through the database's and the field's converters, as ``Model.save`` and a
queryset would do it.
"""

from __future__ import annotations

from contextlib import nullcontext
from functools import cache

from django.core.exceptions import ValidationError
from django.db import DatabaseError, connection, connections, transaction

from .models import Match, MatchEvent

UNLOADED = "header"  # grows with the match: loaded, by its own query, only when it is needed


def read(match_id, *, lock: bool) -> Match | None:
    """The match without its header, its row locked when ``lock`` (where the database has row
    locks); None for an id that is malformed or names no match."""
    try:
        pk = Match._meta.pk.get_db_prep_value(Match._meta.pk.to_python(match_id), connection)
    except (ValidationError, ValueError, TypeError):
        return None
    reader = _reader(connection.alias)
    with connection.cursor() as cursor:
        cursor.execute(reader.locking_sql if lock else reader.sql, [pk])
        row = cursor.fetchone()
    return None if row is None else reader.match(row)


class Stale(DatabaseError):
    """The match changed after it was read: nothing was written."""


def store(match: Match, events: list[dict], *, round_no: int, read_seq: int | None = None) -> None:
    """Write the match's loaded columns and append ``events`` (of round ``round_no``): one
    statement on PostgreSQL, so the row and its events are never written apart. With
    ``read_seq``, only if the row's seq is still that (else ``Stale``): a match read without
    its lock is written only if nothing changed it since (under READ COMMITTED, Django's and
    PostgreSQL's default: a write that waited for another's row lock sees that one's new seq
    and updates nothing). Raises DatabaseError when the row is gone, IntegrityError when an
    event's seq is taken."""
    alias = connection.alias
    header_unloaded = UNLOADED in match.get_deferred_fields()
    fields = _stored_fields(alias, header_unloaded)
    row = [field.get_db_prep_save(field.pre_save(match, False), connection) for field in fields]
    row.append(Match._meta.pk.get_db_prep_value(match.pk, connection))
    if read_seq is not None:
        row.append(read_seq)
    data = MatchEvent._meta.get_field("data")
    # PostgreSQL takes the match's pk from the row it updated; elsewhere each event names it.
    named = () if connection.vendor == "postgresql" else (row[len(fields)],)
    event_rows = [
        value
        for event in events
        for value in (*named, event["seq"], round_no, data.get_db_prep_save(event, connection))
    ]
    statements = _store_sql(alias, header_unloaded, len(events), read_seq is not None)
    # Where there is no data-modifying WITH, two statements (the row, then its events) in
    # a transaction of their own, so that they too are written together or not at all.
    together = transaction.atomic() if len(statements) == 2 else nullcontext()
    with together, connection.cursor() as cursor:
        if len(statements) == 2:
            cursor.execute(statements[0], row)
            _check_written(cursor, match, read_seq, expected=1)
            row = []
        cursor.execute(statements[-1], [*row, *event_rows])
        _check_written(cursor, match, read_seq, expected=len(events) or 1)


def _check_written(cursor, match: Match, read_seq: int | None, *, expected: int) -> None:
    if cursor.rowcount == expected:
        return
    if read_seq is not None and Match.objects.filter(pk=match.pk).exists():
        raise Stale(f"match {match.pk} changed after it was read at seq {read_seq}")
    raise DatabaseError(f"no row for match {match.pk} to store")


class _Reader:
    """The match's query for one database (with and without the lock) and how to turn its row
    into a Match."""

    def __init__(self, alias: str):
        db = connections[alias]
        self.alias = alias
        self.fields = [f for f in Match._meta.concrete_fields if f.name != UNLOADED]
        columns = ", ".join(db.ops.quote_name(field.column) for field in self.fields)
        lock = " FOR UPDATE" if db.features.has_select_for_update else ""
        self.sql = f"SELECT {columns} FROM {_table(db, Match)} WHERE {_pk(db, Match)} = %s"
        self.locking_sql = self.sql + lock
        self.attnames = frozenset(field.attname for field in self.fields)
        self.converters = []
        for index, field in enumerate(self.fields):
            column = field.get_col(Match._meta.db_table)
            found = db.ops.get_db_converters(column) + field.get_db_converters(db)
            if found:
                self.converters.append((index, column, found))

    def match(self, row) -> Match:
        values = list(row)
        db = connections[self.alias]
        for index, column, converters in self.converters:
            for convert in converters:
                values[index] = convert(values[index], column, db)
        return Match.from_db(self.alias, self.attnames, values)


@cache
def _reader(alias: str) -> _Reader:
    return _Reader(alias)


@cache
def _stored_fields(alias: str, header_unloaded: bool) -> list:
    return [
        field
        for field in Match._meta.concrete_fields
        if not field.primary_key and not (header_unloaded and field.name == UNLOADED)
    ]


@cache
def _store_sql(alias: str, header_unloaded: bool, event_count: int, conditional: bool):
    """(``UPDATE`` the row, ``INSERT`` its events) or, on PostgreSQL, one ``WITH`` of both in
    which the events are inserted only for a row updated. Parameters: the row's values, its
    pk, the seq it was read at when ``conditional``, then each event's seq, round and data."""
    db = connections[alias]
    fields = _stored_fields(alias, header_unloaded)
    assignments = ", ".join(f"{db.ops.quote_name(field.column)} = %s" for field in fields)
    where = f"{_pk(db, Match)} = %s"
    if conditional:
        where += f" AND {db.ops.quote_name(Match._meta.get_field('seq').column)} = %s"
    update = f"UPDATE {_table(db, Match)} SET {assignments} WHERE {where}"
    if event_count == 0:
        return (update,)
    columns = ", ".join(
        db.ops.quote_name(MatchEvent._meta.get_field(name).column)
        for name in ("match", "seq", "round_number", "data")
    )
    insert = f"INSERT INTO {_table(db, MatchEvent)} ({columns})"
    if db.vendor != "postgresql":
        return (update, f"{insert} VALUES {', '.join(['(%s, %s, %s, %s)'] * event_count)}")
    values = ", ".join(["(%s::integer, %s::smallint, %s::jsonb)"] * event_count)
    return (
        f"WITH updated AS ({update} RETURNING {_pk(db, Match)} AS match_id) "
        f"{insert} SELECT updated.match_id, e.seq, e.round_number, e.data "
        f"FROM updated CROSS JOIN (VALUES {values}) AS e (seq, round_number, data)",
    )


def _table(db, model) -> str:
    return db.ops.quote_name(model._meta.db_table)


def _pk(db, model) -> str:
    return db.ops.quote_name(model._meta.pk.column)

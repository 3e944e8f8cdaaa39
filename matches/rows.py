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


def locked(match_id) -> Match | None:
    """The match with its row locked (where the database has row locks), without its header;
    None for an id that is malformed or names no match."""
    try:
        pk = Match._meta.pk.get_db_prep_value(Match._meta.pk.to_python(match_id), connection)
    except (ValidationError, ValueError, TypeError):
        return None
    reader = _reader(connection.alias)
    with connection.cursor() as cursor:
        cursor.execute(reader.sql, [pk])
        row = cursor.fetchone()
    return None if row is None else reader.match(row)


def store(match: Match, events: list[dict], *, round_no: int) -> None:
    """Write the match's loaded columns and append ``events`` (of round ``round_no``): one
    statement on PostgreSQL, so the row and its events are never written apart. Raises
    DatabaseError when the row is gone, IntegrityError when an event's seq is taken."""
    alias = connection.alias
    header_unloaded = UNLOADED in match.get_deferred_fields()
    fields = _stored_fields(alias, header_unloaded)
    values = [field.get_db_prep_save(field.pre_save(match, False), connection) for field in fields]
    match_pk = Match._meta.pk.get_db_prep_value(match.pk, connection)
    data = MatchEvent._meta.get_field("data")
    event_rows = [
        value
        for event in events
        for value in (match_pk, event["seq"], round_no, data.get_db_prep_save(event, connection))
    ]
    statements = _store_sql(alias, header_unloaded, len(events))
    # Where there is no data-modifying WITH, two statements (the events, then the row) in
    # a transaction of their own, so that they too are written together or not at all.
    together = transaction.atomic() if len(statements) == 2 else nullcontext()
    with together, connection.cursor() as cursor:
        if len(statements) == 2:
            cursor.execute(statements[0], event_rows)
            event_rows = []
        cursor.execute(statements[-1], [*event_rows, *values, match_pk])
        if cursor.rowcount != 1:
            raise DatabaseError(f"no row for match {match.pk} to store")


class _Reader:
    """The lock's query for one database and how to turn its row into a Match."""

    def __init__(self, alias: str):
        db = connections[alias]
        self.alias = alias
        self.fields = [f for f in Match._meta.concrete_fields if f.name != UNLOADED]
        columns = ", ".join(db.ops.quote_name(field.column) for field in self.fields)
        lock = " FOR UPDATE" if db.features.has_select_for_update else ""
        self.sql = f"SELECT {columns} FROM {_table(db, Match)} WHERE {_pk(db, Match)} = %s{lock}"
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
def _store_sql(alias: str, header_unloaded: bool, event_count: int) -> tuple[str, ...]:
    """(``INSERT`` the events, ``UPDATE`` the row) or, on PostgreSQL, one ``WITH`` of both."""
    db = connections[alias]
    fields = _stored_fields(alias, header_unloaded)
    assignments = ", ".join(f"{db.ops.quote_name(field.column)} = %s" for field in fields)
    update = f"UPDATE {_table(db, Match)} SET {assignments} WHERE {_pk(db, Match)} = %s"
    if event_count == 0:
        return (update,)
    columns = ", ".join(
        db.ops.quote_name(MatchEvent._meta.get_field(name).column)
        for name in ("match", "seq", "round_number", "data")
    )
    values = ", ".join(["(%s, %s, %s, %s)"] * event_count)
    insert = f"INSERT INTO {_table(db, MatchEvent)} ({columns}) VALUES {values}"
    if db.vendor == "postgresql":
        return (f"WITH appended AS ({insert}) {update}",)
    return (insert, update)


def _table(db, model) -> str:
    return db.ops.quote_name(model._meta.db_table)


def _pk(db, model) -> str:
    return db.ops.quote_name(model._meta.pk.column)

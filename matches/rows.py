"""A match's row and its new events as every command reads and writes them: SQL written once
per database rather than compiled by the ORM for each command. Under load, building these
three statements took a web process more CPU than PostgreSQL took to run them (py-spy --gil:
the lock 13%, the save 6.9%, the events' insert 5.3%). Everything else uses the ORM.

The rows are the ORM's own: values go through each field's ``pre_save``/``get_db_prep_save``
and come back through the database's and the field's converters, as ``Model.save`` and a
queryset would do it.
"""

from __future__ import annotations

import copy
import hmac
import logging
import pickle
import threading
from collections import OrderedDict
from contextlib import nullcontext
from dataclasses import dataclass
from functools import cache, lru_cache, partial
from operator import itemgetter

import psycopg
from django.core.exceptions import ValidationError
from django.db import DatabaseError, connection, connections, transaction
from django.db.backends.postgresql.base import ServerBindingCursor
from django.utils.crypto import salted_hmac

from engine import HeaderChange
from realtime.database import LoopConnectionLease

from .models import Match, MatchEvent

log = logging.getLogger(__name__)

UNLOADED = "header"  # grows with the match: loaded, by its own query, only when it is needed
RECENT_ROWS = 5_000  # rows this process keeps of the matches it wrote last (about 2 kB each)
VERSION = "_row_version"  # on a Match read or stored here: its row's version, where kept
READ = "_row_as_read"  # on a Match read here: its values as read, so only changes are written


def read(match_id, *, lock: bool) -> Match | None:
    """The match without its header, its row locked when ``lock`` (where the database has row
    locks); None for an id that is malformed or names no match. Without the lock, the row this
    process last wrote, if it has not heard of a change since (see ``_Recent``)."""
    if (pk := _pk_of(match_id)) is None:
        return None
    if not lock and (match := kept(pk)) is not None:
        return match
    reader = _reader(connection.alias)
    with _cursor() as cursor:
        prepared = Match._meta.pk.get_db_prep_value(pk, connection)
        cursor.execute(reader.locking_sql if lock else reader.sql, [prepared])
        row = cursor.fetchone()
    return None if row is None else reader.match(row)


def kept(match_id) -> Match | None:
    """The match as this process keeps its row (see ``_Recent``), without asking the database;
    None if it keeps none."""
    if (pk := _pk_of(match_id)) is None:
        return None
    return recent.get(_reader(connection.alias), pk)


def keeps(match_id) -> bool:
    """Does this process keep the match's row (see ``kept``)? Cheaper than ``kept``."""
    return (pk := _pk_of(match_id)) is not None and recent.seq_of(str(pk)) is not None


def keep_written_rows() -> None:
    """Keep the rows this process writes or hears of (see ``_Recent``): for web processes,
    which hear of every later change to their matches through the broadcasts."""
    recent.enabled = True


def forget(match_id) -> None:
    """The row kept of the match, if any, is not used again."""
    if (pk := _pk_of(match_id)) is not None:
        recent.forget(str(pk))


def shared(match: Match) -> bytes | None:
    """The row as this process has just written it, for the other web processes (sent with
    the change's broadcast, see ``heard``): signed, since it carries a pickle (the snapshot)
    through Redis. None where rows have no version, and for a match over (neither would ever
    be used)."""
    version = getattr(match, VERSION, None)
    reader = _reader(connection.alias)
    if version is None or (values := _kept_values(match, reader)) is None:
        return None
    row = (reader.layout, match.seq, version, values)
    row = pickle.dumps(row, pickle.HIGHEST_PROTOCOL)
    return _signature(row) + row


def heard(match_id, seq: int, row: bytes | None) -> None:
    """A broadcast of the match at ``seq`` reached this process, with the row written
    (``shared``) or without: keep that row for this process's next move of the match, as if it
    had written it, or at least stop using one kept from before. A row signed by nobody here,
    or of another layout of the table (a rolling upgrade), is not kept."""
    if (pk := _pk_of(match_id)) is None or not recent.enabled:
        return
    key = str(pk)
    if recent.seq_of(key) == seq:
        return  # this process's own change: kept already
    kept = _unpacked(row) if row is not None else None
    if kept is None or kept[0] != seq:
        recent.forget_older(key, seq)
        return
    recent.put(key, *kept)


def _unpacked(row) -> tuple[int, str, list | None] | None:
    if not isinstance(row, bytes):
        return None
    signature, body = row[:_SIGNATURE_BYTES], row[_SIGNATURE_BYTES:]
    if not hmac.compare_digest(signature, _signature(body)):
        log.warning("a broadcast's row is not signed with this site's key: not kept")
        return None
    layout, seq, version, values = pickle.loads(body)
    if layout != _reader(connection.alias).layout:
        return None
    return seq, version, values


def _signature(body: bytes) -> bytes:
    return salted_hmac("matches.rows.shared", body, algorithm="sha256").digest()


_SIGNATURE_BYTES = 32


def _pk_of(match_id):
    """The match's pk, or None for an id that is malformed."""
    try:
        return Match._meta.pk.to_python(match_id)
    except (ValidationError, ValueError, TypeError):
        return None


class _Recent:
    """The row of each match as it was last written, by this process or by the one whose
    broadcast of it this process heard (``heard``), by match (at most ``size``).

    Where the database keeps a version of each row (PostgreSQL's ``xmin`` and ``ctid``, changed
    by every write, by anyone), a move read without the lock starts from the row kept instead
    of reading it again: a round trip fewer. Never a second truth: the write that follows is
    conditional on that version, so a row written since by anyone (another web process, a
    timeout, an operator) makes it ``Stale`` and the move is made again under the lock. A
    broadcast of a later seq that brings no row drops the kept one first, so the next move
    reads the row instead of meeting a stale one."""

    enabled = False  # see keep_written_rows

    def __init__(self, size: int):
        self.size = size
        self.rows: OrderedDict[str, tuple[int, str, list]] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, reader: _Reader, pk) -> Match | None:
        if not self.enabled:
            return None
        with self.lock:
            kept = self.rows.get(str(pk))
        if kept is None:
            return None
        _, version, values = kept
        match = _as_read(reader, values)
        setattr(match, VERSION, version)
        return match

    def put(self, key: str, seq: int, version: str, values: list | None) -> None:
        """Keep ``values`` (``None``: the match is over, and takes no more moves), unless a
        later seq is kept already (two threads' commits may be kept out of order)."""
        if not self.enabled:
            return
        with self.lock:
            if values is None:
                self.rows.pop(key, None)
                return
            if key in self.rows and self.rows[key][0] > seq:
                return
            self.rows[key] = (seq, version, values)
            self.rows.move_to_end(key)
            while len(self.rows) > self.size:
                self.rows.popitem(last=False)

    def seq_of(self, key: str) -> int | None:
        with self.lock:
            kept = self.rows.get(key)
        return None if kept is None else kept[0]

    def forget(self, key: str) -> None:
        with self.lock:
            self.rows.pop(key, None)

    def clear(self) -> None:
        with self.lock:
            self.rows.clear()

    def forget_older(self, key: str, seq: int) -> None:
        with self.lock:
            kept = self.rows.get(key)
            if kept is not None and kept[0] < seq:
                del self.rows[key]


recent = _Recent(RECENT_ROWS)


def _as_read(reader: _Reader, values: list) -> Match:
    """The Match of a row's ``values``, remembering them (``READ``): a caller may change the
    Match's values, even in place, and ``store`` writes only the columns that differ."""
    match = Match.from_db(reader.alias, reader.attnames, _copied(values))
    setattr(match, READ, values)
    return match


def _copied(values: list) -> list:
    """The values with their JSON ones (dicts, lists) copied: a caller may change those."""
    return [copy.deepcopy(v) if isinstance(v, dict | list) else v for v in values]


class Stale(DatabaseError):
    """The match changed after it was read: nothing was written."""


def store(match: Match, events: list[dict], *, round_no: int, read_seq: int | None = None) -> None:
    """Write the match's columns changed since it was read here (else all its loaded ones) and
    append ``events`` (of round ``round_no``): one
    statement on PostgreSQL, so the row and its events are never written apart. With
    ``read_seq``, only if the row's seq is still that, and its version still the one read
    where the database keeps one (else ``Stale``): a match read without its lock is written
    only if nothing changed it since (under READ COMMITTED, Django's and PostgreSQL's default:
    a write that waited for another's row lock sees that one's new row and updates nothing).
    Raises DatabaseError when the row is gone, IntegrityError when an event's seq is taken.
    The row written is kept for this process's next move once committed (``_Recent``)."""
    write = _Write.of(match, events, round_no=round_no, read_seq=read_seq)
    # Where there is no data-modifying WITH, two statements (the row, then its events) in
    # a transaction of their own, so that they too are written together or not at all.
    together = transaction.atomic() if len(write.statements) == 2 else nullcontext()
    try:
        with together, _cursor() as cursor:
            params = write.params
            if len(write.statements) == 2:
                cursor.execute(write.statements[0], write.row)
                write.check(cursor.rowcount, expected=1)
                params = write.event_rows
            cursor.execute(write.statements[-1], params)
            write.check(cursor.rowcount)
            version = cursor.fetchone()[0] if write.reader.versioned else None
    except DatabaseError:
        recent.forget(str(match.pk))
        raise
    write.done(version, keep=transaction.on_commit)


def taken_events(match: Match) -> list[tuple[int, dict]]:
    """Delete the match's event rows and return them, in seq order, as (round number, event):
    one statement for what took two (read them, then delete them) when a match ends."""
    db = connection
    if not db.features.can_return_columns_from_insert:  # SQLite before 3.35: no RETURNING
        stored = MatchEvent.objects.filter(match=match).order_by("seq")
        taken = list(stored.values_list("round_number", "data"))
        stored.delete()
        return taken
    sql, data_column, converters = _taking(db.alias)
    match_key = MatchEvent._meta.get_field("match").get_db_prep_value(match.pk, db)
    with _cursor() as cursor:
        cursor.execute(sql, [match_key])
        taken = sorted(cursor.fetchall(), key=itemgetter(0))
    events = []
    for _, round_number, data in taken:
        for convert in converters:  # as the ORM gives an event's data
            data = convert(data, data_column, db)
        events.append((round_number, data))
    return events


@cache
def _taking(alias: str) -> tuple[str, object, list]:
    """``taken_events``'s statement on one database, with the ``data`` column and its
    converters: made once, as this module's other statements are."""
    db = connections[alias]
    column = {
        name: db.ops.quote_name(MatchEvent._meta.get_field(name).column)
        for name in ("match", "seq", "round_number", "data")
    }
    sql = (
        f"DELETE FROM {_table(db, MatchEvent)} WHERE {column['match']} = %s "
        f"RETURNING {column['seq']}, {column['round_number']}, {column['data']}"
    )
    field = MatchEvent._meta.get_field("data")
    data_column = field.get_col(MatchEvent._meta.db_table)
    return sql, data_column, db.ops.get_db_converters(data_column) + field.get_db_converters(db)


async def store_on_loop(
    match: Match,
    events: list[dict],
    *,
    round_no: int,
    read_seq: int,
    lease: LoopConnectionLease,
    header: HeaderChange | None = None,
) -> None:
    """``store`` for a match read without its lock, from the event loop, on PostgreSQL: one
    statement on the connection of the loop's own that ``lease`` grants (realtime/database.py),
    in autocommit, so no database thread is woken for it and the row is kept at once. Raises
    ``Stale`` as ``store`` does, ``LoopConnectionUnavailable`` when nothing was sent (no
    connection could be made), and Django's DatabaseError when the statement failed: then
    whether it was written may be unknown (a connection lost before its reply), as for a
    failed commit. A ``header`` change (a deal's) is made in the header where it is stored."""
    write = _Write.of(match, events, round_no=round_no, read_seq=read_seq, header=header)
    (statement,) = write.statements
    try:
        async with lease as db:
            try:
                cursor = await db.execute(statement, write.params, prepare=True)
                rowcount, written = cursor.rowcount, await cursor.fetchone()
            except psycopg.Error as exc:
                raise DatabaseError(f"the move's write failed: {exc}") from exc
        write.check(rowcount)
    except BaseException:
        recent.forget(str(match.pk))
        raise
    write.done(written[0], keep=lambda put: put())


@dataclass
class _Write:
    """One store of a match: its statements and their parameters."""

    match: Match
    reader: _Reader
    statements: tuple
    row: list
    event_rows: list
    read_seq: int | None
    event_count: int

    @classmethod
    def of(
        cls,
        match: Match,
        events: list[dict],
        *,
        round_no: int,
        read_seq: int | None,
        header: HeaderChange | None = None,
    ):
        reader = _reader(connection.alias)
        fields = _changed_fields(match, reader)
        row = [field.get_db_prep_save(field.pre_save(match, False), connection) for field in fields]
        if header is not None:  # on PostgreSQL, and for a match read without it (as kept)
            header_field = Match._meta.get_field(UNLOADED)
            parts = (header.record, header.last_round, header.added_round)
            row.extend(
                header_field.get_db_prep_save(part, connection)
                for part in parts
                if part is not None
            )
        pk = Match._meta.pk.get_db_prep_value(match.pk, connection)
        row.append(pk)
        conditional = read_seq is not None
        if conditional:
            row.append(read_seq)
            if reader.versioned:
                if (read_version := getattr(match, VERSION, None)) is None:
                    recent.forget(str(match.pk))
                    raise Stale(f"match {match.pk} was read without its row's version")
                row.extend(_version_parts(read_version))
        data = MatchEvent._meta.get_field("data")
        # PostgreSQL takes the match's pk from the row it updated; elsewhere each event names it.
        named = () if connection.vendor == "postgresql" else (pk,)
        event_rows = [
            value
            for event in events
            for value in (*named, event["seq"], round_no, data.get_db_prep_save(event, connection))
        ]
        statements = _store_sql(
            connection.alias, fields, len(events), conditional,
            header_changed=header is not None,
            round_added=header is not None and header.added_round is not None,
        )  # fmt: skip
        return cls(match, reader, statements, row, event_rows, read_seq, len(events))

    @property
    def params(self) -> list:
        return [*self.row, *self.event_rows]

    def check(self, rowcount: int, *, expected: int | None = None) -> None:
        """The last statement wrote ``expected`` rows (by default: its events, or the row)."""
        if expected is None:
            expected = self.event_count or 1
        if rowcount == expected:
            return
        if self.read_seq is not None:  # the redo under the lock tells a change from a match gone
            raise Stale(
                f"match {self.match.pk} changed (or went) after it was read at seq {self.read_seq}"
            )
        raise DatabaseError(f"no row for match {self.match.pk} to store")

    def done(self, version: str | None, *, keep) -> None:
        """The row is written as ``version``: ``keep(put)`` has ``put`` keep it (once it is
        committed, never if it is rolled back)."""
        match = self.match
        setattr(match, READ, None)  # written: a later store of this Match writes every column
        if version is None:
            return
        setattr(match, VERSION, version)
        kept = _kept_values(match, self.reader)
        kept = None if kept is None else _copied(kept)
        keep(partial(recent.put, str(match.pk), match.seq, version, kept))


def _cursor():
    """A cursor for this module's statements: the same few, run for every move. On PostgreSQL
    their values are sent apart from the text and each is prepared once per connection, so
    the server parses and plans it once (0.3 ms less per move here, a third of the write);
    the ORM's cursors bind values into the text and never prepare. A pooler in between must
    keep prepared statements (PgBouncer 1.21+ with ``max_prepared_statements``)."""
    if connection.vendor != "postgresql":
        return connection.cursor()
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    # psycopg keeps no text of a prepared statement for Django's log: a logged one is sent whole.
    logged = connection.queries_logged
    cursor = _PreparingCursor(connection.connection, prepare=not logged)
    return connection.make_debug_cursor(cursor) if logged else connection.make_cursor(cursor)


class _PreparingCursor(ServerBindingCursor):
    """psycopg's cursor that sends values apart from the text, preparing each statement on
    its first run on a connection unless ``prepare`` is False."""

    def __init__(self, connection, *, prepare: bool):
        super().__init__(connection)
        self.prepare = prepare

    def execute(self, query, params=None, *, prepare=None, binary=None):
        prepare = self.prepare if prepare is None else prepare
        return super().execute(query, params, prepare=prepare, binary=binary)


def _kept_values(match: Match, reader: _Reader) -> list | None:
    """The row's values to keep, or None for a match over (it takes no more moves)."""
    if match.finished_at is not None:
        return None
    return [getattr(match, field.attname) for field in reader.fields]


class _Reader:
    """The match's query for one database (with and without the lock) and how to turn its row
    into a Match."""

    def __init__(self, alias: str):
        db = connections[alias]
        self.alias = alias
        self.versioned = db.vendor == "postgresql"
        self.fields = [f for f in Match._meta.concrete_fields if f.name != UNLOADED]
        columns = ", ".join(db.ops.quote_name(field.column) for field in self.fields)
        if self.versioned:
            columns += f", {_VERSION_SQL}"
        lock = " FOR UPDATE" if db.features.has_select_for_update else ""
        self.sql = f"SELECT {columns} FROM {_table(db, Match)} WHERE {_pk(db, Match)} = %s"
        self.locking_sql = self.sql + lock
        self.attnames = frozenset(field.attname for field in self.fields)
        # Which columns a row's values are, in order: a row from another process is used
        # only if its code has the same ones.
        self.layout = ",".join(field.attname for field in self.fields)
        self.converters = []
        for index, field in enumerate(self.fields):
            column = field.get_col(Match._meta.db_table)
            found = db.ops.get_db_converters(column) + field.get_db_converters(db)
            if found:
                self.converters.append((index, column, found))

    def match(self, row) -> Match:
        values = list(row[: len(self.fields)])
        db = connections[self.alias]
        for index, column, converters in self.converters:
            for convert in converters:
                values[index] = convert(values[index], column, db)
        match = _as_read(self, values)
        if self.versioned:
            setattr(match, VERSION, row[len(self.fields)])
        return match


@cache
def _reader(alias: str) -> _Reader:
    return _Reader(alias)


def _changed_fields(match: Match, reader: _Reader) -> tuple:
    """The columns to write: for a Match read here, those whose values changed since (and
    ``seq``, so that there is always one); for another, all of them. The header is written
    only when it was loaded."""
    header_unloaded = UNLOADED in match.get_deferred_fields()
    stored = _stored_fields(reader.alias, header_unloaded)
    if (read := getattr(match, READ, None)) is None:
        return stored
    changed = {
        field.attname
        for field, value in zip(reader.fields, read, strict=True)
        if getattr(match, field.attname) != value
    }
    return tuple(f for f in stored if f.attname in changed or f.name in ("seq", UNLOADED))


@cache
def _stored_fields(alias: str, header_unloaded: bool) -> tuple:
    return tuple(
        field
        for field in Match._meta.concrete_fields
        if not field.primary_key and not (header_unloaded and field.name == UNLOADED)
    )


@lru_cache(maxsize=512)  # a move changes a few columns, and the same few again and again
def _store_sql(
    alias: str,
    fields: tuple,
    event_count: int,
    conditional: bool,
    *,
    header_changed: bool = False,
    round_added: bool = False,
):
    """(``UPDATE`` the row's ``fields``, ``INSERT`` its events) or, on PostgreSQL, one ``WITH``
    of both in which the events are inserted only for a row updated. Parameters: the fields'
    values, with ``header_changed`` the header's new fields and its last round's (merged into
    the header where it is, on PostgreSQL: it grows with the match, and is never read for
    this) and with ``round_added`` the round appended after it, the pk, the seq it was read at
    when ``conditional``, then each event's seq, round and data."""
    db = connections[alias]
    assignments = [f"{db.ops.quote_name(field.column)} = %s" for field in fields]
    if header_changed:
        header = db.ops.quote_name(Match._meta.get_field(UNLOADED).column)
        last_round = "'{rounds,-1}'"
        merged = (
            f"jsonb_set({header} || %s::jsonb, {last_round}, "
            f"({header} #> {last_round}) || %s::jsonb)"
        )
        if round_added:
            merged = f"jsonb_insert({merged}, {last_round}, %s::jsonb, true)"
        assignments.append(f"{header} = {merged}")
    assignments = ", ".join(assignments)
    where = f"{_pk(db, Match)} = %s"
    versioned = _reader(alias).versioned
    if conditional:
        where += f" AND {db.ops.quote_name(Match._meta.get_field('seq').column)} = %s"
        if versioned:
            where += (
                " AND xmin = %s::xid AND ctid = %s::tid"
                " AND pg_postmaster_start_time() = %s::timestamptz"
            )
    update = f"UPDATE {_table(db, Match)} SET {assignments} WHERE {where}"
    if event_count == 0:
        return (f"{update} RETURNING {_VERSION_SQL}",) if versioned else (update,)
    columns = ", ".join(
        db.ops.quote_name(MatchEvent._meta.get_field(name).column)
        for name in ("match", "seq", "round_number", "data")
    )
    insert = f"INSERT INTO {_table(db, MatchEvent)} ({columns})"
    if db.vendor != "postgresql":
        return (update, f"{insert} VALUES {', '.join(['(%s, %s, %s, %s)'] * event_count)}")
    values = ", ".join(["(%s::integer, %s::smallint, %s::jsonb)"] * event_count)
    return (
        f"WITH updated AS ({update} RETURNING {_pk(db, Match)} AS match_id, "
        f"{_VERSION_SQL} AS version) "
        f"{insert} SELECT updated.match_id, e.seq, e.round_number, e.data "
        f"FROM updated CROSS JOIN (VALUES {values}) AS e (seq, round_number, data) "
        "RETURNING (SELECT version FROM updated)",
    )


# PostgreSQL's version of a row: the transaction that wrote it, where, and on which run of which
# server (any write makes a new one; the place tells apart two writes of one transaction; the
# server's start tells apart a transaction id used again after a restart or a failover to a
# replica that had not seen every write, so no row kept from before is ever written over).
_VERSION_SQL = "xmin::text || ':' || ctid::text || '@' || pg_postmaster_start_time()::text"


def _version_parts(version: str) -> list[str]:
    """A version's transaction id, place and server start, as the conditional write takes them."""
    written, started = version.split("@", 1)
    return [*written.split(":", 1), started]


def _table(db, model) -> str:
    return db.ops.quote_name(model._meta.db_table)


def _pk(db, model) -> str:
    return db.ops.quote_name(model._meta.pk.column)

"""The match service: the only writer of a match.

Every change asks the engine for the next state, appends the accepted events to the record,
stores a snapshot and re-arms the deadline, all or nothing: under the match's row lock inside
``transaction.atomic`` (``select_for_update``; on SQLite the IMMEDIATE transaction serialises
writers), or, for a player's move on PostgreSQL, read without the lock and written in one
statement only if the match is unchanged since (see ``match_submit``). Broadcasts and task
scheduling run after commit.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import pickle
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial

from celery import current_app
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone as dj_timezone

import engine
from accounts.services import rating_record_result
from engine import Rejection
from realtime.database import LoopConnectionUnavailable, lease_loop_connection
from realtime.keyed_lock import KeyedLock
from realtime.redis_clients import async_redis, sync_redis

from . import broadcast, presence, rows, timekeeping, webbeats
from .models import Match, TimingFault
from .selectors import match_state, snapshot_state

log = logging.getLogger(__name__)

RECHECK_FAULT_TASK = "matches.tasks.recheck_fault"
COMPUTER_TURN_TASK = "matches.tasks.computer_turn"

FORFEITS = ("timeout", "abandon")  # a deadline's ends, told before they are concluded
RECENT_CSEQS = 64  # applied cseqs kept per seat, to tell a resend from a stale command


class CommandRejected(Rejection):
    """A command the match will not take; nothing changed. ``details`` go to the client with
    the error (for example the last cseq applied, with ``stale_cseq``)."""


@dataclass(frozen=True)
class Outcome:
    """What became of a submitted command. ``late`` is set when the command reached the server
    at or after its deadline: it was not applied and its sender lost on time."""

    seq: int
    duplicate: bool = False
    late: bool = False
    released: bool = False  # the command's pending arrival was released after commit


def clock_config() -> engine.ClockConfig:
    return engine.ClockConfig(
        bank_ms=getattr(settings, "MATCH_BANK_MS", 120_000),
        delay_ms=getattr(settings, "MATCH_DELAY_MS", 10_000),
    )


def deal_wait_ms() -> int:
    """How long a round waits for the players' contributions before the server stands in."""
    return timekeeping.setting_ms("DEAL_CONTRIBUTION_MS", 5_000)


def start_grace_ms(match: Match) -> int:
    """How long the clocks may stand before the server presses Start / reveals for the player."""
    if match.mode == Match.Mode.HOTSEAT:
        return timekeeping.setting_ms("HOTSEAT_REVEAL_GRACE_MS", 300_000)
    return timekeeping.setting_ms("START_GRACE_MS", 20_000)


# --- creating ------------------------------------------------------------------------------


def match_create(
    *,
    player0,
    player1,
    mode: str = Match.Mode.ONLINE,
    rated: bool = False,
    now_ms: int,
    clock: engine.ClockConfig | None = None,
) -> Match:
    """A new match whose first round waits for the players' contributions to its deal
    (docs/fairness.md); clocks stand until Start."""
    if mode == Match.Mode.HOTSEAT and (player0.pk != player1.pk or rated):
        raise ValueError("a pass-and-play match is one user's, on both seats, and unrated")
    seed = engine.new_seed()
    state = engine.begin_dealing(
        engine.new_match(
            engine.sealed_deal(seed),
            clock=clock or clock_config(),
            hotseat=mode == Match.Mode.HOTSEAT,
        )
    )
    match = Match(mode=mode, rated=rated, player0=player0, player1=player1, secret_seed=seed)
    match.computer_seat = next(
        (seat for seat, p in enumerate((player0, player1)) if p.computer_level), None
    )
    match.header = engine.new_record(
        state,
        match_id=str(match.id),
        mode=mode,
        rated=rated,
        created_at=engine.iso_timestamp(now_ms),
        players=[
            {"seat": seat, "username": player.username, "computer": player.computer_level or None}
            for seat, player in enumerate((player0, player1))
        ],
    )
    _store(match, state, now_ms)
    match.save()
    transaction.on_commit(partial(_after_commit, match, state, []))
    return match


# --- commands ------------------------------------------------------------------------------


def match_submit(
    *,
    match_id,
    user,
    command: dict,
    arrival_ms: int | timekeeping.StampInFlight,
    cseq: int | None = None,
    arrival_token: str | None = None,
) -> Outcome:
    """Apply a player's command that reached the server at ``arrival_ms`` (stamped by the time
    authority before any lock was awaited; a stamp still in flight is waited for once the time
    is needed, and before any lock). Raises CommandRejected, changing nothing, for an illegal
    command; a command whose ``cseq`` was already applied is acknowledged, not applied.
    A command that changes the match releases its pending ``arrival_token`` after commit, in
    the same round trip as the rest (``Outcome.released``); otherwise the caller releases it.

    Where the database can write a row only if it is unchanged (PostgreSQL), the match is
    first read without its lock and the change written in one statement, conditional on no
    change since: two statements and no transaction of ours. A change made meanwhile, one
    that needs more than that statement (the match ending, a timeout, a void), and a refusal
    are done again under the lock."""
    submitted = partial(
        _submit, match_id=match_id, user=user, command=command, cseq=cseq,
        arrival_token=arrival_token,
    )  # fmt: skip
    if connection.vendor == "postgresql":
        try:
            return submitted(arrival_ms=arrival_ms, locked=False)
        except (rows.Stale, _NeedsLock, CommandRejected):
            # A refusal is judged again under the lock too: the read may predate a change
            # being committed, after which the command is legal (as it was before moves were
            # made without the lock).
            rows.forget(match_id)
    arrival_ms = timekeeping.settled_ms(arrival_ms)
    with transaction.atomic():
        return submitted(arrival_ms=arrival_ms, locked=True)


def match_seen_at(match_id, seq: int, row: bytes | None = None) -> None:
    """A broadcast of the match at ``seq`` reached this process, with the ``row`` its writer
    shared or without: this process's next move of the match starts from that row, and never
    from a copy of its row from before (it would only be found stale when written)."""
    rows.heard(match_id, seq, row)


class _NeedsLock(Exception):
    """A change read without the lock that must be made under it; nothing was written."""


def _submit(*, match_id, user, command, arrival_ms, cseq, arrival_token, locked) -> Outcome:
    match = _read(match_id, lock=locked)
    read_seq = None if locked else match.seq
    judged = _judge(match, match_state(match), user, command, cseq, arrival_ms, locked=locked)
    if isinstance(judged, Outcome):
        return judged
    _commit_change(match, judged.state, judged.events, judged.arrival_ms, arrival_token, read_seq)
    return Outcome(seq=match.seq, released=arrival_token is not None)


async def match_submit_on_loop(
    *, match_id, user, command: dict, arrival_ms: int, cseq: int | None, arrival_token: str
) -> Outcome | None:
    """``match_submit`` from the event loop, without a database thread, where it can be made
    so: on PostgreSQL, a move of a match whose row this process keeps (matches/rows.py),
    judged from its snapshot, that changes the row, appends its events and merges what it makes
    known into the header where the header is stored (a deal's tiles, a round's seed and the
    next round, sealed: no match's end, no computer to wake, no outage of the web tier to look
    for), written in one statement only if the match is unchanged since. Otherwise None, with
    nothing written: the caller then calls ``match_submit``, which also judges a refusal again,
    under the lock. A write that failed once sent raises DatabaseError, as a failed commit
    does (whether it was made is unknown: a command resent with its cseq is never applied
    twice). Its after-commit writes and broadcasts are held (``broadcast.held``).

    Moves of one match made here go one after the other: the next is judged on the row the
    last one wrote, which it would otherwise find changed, to be made again under the lock
    (both players contribute to a deal at once)."""
    async with _moving_on_loop.held(str(match_id)):
        return await _submit_on_loop(
            match_id=match_id, user=user, command=command, arrival_ms=arrival_ms, cseq=cseq,
            arrival_token=arrival_token,
        )  # fmt: skip


_moving_on_loop = KeyedLock()


async def _submit_on_loop(
    *, match_id, user, command: dict, arrival_ms: int, cseq: int | None, arrival_token: str
) -> Outcome | None:
    if (kept := _kept_for_the_loop(match_id)) is None:
        return None
    if (lease := lease_loop_connection()) is None:
        return None  # every connection of the loop is in use: the threads, at once
    match, players = kept
    read_seq = match.seq
    writing = None
    try:
        judged = _judged_on_loop(match, user, command, cseq, arrival_ms)
        if not isinstance(judged, _Move):
            return judged
        state, header = judged.state, engine.header_change(judged.state, judged.events)
        if state.round_over:  # not the match's end: that is judged under the lock
            state = _next_round(match, state)
            header = engine.with_round_added(header, state)
        _store(match, state, judged.arrival_ms)
        writing = asyncio.ensure_future(
            rows.store_on_loop(
                match,
                judged.events,
                round_no=judged.state.round_no,
                read_seq=read_seq,
                lease=lease,
                header=header,
            )  # fmt: skip
        )
    finally:
        # The write gives its lease back when it ends, even cancelled before it began.
        if writing is None:
            lease.release()
        else:
            writing.add_done_callback(lambda _: lease.release())
    after_commit = partial(
        _after_commit_on_loop, match, state, judged.events,
        arrival_token=arrival_token, players=players,
    )  # fmt: skip
    try:
        # Not asyncio.shield: a failure it re-raised here would join this frame, which holds
        # the write, to its traceback: a cycle of garbage holding the match, for the collector.
        await asyncio.wait([writing])
    except asyncio.CancelledError:
        # A socket closed meanwhile cancels its task, not the write, whose broadcast then goes
        # out on its own (as a database thread's does, finishing after its caller left).
        writing.add_done_callback(partial(_published_alone, after_commit))
        raise
    if isinstance(writing.exception(), _NOTHING_WRITTEN):
        return None  # nothing written: made the usual way, on the row as it is now
    writing.result()  # a write that failed once sent: DatabaseError
    after_commit()
    return Outcome(seq=match.seq, released=True)


# How a loop write fails having written nothing: the move is then made the usual way.
_NOTHING_WRITTEN = (rows.Stale, LoopConnectionUnavailable)


def _judged_on_loop(match: Match, user, command, cseq, arrival_ms) -> _Move | Outcome | None:
    """The move judged from the kept row's snapshot, or what it makes if nothing is left to
    write (``Outcome``); None if it must be judged or written the usual way."""
    state = snapshot_state(match)
    if state is None or (
        _clock_runs(match) and not _web_up_during_turn_known_here(state, arrival_ms)
    ):
        return None  # judged from the record, or asking Redis whether the web tier was down
    try:
        return _judge(match, state, user, command, cseq, arrival_ms, locked=False)
    except (_NeedsLock, CommandRejected):
        return None


def _after_commit_on_loop(match: Match, state, events, **told) -> None:
    try:  # committed all the same: a lost broadcast is repaired by the clients' resync
        _after_commit(match, state, events, **told)
    except Exception:
        log.exception("match %s: could not tell Redis and the players of a change", match.pk)


def _published_alone(after_commit, writing: asyncio.Future) -> None:
    """The write of a move whose caller was cancelled ended: if it was made, tell everyone."""
    if writing.cancelled():
        return
    if (failure := writing.exception()) is None:
        asyncio.ensure_future(_held_for_the_loop(after_commit))
    elif not isinstance(failure, _NOTHING_WRITTEN):
        log.error("a move whose socket closed may not be written: %r", failure)


async def _held_for_the_loop(after_commit) -> None:
    async with broadcast.held():
        after_commit()


def may_submit_on_loop(match_id) -> bool:
    """Might ``match_submit_on_loop`` make a move of this match (no database read)?"""
    return (
        connection.vendor == "postgresql"
        and rows.keeps(match_id)
        and broadcast.players_known(match_id) is not None
    )


def _kept_for_the_loop(match_id) -> tuple[Match, list[dict]] | None:
    """The kept row and the players, read now (either may be dropped meanwhile)."""
    players = broadcast.players_known(match_id)
    if players is None or connection.vendor != "postgresql":
        return None
    match = rows.kept(match_id)
    return None if match is None or match.computer_seat is not None else (match, players)


@dataclass(frozen=True)
class _Move:
    """A player's command judged legal: the state and events it makes, at its arrival."""

    state: engine.MatchState
    events: list[dict]
    arrival_ms: int


def _judge(match: Match, state, user, command, cseq, arrival_ms, *, locked: bool):
    """Judge a player's command against ``state``: the ``_Move`` it makes, or the ``Outcome``
    when nothing is left to write (a resend, or, under the lock, the match voided for an
    outage or lost on time). Raises CommandRejected for an illegal command and, without the
    lock, _NeedsLock for what must be done under it."""
    seat = _seat_of(match, user, state, command)
    slot = 0 if match.mode == Match.Mode.HOTSEAT else seat
    if cseq is not None and cseq <= _last_cseq(match, slot):
        if cseq in match.recent_cseqs.get(str(slot), []):
            return Outcome(seq=match.seq, duplicate=True)
        raise CommandRejected(
            "stale_cseq",
            f"cseq {cseq} was not applied, and a later one was: send it with a new cseq",
            last_cseq=_last_cseq(match, slot),
        )
    _check_start_allowed(match, state, seat, command)
    arrival_ms = timekeeping.settled_ms(arrival_ms)
    if _clock_runs(match) and _web_gap_during_turn(state, arrival_ms):
        _needs_lock(locked)
        _void_for_web_gap(match, state, arrival_ms)
        return Outcome(seq=match.seq)
    try:
        result = engine.apply(state, seat, command, arrival_ms)
    except engine.IllegalCommand as exc:
        raise CommandRejected(exc.code, exc.message, **exc.details) from None
    if isinstance(result, engine.Flagged):
        _needs_lock(locked)
        return _flagged(match, state, result, arrival_ms)
    if result.state.result is not None:
        _needs_lock(locked)  # the record is folded and the ratings change with it
    if cseq is not None:
        _remember_cseq(match, slot, cseq)
    return _Move(result.state, result.events, arrival_ms)


def _needs_lock(locked: bool) -> None:
    if not locked:
        raise _NeedsLock


def _flagged(match: Match, state, flagged: engine.Flagged, arrival_ms: int) -> Outcome:
    """The command came after its sender's deadline: they lose on time, judged exactly as the
    deadline loops judge it (a command stamped in time goes first; an outage of the web tier
    decides nothing, or voids)."""
    verdict = _forfeit_verdict(match, state, arrival_ms)
    if verdict in ("command_pending", "web_down"):
        raise CommandRejected(
            "busy", "a command sent in time is still being applied; send it again"
        )
    if verdict in FORFEITS:
        _commit_change(match, flagged.state, flagged.events, arrival_ms)
    return Outcome(seq=match.seq, late=match.reason in ("time", "abandon"))


def _locked(match_id) -> Match:
    return _read(match_id, lock=True)


def _read(match_id, *, lock: bool) -> Match:
    """The match without the header, its row locked when ``lock``: a move reads and writes only
    what does not grow with the match (the header is loaded, by its own query, only when a
    round is dealt or ends)."""
    match = rows.read(match_id, lock=lock)
    if match is None:
        raise CommandRejected("no_such_match", "there is no such match")
    return match


def _seat_of(match: Match, user, state: engine.MatchState, command: dict) -> int:
    seats = match.seats_of(user) if user is not None and user.is_authenticated else []
    if not seats:
        raise CommandRejected("not_a_player", "you are not playing in this match")
    if len(seats) == 1:
        return seats[0]
    # Pass-and-play: one user holds both seats and acts for whoever is to act.
    if isinstance(command, dict) and command.get("seat") in (0, 1):
        return command["seat"]
    holder = engine.device_holder(state)
    return 0 if holder is None else holder


def _last_cseq(match: Match, slot: int) -> int:
    return match.cseq0 if slot == 0 else match.cseq1


def _remember_cseq(match: Match, slot: int, cseq: int) -> None:
    setattr(match, f"cseq{slot}", max(cseq, _last_cseq(match, slot)))
    recent = [*match.recent_cseqs.get(str(slot), []), cseq][-RECENT_CSEQS:]
    match.recent_cseqs = {**match.recent_cseqs, str(slot): recent}


def _check_start_allowed(match: Match, state, seat: int, command) -> None:
    """Start / Continue sets the first player's clock running, so that player presses it."""
    if (
        not isinstance(command, dict)
        or command.get("type") != "start"
        or engine.starter(state) is None
    ):
        return
    if seat != engine.starter(state):
        raise CommandRejected(
            "not_your_start", "the player who acts first presses Start / Continue"
        )


# --- the timeout path ----------------------------------------------------------------------


def match_expire(*, match_id, now_ms: int, conclude: bool = True) -> str:
    """Act on the match's deadline if it has passed at ``now_ms`` (the authority's time): press
    Start for an absent player, or end the match on time. Idempotent: every process's deadline
    loop and the sweeper may call it for the same deadline. A command stamped before the deadline
    that is still waiting for the lock wins: the expiry then stands back and is retried.

    A forfeit is committed and told before its record is folded and its ratings written
    (``match_conclude``): before this returns, or, without ``conclude``, by the caller once
    its broadcasts are out. On PostgreSQL it is made as a move is (``match_submit``): read
    without the lock, written in one statement only if nothing changed since; whatever else a
    deadline does, and a change made meanwhile, is done under the lock."""
    outcome = None
    if connection.vendor == "postgresql":
        try:
            outcome = _expire(match_id, now_ms, locked=False)
        except (rows.Stale, _NeedsLock):
            rows.forget(match_id)
    if outcome is None:
        with transaction.atomic():
            outcome = _expire(match_id, now_ms, locked=True)
    if conclude and outcome in FORFEITS:
        match_conclude(match_id=match_id)
    return outcome


def _expire(match_id, now_ms: int, *, locked: bool) -> str:
    match = _read(match_id, lock=locked)
    if match.is_over or match.deadline_ms is None:
        return "nothing_due"
    if now_ms < match.deadline_ms:
        return "early"
    if not locked and match.deadline_kind != Match.DeadlineKind.DECISION:
        raise _NeedsLock  # a deal or a Start: rare, and not worth a second way
    late_by = now_ms - match.deadline_ms
    if late_by > timekeeping.setting_ms("TIMEOUT_LATE_TOLERANCE_MS", 3_000):
        log.warning("match %s: deadline processed %d ms late", match.pk, late_by)
    read_seq = None if locked else match.seq
    return _expire_judged(match, match_state(match), now_ms, read_seq)


def match_conclude(*, match_id, tell_again: bool = False) -> bool:
    """Finish a forfeit that ``match_expire`` made and told without its record folded nor its
    ratings written: do both now. Idempotent: False if there was nothing left to do. With
    ``tell_again`` (the sweeper's, for a process that died in between, maybe before it told
    anyone), its end is told once more after commit (a client drops what it has, by seq)."""
    with transaction.atomic():
        match = _locked(match_id)
        if not match.end_pending:
            return False
        state = match_state(match)
        _fold_record(match, state, [])
        match.end_pending = False
        _rate(match, state)
        rows.store(match, [], round_no=state.round_no)
        if tell_again:
            transaction.on_commit(lambda: _after_commit(match, state, []), robust=True)
    return True


def conclude_pending_ends(*, older_than_ms: int, now_ms: int) -> int:
    """Conclude every forfeit made more than ``older_than_ms`` before ``now_ms`` and not
    concluded since (its process died first): the sweeper's; how many."""
    ended_by = datetime.fromtimestamp((now_ms - older_than_ms) / 1000, tz=UTC)
    pending = Match.objects.filter(end_pending=True, finished_at__lt=ended_by)
    concluded = (
        match_conclude(match_id=pk, tell_again=True) for pk in pending.values_list("pk", flat=True)
    )
    return sum(concluded)


def _expire_judged(
    match: Match, state: engine.MatchState, now_ms: int, read_seq: int | None = None
) -> str:
    """The deadline of this live match, locked or read at ``read_seq``, has passed at
    ``now_ms``: act on it, or say why not yet. A command stamped before the deadline that is
    still waiting for the lock goes first; while no web process is up nobody could act, so
    nothing is decided; a clock that ran through an outage of the web tier voids the match
    (RULES §7)."""
    if match.deadline_kind == Match.DeadlineKind.DEAL:
        if timekeeping.pending_before(str(match.id), match.deadline_ms, now_ms):
            return "command_pending"  # a contribution sent in time is applied first
        # No clock runs while a round is dealt: the server stands in for whoever is missing.
        kind, command, at_ms = "contribute", {"type": "contribute", "drawn": True}, now_ms
    elif match.deadline_kind == Match.DeadlineKind.START:
        if timekeeping.pending_before(str(match.id), match.deadline_ms, now_ms):
            return "command_pending"
        if webbeats.down_now(now_ms):
            return "web_down"  # pressing Start now would run a clock nobody can stop
        # No clock runs during the wait: the clocks start when Start is pressed.
        kind, command, at_ms = "start", {"type": "start"}, now_ms
    else:
        kind = _forfeit_verdict(match, state, now_ms, locked=read_seq is None)
        if kind not in FORFEITS:
            return kind
        # A forfeit counts at the deadline, however late it is processed (RULES §7): the
        # arrival stamps have already decided that no command beat it.
        command, at_ms = {"type": kind}, match.deadline_ms
    new_state, events = engine.apply(state, None, command, at_ms)
    # A forfeit is told before its record is folded and its ratings written: the caller
    # concludes it once its broadcasts are out (``match_conclude``; FORFEITS).
    _commit_change(
        match, new_state, events, now_ms, read_seq=read_seq, conclude_later=kind in FORFEITS
    )
    return kind


def _forfeit_verdict(
    match: Match, state: engine.MatchState, now_ms: int, *, locked: bool = True
) -> str:
    """What the running clock's deadline, passed at ``now_ms``, comes to now: ``timeout``, or
    ``abandon`` for a player who is not connected; or why the match may not be forfeited now:
    ``command_pending`` (a command stamped before it is still being applied), ``web_down``
    (nobody can act or reconnect yet: judge it when web is back) or ``void`` (the clock ran
    through an outage of the web tier, and the match has just been voided)."""
    pipe = sync_redis().pipeline(transaction=False)
    judge = _query_forfeit(pipe, match, state, match.deadline_ms, now_ms)
    verdict = judge(pipe.execute())
    if verdict == webbeats.GAP:
        _needs_lock(locked)
        return _void_for_web_gap(match, state, now_ms)
    return verdict


def _query_forfeit(pipe, match: Match, state, deadline_ms: int, now_ms: int):
    """Queue into ``pipe`` all a forfeit asks Redis, in one round trip (a forfeit's lateness is
    mostly its round trips): a command stamped before the deadline still pending, the
    decider's presence, the web tier's beats. Returns how to tell from the replies what the
    deadline comes to: ``command_pending``, ``web_down``, ``gap``, or the forfeit's kind."""
    match_id = str(match.pk)
    timekeeping.query_pending_before(pipe, match_id, deadline_ms, now_ms)
    presence.query_connected(pipe, match_id, state.decider)
    judge_web = webbeats.query_verdict(pipe, state.turn_start_ms, deadline_ms, now_ms)

    def judge(replies: list) -> str:
        pending, connected, *beats = replies
        if pending:
            return "command_pending"
        web = judge_web(beats)
        if web == webbeats.DOWN_NOW:
            return "web_down"
        if web == webbeats.GAP:
            return webbeats.GAP
        return "timeout" if connected or match.mode == Match.Mode.HOTSEAT else "abandon"

    return judge


# --- a forfeit made ahead of its deadline (the deadline keeper's) ----------------------------


@dataclass(frozen=True)
class _Ending:
    """One way a forfeit may go: the match as it will be written, and what it tells."""

    match: Match
    state: engine.MatchState
    events: list[dict]
    messages: list


@dataclass(frozen=True)
class ForfeitAhead:
    """A running clock's forfeit, made ahead of its deadline (``forfeit_ahead``): at the
    deadline only Redis is asked whether it stands, and it is written (``forfeit_made_ahead``)."""

    match: Match  # as read, before
    state: engine.MatchState
    endings: dict[str, _Ending]  # by kind: timeout, abandon

    @property
    def deadline_ms(self) -> int:
        return self.match.deadline_ms


def forfeit_ahead(match_id, deadline_ms: int) -> ForfeitAhead | None:
    """The forfeit that the match's running clock will make at ``deadline_ms``, made now,
    nothing written: on PostgreSQL (where a forfeit is written without the lock), for a match
    whose clock runs to that deadline; None otherwise (it is then fired the usual way)."""
    if connection.vendor != "postgresql":
        return None
    match = rows.read(match_id, lock=False)
    if match is None or not _clock_runs(match) or match.deadline_ms != deadline_ms:
        return None
    state = match_state(match)
    players = broadcast.players_of(match.pk)
    endings = {}
    for kind in FORFEITS:
        ending = copy.copy(match)  # its values as read stay shared: only changes are written
        new_state, events = engine.apply(state, None, {"type": kind}, deadline_ms)
        ending.end_pending = True
        _store(ending, new_state, deadline_ms)
        messages = broadcast.messages_of(ending, new_state, events, players)
        endings[kind] = _Ending(ending, new_state, events, messages)
    return ForfeitAhead(match, state, endings)


async def forfeit_made_ahead(ahead: ForfeitAhead, now_ms: int) -> str | None:
    """Make the forfeit of ``ahead``, its deadline passed at ``now_ms``, if it stands as it
    would under ``match_expire``: one Redis round trip, one statement on the loop's connection
    written only if the match is unchanged since, and its broadcasts, held (``broadcast.held``).
    Returns its kind; None with nothing written, for the caller to fire the deadline the usual
    way (which judges again a command pending, an outage, a change made meanwhile)."""
    if now_ms < ahead.deadline_ms:
        return None
    pipe = async_redis().pipeline(transaction=False)
    judge = query_forfeit_ahead(pipe, ahead, now_ms)
    return await write_forfeit_ahead(ahead, judge(await pipe.execute()))


def query_forfeit_ahead(pipe, ahead: ForfeitAhead, now_ms: int):
    """Queue into ``pipe`` what ``ahead``'s forfeit asks Redis, as of ``now_ms`` (its deadline
    or later); returns how to tell from the replies what it comes to."""
    return _query_forfeit(pipe, ahead.match, ahead.state, ahead.deadline_ms, now_ms)


async def write_forfeit_ahead(ahead: ForfeitAhead, kind: str) -> str | None:
    """Write ``ahead``'s forfeit and tell it, if ``kind`` (what Redis's replies made of it) is
    a forfeit: ``forfeit_made_ahead`` from its judgment on."""
    if kind not in FORFEITS or (lease := lease_loop_connection()) is None:
        return None
    ending = ahead.endings[kind]
    ending.match.finished_at = dj_timezone.now()  # as match_expire has it: when it was made
    try:
        await rows.store_on_loop(
            ending.match, ending.events, round_no=ending.state.round_no,
            read_seq=ahead.match.seq, lease=lease,
        )  # fmt: skip
    except _NOTHING_WRITTEN:
        return None
    finally:
        lease.release()
    _after_commit_on_loop(ending.match, ending.state, ending.events, messages=ending.messages)
    return kind


def _clock_runs(match: Match) -> bool:
    return match.deadline_kind == Match.DeadlineKind.DECISION and not match.is_over


def _web_gap_during_turn(state: engine.MatchState, arrival_ms: int) -> bool:
    """Did the web tier go down while this turn's clock ran? Asked only of a turn longer than
    the tolerance, the only kind an outage longer than it can fall into."""
    if not _turn_outlasts_web_tolerance(state, arrival_ms):
        return False
    return webbeats.verdict(state.turn_start_ms, arrival_ms, arrival_ms) == webbeats.GAP


def _turn_outlasts_web_tolerance(state: engine.MatchState, arrival_ms: int) -> bool:
    return state.turn_start_ms is not None and (
        arrival_ms - state.turn_start_ms > webbeats.tolerance_s() * 1000
    )


def _web_up_during_turn_known_here(state: engine.MatchState, arrival_ms: int) -> bool:
    """Is it known, without asking Redis, that the web tier was up while this turn's clock
    ran (a turn too short for an outage, or one this process beat through)?"""
    return not _turn_outlasts_web_tolerance(state, arrival_ms) or webbeats.up_here_throughout(
        state.turn_start_ms, arrival_ms
    )


def _void_for_web_gap(match: Match, state: engine.MatchState, now_ms: int) -> str:
    """No web process was up for a stretch of this player's running clock: the service could
    not hear them (RULES §7). Conclusive evidence: the fault is confirmed and the match voided."""
    detail = {"turn_start_ms": state.turn_start_ms, "deadline_ms": match.deadline_ms}
    TimingFault.objects.create(
        match=match, kind=TimingFault.Kind.WEB_DOWN, detail=detail,
        status=TimingFault.Status.CONFIRMED, decided_by="auto",
        decided_at=dj_timezone.now(), last_seen_at=dj_timezone.now(),
    )  # fmt: skip
    log.warning("match %s voided: no web process was up while a clock ran (%s)", match.pk, detail)
    why = f"{TimingFault.Kind.WEB_DOWN.label} ({TimingFault.Kind.WEB_DOWN.value})"
    new_state, events = engine.apply(state, None, {"type": "void", "why": why}, now_ms)
    _commit_change(match, new_state, events, now_ms)
    return "void"


# --- voiding and timing faults -------------------------------------------------------------


def match_void(*, match_id, why: str, now_ms: int) -> Match:
    """Void a live match after a confirmed timing fault of the service: no rating result, both
    players told. A result, once reached, stands: a finished or void match is refused with
    ``match_over`` (RULES §7), so no rating ever needs taking back."""
    with transaction.atomic():
        match = _locked(match_id)
        if match.is_over:
            raise CommandRejected("match_over", "a finished match is never voided")
        state = match_state(match)
        at_ms = max(now_ms, state.last_ms or now_ms)  # the faulty authority may have gone back
        new_state, events = engine.apply(state, None, {"type": "void", "why": why}, at_ms)
        _commit_change(match, new_state, events, at_ms)
        return match


def fault_report(
    *, match_id, kind: str, detail: dict, seats: list[int] | None = None
) -> TimingFault | None:
    """Record what the service saw of its own timekeeping while a player's clock ran.

    Only a live match with a running clock can suffer a timing fault (a Start wait is no clock;
    a finished match is never voided), and only the player whose clock runs can suffer it:
    ``seats``, when given, are the reporting socket's, and one of them must be the one to act.
    One incident is one fault: the same kind seen again in
    the same match within ``FAULT_INCIDENT_WINDOW_MS`` of the last sighting is counted on the
    fault already recorded. A task re-checks a new fault after commit."""
    with transaction.atomic():
        match = (
            Match.objects.select_for_update()
            .filter(
                pk=match_id, status=Match.Status.LIVE, deadline_kind=Match.DeadlineKind.DECISION
            )
            .first()
        )
        if match is None:
            return None
        if seats is not None and match_state(match).decider not in seats:
            return None  # the other player's command: their clock does not run
        now = dj_timezone.now()
        window = timedelta(milliseconds=timekeeping.setting_ms("FAULT_INCIDENT_WINDOW_MS", 60_000))
        fault = (
            match.timing_faults.select_for_update()
            .filter(kind=kind, last_seen_at__gte=now - window)
            .exclude(status=TimingFault.Status.DISMISSED)
            .first()
        )
        if fault is not None:
            fault.sightings += 1
            fault.last_seen_at = now
            fault.save(update_fields=["sightings", "last_seen_at"])
            return fault
        fault = TimingFault.objects.create(match=match, kind=kind, detail=detail, last_seen_at=now)
        log.warning("suspected timing fault %s in match %s: %s", kind, match.pk, detail)
        transaction.on_commit(partial(_queue_recheck, fault.pk, kind))
        return fault


def _queue_recheck(fault_id: int, kind: str) -> None:
    # An unreachable authority is judged once the incident had time to show its length.
    countdown_s = (
        timekeeping.setting_ms("STAMP_LATE_TOLERANCE_MS", 2_000) / 1000
        if kind == TimingFault.Kind.UNREACHABLE
        else 0
    )
    try:
        # Queued by name: the tasks call the services, not the other way round.
        current_app.send_task(RECHECK_FAULT_TASK, (fault_id,), countdown=countdown_s)
    except Exception:  # the broker is Redis, which may be the very thing that failed
        log.exception(
            "could not queue the re-check of timing fault %s; staff can confirm it", fault_id
        )


def fault_confirm(*, fault_id: int, decided_by: str, now_ms: int) -> TimingFault:
    with transaction.atomic():
        # The match first, then the fault: the order fault_report takes them in.
        match_id = TimingFault.objects.values_list("match_id", flat=True).get(pk=fault_id)
        match = _locked(match_id)
        fault = TimingFault.objects.select_for_update().get(pk=fault_id)
        if fault.status != TimingFault.Status.SUSPECTED:
            return fault
        if match.is_over:
            # Its match ended meanwhile: the result stands, the fault stays on file for staff.
            return _fault_decide(fault, TimingFault.Status.DISMISSED, decided_by)
        _fault_decide(fault, TimingFault.Status.CONFIRMED, decided_by)
        why = f"{fault.get_kind_display()} ({fault.kind})"
        match_void(match_id=match_id, why=why, now_ms=now_ms)
        return fault


def fault_dismiss(*, fault_id: int, decided_by: str) -> TimingFault:
    with transaction.atomic():
        fault = TimingFault.objects.select_for_update().get(pk=fault_id)
        if fault.status == TimingFault.Status.SUSPECTED:
            _fault_decide(fault, TimingFault.Status.DISMISSED, decided_by)
        return fault


def _fault_decide(fault: TimingFault, status: str, decided_by: str) -> TimingFault:
    fault.status = status
    fault.decided_at = dj_timezone.now()
    fault.decided_by = decided_by
    fault.save(update_fields=["status", "decided_at", "decided_by"])
    return fault


# --- shared steps --------------------------------------------------------------------------


def _commit_change(
    match: Match,
    state: engine.MatchState,
    events: list[dict],
    now_ms: int,
    arrival_token: str | None = None,
    read_seq: int | None = None,
    *,
    conclude_later: bool = False,
) -> None:
    """Append the events, deal the next round when one ended, store everything, and after
    commit tell everyone and arm the deadline. The header is written only when it changes;
    a save of a match whose header was not loaded leaves it alone. A match read without its
    lock at ``read_seq`` is stored only if still there (else ``rows.Stale``). A match that
    ends has its record folded and its ratings written in the same transaction, or, with
    ``conclude_later``, by ``match_conclude`` (its record reads whole meanwhile)."""
    concluded = state.result is not None and not conclude_later
    appended, round_no = [] if concluded else events, state.round_no
    if concluded:
        _fold_record(match, state, events)
    elif state.result is not None:
        match.end_pending = True
    elif engine.header_changes(state, events):
        engine.update_header(match.header, state)
    if state.round_over and state.result is None:
        state = _next_round(match, state)
        engine.add_round(match.header, state)
    _store(match, state, now_ms)
    if concluded:
        _rate(match, state)
    rows.store(match, appended, round_no=round_no, read_seq=read_seq)
    # Robust: the change is committed; a lost broadcast is repaired by the clients' resync.
    # A lambda, not a partial: Django names a failing robust callback by its __qualname__.
    transaction.on_commit(lambda: _after_commit(match, state, events, arrival_token), robust=True)


def _next_round(match: Match, state: engine.MatchState) -> engine.MatchState:
    """A round ended: the next waits for its deal, sealed by a new secret seed of the match's."""
    seed = engine.new_seed()
    match.secret_seed = seed
    return engine.begin_dealing(engine.next_round(state, engine.sealed_deal(seed)))


def _fold_record(match: Match, state: engine.MatchState, events: list[dict]) -> None:
    """The match is over and never changes again: its whole record goes into the header, read
    in one piece from now on, and its event rows go (the table holds live matches only)."""
    record = match.header  # written whole with the match's end: no copy of it is needed
    for round_number, event in rows.taken_events(match):
        record["rounds"][round_number - 1]["events"].append(event)
    engine.add_events(record, state, events)


def _rate(match: Match, state: engine.MatchState) -> None:
    """A rated match's result goes to the ladder; a void one's never does."""
    if match.rated and state.result.reason != "void":
        rating_record_result(match=match)


def _store(match: Match, state: engine.MatchState, now_ms: int) -> None:
    match.snapshot = pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)
    match.seq = state.seq
    match.balances = list(state.balances)
    match.round_count = state.round_no
    match.status = engine.status_of(state)
    if state.result is not None:
        match.winner = state.result.winner
        match.reason = state.result.reason
        match.finished_at = match.finished_at or dj_timezone.now()
        match.deadline_ms, match.deadline_kind = None, ""
    elif state.phase == engine.DEALING:
        # The wait runs from the round's start: one player's contribution must not buy the
        # other more time (a round only leaves dealing by its deal or the match's end).
        if match.deadline_kind != Match.DeadlineKind.DEAL:
            match.deadline_ms = now_ms + deal_wait_ms()
            match.deadline_kind = Match.DeadlineKind.DEAL
    elif engine.starter(state) is not None:
        match.deadline_ms, match.deadline_kind = (
            now_ms + start_grace_ms(match),
            Match.DeadlineKind.START,
        )
    else:
        match.deadline_ms, match.deadline_kind = state.deadline_ms, Match.DeadlineKind.DECISION


def _after_commit(
    match: Match,
    state: engine.MatchState,
    events: list[dict],
    arrival_token: str | None = None,
    players: list[dict] | None = None,
    messages: list | None = None,
) -> None:
    """Tell Redis (the deadline, the last seq for pings, the command no longer pending: one
    round trip, before the broadcasts) and everyone concerned. Writes that did not reach
    Redis are made again from the loop (``broadcast.held``); from elsewhere a lost write is
    repaired: the sweeper rebuilds the deadlines, a ping falls back on the database, a
    pending arrival expires by itself."""
    match_id, seq, deadline_ms = str(match.id), state.seq, match.deadline_ms  # as they are now

    def writes(pipe) -> None:
        broadcast.note_change(pipe, match_id, seq, deadline_ms)
        if arrival_token is not None:
            timekeeping.release_into(pipe, match_id, arrival_token)

    if messages is None:
        broadcast.publish(match, state, events, writes, players)
    else:  # built already
        broadcast.publish_messages(lambda: messages, writes)
    if computer_to_act(match, state):
        queue_computer_turn(match_id, state.seq)


def computer_to_act(match: Match, state: engine.MatchState) -> bool:
    """Is it the computer's turn to contribute to a deal, press Start or decide?"""
    if match.computer_seat is None or state.result is not None:
        return False
    if state.phase == engine.DEALING:
        return engine.may_contribute(state, match.computer_seat)
    starter = engine.starter(state)
    return match.computer_seat == (state.decider if starter is None else starter)


def queue_computer_turn(match_id: str, seq: int) -> None:
    """Ask a worker to play the computer's turn at event ``seq`` (matches/computer.py); by name,
    since the tasks call the services and not the other way round."""
    try:
        current_app.send_task(
            COMPUTER_TURN_TASK,
            (match_id, seq),
            countdown=timekeeping.setting_ms("COMPUTER_PAUSE_MS", 600) / 1000,
        )
    except Exception:  # the sweeper queues overdue computer turns again
        log.exception("could not queue the computer's turn in match %s", match_id)

"""A web process makes a player's move from its event loop, without a database thread, where it
can (matches/services.py ``match_submit_on_loop``): one conditional statement on a connection
the loop keeps (realtime/database.py). Everything it cannot judge or write alone, and every
failure under it (a row changed meanwhile, a connection killed, a database gone, a flood), writes
nothing and leaves the move to the usual way, which then makes it exactly once."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import random
from collections import OrderedDict

import psycopg
import pytest
from django.db import connection, connections

import engine
from matches import broadcast, rows, services
from matches.models import Match, MatchEvent
from realtime import database
from tests.accounts.factories import make_user
from tests.matches.conftest import T0, Table
from tests.matches.test_consumer_protocol import (
    close_all,
    new_dealt_match,
    press_start,
    reloaded,
    seated,
)
from tests.support.dealing import contribution, deal_by_service

pytestmark = [
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="moves are made on the loop on PostgreSQL"
    ),
    pytest.mark.usefixtures("rows_kept_as_in_a_web_process"),
    pytest.mark.django_db(transaction=True),  # the loop's connection sees only what is committed
]


def on_a_loop(*calls):
    """Run the coroutines that ``calls`` make, in order, on one new event loop, inside
    ``broadcast.held`` (as a socket's command is), closing the loop's connections at the end."""

    async def run():
        results = []
        try:
            for call in calls:
                async with broadcast.held():
                    results.append(await call())
        finally:
            await database.close_loop_connections()
        return results

    return asyncio.run(run())


def loop_move(
    table, command: dict | None = None, *, seat=None, after_ms=1_000, cseq=None, state=None
):
    """A coroutine function: the decider's move (a greedy bot's, unless given) on the loop,
    made in the match as it is now (or as ``state``)."""
    state = table.state if state is None else state
    seat = state.decider if seat is None else seat
    if command is None:
        command = engine.GreedyBot().choose(state, seat, random.Random(0))
    table.now += after_ms
    if cseq is None:
        table.cseq[seat] += 1
        cseq = table.cseq[seat]
    return lambda: services.match_submit_on_loop(
        match_id=str(table.match.pk), user=table.users[seat], command=command,
        arrival_ms=table.now, cseq=cseq, arrival_token=f"token-{seat}-{cseq}",
    )  # fmt: skip


def ready(table) -> None:
    """Started, its row kept here and its players known: as a web process has it."""
    table.start(after_ms=1_000)
    broadcast.players_of(table.match.pk)
    assert services.may_submit_on_loop(str(table.match.pk))


def stored(match) -> tuple[int, int]:
    """The match's seq and event rows, as the database has them."""
    return (
        Match.objects.values_list("seq", flat=True).get(pk=match.pk),
        MatchEvent.objects.filter(match=match).count(),
    )


# --- made on the loop ----------------------------------------------------------------------------


def test_a_move_of_a_kept_match_is_one_statement_of_the_loops_and_is_kept_at_once(table, sent):
    ready(table)
    sent.clear()
    seq, events = stored(table.match)
    (outcome,) = on_a_loop(loop_move(table))
    assert outcome is not None and outcome.released and not outcome.duplicate
    made = outcome.seq - seq
    assert made >= 1 and stored(table.match) == (outcome.seq, events + made)
    assert rows.kept(table.match.pk).seq == outcome.seq  # the next move starts from it
    # Its broadcasts went out when the held block ended, with the row for the other process.
    assert {group.rsplit(".", 1)[1] for group, _ in sent} >= {"seat0", "seat1"}
    assert all(message["seq"] == outcome.seq for _, message in sent)
    # The usual way carries on from what the loop wrote, and the record replays.
    table.play_until(lambda state: state.round_no > 1)


def test_a_resent_command_is_acked_as_a_duplicate_and_applied_once(table, sent):
    ready(table)
    sent.clear()
    first = loop_move(table)
    (made, again) = on_a_loop(first, first)
    assert not made.duplicate and again.duplicate and again.seq == made.seq
    assert stored(table.match)[0] == made.seq


# --- left to the usual way, with nothing written -------------------------------------------------


def test_a_row_changed_since_it_was_kept_is_never_written_over(table, sent):
    ready(table)
    sent.clear()
    # Another writer (another process, an operator) touches the row: its version changes.
    Match.objects.filter(pk=table.match.pk).update(rated=False)
    before = stored(table.match)
    move = loop_move(table)
    assert on_a_loop(move) == [None]
    assert stored(table.match) == before and sent == []
    assert rows.kept(table.match.pk) is None  # the next move reads the row


@pytest.mark.parametrize(
    "garbage",
    [{"type": "play", "tile": [9, 9]}, {"type": "nonsense"}, {"type": "play"}, {}],
    ids=["no such tile", "unknown type", "no tile", "empty"],
)
def test_an_illegal_command_writes_nothing_and_is_judged_again_the_usual_way(table, sent, garbage):
    ready(table)
    sent.clear()
    before = stored(table.match)
    assert on_a_loop(loop_move(table, garbage)) == [None]
    assert stored(table.match) == before and sent == []
    with pytest.raises(services.CommandRejected):
        table.submit(table.state.decider, garbage)
    assert stored(table.match) == before


def test_a_stranger_and_the_player_not_to_act_write_nothing(table, sent):
    ready(table)
    sent.clear()
    before = stored(table.match)
    decider = table.state.decider
    table.users[2] = make_user("mallory")
    table.cseq[2] = 0
    move = engine.GreedyBot().choose(table.state, decider, random.Random(0))
    assert on_a_loop(loop_move(table, move, seat=2), loop_move(table, move, seat=1 - decider)) == [
        None,
        None,
    ]
    assert stored(table.match) == before and sent == []


def header_of(match) -> dict:
    return Match.objects.values_list("header", flat=True).get(pk=match.pk)


def test_a_deal_is_made_on_the_loop_and_written_into_the_header_where_it_is_stored(table, sent):
    """Both contributions to a round's deal are moves of the loop: the second deals the round,
    and its tiles go into the record's header in the same statement, without reading it."""
    # A later round: the header holds several, and only the last one may change.
    state = table.play_until(lambda state: state.phase == engine.DEALING and state.round_no > 1)
    broadcast.players_of(table.match.pk)
    header = header_of(table.match)
    for seat in (0, 1):
        assert services.may_submit_on_loop(str(table.match.pk))
        seq, events = stored(table.match)
        sent.clear()
        (outcome,) = on_a_loop(loop_move(table, contribution(seat, state.round_no), seat=seat))
        assert outcome is not None and outcome.released
        assert stored(table.match) == (outcome.seq, events + outcome.seq - seq)
        assert {message["seq"] for _, message in sent} == {outcome.seq}
        after = table.state
        assert rows.kept(table.match.pk).seq == after.seq
        # What the usual way writes, reading the whole header and writing it back: the first
        # contribution reveals nothing (its value, the tiles), the second deals the round.
        engine.update_header(header, after)
        assert header_of(table.match) == header
        assert (header["rounds"][-1]["hands"] is None) == (seat == 0)
    assert after.phase != engine.DEALING and header["rounds"][-1]["contributions"] is not None
    # The record of the whole match replays through the rules (``audit_finished_matches``).
    assert table.play_until(lambda state: False).result is not None


def ends_the_round(table, state) -> bool:
    """Would the decider's greedy move (``loop_move``'s) end the round, not the match?"""
    if state.phase == engine.DEALING or engine.starter(state) is not None:
        return False
    command = engine.GreedyBot().choose(state, state.decider, random.Random(0))
    after = engine.apply(state, state.decider, command, table.now + 1_000).state
    return after.round_over and after.result is None


def test_a_rounds_end_is_made_on_the_loop_and_the_next_round_added_where_the_header_is(table, sent):
    """The move that ends a round reveals its seed and adds the next round, sealed by a new
    seed, to the header in its one statement; the next round's deal is then made on the loop
    too, and the match plays on to a record that replays."""
    state = table.play_until(lambda state: state.round_no > 1 and ends_the_round(table, state))
    broadcast.players_of(table.match.pk)
    assert services.may_submit_on_loop(str(table.match.pk))
    header, old_seed = Match.objects.values_list("header", "secret_seed").get(pk=table.match.pk)
    seq, events = stored(table.match)
    sent.clear()
    move = engine.GreedyBot().choose(state, state.decider, random.Random(0))
    ended = engine.apply(state, state.decider, move, table.now + 1_000)
    (outcome,) = on_a_loop(loop_move(table, move))
    assert outcome is not None and outcome.released
    after, (seed, stored_header) = (
        table.state,
        Match.objects.values_list("secret_seed", "header").get(pk=table.match.pk),
    )
    assert after.phase == engine.DEALING and after.round_no == state.round_no + 1
    assert stored(table.match) == (outcome.seq, events + len(ended.events))
    assert seed != old_seed and after.deal.commitment == engine.sealed_deal(seed).commitment
    assert rows.kept(table.match.pk).seq == outcome.seq
    # What the usual way writes, reading the whole header and writing it back.
    engine.update_header(header, ended.state)
    engine.add_round(header, after)
    assert stored_header == header
    assert header["rounds"][-2]["seed"] == old_seed and header["rounds"][-1]["seed"] is None
    # Told to both seats; what reaches a client names the next round's commitment only.
    assert {group.rsplit(".", 1)[1] for group, _ in sent} >= {"seat0", "seat1"}
    assert all(message["seq"] == outcome.seq for _, message in sent)
    told = [json.loads(message["text"]) for _, message in sent]
    assert all(seed not in message["text"] for _, message in sent)
    assert {(m["view"]["round"], m["view"]["commitment"]) for m in told} == {
        (after.round_no, after.deal.commitment)
    }
    for seat in (0, 1):
        (made,) = on_a_loop(loop_move(table, contribution(seat, after.round_no), seat=seat))
        assert made is not None
    assert table.state.phase != engine.DEALING
    assert table.play_until(lambda state: False).result is not None


def test_a_rounds_end_on_a_row_changed_since_it_was_kept_writes_nothing_and_no_seed(table, sent):
    state = table.play_until(lambda state: ends_the_round(table, state))
    broadcast.players_of(table.match.pk)
    Match.objects.filter(pk=table.match.pk).update(rated=False)  # another writer
    before = Match.objects.values_list("seq", "secret_seed", "header").get(pk=table.match.pk)
    sent.clear()
    assert on_a_loop(loop_move(table)) == [None]
    assert (
        Match.objects.values_list("seq", "secret_seed", "header").get(pk=table.match.pk) == before
    )
    assert sent == [] and rows.kept(table.match.pk) is None  # the next move reads the row
    # The usual way then ends the round once, with a seed of its own.
    table.decide()
    assert table.state.round_no == state.round_no + 1


@pytest.mark.parametrize(
    "value",
    ["ab" * 40, "AB" * 32, "not hex", 7, None, ["x"], {"$": 1}],
    ids=["too long", "upper case", "not hex", "a number", "none", "a list", "an object"],
)
def test_a_contribution_refused_on_the_loop_writes_nothing_to_the_header(table, sent, value):
    state = table.play_until(lambda state: state.phase == engine.DEALING)
    broadcast.players_of(table.match.pk)
    assert services.may_submit_on_loop(str(table.match.pk))  # refused, not left to the threads
    before = Match.objects.values_list("seq", "header").get(pk=table.match.pk)
    junk = {"type": "contribute", "value": value, "seat": 0}
    assert on_a_loop(loop_move(table, junk, seat=0)) == [None]
    assert Match.objects.values_list("seq", "header").get(pk=table.match.pk) == before
    (legal,) = on_a_loop(loop_move(table, contribution(0, state.round_no), seat=0))
    assert legal is not None and legal.seq > before[0]
    with pytest.raises(services.CommandRejected):  # judged again the usual way: refused too
        table.submit(1, {**junk, "seat": 1})
    assert stored(table.match)[0] == legal.seq


def test_two_moves_of_one_match_at_once_are_made_one_after_the_other_both_on_the_loop(table, sent):
    """Both players contribute the moment a round waits for its deal: where both sockets are
    on one process, the second move waits for the first's write and is made on the row it
    wrote, instead of finding the row changed and going to a database thread."""
    state = table.play_until(lambda state: state.phase == engine.DEALING)
    broadcast.players_of(table.match.pk)
    seq, events = stored(table.match)
    moves = [loop_move(table, contribution(seat, state.round_no), seat=seat) for seat in (0, 1)]

    async def together():
        async def held(move):
            async with broadcast.held():
                return await move()

        try:
            return await asyncio.gather(*(held(move) for move in moves))
        finally:
            await database.close_loop_connections()

    first, second = asyncio.run(together())
    assert first is not None and second is not None
    assert sorted((first.seq, second.seq)) == [seq + 1, seq + 2]
    assert stored(table.match) == (seq + 2, events + 2)
    assert table.state.phase != engine.DEALING  # dealt by the second


def test_nothing_is_made_on_the_loop_on_a_match_it_does_not_keep_or_whose_players_it_never_read(
    table, monkeypatch
):
    table.start(after_ms=1_000)
    monkeypatch.setattr(broadcast, "_players", OrderedDict())  # a process that never read them
    assert not services.may_submit_on_loop(str(table.match.pk))
    broadcast.players_of(table.match.pk)
    assert services.may_submit_on_loop(str(table.match.pk))
    rows.forget(table.match.pk)
    assert not services.may_submit_on_loop(str(table.match.pk))
    assert not services.may_submit_on_loop("not-a-match")


# --- the connections under it --------------------------------------------------------------------


def test_a_connection_killed_between_moves_is_replaced_and_no_move_is_lost(table, sent):
    ready(table)
    sent.clear()
    state = table.state
    first = loop_move(table, state=state)
    # The second move is chosen now, in the state the first will make (no database on the loop).
    table.now += 1_000
    played = engine.GreedyBot().choose(state, state.decider, random.Random(0))
    after_first = engine.apply(state, state.decider, played, table.now).state
    table.now -= 1_000
    second = loop_move(table, state=after_first)

    connection.ensure_connection()
    djangos = connection.connection.info.backend_pid

    async def kill_the_loops_connection():
        await asyncio.to_thread(terminate_backends_but, djangos)

    made, _, made_again = on_a_loop(first, kill_the_loops_connection, second)
    assert made is not None and made_again is not None and made_again.seq > made.seq
    assert stored(table.match)[0] == made_again.seq


def terminate_backends_but(keep: int) -> None:
    """As an operator's pg_terminate_backend, or a failover, does to the loop's connection:
    each backend gone (and its goodbye sent) before this returns, as a move that comes a
    while later finds it. Without the wait the kill raced the next move's write, which then
    failed as a connection killed in use does (once in CI)."""
    params = connection.get_connection_params()
    params.pop("cursor_factory")
    with psycopg.connect(**params, autocommit=True) as admin:
        killed = admin.execute(
            "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid() AND pid <> %s",
            [keep],
        ).fetchall()
    assert all(gone for (gone,) in killed), "a backend outlived its termination"


def test_a_move_whose_socket_closes_during_its_write_is_broadcast_all_the_same(
    table, sent, monkeypatch
):
    """The socket's task is cancelled (the player closed the tab) while the write is out: the
    write is not cancelled, and the change it made is told to everyone on its own."""
    ready(table)
    sent.clear()
    seq = stored(table.match)[0]
    move = loop_move(table)
    write_sent = asyncio.Event()
    real_store = rows.store_on_loop

    async def noting_store(*args, **kwargs):
        write_sent.set()
        await asyncio.sleep(0.05)  # the reply is slow
        return await real_store(*args, **kwargs)

    monkeypatch.setattr(rows, "store_on_loop", noting_store)

    async def closed_mid_write():
        async def socket_task():
            async with broadcast.held():
                return await move()

        task = asyncio.ensure_future(socket_task())
        await write_sent.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.wait_for(until_sent(sent), timeout=10)  # on its own, from this loop

    on_a_loop(closed_mid_write)
    made = stored(table.match)[0]
    assert made > seq
    assert {group.rsplit(".", 1)[1] for group, _ in sent} >= {"seat0", "seat1"}
    assert all(message["seq"] == made for _, message in sent)


async def until_sent(sent: list) -> None:
    while not sent:
        await asyncio.sleep(0.01)


def test_with_the_database_unreachable_the_move_waits_for_nothing_and_writes_nothing(
    table, sent, monkeypatch
):
    ready(table)
    sent.clear()
    before = stored(table.match)
    move = loop_move(table)
    with monkeypatch.context() as patched:
        patched.setitem(connections["default"].settings_dict, "PORT", "1")  # nobody listens
        assert on_a_loop(move) == [None]
    assert stored(table.match) == before and sent == []


def test_a_flood_of_moves_never_waits_for_the_loops_few_connections(make_user, sent, settings):
    """Moves that find every connection of the loop in use go the usual way at once, with
    nothing written: waiting would queue them behind the loop's own lag."""
    settings.LOOP_DB_CONNECTIONS = 2
    tables = [dealt_and_ready(make_user, n) for n in range(6)]
    before = [stored(table.match) for table in tables]
    moves = [loop_move(table) for table in tables]
    opened = []

    async def all_at_once():
        outcomes = await asyncio.gather(*(move() for move in moves))
        # Every connection the loop opened is back, kept for the next moves.
        opened.append(len(database._loop_connections[asyncio.get_running_loop()].idle))
        return outcomes

    (outcomes,) = on_a_loop(all_at_once)
    made = [outcome for outcome in outcomes if outcome is not None]
    assert len(made) == opened[0] == 2
    for table, outcome, was in zip(tables, outcomes, before, strict=True):
        if outcome is not None:
            assert stored(table.match)[0] == outcome.seq
        else:
            assert stored(table.match) == was
            table.now -= 1_000  # the same move, now made the usual way
            table.cseq[table.state.decider] -= 1
            assert table.decide(after_ms=1_000).seq > was[0]


def test_a_flood_of_moves_leaves_no_cycle_of_garbage_holding_a_match(make_user, sent, settings):
    """Under load a web process must free what a move made as soon as it is done: garbage in
    reference cycles waits for the collector, whose pauses stop every socket of the process
    (at 1,000 matches, each refused loop move left a cycle of ~100 objects: its exception's
    traceback held the frames, the state and the row)."""
    settings.LOOP_DB_CONNECTIONS = 2
    tables = [dealt_and_ready(make_user, n) for n in range(6)]
    moves = [loop_move(table) for table in tables]

    async def all_at_once():
        return await asyncio.gather(*(move() for move in moves))

    with garbage_in_cycles() as garbage:
        (outcomes,) = on_a_loop(all_at_once)
    assert sum(outcome is not None for outcome in outcomes) == 2
    held = [kind for kind in (engine.MatchState, Match, services.Outcome) for o in garbage
            if isinstance(o, kind)]  # fmt: skip
    assert held == []


def test_a_write_cancelled_before_it_began_gives_its_connection_back(table, sent, monkeypatch):
    """The loop is shutting down: the write's task is cancelled before its first step. Its
    lease is given back all the same (else the loop would have one connection fewer, for good)."""
    ready(table)
    real_ensure_future = asyncio.ensure_future

    def cancelled_at_once(coroutine):
        task = real_ensure_future(coroutine)
        task.cancel()
        return task

    monkeypatch.setattr(services.asyncio, "ensure_future", cancelled_at_once)
    move = loop_move(table)
    leased = []

    async def cancelled_write():
        with pytest.raises(asyncio.CancelledError):
            await move()
        leased.append(database._loop_connections[asyncio.get_running_loop()].leased)

    on_a_loop(cancelled_write)
    assert leased == [0]


@contextlib.contextmanager
def garbage_in_cycles():
    """The objects left in reference cycles by the block (the collector kept off meanwhile)."""
    gc.collect()
    gc.disable()
    garbage = []
    try:
        yield garbage
    finally:
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            gc.collect()
            garbage.extend(gc.garbage)
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
            gc.enable()


def dealt_and_ready(make_user, n: int):
    users = {0: make_user(f"ann{n}"), 1: make_user(f"bob{n}")}
    match = services.match_create(player0=users[0], player1=users[1], now_ms=T0)
    table = Table(match, users, T0)
    assert deal_by_service(match, users, T0)
    ready(table)
    return table


# --- through the socket --------------------------------------------------------------------------


async def test_a_players_move_over_the_socket_takes_no_database_thread(monkeypatch):
    match = await new_dealt_match()  # dealt the usual way: its row is kept here
    sockets, firsts = await seated(match)  # its players read to greet them

    def no_thread(**kwargs):
        raise AssertionError("the move went to a database thread")

    monkeypatch.setattr(services, "match_submit", no_thread)
    broadcasts = await press_start(sockets, firsts[0]["starter"])
    assert (await reloaded(match)).seq == broadcasts[0]["seq"] > match.seq
    await close_all(*sockets.values())
    await database.close_loop_connections()

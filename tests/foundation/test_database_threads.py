"""The sockets' database calls run side by side where the database allows it
(realtime/database.py), and a service call awaited by a socket leaves its broadcasts to the
event loop (matches/broadcast.py ``held``) instead of making its database thread wait on it."""

from __future__ import annotations

import asyncio
import contextvars
import os
import socket
import threading
import uuid
from pathlib import Path

import pytest
import redis.asyncio
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels_redis.pubsub import RedisPubSubLoopLayer
from django.db import connection

from matches import broadcast
from realtime import database
from realtime.database import in_database_threads
from realtime.redis_clients import async_redis
from scripts.proc import Supervisor
from tests.support import wait_until
from tests.support.servers import http_get, start_daphne

# The threads close their stale connections before and after each call (as Channels does),
# which touches the database once one of them holds a connection from an earlier test.
pytestmark = pytest.mark.django_db

MEETING_TIMEOUT_S = 5


async def test_two_calls_run_at_once_on_two_database_threads(settings):
    settings.DB_THREADS = 2
    # Each call waits for the other inside its thread: on one thread they could never meet.
    meeting = threading.Barrier(2, timeout=MEETING_TIMEOUT_S)

    def meet() -> str:
        meeting.wait()
        return threading.current_thread().name

    names = await asyncio.gather(in_database_threads(meet)(), in_database_threads(meet)())
    assert len(set(names)) == 2
    assert all(name.startswith("database") for name in names)


async def test_with_one_database_thread_calls_take_turns(settings):
    settings.DB_THREADS = 1
    inside, overlapped = [0], [False]
    lock = threading.Lock()

    def visit() -> None:
        with lock:
            inside[0] += 1
            overlapped[0] |= inside[0] > 1
        threading.Event().wait(0.05)  # long enough for a second thread to come in
        with lock:
            inside[0] -= 1

    await asyncio.gather(*(in_database_threads(visit)() for _ in range(4)))
    assert overlapped == [False]


@pytest.fixture
async def subscribed():
    """A channel in a group of its own on the real channel layer: (layer, group, channel)."""
    layer = get_channel_layer()
    group = f"test.held.{uuid.uuid4().hex}"
    channel = await layer.new_channel()
    await layer.group_add(group, channel)
    yield layer, group, channel
    await layer.group_discard(group, channel)


def writing(key: str):
    """Redis writes as a service's after-commit queues them into a pipeline."""

    def writes(pipe) -> None:
        pipe.set(key, "written", ex=60)

    return writes


async def published_in_a_held_block(group: str, message: dict, writes) -> None:
    """A service call, on a database thread, publishes ``message`` after ``writes``, held."""
    async with broadcast.held():
        await sync_to_async(broadcast.publish_messages, thread_sensitive=False)(
            lambda: [(group, message)], writes
        )


async def test_held_writes_and_broadcasts_are_made_when_the_block_ends_not_by_the_thread(
    subscribed,
):
    layer, group, channel = subscribed
    message = {"type": "match.message", "payload": {"seq": 7}}
    key = f"test:held:{uuid.uuid4().hex}"

    def service_call() -> None:  # what a service's after-commit does in its thread
        broadcast.publish_messages(lambda: [(group, message)], writing(key))

    receiving = asyncio.ensure_future(layer.receive(channel))  # never cancelled: the
    # pub/sub layer unsubscribes a channel whose receive is cancelled
    async with broadcast.held():
        await sync_to_async(service_call, thread_sensitive=False)()
        # Returned without writing or sending: nothing is made while the block lasts.
        assert await _received_within(receiving, 0.3) is None
        assert await async_redis().get(key) is None
    assert await _received_within(receiving, MEETING_TIMEOUT_S) == message
    assert await async_redis().get(key) == "written"


async def test_a_held_changes_writes_and_broadcasts_go_to_redis_in_one_pipeline(
    subscribed, monkeypatch
):
    # Each Redis command a move sends costs the loop a system call and a reply to read: the
    # broadcasts are published in the pipeline of the writes, not one group_send each.
    layer, group, channel = subscribed
    message = {"type": "match.message", "seq": 12}
    key = f"test:held:{uuid.uuid4().hex}"
    receiving = asyncio.ensure_future(layer.receive(channel))

    async def no_group_send(self, group, message):
        raise AssertionError("published by the layer, one round trip per message")

    monkeypatch.setattr(RedisPubSubLoopLayer, "group_send", no_group_send)
    await published_in_a_held_block(group, message, writing(key))
    assert await _received_within(receiving, MEETING_TIMEOUT_S) == message
    assert await async_redis().get(key) == "written"


async def test_a_held_change_whose_pipeline_cannot_reach_redis_is_broadcast_by_the_layer(
    subscribed, monkeypatch
):
    # The process's own Redis pool is busy or its connection lost: the layer's connections
    # still carry the change to its sockets (a resync would cost every client a full state).
    layer, group, channel = subscribed
    message = {"type": "match.message", "seq": 13}
    unreachable = redis.asyncio.Redis.from_url("redis://127.0.0.1:1/0")
    monkeypatch.setattr(broadcast, "async_redis", lambda: unreachable)
    receiving = asyncio.ensure_future(layer.receive(channel))
    await published_in_a_held_block(group, message, writing(f"test:held:{uuid.uuid4().hex}"))
    assert await _received_within(receiving, MEETING_TIMEOUT_S) == message


async def test_the_messages_of_a_held_change_are_built_on_the_loop_once_the_block_ends(
    subscribed,
):
    # Each audience's view of a move costs CPU; inside the block the mover's ack goes first.
    layer, group, channel = subscribed
    message = {"type": "match.message", "payload": {"seq": 11}}
    built_on = []

    def build() -> list:
        built_on.append(threading.current_thread())
        return [(group, message)]

    receiving = asyncio.ensure_future(layer.receive(channel))
    async with broadcast.held():
        await sync_to_async(broadcast.publish_messages, thread_sensitive=False)(build)
        assert built_on == []  # the ack would be sent here
    assert built_on == [threading.current_thread()]
    assert await _received_within(receiving, MEETING_TIMEOUT_S) == message


async def test_the_replies_of_a_held_block_leave_before_its_views_are_built(subscribed):
    # Daphne writes a socket's frame when the loop's next poll finds the socket writable: a
    # move's ack, sent inside the block, would otherwise wait for every audience's view.
    layer, group, channel = subscribed
    ours, theirs = socket.socketpair()
    theirs.setblocking(False)
    loop = asyncio.get_running_loop()
    seen_by_build = []

    def build() -> list:
        try:
            seen_by_build.append(theirs.recv(16))
        except BlockingIOError:
            seen_by_build.append(None)
        return [(group, {"type": "match.message", "seq": 14})]

    def write_reply() -> None:  # how the reactor writes a frame it was given
        loop.remove_writer(ours)
        ours.send(b"ack")

    receiving = asyncio.ensure_future(layer.receive(channel))
    with ours, theirs:
        async with broadcast.held(replies_first=True):
            await sync_to_async(broadcast.publish_messages, thread_sensitive=False)(build)
            loop.add_writer(ours, write_reply)
    assert seen_by_build == [b"ack"]
    assert await _received_within(receiving, MEETING_TIMEOUT_S) == {"type": "match.message",
                                                                   "seq": 14}  # fmt: skip


async def test_a_block_cancelled_while_it_broadcasts_still_broadcasts(subscribed):
    # A socket closed just after its move: the move is committed, so its broadcasts go out.
    layer, group, channel = subscribed
    message = {"type": "match.message", "seq": 15}
    key = f"test:held:{uuid.uuid4().hex}"
    block = None

    def build() -> list:
        asyncio.get_running_loop().call_soon(block.cancel)  # lands while the block sends
        return [(group, message)]

    async def socket_command() -> None:
        async with broadcast.held():
            await sync_to_async(broadcast.publish_messages, thread_sensitive=False)(
                build, writing(key)
            )

    receiving = asyncio.ensure_future(layer.receive(channel))
    block = asyncio.ensure_future(socket_command())
    with pytest.raises(asyncio.CancelledError):
        await block
    assert await _received_within(receiving, MEETING_TIMEOUT_S) == message
    assert await async_redis().get(key) == "written"


async def test_outside_a_held_block_the_call_itself_writes_and_broadcasts(subscribed):
    layer, group, channel = subscribed
    message = {"type": "match.message", "payload": {"seq": 8}}
    key = f"test:held:{uuid.uuid4().hex}"
    receiving = asyncio.ensure_future(layer.receive(channel))
    await sync_to_async(broadcast.publish_messages, thread_sensitive=False)(
        lambda: [(group, message)], writing(key)
    )
    assert await async_redis().get(key) == "written"
    assert await _received_within(receiving, MEETING_TIMEOUT_S) == message


async def test_a_call_still_running_when_its_block_ends_writes_and_broadcasts_itself(subscribed):
    # The task awaiting the call was cancelled (a socket's consumer stopped, say): the block
    # ends, and the call, still running in its thread, commits afterwards.
    layer, group, channel = subscribed
    message = {"type": "match.message", "payload": {"seq": 10}}
    key = f"test:held:{uuid.uuid4().hex}"
    receiving = asyncio.ensure_future(layer.receive(channel))
    async with broadcast.held():
        inside = contextvars.copy_context()  # what the call's thread runs in

    def late_commit() -> None:
        inside.run(broadcast.publish_messages, lambda: [(group, message)], writing(key))

    await sync_to_async(late_commit, thread_sensitive=False)()
    assert await async_redis().get(key) == "written"
    assert await _received_within(receiving, MEETING_TIMEOUT_S) == message


async def test_held_writes_that_fail_still_let_the_broadcasts_go(subscribed):
    layer, group, channel = subscribed
    message = {"type": "match.message", "payload": {"seq": 9}}

    def broken(pipe) -> None:
        pipe.execute_command("NO-SUCH-COMMAND")

    receiving = asyncio.ensure_future(layer.receive(channel))
    async with broadcast.held():
        await sync_to_async(broadcast.publish_messages, thread_sensitive=False)(
            lambda: [(group, message)], broken
        )
    assert await _received_within(receiving, MEETING_TIMEOUT_S) == message


async def _received_within(receiving: asyncio.Future, timeout_s: float):
    """The message ``receiving`` got within ``timeout_s``, or None (it goes on waiting)."""
    done, _ = await asyncio.wait({receiving}, timeout=timeout_s)
    return receiving.result() if done else None


# --- health checks: a connection that just worked is not asked SELECT 1 again ---------------


@pytest.fixture
def health_checks(monkeypatch):
    """Counts the health checks of the database threads' connections, on an injected clock."""
    from django.db import connections

    now = [1_000.0]
    monkeypatch.setattr(database, "monotonic", lambda: now[0])
    checked = []
    wrapper_class = type(connections["default"])
    is_usable = wrapper_class.is_usable

    def counted(self):
        checked.append(threading.current_thread().name)
        return is_usable(self)

    monkeypatch.setattr(wrapper_class, "is_usable", counted)
    return now, checked


def backend_pid() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor != "postgresql":
            cursor.execute("SELECT 1")
            return 0
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


async def test_a_connection_used_at_a_human_pace_is_not_checked_again(settings, health_checks):
    # At a human pace a process's few moves a second spread over its database threads: each
    # thread's connection waits seconds between calls, and a check would cost every move a
    # round trip.
    settings.DB_THREADS = 1  # one thread, so every call meets the same connection
    now, checked = health_checks
    await in_database_threads(backend_pid)()  # opens (or checks) the thread's connection
    checked.clear()
    for _ in range(3):
        now[0] += 10
        await in_database_threads(backend_pid)()
    assert checked == []
    now[0] += database.HEALTH_TRUSTED_S + 1  # idle past the spell: checked once
    await in_database_threads(backend_pid)()
    assert len(checked) == 1


def test_a_postgresql_connection_finds_out_its_server_vanished_without_a_goodbye(db):
    """A network cut or a host gone down sends nothing: without keepalives an idle connection
    would be trusted and its next call would wait minutes for TCP to give up. With them the
    kernel notices within ``HEALTH_TRUSTED_S`` of quiet (the socket then reports an error and
    the connection is checked), and a call whose bytes go unanswered fails in seconds."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("a TCP connection to a database server: PostgreSQL")
    connection.ensure_connection()
    with socket.socket(fileno=os.dup(connection.connection.fileno())) as sock:
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
        idle = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE)
        interval = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL)
        probes = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT)
        assert idle + interval * probes <= database.HEALTH_TRUSTED_S
        assert 0 < sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT) <= 15_000


@pytest.mark.parametrize("descriptor", [None, 1_500])  # a busy web process's pass 1,024
def test_an_idle_socket_is_quiet_until_the_other_end_speaks(descriptor):
    ours, server = socket.socketpair()
    fd = ours.fileno() if descriptor is None else os.dup2(ours.fileno(), descriptor)

    class Connection:
        def fileno(self):
            return fd

    try:
        assert database._nothing_to_read(Connection())
        server.sendall(b"E")  # PostgreSQL's goodbye before it closes the socket
        assert not database._nothing_to_read(Connection())
    finally:
        if descriptor is not None:
            os.close(fd)
        ours.close()
        server.close()


async def test_a_trusted_connection_the_server_ended_is_checked_and_replaced_unseen(
    settings, health_checks
):
    """A restart or a terminated backend: the server's goodbye makes the idle socket readable,
    so the connection is not trusted and the call goes through on a new one."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("a server to end the connection: PostgreSQL")
    settings.DB_THREADS = 1
    now, checked = health_checks
    pid = await in_database_threads(backend_pid)()

    def terminate_and_wait_until_gone() -> bool:
        with connection.cursor() as cursor:  # with a timeout, PostgreSQL waits for the exit
            cursor.execute("SELECT pg_terminate_backend(%s, 5000)", [pid])
            return cursor.fetchone()[0]

    assert await sync_to_async(terminate_and_wait_until_gone, thread_sensitive=False)()
    checked.clear()
    now[0] += 0.1  # well within the trusted spell
    assert await in_database_threads(backend_pid)() not in (0, pid)
    assert len(checked) == 1


# --- HTTP requests ---------------------------------------------------------------------------


def database_handles(pid: int) -> int:
    """The process's open connections to the test database: PostgreSQL's are sockets to its
    port, SQLite's the database file (and its -wal and -shm files)."""
    settings = connection.settings_dict
    fds = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            fds.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except FileNotFoundError:  # closed since it was listed
            continue
    if connection.vendor == "sqlite":
        return sum(target.startswith(str(settings["NAME"])) for target in fds)
    sockets = {target[len("socket:[") : -1] for target in fds if target.startswith("socket:[")}
    port = f"{int(settings.get('PORT') or 5432):04X}"
    count = 0
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            count += fields[2].endswith(f":{port}") and fields[9] in sockets
    return count


@pytest.mark.django_db(transaction=True)
def test_http_requests_leave_no_database_connection_open_behind_them(server_env, tmp_path):
    # Under ASGI each request runs its sync code on a thread made for it; a connection kept
    # there outlives the thread, unreachable, until a full collection finds it. A load
    # balancer's health checks alone left a PostgreSQL backend open every second.
    with Supervisor() as supervisor:
        server = start_daphne(supervisor, server_env, tmp_path / "log")
        pid = supervisor.children["daphne"].pid
        pages = (f"{server.url}/healthz", f"{server.url}/leaderboard/")
        for page in pages:  # whatever the process opens once, at its first request
            assert http_get(page)[0] == 200
        before = database_handles(pid)
        for _ in range(20):
            for page in pages:
                assert http_get(page)[0] == 200
        # The last response may reach us before its request has finished on the server.
        wait_until(lambda: database_handles(pid) <= before, 5, message="connections closed")

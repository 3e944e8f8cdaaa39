"""Telling everyone concerned: each seat gets its own view, spectators the public one.

Every message carries the match's event number (``seq``): the channel layer delivers at most
once, so a client that sees a gap asks for a resync.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache, partial

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from channels_redis.pubsub import RedisPubSubChannelLayer
from django.conf import settings
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

import engine
from realtime.redis_clients import async_redis, sync_redis, write_again_later
from realtime.sockets import encode_json

from . import deadlines, readings, rows
from .models import Match

log = logging.getLogger(__name__)

SEQ_TTL_S = 24 * 3600  # past a day of silence a ping asks the database once
WATCHERS = "watch"
HOTSEAT = "hotseat"


def group_name(match_id, audience) -> str:
    """``audience`` is a seat (0, 1), ``"watch"`` for spectators or ``"hotseat"``."""
    suffix = f"seat{audience}" if audience in (0, 1) else audience
    return f"match.{str(match_id).replace('-', '')}.{suffix}"


def visible_event(event: dict, viewer: int | None, *, dealing: bool) -> dict:
    """A drawn tile is known only to the player who drew it; contributions to a deal are shown
    only once the round is dealt (``dealing``: the event's round is not dealt yet; until then
    nobody learns another's value)."""
    if event["type"] == "draw" and event["seat"] != viewer:
        return _without(event, "tile")
    if event["type"] == "contribute" and dealing:
        return _without(event, "value")
    return event


def _without(event: dict, key: str) -> dict:
    return {name: value for name, value in event.items() if name != key}


def state_message(
    match: Match, state: engine.MatchState, viewer: int | None, events=(), players=None
) -> dict:
    """``players``: the match's, if already read (``players_of``)."""
    dealing = _seqs_of_round_being_dealt(match, state)
    return {
        "type": "state",
        "seq": state.seq,
        "match": {
            "id": str(match.id),
            "mode": match.mode,
            "rated": match.rated,
            "status": match.status,
            "players": players_of(match.id) if players is None else players,
        },
        "you": viewer,
        # Who presses Start / Continue (or reveals, in pass-and-play) while the clocks stand:
        # the view alone cannot tell (it would take the opponent's hand), and a client needs it
        # to offer the button; it becomes public anyway the moment the clocks run.
        "starter": engine.starter(state),
        "view": engine.view(state, viewer),
        "events": [
            visible_event(event, viewer, dealing=event["seq"] in dealing) for event in events
        ],
        "deadline": {"kind": match.deadline_kind or None, "at_ms": match.deadline_ms},
    }


PLAYERS_KEPT = 4096  # matches whose players this process keeps


def players_of(match_id) -> list[dict]:
    """The seats as the record names them; they never change, so a broadcast reads them once
    per process instead of loading the match's header with every move."""
    if (known := players_known(match_id)) is not None:
        return known
    players = Match.objects.filter(pk=match_id).values_list("header__players", flat=True).get()
    found = [
        {"seat": p["seat"], "username": p["username"], "computer": p.get("computer")}
        for p in players
    ]
    with _players_lock:
        _players[str(match_id)] = found
        while len(_players) > PLAYERS_KEPT:
            _players.popitem(last=False)
    return found


def players_known(match_id) -> list[dict] | None:
    """The match's players if this process has read them already, else None (no database read:
    for the event loop)."""
    with _players_lock:
        return _players.get(str(match_id))


_players: OrderedDict[str, list[dict]] = OrderedDict()
_players_lock = threading.Lock()


def _seqs_of_round_being_dealt(match: Match, state: engine.MatchState) -> set[int]:
    """The events of the round still waiting for its deal: only their contributions are
    secret (a resync may also bring earlier rounds' events, whose values are public). While a
    round is dealt its only events are its contributions so far, the match's last ones."""
    if state.phase != engine.DEALING:
        return set()
    made = sum(contribution is not None for contribution in state.deal.contributions)
    return set(range(state.seq - made + 1, state.seq + 1))


def viewer_for(match: Match, state: engine.MatchState, audience) -> int | None:
    if audience == HOTSEAT:
        return engine.device_holder(state)
    return audience if audience in (0, 1) else None


def audiences(match: Match) -> tuple:
    if match.mode == Match.Mode.HOTSEAT:
        return (HOTSEAT, WATCHERS)
    return (0, 1, WATCHERS)


def publish(
    match: Match, state: engine.MatchState, events: list[dict], writes=None, players=None
) -> None:
    """Tell every audience of the match its view of the change (and Redis ``writes``: see
    ``publish_messages``). Inside ``held`` the views are built once the block ends: after the
    mover's ack. ``players``: the match's, if already read (``players_of``)."""
    if players is None:
        players = players_of(match.id)  # a database read the first time: made in this thread
    publish_messages(partial(messages_of, match, state, events, players), writes)


def messages_of(match: Match, state: engine.MatchState, events: list[dict], players) -> list:
    """Each audience's view; the players' groups also carry the row as written (``row``, never
    forwarded to a client): the process of the opponent's socket makes its next move from it
    instead of reading it again (matches/rows.py). Nothing is built nor sent for spectators
    where this process knows that the match has none (matches/readings.py)."""
    row = rows.shared(match)
    messages = []
    for audience in audiences(match):
        if audience == WATCHERS and readings.MEMORY.unwatched(str(match.id), time.monotonic()):
            continue
        view = state_message(match, state, viewer_for(match, state, audience), events, players)
        message = layer_message(view)
        if audience in (0, 1) and row is not None:
            message["row"] = row
        messages.append((group_name(match.id, audience), message))
    return messages


def layer_message(view: dict) -> dict:
    """A view as the channel layer carries it to the sockets (``MatchConsumer.match_message``):
    the JSON text they send as it is, encoded once, here, and the numbers they check it by.
    Every process that hears a broadcast unpacks it: a nested view would be a few hundred
    objects for each to allocate and its garbage collector to walk (at 1,000 matches, the
    collector then took 9% of a web process and paused it for up to 300 ms); a text is one."""
    events = view["events"]
    return {
        "type": "match.message",
        "seq": view["seq"],
        "first_seq": events[0]["seq"] if events else None,
        "text": encode_json(view),
    }


def publish_messages(build: Callable[[], list[tuple[str, dict]]], writes=None) -> None:
    """Send the (group, message) pairs that ``build()`` makes, from sync code, after
    ``writes(pipe)`` has queued what Redis must hold first into a pipeline (one round trip):
    both held for the loop inside ``held``."""
    held = _held.get()
    if held is not None and held.keep(build, writes):
        return
    if writes is not None:
        try:
            pipe = sync_redis().pipeline(transaction=False)
            writes(pipe)
            pipe.execute()
        except Exception:  # what the writes keep is rebuilt or expires (see their callers)
            log.exception("could not write a change's after-commit state to Redis")
    async_to_sync(_send_all)(build())  # one hop to the event loop for every audience


@dataclass
class _Held:
    """What a ``held`` block keeps, until it ends: a call still running then (its awaiting
    task was cancelled) makes its writes and broadcasts itself."""

    builds: list = field(default_factory=list)
    writes: list = field(default_factory=list)
    open: bool = True
    lock: threading.Lock = field(default_factory=threading.Lock)

    def keep(self, build, writes) -> bool:
        with self.lock:
            if self.open:
                self.builds.append(build)
                self.writes.extend([] if writes is None else [writes])
            return self.open

    def close(self) -> tuple[list, list]:
        with self.lock:
            self.open = False
            return self.writes, self.builds


# What the service calls that an event loop awaits leave for it (see ``held``).
_held: contextvars.ContextVar[_Held | None] = contextvars.ContextVar("held", default=None)


@contextlib.asynccontextmanager
async def held(*, replies_first: bool = False):
    """Hold the Redis writes and broadcasts of the service calls awaited in this block and
    make them from the event loop when it ends, committed or not: the database thread does
    not wait on Redis nor on the loop (a busy loop would make every later command wait
    behind it), and the mover's ack, sent inside the block, waits on neither, nor on the views
    of the change (built at the end, on the loop; after the replies the block sent have left
    the process, with ``replies_first``)."""
    kept = _Held()
    token = _held.set(kept)
    try:
        yield
    finally:
        _held.reset(token)
        writes, builds = kept.close()
        if writes or builds:
            # A task of its own: a socket cancelled meanwhile must not take the broadcasts of
            # a committed change with it (they go out all the same; the socket stops waiting).
            ending = asyncio.ensure_future(_send_kept(writes, builds, replies_first))
            _ending.add(ending)
            ending.add_done_callback(_ending.discard)
            await asyncio.wait([ending])


_ending: set[asyncio.Task] = set()  # the loop keeps only weak references to its tasks


async def _send_kept(writes: list, builds: list, replies_first: bool) -> None:
    if replies_first:
        # This task's first step runs on the loop's next turn, ahead of the socket writes
        # that turn's poll found ready (the block's replies among them): yielding once lets
        # them go before the views are built and encoded, which takes the loop a while.
        await asyncio.sleep(0)
    # Committed all the same: a change whose broadcast fails is repaired by a resync.
    messages = []
    for build in builds:
        try:
            messages.extend(build())
        except Exception:
            log.exception("could not build a change's broadcasts")
    try:
        await _send_all(messages, writes)
    except Exception:  # what the writes keep is rebuilt or expires (see their callers)
        log.exception("could not write or broadcast %d changes", len(builds) or len(writes))


def _queued(writes: list):
    """An async pipeline with the ``writes`` queued."""
    pipe = async_redis().pipeline(transaction=False)
    _queue(pipe, writes)
    return pipe


def _queue(pipe, writes: list) -> None:
    for write in writes:
        write(pipe)


async def _send_all(messages, writes: list | None = None) -> None:
    """Send the (group, message) pairs, after the ``writes`` (from ``held``: what Redis must
    hold first) in one pipeline: the messages in it too where the channel layer allows
    (``_published_with``), else by the layer's own sends once the pipeline has run. Writes
    that did not reach Redis are made again later (the seq and deadline are guarded by the
    seq, a release is a removal)."""
    layer = get_channel_layer()
    if writes is not None:
        published, reached = await _published_with(_queued(writes), layer, messages)
        if not reached and writes:
            write_again_later(partial(_queue, writes=writes))
        if published:
            return
    await asyncio.gather(*(layer.group_send(group, message) for group, message in messages))


async def _published_with(pipe, layer, messages) -> tuple[bool, bool]:
    """Run ``pipe`` with the messages published in it where the layer's groups are pub/sub
    channels of this process's Redis (a command sent alone costs the loop a system call and
    a reply to read). Returns whether they were sent so, and whether the pipeline reached
    Redis. One that did not (a busy pool, a lost connection) leaves them to the layer's own
    connections: a message that got through twice is dropped by its sockets (its seq is not
    new)."""
    channel_of = _group_channel_namer(layer)
    if channel_of is not None:
        for group, message in messages:
            pipe.publish(channel_of(group), layer.serialize(message))
    try:
        await pipe.execute()
    except (RedisConnectionError, RedisTimeoutError):
        log.warning("could not write a change's after-commit state to Redis: made again later")
        return False, False
    except Exception:  # a write Redis refused: it ran the rest of the pipeline all the same
        log.exception("could not write a change's after-commit state to Redis")
    return channel_of is not None, True


@lru_cache(maxsize=4)
def _group_channel_namer(layer) -> Callable[[str], str] | None:
    """How channels-redis's pub/sub layer names a group's channel, if the layer is that one
    and all its connections are to this process's Redis (config/env.py
    ``redis_channel_layers``): a message published there under that name reaches the group.
    None for another layer, or one on other servers. Asked once per layer, not per change."""
    if not isinstance(layer, RedisPubSubChannelLayer):
        return None
    hosts = layer._kwargs.get("hosts") or []
    if not hosts or any(_address(host) != settings.REDIS_URL for host in hosts):
        return None
    prefix = layer._kwargs.get("prefix", "asgi")
    return f"{prefix}__group__{{}}".format


def _address(host) -> str | None:
    return host.get("address") if isinstance(host, dict) else host


# A change's seq and deadline, unless a later change of the match got there first: each
# change's writes are made from the loop of the process that made it, after its ack, so two
# changes' writes (a player's and the computer's from a worker, say) can arrive out of order.
_NOTE_CHANGE = """
if tonumber(redis.call('GET', KEYS[1]) or '-1') > tonumber(ARGV[1]) then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
if ARGV[3] == '' then
  redis.call('ZREM', KEYS[2], ARGV[4])
else
  redis.call('ZADD', KEYS[2], ARGV[3], ARGV[4])
end
return 1
"""


def note_change(pipe, match_id, seq: int, deadline_ms: int | None) -> None:
    """Queue into ``pipe``: the match's last event number where a ping can read it without the
    database, and its deadline where the deadline loops find it (matches/deadlines.py)."""
    match_id = str(match_id)
    deadline = "" if deadline_ms is None else str(deadline_ms)
    keys = (readings.SEQ_KEY.format(match_id), deadlines.DEADLINES_KEY)
    pipe.eval(_NOTE_CHANGE, 2, *keys, seq, SEQ_TTL_S, deadline, match_id)

"""A hypothesis-driven fuzzer for both WebSocket kinds: the match socket (/ws/match/<id>/, two
players and a signed-out spectator) and the lobby socket (/ws/lobby/, two signed-in users).

Each kind gets at least FRAMES_PER_KIND frames through the whole ASGI application in process
(origin check, session cookie, routing, consumers, services, SQLite, the Redis channel layer):
binary frames, text that is not JSON, empty text, JSON scalars and arrays, deep nesting, frames
over the size limit (and exactly at it), unknown types, known types with wrongly typed fields,
out-of-turn commands, replayed and stale cseqs, forged seats, the server's own commands, and
legal moves read from the seat's own view, so that matches really progress and finish.

Every answer is checked against docs/protocol.md by an oracle that looks only at the frame and
at what was acknowledged so far; afterwards each match's record is compared with the acked
commands and replayed by the engine, and the lobby's rows are checked after every frame. Each
kind runs once per module (a module fixture, about a minute and a half); every test below
checks one property of that run, so a failure names the behaviour that broke and shows examples
of each kind of violation, with how often each kind was seen.

Hypothesis generates the frames: each example is a batch of FRAMES_PER_EXAMPLE frame plans
(drawn whole before any is sent, so the drawing never depends on the server; a plan's selectors
pick among the moves, ids and cseqs the run offers at that moment), sent on long-lived
connections until each kind has its frames. Shrinking is off: the sockets and the match carry
state from one example to the next, so an example cannot be replayed alone; the failure texts
carry the frames. FUZZ_FRAMES (default 10,000) sets the frames per kind for a quicker look.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import logging
import os
import random
import re
import subprocess
import sys
import time
from collections import Counter, defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection
from django.test import Client, override_settings
from django.utils import timezone
from hypothesis import HealthCheck, Phase, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

import engine
from config.asgi import application
from lobby.models import Challenge, QuickEntry, Seek
from matches import services, timekeeping
from matches.models import Match
from matches.selectors import match_record
from realtime.redis_clients import sync_redis

FRAMES_PER_KIND = int(os.environ.get("FUZZ_FRAMES", 10_000))
TIME_LIMIT_S = 480  # per kind: a run that cannot send its frames in time fails the count test
FRAMES_PER_EXAMPLE = 40  # a hypothesis example draws at most ~8 KB of choices
ANSWER_TIMEOUT_S = 10
CLOSE_WAIT_S = 1
# A consumer still running this long after the client's disconnect is cancelled and noted (Daphne
# would kill it after its application_close_timeout, 10 s, with a warning).
SHUTDOWN_S = 3
FRAMES_AFTER_THE_END = 120  # a finished match is fuzzed a little more, then a new one starts
RESIGN_AFTER_APPLIED = 500  # a match this long is resigned by its next legal frame
REPO = Path(__file__).resolve().parents[2]

# The per-connection message budget, raised so that every frame reaches the consumer's logic
# (read at connect time). `rate_limited` is still accepted as an answer wherever it could come.
BUDGETS = {
    "WS_RATE_BURST": 1_000_000,
    "WS_RATE_PER_SECOND": 1_000_000,
    "WS_SPECTATOR_RATE_BURST": 1_000_000,
    "WS_SPECTATOR_RATE_PER_SECOND": 1_000_000,
}
# The page's own origin, on a host of the default ALLOWED_HOSTS (an origin validator built when
# config.asgi is imported, at collection, does not see the "testserver" pytest-django adds).
HEADERS = [(b"host", b"localhost"), (b"origin", b"http://localhost")]
# Long clocks: nothing in the run may time out, so every event comes from an acked command.
CLOCK = engine.ClockConfig(bank_ms=3_600_000, delay_ms=600_000)
# Nor may the server stand in for a missing contribution to a deal (docs/fairness.md): every
# `contribute` event of the run must be one a seat's acked command made.
DEAL_WAIT = {"DEAL_CONTRIBUTION_MS": 3_600_000}

SPECTATOR = "spectator"
# docs/protocol.md: 4413 after too_large (Daphne lets an application close only with 1000 or
# 3000-4999, so not RFC 6455's 1009), 4404 no such match, 4401 lobby signed out.
CLOSE_TOO_LARGE, CLOSE_NO_SUCH_MATCH, CLOSE_NOT_SIGNED_IN = 4413, 4404, 4401

# Every test here is transactional: the runs write through the consumers' own connections (and
# pytest-django creates the test database only for a module that has a django_db test). The
# first test sets up both runs (each bounded by TIME_LIMIT_S, then checked whole): the suite's
# per-test timeout would cut them short, so this module's is their budget and a few minutes more.
pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(2 * TIME_LIMIT_S + 240),
]

# --- what docs/protocol.md (and the issue) allow ---------------------------------------------

PLAYER_COMMANDS = ("start", "contribute", "play", "draw", "offer", "accept", "waive", "resign")
SERVER_COMMANDS = ("timeout", "abandon", "void")
SIDES = ("high", "low", "chain_a", "chain_b", "arm_a", "arm_b")
MATCH_CODES = {
    "bad_message", "rate_limited", "time_unavailable", "no_such_match", "not_a_player",
    "not_your_start", "bad_command", "unknown_command", "server_only", "match_over",
    "clocks_standing", "already_started", "round_over", "not_your_turn", "auction_on",
    "no_auction", "tile_not_in_hand", "wrong_opening_tile", "opening_has_no_place",
    "place_required", "place_not_open", "halves_do_not_match", "can_play", "must_play_drawn",
    "nothing_to_accept", "cannot_waive", "offer_not_multiple_of_5", "offer_below_minimum",
    "offer_unaffordable", "time_went_backwards", "bad_time", "stale_cseq", "too_large",
    "dealing", "not_dealing", "already_contributed", "bad_contribution",
}  # fmt: skip
# Answers that say "not now, send it again": documented, allowed for any frame, counted.
TRANSIENT = {"rate_limited", "time_unavailable", "busy", "unavailable"}
# The refusals of a well-formed command: the state of the match or the rules say no.
RULE_REFUSALS = MATCH_CODES - {
    "bad_message", "bad_command", "unknown_command", "server_only", "not_a_player",
    "stale_cseq", "too_large", "no_such_match", "bad_contribution",
}  # fmt: skip
# What the engine checks before it reads a command's fields (engine/rules.py, in that order).
STATE_CHECKS = {
    "match_over", "clocks_standing", "round_over", "not_your_turn", "auction_on", "no_auction",
    "not_your_start", "already_started", "time_went_backwards", "bad_time",
    "dealing", "not_dealing", "already_contributed",  # engine/fairness.py, before the value
}  # fmt: skip
# What the engine checks before it looks at a contribute's `drawn` (engine/rules.py, fairness.py).
BEFORE_DRAWN = {"match_over", "not_dealing", "time_went_backwards", "bad_time"}
RECENT_CSEQS = 64  # a resend of one of the last 64 applied cseqs must be a duplicate

LOBBY_REQUESTS = (
    "seek_create", "seek_cancel", "seek_accept", "challenge_create", "challenge_accept",
    "challenge_decline", "challenge_cancel", "quick_join", "quick_leave", "hotseat_start",
)  # fmt: skip
LOBBY_CODES = {
    "bad_message", "rate_limited", "unknown_request", "in_match", "opponent_in_match",
    "not_on_ladder", "opponent_not_on_ladder", "bad_range", "own_seek", "no_such_seek",
    "outside_range", "no_such_player", "own_challenge", "no_such_challenge", "too_large",
}  # fmt: skip
LOBBY_BROADCASTS = ("lobby", "personal", "match_started")

# --- properties: each test below asserts one ---------------------------------------------------

ANSWERED = "every frame is answered with the documented message"
CLOSES = "the server closes only with a documented code"
CSEQS = "a resent cseq is a duplicate only if it was applied, else stale_cseq"
RECORD = "the match record changed only by the acked legal commands"
ENGINE = "the records replay through the engine (`python -m engine check`)"
LOBBY_STATE = "the lobby changed only by accepted, well-formed requests"
SECRET = "no one was shown another seat's contribution before its round was dealt"


# --- the report of one run -------------------------------------------------------------------


@dataclass
class Report:
    kind: str
    frames: int = 0
    seconds: float = 0.0
    categories: Counter = field(default_factory=Counter)
    seconds_by_category: Counter = field(default_factory=Counter)
    answers: Counter = field(default_factory=Counter)
    reconnects: Counter = field(default_factory=Counter)
    violations: dict = field(default_factory=lambda: defaultdict(list))
    violation_counts: Counter = field(default_factory=Counter)
    violation_kinds: dict = field(default_factory=lambda: defaultdict(Counter))
    slowest: list = field(default_factory=list)
    logs: list = field(default_factory=list)
    notes: dict = field(default_factory=dict)
    deadline: float = field(default_factory=lambda: time.monotonic() + TIME_LIMIT_S)

    def done(self) -> bool:
        return self.frames >= FRAMES_PER_KIND or time.monotonic() > self.deadline

    def violate(self, prop: str, text: str) -> None:
        """Note a violation; the first example of each kind is kept (a kind: the frame's category
        and what went wrong, numbers and strings left out)."""
        self.violation_counts[prop] += 1
        kind = signature(text)
        self.violation_kinds[prop][kind] += 1
        if self.violation_kinds[prop][kind] == 1 and len(self.violations[prop]) < 40:
            self.violations[prop].append(text)

    def failures(self, prop: str) -> str:
        kinds = self.violation_kinds[prop]
        examples = "\n  - ".join(
            f"[{kinds[signature(text)]}x] {text}" for text in self.violations[prop]
        )
        return (
            f"{self.kind}: {self.violation_counts[prop]} violation(s) of '{prop}' in "
            f"{self.frames} frames, {len(kinds)} kind(s); examples (with how often each kind "
            f"was seen):\n  - {examples}"
        )

    def timed(self, frame: tuple, seconds: float) -> None:
        self.seconds_by_category[frame[1]] += seconds
        slow = (round(seconds, 3), frame[1], describe(frame[2])[:80])
        self.slowest = sorted([*self.slowest, slow])[-3:]

    def summary(self) -> str:
        top = ", ".join(f"{k} {n}" for k, n in self.answers.most_common(30))
        return (
            f"{self.kind}: {self.frames} frames in {self.seconds:.0f} s; "
            f"categories {dict(self.categories)}; answers: {top}; "
            f"reconnects {dict(self.reconnects)}; {self.notes}; "
            f"{sum(self.seconds_by_category.values()):.0f} s in exchanges, the most in: "
            + ", ".join(f"{c} {t:.1f}" for c, t in self.seconds_by_category.most_common(8))
            + f"; the slowest frames: {self.slowest}"
        )


def signature(text: str) -> str:
    """What kind of violation a text reports: its frame category and the complaint, without the
    frame itself, numbers or quoted strings."""
    category = text.split(" from ")[0]
    complaint = re.split(r"\((?:\d+) (?:chars|bytes)\): ", text, maxsplit=1)[-1]
    complaint = re.sub(r"\"[^\"]*\"|'[^']*'|\d+", "_", complaint)
    return f"{category}: {complaint[:70]}"


def describe(payload) -> str:
    shown = repr(payload if len(payload) <= 120 else payload[:100] + payload[-12:])
    return f"{shown} ({len(payload)} {'bytes' if isinstance(payload, bytes) else 'chars'})"


def answer_label(message: dict) -> str:
    kind = message.get("type")
    if kind == "error":
        return f"error:{message.get('code')}"
    if kind == "ack":
        return "ack (duplicate)" if message.get("duplicate") else "ack"
    return str(kind)


# --- one in-process client ---------------------------------------------------------------------


@dataclass
class Output:
    kind: str  # message, close, crash, timeout, binary, not_json
    message: dict | None = None
    code: int | None = None
    error: BaseException | None = None

    def __str__(self) -> str:
        if self.kind == "message":
            return json.dumps(self.message)[:300]
        if self.kind == "close":
            return f"close {self.code}"
        if self.kind == "crash":
            return f"the consumer crashed: {self.error!r}"
        return self.kind


class Socket:
    """A WebSocket client of `config.asgi.application`: raw frames out, JSON messages in, and
    closes, crashes and silences noticed instead of raised."""

    ports = itertools.count(20_000)

    def __init__(self, path: str, cookie: str | None):
        self.path = path
        self.cookie = cookie
        self.communicator: WebsocketCommunicator | None = None

    async def open(self) -> tuple[bool, int | None]:
        headers = list(HEADERS)
        if self.cookie:
            headers.append((b"cookie", f"sessionid={self.cookie}".encode()))
        self.communicator = WebsocketCommunicator(application, self.path, headers=headers)
        self.communicator.scope["client"] = ["127.0.0.1", next(self.ports)]
        return await self.communicator.connect(timeout=ANSWER_TIMEOUT_S)

    async def send(self, payload: str | bytes) -> Output | None:
        key = "bytes" if isinstance(payload, bytes) else "text"
        try:
            await self.communicator.send_input({"type": "websocket.receive", key: payload})
        except Exception as error:  # the application had already failed
            return Output("crash", error=error)
        return None

    async def receive(self, timeout: float = ANSWER_TIMEOUT_S) -> Output:
        """The next output, or why there is none: a crash is noticed at once (the communicator
        itself would only notice it at the end of the timeout), and a silent application is
        left running (the communicator would cancel it)."""
        communicator = self.communicator
        if communicator.output_queue.empty() and communicator.future.done():
            return self.ended()
        getter = asyncio.ensure_future(communicator.output_queue.get())
        await asyncio.wait(
            {getter, communicator.future}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
        )
        if not getter.done():
            getter.cancel()
            return self.ended() if communicator.future.done() else Output("timeout")
        output = getter.result()
        if output["type"] == "websocket.close":
            return Output("close", code=output.get("code", 1000))
        text = output.get("text")
        if output["type"] != "websocket.send" or text is None:
            return Output("binary")
        try:
            return Output("message", message=json.loads(text))
        except ValueError:
            return Output("not_json")

    def ended(self) -> Output:
        future = self.communicator.future
        error = None if future.cancelled() else future.exception()
        return Output("crash", error=error or RuntimeError("the application ended without a close"))

    async def close(self) -> bool:
        """Disconnect and let the application finish (polled: the communicator's own `wait` was
        seen to sit out its whole timeout where polling saw the application end at once).
        False if it was still running after SHUTDOWN_S and had to be cancelled."""
        future = self.communicator.future
        if not future.done():
            await self.communicator.input_queue.put({"type": "websocket.disconnect", "code": 1000})
            deadline = time.monotonic() + SHUTDOWN_S
            while not future.done() and time.monotonic() < deadline:
                await asyncio.sleep(0.005)
        finished = future.done()
        if not finished:
            future.cancel()
        await asyncio.gather(future, return_exceptions=True)
        return finished


# --- the frame, as the server must see it ------------------------------------------------------


def nesting(text: str) -> int:
    """How deeply arrays and objects nest in ``text`` (strings skipped; no parsing)."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


@dataclass
class Shape:
    """What a frame is: ``too_large`` (over the size limit in UTF-8 bytes: error too_large, then
    close 4413), ``binary`` (error bad_message; over the size limit too_large and the close are
    fine too), ``junk`` (not a JSON object, or nested deeper than the limit + 2: error
    bad_message), or ``object`` (a JSON object; ``deep_enough`` when its nesting is within 2 of
    the limit, where the server may count depth its own way: bad_message or the normal answer)."""

    kind: str
    content: dict | None = None
    deep_enough: bool = False


def frame_shape(payload: str | bytes) -> Shape:
    limit, max_depth = settings.WS_MAX_FRAME_BYTES, settings.WS_MAX_JSON_DEPTH
    if isinstance(payload, bytes):
        return Shape("binary_large" if len(payload) > limit else "binary")
    if len(payload.encode("utf-8")) > limit:
        return Shape("too_large")
    depth = nesting(payload)
    if depth > max_depth + 2:
        return Shape("junk")
    try:
        content = json.loads(payload)
    except (ValueError, RecursionError):
        return Shape("junk")
    if not isinstance(content, dict):
        return Shape("junk")
    return Shape("object", content, deep_enough=depth >= max_depth)


def is_cseq(value) -> bool:
    return type(value) is int and value >= 1


def is_huge(value) -> bool:
    return type(value) is int and abs(value) >= 2**31


def valid_tile(value) -> bool:
    return (
        type(value) is list
        and len(value) == 2
        and all(type(half) is int and 0 <= half <= 6 for half in value)
    )


CONTRIBUTION = re.compile(r"[0-9a-f]{64}")  # docs/fairness.md: exactly 64 lowercase hex digits


def valid_contribution(value) -> bool:
    return isinstance(value, str) and CONTRIBUTION.fullmatch(value) is not None


def valid_place(value) -> bool:
    return value is None or (
        type(value) is dict and value.get("side") in SIDES and valid_tile(value.get("tile"))
    )


def command_faults(content: dict) -> set[str]:
    """What is wrong with a command's shape (docs/protocol.md): ``cseq`` (not a positive whole
    number), ``type`` (no string type), ``unknown``, ``server_only`` (a server command, or a
    player's contribute that says ``drawn``), ``fields`` (a field of the wrong type or form, a
    contribution that is not 64 lowercase hex digits), ``seat`` (a seat that is not 0 or 1;
    online it is ignored, but a strict server may refuse it), ``huge`` (a cseq or amount beyond
    32 bits)."""
    faults = set()
    cseq = content.get("cseq")
    if cseq is not None and not is_cseq(cseq):
        faults.add("cseq")
    if is_huge(cseq) or is_huge(content.get("amount")):
        faults.add("huge")
    kind = content.get("type")
    if not isinstance(kind, str):
        faults.add("type")
    elif kind in SERVER_COMMANDS:
        faults.add("server_only")
    elif kind not in PLAYER_COMMANDS:
        faults.add("unknown")
    elif kind == "play" and not (
        valid_tile(content.get("tile")) and valid_place(content.get("place"))
    ):
        faults.add("fields")
    elif kind == "offer" and type(content.get("amount")) is not int:
        faults.add("fields")
    elif kind == "contribute" and "drawn" in content:
        faults.add("server_only")  # only the server stands in (after the engine's state checks)
    elif kind == "contribute" and not valid_contribution(content.get("value")):
        faults.add("fields")
    if "seat" in content and not (type(content["seat"]) is int and content["seat"] in (0, 1)):
        faults.add("seat")
    return faults


def same_tile(a, b) -> bool:
    return a is not None and b is not None and sorted(a) == sorted(b)


def automatic(event: dict) -> bool:
    return event["type"] in ("pass", "settle") or bool(event.get("auto"))


# --- frame strategies shared by both kinds ----------------------------------------------------

small_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=5,
)
NOT_JSON = [
    "{", "}", "ping", "{'type': 'ping'}", '{"type": "ping",}', '{"type": ping}', "[1, 2",
    "nul", "\x00", '{"type":"play","tile":[1,2]', "{}{}", '{"a":1}{"b":2}', "\ufeff{}", " ",
    "\n", "tru", "NaN,", '"unterminated', '{"type":"ping"} trailing', "0x10", "01", "+1", ".5",
    "[,]", '{"a":}', "\\u0000", '{"type":"ping"', "<html>", "undefined", "{\"type\":\"\\x\"}",
]  # fmt: skip
UNKNOWN_TYPES = [
    "pass", "teleport", "PLAY", "Play", " play", "play ", "", "START", "__proto__",
    "constructor", "error", "ack", "state", "pong", "timeouts", "offer\u0000", "résign",
    "drop table", "lobby", "match_started", "ok", "sync ", "HELLO",
]  # fmt: skip
NON_STRING_TYPES = [None, 1, 0, True, 1.5, ["ping"], {"type": "ping"}, ["play"], -1]
BAD_CSEQS = [0, -1, -(2**63), 1.5, 2.0, 1e3, True, False, "1", "", [], {}, [1], {"cseq": 1}]
HUGE_CSEQS = [2**31, 2**31 + 1, 2**53 + 1, 2**63 - 1, 2**63, 2**64, 10**30]
WRONG_TILES = [
    "[1, 2]", "12", 12, [], [1], [1, 2, 3], [7, 1], [-1, 2], [1.0, 2.0], [True, False],
    [[1], [2]], {"0": 1, "1": 2}, ["1", "2"], [1, None], [2**64, 1], None, True, [6, 6.0],
]  # fmt: skip
WRONG_PLACES = [
    "chain_a", 5, [], [[6, 6], "chain_a"], {"tile": [6, 6]}, {"side": "chain_a"},
    {"tile": "66", "side": "chain_a"}, {"tile": [6, 6], "side": "up"},
    {"tile": [6, 6], "side": None}, {"tile": [6, 6], "side": ["chain_a"]}, True,
    {"tile": [6, 6.0], "side": "chain_a"}, {"tile": [6, 7], "side": "high"},
]  # fmt: skip
WRONG_AMOUNTS = ["20", 20.0, 22.5, True, False, None, [20], {"amount": 20}, "", "twenty", 1e400]
ODD_AMOUNTS = [10**30, 2**63, -5, 0, 7, 2**31]  # whole numbers, so not malformed: refused
FORGED_SEATS = ["0", "1", 2, -1, None, [0], True, 1.0, {"seat": 0}]
_HEX = "0123456789abcdef" * 4
WRONG_VALUES = [
    "<missing>", None, "", 0, 2**256, True, [_HEX], {"value": _HEX}, _HEX.upper(), _HEX[:-1],
    _HEX + "0", " " + _HEX[1:], _HEX[:-1] + "\n", _HEX[:-1] + "g", "0x" + _HEX[2:],
    "\u0660" * 64, "\uff10" * 64, _HEX[:-1] + "\u00e9", _HEX + "\n",
]  # fmt: skip


def draw_junk(draw, category: str) -> str | bytes:
    """A frame that is not a JSON object, or too deep, too large, or right at the size limit."""
    limit, max_depth = settings.WS_MAX_FRAME_BYTES, settings.WS_MAX_JSON_DEPTH
    rng = random.Random(draw(st.integers(0, 2**32)))
    if category == "binary":
        form = draw(st.sampled_from(["small", "json", "limit", "large"]))
        if form == "small":
            return draw(st.binary(max_size=48))
        if form == "json":
            return json.dumps({"type": draw(st.sampled_from(["ping", "hello", "resign"]))}).encode()
        size = draw(
            st.integers(49, limit) if form == "limit" else st.integers(limit + 1, 3 * limit)
        )
        return rng.randbytes(size)
    if category == "not_json":
        return draw(st.sampled_from(NOT_JSON) | st.text(max_size=40))
    if category == "empty":
        return ""
    if category == "scalar":
        value = draw(
            st.none()
            | st.booleans()
            | st.integers()
            | st.floats()
            | st.text(max_size=30)
            | st.lists(small_json, max_size=4)
        )
        return json.dumps(value)
    if category == "deep":
        n = draw(
            st.sampled_from([max_depth + 3, max_depth + 5, 20, 64, 100, 500, 999, 1000, 1001])
            | st.integers(max_depth + 3, 2_000)
        )
        form = draw(st.sampled_from(["array", "object", "command", "ping", "unclosed", "mixed"]))
        if form == "array":
            return "[" * n + "]" * n
        if form == "object":
            return '{"a":' * n + "0" + "}" * n
        if form == "command":
            return '{"type":"play","cseq":1,"tile":' + "[" * n + "]" * n + ',"place":null}'
        if form == "ping":
            return '{"type":"ping","t":' + "[" * n + "]" * n + "}"
        if form == "unclosed":
            return "[" * n
        return '[{"a":' * (n // 2) + "1" + "}]" * (n // 2)
    if category == "huge":
        size = draw(st.integers(limit + 1, 4 * limit))
        form = draw(st.sampled_from(["ping", "resign", "multibyte", "emoji", "junk", "array"]))
        if form in ("ping", "resign"):
            head = '{"type":"ping","t":"' if form == "ping" else '{"type":"resign","cseq":1,"pad":"'
            return head + "x" * (size - len(head) - 2) + '"}'
        if form in ("multibyte", "emoji"):
            # Fewer characters than the limit, more bytes: the limit is in bytes.
            char, width = ("é", 2) if form == "multibyte" else ("😀", 4)
            head = '{"type":"ping","t":"'
            room = limit - len(head) - 2
            count = draw(st.integers(room // width + 1, room))
            return head + char * count + '"}'
        if form == "junk":
            return "".join(rng.choice('abc{}[]",:0 ') for _ in range(size))
        return "[" + ",".join(["1"] * (size // 2)) + "]"
    if category == "at_limit":
        # Exactly at the limit (or a few bytes under): a normal ping. A few over: too large.
        over = draw(st.booleans())
        size = limit + draw(st.integers(1, 8)) if over else limit - draw(st.integers(0, 8))
        head = '{"type":"ping","t":"'
        return head + "y" * (size - len(head) - 2) + '"}'
    raise AssertionError(category)


JUNK_CATEGORIES = ["binary", "not_json", "empty", "scalar", "deep", "huge", "at_limit"]


# --- logs ------------------------------------------------------------------------------------


class Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        self.records.append(record)


@contextmanager
def fuzz_environment():
    """The budgets raised (and the wait for contributions to a deal), every WARNING+ record of
    every logger collected, deals reproducible,
    Redis presence of earlier runs cleared; the database flushed afterwards (the run writes for
    real, like a transactional test)."""
    handler = Collect()
    loggers = [logging.getLogger(), logging.getLogger("django")]  # "django" does not propagate
    for logger in loggers:
        logger.addHandler(handler)
    for key in sync_redis().scan_iter("sbo:lobby:sockets:*"):
        sync_redis().delete(key)
    seeds = random.Random(72)
    try:
        with override_settings(**BUDGETS, **DEAL_WAIT), pytest.MonkeyPatch.context() as patch:
            patch.setattr(engine, "new_seed", lambda: f"{seeds.getrandbits(256):064x}")
            yield handler.records
    finally:
        for logger in loggers:
            logger.removeHandler(handler)
        call_command("flush", verbosity=0, interactive=False)


def traceback_records(records) -> list[str]:
    return [
        f"{r.levelname} {r.name}: {r.getMessage()[:200]} ({r.exc_info and r.exc_info[1]!r})"
        for r in records
        if r.exc_info or r.exc_text or r.stack_info or "Traceback" in r.getMessage()
    ]


def pick(options, selector: int):
    return options[selector % len(options)]


@st.composite
def junk_frames(draw, category: str) -> str | bytes:
    return draw_junk(draw, category)


def hypothesis_batches(frames, loop, run_batch, report: Report) -> None:
    """Hypothesis draws the frames: each example is a batch of plans (drawn whole before any is
    sent, so the drawing never depends on the match), run on the long-lived connections."""

    @hypothesis_settings(
        max_examples=60,
        deadline=None,
        phases=[Phase.generate],
        database=None,
        suppress_health_check=list(HealthCheck),
        print_blob=False,
    )
    @given(st.lists(frames, min_size=FRAMES_PER_EXAMPLE, max_size=FRAMES_PER_EXAMPLE))
    def batch(plans):
        loop.run_until_complete(run_batch(plans))

    while not report.done():
        batch()


def close_loop(loop, sockets) -> None:
    """Close the sockets, let their consumers finish, then close the loop."""

    async def close_all():
        for socket in list(sockets):
            await socket.close()
        pending = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)

    try:
        loop.run_until_complete(close_all())
    finally:
        loop.close()


def signed_in(name: str, **fields):
    user = get_user_model().objects.create_user(name, password=None, **fields)
    client = Client()
    client.force_login(user)
    return user, client.cookies["sessionid"].value


# === the match socket ============================================================================


@dataclass
class Applied:
    seat: int
    command: dict
    seq: int


@dataclass
class Played:
    """One match of the run, and the commands its sockets acknowledged as applied."""

    match_id: str
    applied: list[Applied] = field(default_factory=list)


@dataclass
class SeatBook:
    """The cseqs one seat had applied (and the frames that carried them)."""

    applied: list[int] = field(default_factory=list)
    frames: dict = field(default_factory=dict)
    last: int = 0

    def note(self, cseq: int, payload: str) -> None:
        self.applied.append(cseq)
        self.frames[cseq] = payload
        self.last = max(self.last, cseq)

    def recent(self) -> list[int]:
        return self.applied[-RECENT_CSEQS:]


def create_match(player0, player1) -> Match:
    return services.match_create(
        player0=player0, player1=player1, now_ms=timekeeping.now_ms(), clock=CLOCK
    )


class MatchFuzz:
    """Two players and a signed-out spectator on one match; a new match when one has ended."""

    def __init__(self, report: Report, players, cookies: dict):
        self.report = report
        self.players = players
        self.cookies = cookies
        self.played: list[Played] = []
        self.sockets: dict = {}
        self.loop = asyncio.new_event_loop()

    # --- connections ---

    async def new_match(self) -> None:
        for socket in self.sockets.values():
            if not await socket.close():
                self.report.reconnects["a new match, and a consumer outlived the disconnect"] += 1
        self.sockets = {}
        first, second = self.players if len(self.played) % 2 == 0 else self.players[::-1]
        match = await database_sync_to_async(create_match)(first, second)
        self.current = Played(str(match.pk))
        self.played.append(self.current)
        self.seat_users = {0: first, 1: second}
        self.books = {0: SeatBook(), 1: SeatBook()}
        self.states: dict = {}
        self.seq = 0
        self.over_for: int | None = None
        self.secrets: dict = {}  # contribution value -> (seat, the rounds it was sent in)
        for role in (0, 1, SPECTATOR):
            await self.connect(role)

    async def connect(self, role) -> None:
        cookie = None if role == SPECTATOR else self.cookies[self.seat_users[role].pk]
        socket = Socket(f"/ws/match/{self.current.match_id}/", cookie)
        connected, code = await socket.open()
        if not connected:
            raise AssertionError(f"the {role} socket was refused (close {code})")
        self.sockets[role] = socket
        first = await socket.receive()
        if first.kind != "message" or first.message.get("type") != "state":
            self.report.violate(ANSWERED, f"on connecting as {role}: {first} instead of a state")
            return
        self.observe(role, first.message)

    async def reconnect(self, role, why: str) -> None:
        self.report.reconnects[why] += 1
        if not await self.sockets[role].close():
            self.report.reconnects[f"{why}, then the consumer outlived the disconnect"] += 1
        await self.connect(role)

    # --- one frame ---

    async def exchange(self, role, category: str, payload: str | bytes) -> None:
        self.report.frames += 1
        self.report.categories[category] += 1
        label = f"{category} from {role}: {describe(payload)}"
        shape = frame_shape(payload)
        self.seq_before = self.seq
        self.note_secret(role, shape)
        lost = await self.sockets[role].send(payload)
        output = lost or await self.answer(role)
        if output.kind != "message":
            await self.lost(role, output, label)
            return
        message = output.message
        self.report.answers[answer_label(message)] += 1
        code = message.get("code") if message.get("type") == "error" else None
        if code == "internal_error":
            self.report.violate(ANSWERED, f"{label}: internal_error {message.get('message')!r}")
        if shape.kind == "too_large" or (shape.kind == "binary_large" and code == "too_large"):
            await self.expect_too_large(role, message, label)
        elif shape.kind in ("junk", "binary", "binary_large"):
            self.expect_error(message, {"bad_message"}, label)
        elif shape.deep_enough and code == "bad_message":
            pass  # at the nesting limit either answer is right
        else:
            self.check_object(role, shape.content, payload, message, label)

    async def timed(self, frame: tuple) -> None:
        started = time.monotonic()
        await self.exchange(*frame)
        self.report.timed(frame, time.monotonic() - started)

    async def answer(self, role) -> Output:
        """The first output that answers a frame (broadcast states are noted on the way)."""
        while True:
            output = await self.sockets[role].receive()
            message = output.message
            if (
                output.kind == "message"
                and message.get("type") == "state"
                and not message.get("resync")
            ):
                self.observe(role, message)
                continue
            return output

    async def lost(self, role, output: Output, label: str) -> None:
        self.report.violate(ANSWERED, f"{label}: {output}")
        if output.kind in ("close", "crash", "timeout"):
            if output.kind != "timeout":
                self.report.violate(CLOSES, f"{label}: {output}")
            await self.reconnect(role, output.kind)

    async def expect_too_large(self, role, message: dict, label: str) -> None:
        self.expect_error(message, {"too_large"}, label)
        while True:
            output = await self.sockets[role].receive(CLOSE_WAIT_S)
            if output.kind == "message" and output.message.get("type") == "state":
                continue
            break
        if output.kind != "close" or output.code != CLOSE_TOO_LARGE:
            self.report.violate(
                CLOSES, f"{label}: after too_large came {output}, not close {CLOSE_TOO_LARGE}"
            )
        await self.reconnect(role, "too_large")

    def expect_error(self, message: dict, codes: set, label: str) -> bool:
        if message.get("type") != "error" or message.get("code") not in codes | TRANSIENT:
            self.report.violate(
                ANSWERED, f"{label}: answered {json.dumps(message)[:200]}, not {sorted(codes)}"
            )
            return False
        if not {"type", "cseq", "code", "message"} <= set(message):
            self.report.violate(
                ANSWERED, f"{label}: the error lacks type/cseq/code/reason: {message}"
            )
        return True

    def note_secret(self, role, shape: Shape) -> None:
        """A contribution a seat sends is its secret until the round it was first sent in is
        dealt (a replayed frame may send it again in a later round, when it is public)."""
        content = shape.content if shape.kind == "object" else None
        if (
            role in (0, 1)
            and content is not None
            and content.get("type") == "contribute"
            and valid_contribution(content.get("value"))
            and role in self.states
            and type(self.states[role]["view"].get("round")) is int
        ):
            _, rounds = self.secrets.setdefault(content["value"], (role, set()))
            rounds.add(self.states[role]["view"].get("round"))

    def check_secrets(self, role, message: dict) -> None:
        """A message whose own view says its round is still being dealt shows no other seat's
        contribution to that round (docs/fairness.md), in its view or its events."""
        view = message["view"]
        if view.get("phase") != "dealing":
            return
        text = json.dumps(message)
        round_no = view.get("round")
        for value, (seat, rounds) in self.secrets.items():
            if seat != role and min(rounds) == round_no and value in text:
                self.report.violate(
                    SECRET,
                    f"{role} was sent seat {seat}'s contribution {value[:12]}... in round "
                    f"{round_no} while it was dealt: {text[:300]}",
                )

    def observe(self, role, message: dict) -> None:
        seq = message.get("seq")
        view = message.get("view")
        if type(seq) is not int or not isinstance(view, dict):
            self.report.violate(
                ANSWERED, f"a state message without seq and view: {str(message)[:200]}"
            )
            return
        expected_you = None if role == SPECTATOR else role
        if message.get("you") != expected_you:
            self.report.violate(ANSWERED, f"{role} was sent a state for you={message.get('you')}")
        self.check_secrets(role, message)
        if role not in self.states or seq >= self.states[role]["seq"]:
            self.states[role] = message
        self.seq = max(self.seq, seq)
        if (message.get("match") or {}).get("status") in ("finished", "void"):
            self.over_for = self.over_for or 0

    # --- the oracle of an object frame ---

    def check_object(self, role, content: dict, payload: str, message: dict, label: str) -> None:
        kind = content.get("type")
        faults = command_faults(content)
        if kind == "ping":
            if message.get("type") == "pong":
                if message.get("t") != content.get("t"):
                    self.report.violate(
                        ANSWERED, f"{label}: the pong echoed t={message.get('t')!r}"
                    )
            elif {"cseq", "seat"} & faults:
                self.expect_error(message, {"bad_message"}, label)
            else:
                self.report.violate(ANSWERED, f"{label}: answered {str(message)[:200]}, not pong")
            return
        if kind in ("hello", "sync"):
            if message.get("type") == "state" and message.get("resync"):
                self.observe(role, message)
                last = content.get("last_seq")
                if type(last) is int and any(e["seq"] <= last for e in message.get("events", [])):
                    self.report.violate(ANSWERED, f"{label}: the resync repeats events <= {last}")
            elif message.get("type") == "error" and message.get("code") == "bad_message":
                last = content.get("last_seq")
                if not ({"cseq", "seat"} & faults or (last is not None and type(last) is not int)):
                    self.report.violate(ANSWERED, f"{label}: refused a well-formed {kind}")
            else:
                self.report.violate(ANSWERED, f"{label}: answered {str(message)[:200]}, not state")
            return
        self.check_command(role, content, faults, payload, message, label)

    def check_command(self, role, content, faults, payload, message, label) -> None:
        cseq = content.get("cseq") if is_cseq(content.get("cseq")) else None
        kind = message.get("type")
        if kind == "error" and cseq is not None and message.get("cseq") != cseq:
            self.report.violate(ANSWERED, f"{label}: the error echoes cseq {message.get('cseq')!r}")
        if kind == "ack" and message.get("cseq") != content.get("cseq"):
            self.report.violate(ANSWERED, f"{label}: the ack echoes cseq {message.get('cseq')!r}")
        shape_codes = set()
        if "type" in faults:
            shape_codes |= {"bad_command", "bad_message"}
        if "unknown" in faults:
            shape_codes |= {"unknown_command", "bad_message"}
        contributing = content.get("type") == "contribute"
        if "server_only" in faults:
            # A player's `drawn` is refused once the engine knows the round is being dealt.
            shape_codes |= {"server_only"} | (BEFORE_DRAWN if contributing else set())
        if "fields" in faults:
            shape_codes |= {"bad_command", "bad_message"} | STATE_CHECKS
            if contributing:
                shape_codes |= {"bad_contribution"}
        if {"seat", "huge"} & faults:
            shape_codes |= {"bad_message"}
        malformed = bool({"type", "unknown", "server_only", "fields"} & faults)

        if "cseq" in faults and role != SPECTATOR:
            self.expect_error(message, {"bad_message"}, label)
        elif role == SPECTATOR:
            if kind == "ack":
                self.report.violate(ANSWERED, f"{label}: a spectator's command was acked")
            else:
                bad_cseq = {"bad_message"} if "cseq" in faults else set()
                self.expect_error(message, {"not_a_player"} | shape_codes | bad_cseq, label)
        elif cseq is not None and cseq <= self.books[role].last:
            self.check_resend(role, cseq, shape_codes, message, label)
        elif kind == "ack":
            if message.get("duplicate"):
                self.report.violate(
                    CSEQS,
                    f"{label}: a new cseq (last {self.books[role].last}) acked as a duplicate",
                )
            elif malformed:
                self.report.violate(ANSWERED, f"{label}: a malformed command was applied")
            else:
                self.applied(role, content, cseq, payload, message, label)
        elif kind == "error" and message.get("code") == "stale_cseq":
            self.report.violate(
                CSEQS, f"{label}: stale_cseq for a new cseq (last applied {self.books[role].last})"
            )
        else:
            self.expect_error(
                message, shape_codes if malformed else RULE_REFUSALS | shape_codes, label
            )

    def check_resend(self, role, cseq: int, shape_codes: set, message: dict, label: str) -> None:
        book = self.books[role]
        was_recent = cseq in book.recent()
        was_applied = cseq in book.applied
        kind, code = message.get("type"), message.get("code")
        if kind == "ack" and not message.get("duplicate"):
            self.report.violate(
                CSEQS, f"{label}: cseq {cseq} <= last applied {book.last} was applied again"
            )
        elif kind == "ack" and not was_applied:
            self.report.violate(
                CSEQS, f"{label}: cseq {cseq} was never applied, yet acked as a duplicate"
            )
        elif kind == "ack":
            if message.get("seq") != self.seq:
                self.report.violate(
                    CSEQS,
                    f"{label}: a duplicate ack says seq {message.get('seq')}, not {self.seq}",
                )
        elif code == "stale_cseq" and was_recent:
            self.report.violate(
                CSEQS, f"{label}: cseq {cseq} was applied (recently), yet stale_cseq"
            )
        elif code not in {"stale_cseq"} | shape_codes | TRANSIENT:
            expected = "a duplicate ack" if was_applied else "stale_cseq"
            self.report.violate(
                CSEQS,
                f"{label}: resent cseq {cseq} (last {book.last}): {message}, not {expected}",
            )

    def applied(self, role, content, cseq, payload, message, label) -> None:
        seq = message.get("seq")
        if type(seq) is not int or seq <= self.seq_before:
            self.report.violate(
                RECORD, f"{label}: acked with seq {seq}, the match was at {self.seq_before}"
            )
        if message.get("late"):
            self.report.violate(RECORD, f"{label}: acked late with hour-long clocks")
        self.current.applied.append(Applied(role, content, seq if type(seq) is int else -1))
        self.seq = max(self.seq, seq if type(seq) is int else 0)
        if cseq is not None:
            self.books[role].note(cseq, payload)
        if content.get("type") == "resign":
            self.over_for = self.over_for or 0

    # --- drawing frames ---

    def legal(self, seat) -> list[dict]:
        """The commands the seat's latest view says are legal (resign aside)."""
        message = self.states.get(seat)
        if message is None:
            return []
        view = message["view"]
        legal = view.get("legal") or {}
        commands = []
        if legal.get("contribute"):  # the round waits for this seat's share of its deal
            commands.append({"type": "contribute", "value": self.contribution(seat, message)})
        if message.get("starter") == seat and legal.get("start"):
            commands.append({"type": "start"})
        if view.get("to_act") == seat:
            for option in legal.get("plays") or []:
                for place in option.get("places") or []:
                    commands.append({"type": "play", "tile": option["tile"], "place": place})
            for kind in ("draw", "waive", "accept"):
                if legal.get(kind):
                    commands.append({"type": kind})
            offer = legal.get("offer")
            if offer:
                amounts = list(range(offer["min"], offer["max"] + 1, offer["step"]))
                # The lowest offers: a big one may cost the whole balance, ending the match.
                commands += [{"type": "offer", "amount": a} for a in amounts[:3]]
        return commands

    def contribution(self, seat, message: dict) -> str:
        """The seat's contribution to the round its view shows: fixed by the match, the seat and
        the event number, so the run's deals are reproducible (a client draws it at random)."""
        text = f"fuzz contribution {len(self.played)} {seat} {message['seq']}"
        return hashlib.sha256(text.encode()).hexdigest()

    def stale(self, seat) -> bool:
        return seat not in self.states or self.states[seat]["seq"] < self.seq

    def cseq_of(self, plan: dict, seat) -> dict:
        """The plan's cseq for the seat: the next one (mostly), none, or one skipping ahead."""
        if plan["cseq_how"] == "none":
            return {}
        if seat == SPECTATOR:
            return {"cseq": plan["small_cseq"]}
        step = 1 if plan["cseq_how"] == "next" else plan["skip"]
        return {"cseq": self.books[seat].last + step}

    def plausible(self, plan: dict, seat) -> dict:
        """A legal command of the seat (if it has one and the plan says so), else a guess."""
        options = self.legal(seat) if seat in (0, 1) else []
        if options and plan["flags"][0]:
            return dict(pick(options, plan["picks"][1]))
        command = {"type": plan["kind"]}
        if plan["kind"] == "play":
            command.update(tile=plan["tile"], place=plan["place"])
        if plan["kind"] == "offer":
            command["amount"] = plan["amount"]
        if plan["kind"] == "contribute":
            command["value"] = plan["value"]
        return command

    def build_frame(self, category: str, role, plan) -> tuple:
        """(sender, label, payload) from a plan drawn by hypothesis and the match as it is."""
        if category in JUNK_CATEGORIES:
            return role, category, plan
        if category in NEEDS_THE_VIEW:
            stale = [seat for seat in (0, 1) if self.stale(seat)]
            if stale:  # a legal move needs the seat's current view
                return stale[0], "hello (to refresh the view)", json.dumps({"type": "hello"})
        actors = [seat for seat in (0, 1) if self.legal(seat)]
        picks, flags = plan.get("picks", [0] * 4), plan.get("flags", [False] * 4)
        if category == "legal":
            if not actors:
                return role, "ping (no legal move)", json.dumps({"type": "ping", "t": 0})
            seat = pick(actors, picks[0])
            command = dict(pick(self.legal(seat), picks[1]))
            # 1 in 300 (hypothesis favours the ends of a range), and always once a match has
            # taken RESIGN_AFTER_APPLIED commands: a run then always plays several matches to
            # their end (a CI run drew no resign at all in 1,551 legal frames).
            if plan["resign"] == 150 or len(self.current.applied) >= RESIGN_AFTER_APPLIED:
                command = {"type": "resign"}
            return seat, category, json.dumps({**command, **self.cseq_of(plan, seat)})
        if category == "out_of_turn":
            if len(actors) == 1:
                sender, command = 1 - actors[0], dict(pick(self.legal(actors[0]), picks[1]))
            else:
                sender, command = pick([0, 1], picks[0]), {"type": "start"}
            return sender, category, json.dumps({**command, **self.cseq_of(plan, sender)})
        if category == "forged_seat":
            sender = pick([0, 1], picks[0])
            command = self.plausible(plan, sender if flags[1] else 1 - sender)
            seat = 1 - sender if plan["seat"] == "other" else plan["seat"]
            content = {**command, "seat": seat, **self.cseq_of(plan, sender)}
            return sender, category, json.dumps(content)
        if category == "replayed":
            sender = pick([0, 1], picks[0])
            book = self.books[sender]
            if plan["form"] == "recent" and book.applied:
                return sender, "replayed (applied)", book.frames[pick(book.recent(), picks[2])]
            if plan["form"] == "old" and book.applied:
                return sender, "replayed (applied)", book.frames[pick(book.applied, picks[2])]
            # Unused cseqs just below the last applied one (never a range from 1: a huge cseq
            # may have been applied).
            below = range(max(1, book.last - 4 * RECENT_CSEQS), book.last)
            gaps = [c for c in below if c not in book.frames][-RECENT_CSEQS:]
            if gaps:
                content = {**self.plausible(plan, sender), "cseq": pick(gaps, picks[2])}
                return sender, "replayed (stale)", json.dumps(content)
            return sender, "replayed (nothing yet)", json.dumps({"type": "hello"})
        if category == "wrong_types":
            sender = pick(actors or [0, 1], picks[0]) if flags[1] else role
            # A round is dealt within a few frames: while one waits, half the wrong frames are
            # contributions from a seat that may still contribute (else the state check, not
            # the value's, would answer them).
            contributors = [
                seat for seat in (0, 1) if any(c["type"] == "contribute" for c in self.legal(seat))
            ]
            field_name = plan["field"]
            if contributors and flags[3]:
                sender = pick(contributors, picks[0])
                field_name = pick(["value", "value", "drawn"], picks[3])
            plays = (
                [c for c in self.legal(sender) if c["type"] == "play"]
                if sender != SPECTATOR
                else []
            )
            base = (
                dict(pick(plays, picks[2]))
                if plays
                else {"type": "play", "tile": [6, 6], "place": None}
            )
            low, high = base["tile"]
            if field_name == "tile":
                mutants = {
                    "float": [float(low), high], "str": [str(low), str(high)],
                    "joined": f"{low},{high}", "three": [low, high, 0],
                }  # fmt: skip
                wrong = plan["wrong_tile"]
                base["tile"] = (
                    mutants[wrong] if isinstance(wrong, str) and wrong in mutants else wrong
                )
            elif field_name == "place":
                base["place"] = plan["wrong_place"]
            elif field_name == "amount":
                base = {"type": "offer", "amount": plan["wrong_amount"]}
            elif field_name == "odd_amount":
                base = {"type": "offer", "amount": plan["odd_amount"]}
            elif field_name == "value":
                base = {"type": "contribute", "value": plan["wrong_value"]}
                if base["value"] == "<missing>":
                    del base["value"]
            elif field_name == "drawn":  # the server's own stand-in, from a player
                base = {"type": "contribute", "drawn": plan["drawn"]}
                if plan["flags"][2]:
                    base["value"] = plan["value"]
            else:
                base = {"type": "void", "why": plan["why"]}
            return sender, category, json.dumps({**base, **self.cseq_of(plan, sender)})
        if category in ("bad_cseq", "huge_cseq"):
            content = {**self.plausible(plan, role), "cseq": plan["cseq"]}
            return role, category, json.dumps(content)
        if category == "server_only":
            command = {"type": plan["server"]}
            if command["type"] == "void":
                command["why"] = "fuzz"
            return role, category, json.dumps({**command, **self.cseq_of(plan, role)})
        if category == "unknown_type":
            content = {"type": plan["unknown"], **self.cseq_of(plan, role)}
            return role, category, json.dumps(content)
        if category == "non_string_type":
            command = self.plausible(plan, role)
            if plan["type_value"] == "<missing>":
                del command["type"]
            else:
                command["type"] = plan["type_value"]
            return role, category, json.dumps({**command, **self.cseq_of(plan, role)})
        if category == "ping":
            return role, category, json.dumps({"type": "ping", "t": plan["t"]})
        if category == "hello":
            content = {"type": plan["kind"]}
            if plan["last_seq"] != "<missing>":
                content["last_seq"] = plan["last_seq"]
            return role, category, json.dumps(content)
        if category == "random_object":
            content = dict(plan["content"])
            if plan["typed"]:
                content["type"] = plan["type"]
            return role, category, json.dumps(content)
        raise AssertionError(category)

    # --- the run ---

    async def batch(self, plans) -> None:
        for category, role, plan in plans:
            if self.report.done():
                return
            if self.over_for is not None:
                self.over_for += 1
                if self.over_for > FRAMES_AFTER_THE_END:
                    await self.new_match()
            if category in NEEDS_THE_VIEW:
                await self.catch_up()
            await self.timed(self.build_frame(category, role, plan))

    async def catch_up(self) -> None:
        """Read the broadcasts already on their way to the players, so that their views are
        current (a hello is sent only when none comes in time)."""
        for seat in (0, 1):
            deadline = time.monotonic() + 0.1
            while self.stale(seat) and time.monotonic() < deadline:
                output = await self.sockets[seat].receive(max(0.0, deadline - time.monotonic()))
                if output.kind == "timeout":
                    break
                message = output.message or {}
                if message.get("type") == "state" and not message.get("resync"):
                    self.observe(seat, message)
                else:
                    await self.lost(seat, output, f"unasked, on the socket of seat {seat}")
                    break

    async def finish(self) -> None:
        """Every socket still answers a ping; the last match is resigned through its socket, so
        every match of the run is finished and can be checked whole."""
        for role in (0, 1, SPECTATOR):
            await self.exchange(role, "ping", json.dumps({"type": "ping", "t": "still there?"}))
        if self.over_for is None:  # without a cseq: whatever the server took, it is new
            await self.exchange(0, "legal", json.dumps({"type": "resign"}))

    def run(self) -> None:
        started = time.monotonic()
        try:
            self.loop.run_until_complete(self.new_match())
            hypothesis_batches(MATCH_FRAMES, self.loop, self.batch, self.report)
            self.loop.run_until_complete(self.finish())
        finally:
            self.report.notes["seconds before closing"] = round(time.monotonic() - started, 1)
            close_loop(self.loop, self.sockets.values())
            self.report.seconds = time.monotonic() - started


def material(**extra) -> st.SearchStrategy:
    """What a command frame may be made of: selectors (``picks`` index into whatever the match
    offers then, so the drawing never depends on the match) and raw values."""
    return st.fixed_dictionaries(
        {
            "picks": st.lists(st.integers(0, 2**16 - 1), min_size=4, max_size=4),
            "flags": st.lists(st.booleans(), min_size=4, max_size=4),
            "cseq_how": st.sampled_from(["next"] * 8 + ["none", "skip"]),
            "skip": st.integers(2, 5),
            "small_cseq": st.integers(1, 40),
            "kind": st.sampled_from(PLAYER_COMMANDS[:-1]),
            "tile": st.lists(st.integers(0, 6), min_size=2, max_size=2),
            "place": st.none()
            | st.fixed_dictionaries(
                {
                    "tile": st.lists(st.integers(0, 6), min_size=2, max_size=2),
                    "side": st.sampled_from(SIDES),
                }
            ),
            "amount": st.integers(0, 60).map(lambda n: 5 * n),
            "value": st.binary(min_size=32, max_size=32).map(bytes.hex),
            **extra,
        }
    )


MATCH_PLANS = {
    "legal": material(resign=st.integers(0, 299)),
    "out_of_turn": material(),
    "forged_seat": material(seat=st.sampled_from(["other"] * 4 + FORGED_SEATS)),
    "replayed": material(form=st.sampled_from(["recent", "recent", "old", "stale", "stale"])),
    "wrong_types": material(
        field=st.sampled_from(
            ["tile", "tile", "place", "amount", "odd_amount", "why", "value", "value", "drawn"]
        ),
        wrong_tile=st.sampled_from(WRONG_TILES + ["float", "str", "joined", "three"]),
        wrong_place=st.sampled_from(WRONG_PLACES),
        wrong_amount=st.sampled_from(WRONG_AMOUNTS),
        odd_amount=st.sampled_from(ODD_AMOUNTS),
        wrong_value=st.sampled_from(WRONG_VALUES)
        | st.text(alphabet="0123456789abcdefABCDEF", min_size=62, max_size=66).filter(
            lambda text: not valid_contribution(text)
        ),
        drawn=st.sampled_from([True, False, None, 1, "true"]),
        why=st.sampled_from([None, 1, [], "", {"why": "x"}]),
    ),
    "bad_cseq": material(cseq=st.sampled_from(BAD_CSEQS)),
    "huge_cseq": material(cseq=st.sampled_from(HUGE_CSEQS)),
    "server_only": material(server=st.sampled_from(SERVER_COMMANDS)),
    "unknown_type": material(unknown=st.sampled_from(UNKNOWN_TYPES) | st.text(max_size=12)),
    "non_string_type": material(type_value=st.sampled_from(["<missing>", *NON_STRING_TYPES])),
    "ping": st.fixed_dictionaries({"t": small_json}),
    "hello": st.fixed_dictionaries(
        {
            "kind": st.sampled_from(["hello", "sync"]),
            "last_seq": st.sampled_from(["<missing>", None, "3", 2.5, [1], True, 10**30, -(2**70)])
            | st.integers(-5, 400),
        }
    ),
    "random_object": st.fixed_dictionaries(
        {
            "content": st.dictionaries(
                st.sampled_from(
                    ["type", "cseq", "tile", "place", "amount", "seat", "t", "why", "value"]
                    + ["drawn"]
                )
                | st.text(max_size=5),
                small_json,
                max_size=6,
            ),
            "typed": st.booleans(),
            # No resign: a random object that happens to be one ends the match (legal frames
            # resign now and then).
            "type": st.sampled_from(PLAYER_COMMANDS[:-1] + SERVER_COMMANDS),
        }
    ),
}
NEEDS_THE_VIEW = ("legal", "out_of_turn", "forged_seat", "wrong_types")
MATCH_CATEGORIES = (
    ["binary"] * 4 + ["not_json"] * 4 + ["empty"] * 2 + ["scalar"] * 4 + ["deep"] * 4
    + ["huge"] * 2 + ["at_limit"] * 2 + ["unknown_type"] * 4 + ["non_string_type"] * 3
    + ["wrong_types"] * 12 + ["bad_cseq"] * 5 + ["huge_cseq"] * 2 + ["server_only"] * 3
    + ["out_of_turn"] * 6 + ["replayed"] * 8 + ["forged_seat"] * 6 + ["legal"] * 18
    + ["ping"] * 3 + ["hello"] * 3 + ["random_object"] * 4
)  # fmt: skip
MATCH_FRAMES = st.sampled_from(MATCH_CATEGORIES).flatmap(
    lambda category: st.tuples(
        st.just(category),
        st.sampled_from([0, 0, 1, 1, SPECTATOR]),
        junk_frames(category) if category in JUNK_CATEGORIES else MATCH_PLANS[category],
    )
)


def verify_record(played: Played) -> tuple[list[str], list[str], dict | None]:
    """(record problems, engine problems, the record): the record's events are exactly what the
    acked commands made (each command's own event first, then only automatic ones)."""
    match = Match.objects.get(pk=played.match_id)
    # A match left unfinished (the last one, if its resign was refused) is read whole, as the
    # service reads it: the public record withholds the hands of a round being played.
    finished = match.status in (Match.Status.FINISHED, Match.Status.VOID)
    record = json.loads(json.dumps(match_record(match, withhold_live=not finished)))
    events = [event for round_record in record["rounds"] for event in round_record["events"]]
    problems = []
    if [event["seq"] for event in events] != list(range(1, len(events) + 1)) or match.seq != len(
        events
    ):
        problems.append(f"match {match.pk}: events not numbered 1..{match.seq}")
    previous = 0
    for applied in sorted(played.applied, key=lambda a: a.seq):
        window = events[previous : applied.seq]
        command = applied.command
        if not window:
            problems.append(
                f"match {match.pk}: the ack of {command} (seq {applied.seq}) added no event"
            )
            continue
        own, rest = window[0], window[1:]
        if (
            own["type"] != command["type"]
            or own.get("seat") != applied.seat
            or own.get("auto")
            or (own["type"] == "play" and not same_tile(own["tile"], command["tile"]))
            or (own["type"] == "play" and (own["place"] is None) != (command.get("place") is None))
            or (own["type"] == "offer" and own["amount"] != command["amount"])
            or (
                own["type"] == "contribute"
                and (own.get("value"), own.get("from_player")) != (command["value"], True)
            )
        ):
            problems.append(
                f"match {match.pk}: seat {applied.seat} was acked {command}, the record has {own}"
            )
        problems += [
            f"match {match.pk}: event {event} was acked to no one"
            for event in rest
            if not automatic(event)
        ]
        previous = applied.seq
    problems += [
        f"match {match.pk}: event {event} came after the last ack" for event in events[previous:]
    ]
    _, audit = engine.audit(record)
    return problems, [f"match {match.pk}: {problem}" for problem in audit], record


def engine_check(record: dict, path: Path) -> str | None:
    """`python -m engine check` on the exported record: None if it accepts it."""
    path.write_text(json.dumps(record))
    result = subprocess.run(
        [sys.executable, "-m", "engine", "check", str(path)],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    if result.returncode != 0 or "0 breaking" not in result.stdout:
        return f"exit {result.returncode}: {result.stdout[-500:]}{result.stderr[-500:]}"
    return None


@pytest.fixture(scope="module")
def match_fuzz(django_db_setup, django_db_blocker, tmp_path_factory) -> Report:
    """One run of the match fuzzer, checked whole (the database is flushed afterwards)."""
    report = Report("match socket")
    with django_db_blocker.unblock(), fuzz_environment() as logs:
        (ala, ala_cookie), (olek, olek_cookie) = signed_in("fuzz_ala"), signed_in("fuzz_olek")
        fuzz = MatchFuzz(report, (ala, olek), {ala.pk: ala_cookie, olek.pk: olek_cookie})
        fuzz.run()
        finished, applied, contributions, endings = 0, 0, 0, Counter()
        for played in fuzz.played:
            problems, audit, record = verify_record(played)
            applied += len(played.applied)
            contributions += sum(1 for a in played.applied if a.command["type"] == "contribute")
            for problem in problems:
                report.violate(RECORD, problem)
            for problem in audit:
                report.violate(ENGINE, problem)
            if record["result"] is not None:
                endings[record["result"]["reason"]] += 1
                finished += 1
                if finished == 1:
                    refused = engine_check(
                        record, tmp_path_factory.mktemp("record") / "record.json"
                    )
                    if refused:
                        report.violate(
                            ENGINE, f"`python -m engine check` refused the record: {refused}"
                        )
        report.notes.update(
            matches=len(fuzz.played), finished=finished, endings=dict(endings), applied=applied,
            contributions=contributions,
        )  # fmt: skip
        report.logs = list(logs)
    print("\n" + report.summary())
    return report


# === the lobby socket ============================================================================


@dataclass(frozen=True)
class Lobby:
    """The lobby's rows, as the requests could change them."""

    seeks: dict
    challenges: dict
    quick: frozenset
    matches: dict


def lobby_now() -> Lobby:
    return Lobby(
        seeks={s.pk: (s.user_id, s.rated, s.rating_min, s.rating_max) for s in Seek.objects.all()},
        challenges={
            c.pk: (c.challenger_id, c.opponent_id, c.rated, c.status)
            for c in Challenge.objects.all()
        },
        quick=frozenset(QuickEntry.objects.values_list("user_id", flat=True)),
        matches={
            m.pk: (m.mode, m.player0_id, m.player1_id, m.status)
            for m in Match.objects.only("mode", "player0_id", "player1_id", "status")
        },
    )


LOBBY_KEY_SQL = """
SELECT
  (SELECT COUNT(*) FROM {seek}),
  (SELECT COALESCE(SUM(id * 7919 + user_id * 31 + CASE WHEN rated THEN 17 ELSE 0 END
                       + COALESCE(rating_min, -3) * 13 + COALESCE(rating_max, -5) * 11), 0)
   FROM {seek}),
  (SELECT COUNT(*) FROM {challenge}),
  (SELECT COALESCE(SUM(id * CASE status WHEN 'pending' THEN 1 WHEN 'accepted' THEN 2
                                        WHEN 'declined' THEN 3 ELSE 4 END
                       + challenger_id * 3 + opponent_id * 5 + CASE WHEN rated THEN 7 ELSE 0 END),
                   0)
   FROM {challenge}),
  (SELECT COUNT(*) FROM {quick}),
  (SELECT COALESCE(SUM(user_id), 0) FROM {quick}),
  (SELECT COUNT(*) FROM {match}),
  (SELECT COALESCE(SUM(CASE status WHEN 'waiting' THEN 1 WHEN 'live' THEN 10
                                   WHEN 'finished' THEN 100 ELSE 1000 END), 0)
   FROM {match})
"""


def lobby_key() -> tuple:
    """A fingerprint of the lobby's rows in one query: a change to them changes it."""
    sql = LOBBY_KEY_SQL.format(
        seek=Seek._meta.db_table,
        challenge=Challenge._meta.db_table,
        quick=QuickEntry._meta.db_table,
        match=Match._meta.db_table,
    )
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return tuple(cursor.fetchone())


def end_live_matches() -> int:
    """Matches the lobby started are resigned at once (through the match service), so that the
    users are free to keep using the lobby."""
    live = Match.objects.filter(status__in=[Match.Status.WAITING, Match.Status.LIVE])
    for match in live:
        command = {"type": "resign"}
        if match.mode == Match.Mode.HOTSEAT:
            command["seat"] = 0
        services.match_submit(
            match_id=match.pk, user=match.player0, command=command, arrival_ms=timekeeping.now_ms()
        )
    return len(live)


MISSING = object()


def lobby_faults(kind: str, content: dict) -> tuple[set, set]:
    """(wrong, unsure): the fields of a wrong type, and those a server may read either way
    (a null id or username, a null `rated`, an empty rating bound, an id beyond 64 bits)."""
    wrong, unsure = set(), set()

    def flag(key: str, *, expected: tuple, null_ok: bool) -> None:
        if key not in content:
            return
        value = content[key]
        if value is None and null_ok:
            return
        if value is None or value == "":
            unsure.add(key)
        elif type(value) not in expected:
            wrong.add(key)

    if kind == "seek_create":
        flag("rated", expected=(bool,), null_ok=False)
        flag("rating_min", expected=(int,), null_ok=True)
        flag("rating_max", expected=(int,), null_ok=True)
    elif kind == "challenge_create":
        flag("rated", expected=(bool,), null_ok=False)
        flag("username", expected=(str,), null_ok=False)
        if "username" not in content:
            unsure.add("username")
    elif kind in LOBBY_REQUESTS and kind.split("_")[0] in ("seek", "challenge"):
        key = "seek_id" if kind.startswith("seek") else "challenge_id"
        value = content.get(key)
        if value is None:
            unsure.add(key)
        elif type(value) is not int:
            wrong.add(key)
        elif not 0 < value < 2**63:
            unsure.add(key)
    return wrong, unsure


class LobbyFuzz:
    """Two signed-in users on the lobby socket (a third exists to be challenged)."""

    def __init__(self, report: Report, users: dict, cookies: dict):
        self.report = report
        self.users = users  # name -> user
        self.cookies = cookies
        self.sockets: dict = {}
        self.loop = asyncio.new_event_loop()
        self.started_matches: set = set()

    async def connect(self, name: str) -> None:
        socket = Socket("/ws/lobby/", self.cookies[name])
        connected, code = await socket.open()
        if not connected:
            raise AssertionError(f"{name}'s lobby socket was refused (close {code})")
        self.sockets[name] = socket
        seen = set()
        while seen != {"lobby", "personal"}:
            output = await socket.receive()
            if output.kind != "message" or output.message.get("type") not in LOBBY_BROADCASTS:
                self.report.violate(ANSWERED, f"{name} connecting: {output} instead of a snapshot")
                return
            seen.add(output.message["type"])

    async def reconnect(self, name: str, why: str) -> None:
        self.report.reconnects[why] += 1
        if not await self.sockets[name].close():
            self.report.reconnects[f"{why}, then the consumer outlived the disconnect"] += 1
        await self.connect(name)
        await self.look_at_the_lobby()

    async def timed(self, frame: tuple) -> None:
        started = time.monotonic()
        await self.exchange(*frame)
        self.report.timed(frame, time.monotonic() - started)

    async def answer(self, name: str) -> tuple[Output, Counter]:
        """The first output that is not a broadcast, and the broadcasts seen on the way."""
        seen = Counter()
        while True:
            output = await self.sockets[name].receive()
            if output.kind == "message" and output.message.get("type") in LOBBY_BROADCASTS:
                seen[output.message["type"]] += 1
                continue
            return output, seen

    async def exchange(self, name: str, category: str, payload: str | bytes) -> None:
        self.report.frames += 1
        self.report.categories[category] += 1
        label = f"{category} from {name}: {describe(payload)}"
        shape = frame_shape(payload)
        before = self.lobby
        socket = self.sockets[name]
        lost = await socket.send(payload)
        syncing = shape.kind == "object" and shape.content.get("type") == "sync"
        if syncing and not lost:
            # A sync is answered by a snapshot (lobby + personal): a ping after it marks its end.
            self.report.frames += 1
            lost = await socket.send(json.dumps({"type": "ping"}))
        output, seen = (lost, Counter()) if lost else await self.answer(name)
        if output.kind != "message":
            self.report.violate(ANSWERED, f"{label}: {output}")
            if output.kind in ("close", "crash", "timeout"):
                if output.kind != "timeout":
                    self.report.violate(CLOSES, f"{label}: {output}")
                await self.reconnect(name, output.kind)
            return
        message = output.message
        self.report.answers[answer_label(message)] += 1
        if message.get("type") == "error" and message.get("code") == "internal_error":
            self.report.violate(ANSWERED, f"{label}: internal_error {message.get('message')!r}")
        if shape.kind == "too_large" or (
            shape.kind == "binary_large" and message.get("code") == "too_large"
        ):
            self.expect_error(message, {"too_large"}, None, label)
            closing = await socket.receive(CLOSE_WAIT_S)
            while closing.kind == "message" and closing.message.get("type") in LOBBY_BROADCASTS:
                closing = await socket.receive(CLOSE_WAIT_S)
            if closing.kind != "close" or closing.code != CLOSE_TOO_LARGE:
                self.report.violate(
                    CLOSES, f"{label}: after too_large came {closing}, not close {CLOSE_TOO_LARGE}"
                )
            await self.reconnect(name, "too_large")  # its disconnect may clear the user's lobby
            return
        if shape.kind in ("junk", "binary", "binary_large"):
            self.expect_error(message, {"bad_message"}, None, label)
        elif shape.deep_enough and message.get("code") == "bad_message":
            pass
        elif syncing:
            if message.get("type") != "pong" or not (seen["lobby"] and seen["personal"]):
                self.report.violate(
                    ANSWERED, f"{label}: no snapshot before the pong ({seen}, {message})"
                )
        else:
            self.check_request(name, shape.content, message, label)
        started = time.monotonic()
        await self.check_lobby(name, shape.content, message, before, label)
        self.report.seconds_by_category["(the lobby check)"] += time.monotonic() - started

    async def check_lobby(self, name: str, content, message: dict, before: Lobby, label) -> None:
        """Only an accepted request may change the lobby (a cheap fingerprint first; the rows
        themselves when it changed or the request was accepted)."""
        key = await database_sync_to_async(lobby_key)()
        accepted = message.get("type") == "ok"
        if not accepted and key == self.lobby_key:
            return
        after = await database_sync_to_async(lobby_now)()
        if accepted:
            self.check_accepted(name, content, before, after, label)
        elif after != before or key != self.lobby_key:
            self.report.violate(
                LOBBY_STATE,
                f"{label}: answered {message}, yet the lobby changed: {changes(before, after)}",
            )
        if any(m[3] in ("waiting", "live") for m in after.matches.values()):
            self.started_matches |= {pk for pk in after.matches if pk not in before.matches}
            await database_sync_to_async(end_live_matches)()
            after = await database_sync_to_async(lobby_now)()
        self.lobby, self.lobby_key = after, await database_sync_to_async(lobby_key)()

    async def look_at_the_lobby(self) -> None:
        self.lobby = await database_sync_to_async(lobby_now)()
        self.lobby_key = await database_sync_to_async(lobby_key)()

    def expect_error(self, message: dict, codes: set, request, label: str) -> bool:
        if message.get("type") != "error" or message.get("code") not in codes | TRANSIENT:
            self.report.violate(
                ANSWERED, f"{label}: answered {json.dumps(message)[:200]}, not {sorted(codes)}"
            )
            return False
        if not {"type", "code", "message", "request"} <= set(message):
            self.report.violate(
                ANSWERED, f"{label}: the error lacks type/code/message/request: {message}"
            )
        elif request is not None and message["request"] != request:
            self.report.violate(
                ANSWERED, f"{label}: the error names request {message['request']!r}"
            )
        return True

    def check_request(self, name: str, content: dict, message: dict, label: str) -> None:
        kind = content.get("type")
        if kind == "ping":
            if message.get("type") != "pong":
                self.report.violate(ANSWERED, f"{label}: answered {message}, not pong")
            return
        if not isinstance(kind, str):
            self.expect_error(message, {"bad_message", "unknown_request"}, None, label)
            return
        if kind not in LOBBY_REQUESTS:
            self.expect_error(message, {"unknown_request"}, kind, label)
            return
        wrong, unsure = lobby_faults(kind, content)
        if message.get("type") == "ok":
            if message.get("request") != kind:
                self.report.violate(
                    ANSWERED, f"{label}: ok names request {message.get('request')!r}"
                )
            if wrong:
                self.report.violate(
                    LOBBY_STATE, f"{label}: accepted with {sorted(wrong)} of the wrong type"
                )
        elif wrong:
            self.expect_error(
                message, {"bad_message"} | (LOBBY_CODES if unsure else set()), kind, label
            )
        else:
            allowed = LOBBY_CODES - {"unknown_request", "too_large"}
            if not unsure:
                allowed -= {"bad_message"}
            self.expect_error(message, allowed, kind, label)

    def check_accepted(self, name: str, content, before: Lobby, after: Lobby, label: str) -> None:
        """An accepted request did what it says (and only a well-formed one may be accepted)."""
        if content is None:
            self.report.violate(LOBBY_STATE, f"{label}: a frame that is no request was accepted")
            return
        user = self.users[name]
        kind = content.get("type")
        new_matches = {pk: m for pk, m in after.matches.items() if pk not in before.matches}
        mine = [s for s in after.seeks.values() if s[0] == user.pk]
        ok = True
        if kind == "seek_create":
            bound = {key: content.get(key) for key in ("rating_min", "rating_max")}
            bound = {key: None if value == "" else value for key, value in bound.items()}
            wanted = (
                user.pk,
                content.get("rated") is True,
                bound["rating_min"],
                bound["rating_max"],
            )
            ok = mine == [wanted]
        elif kind == "seek_cancel":
            ok = (
                content.get("seek_id") in before.seeks and content.get("seek_id") not in after.seeks
            )
        elif kind in ("seek_accept", "challenge_accept", "hotseat_start"):
            ok = any(user.pk in (m[1], m[2]) for m in new_matches.values())
        elif kind == "challenge_create":
            opponent = self.by_name(content.get("username"))
            ok = opponent is not None and any(
                c[:2] == (user.pk, opponent.pk) and c[3] == "pending"
                for pk, c in after.challenges.items()
                if pk not in before.challenges
            )
        elif kind in ("challenge_decline", "challenge_cancel"):
            status = "declined" if kind == "challenge_decline" else "cancelled"
            ok = after.challenges.get(content.get("challenge_id"), (None,) * 4)[3] == status
        elif kind == "quick_join":
            ok = user.pk in after.quick or any(
                user.pk in (m[1], m[2]) for m in new_matches.values()
            )
        elif kind == "quick_leave":
            ok = user.pk not in after.quick
        if not ok:
            self.report.violate(
                LOBBY_STATE, f"{label}: accepted, but the lobby shows {changes(before, after)}"
            )

    def by_name(self, username):
        if not isinstance(username, str):
            return None
        return next(
            (u for u in self.users.values() if u.username.lower() == username.strip().lower()), None
        )

    # --- building frames ---

    def request(self, name: str, plan: dict) -> dict:
        """A well-formed request (its ids taken from the lobby as it is, or made up)."""
        me = self.users[name]
        other = next(u for n, u in self.users.items() if n != name and n in self.sockets)
        kind, picks = plan["kind"], plan["picks"]
        seeks, challenges = self.lobby.seeks, self.lobby.challenges
        own_seeks = [pk for pk, s in seeks.items() if s[0] == me.pk]
        other_seeks = [pk for pk, s in seeks.items() if s[0] != me.pk]
        pending = [pk for pk, c in challenges.items() if c[3] == "pending" and me.pk in c[:2]]
        if kind == "seek_create":
            content = {"type": kind}
            for key in ("rated", "rating_min", "rating_max"):
                if plan[key] != "<missing>":
                    content[key] = plan[key]
            return content
        if kind in ("seek_cancel", "seek_accept"):
            mine_first = own_seeks if kind == "seek_cancel" else other_seeks
            candidates = [mine_first, own_seeks + other_seeks, [plan["made_up_id"]]]
            known = [ids for ids in candidates if ids]
            return {"type": kind, "seek_id": pick(pick(known, picks[0]), picks[1])}
        if kind == "challenge_create":
            usernames = [
                other.username, other.username.upper(), f" {other.username} ", me.username,
                "fuzz_cat", "nobody", "", "x" * 200,
            ]  # fmt: skip
            return {"type": kind, "username": pick(usernames, picks[0]), "rated": plan["flags"][0]}
        if kind.startswith("challenge_"):
            known = [ids for ids in (pending, [plan["made_up_id"]]) if ids]
            return {"type": kind, "challenge_id": pick(pick(known, picks[0]), picks[1])}
        return {"type": kind}

    def wrong_request(self, name: str, plan: dict) -> dict:
        """A request with one field of the wrong type (an id of the lobby as a string, a float,
        a list or a bool; a bound as a string; a flag as a string...)."""
        content = self.request(name, plan)
        kind = content["type"]
        some_id = pick(
            list(self.lobby.seeks) + list(self.lobby.challenges) or [1], plan["picks"][2]
        )
        wrong_ids = [
            str(some_id), "abc", "", "1 OR 1=1", float(some_id), some_id + 0.5, True, False,
            [some_id], {"id": some_id},
        ]  # fmt: skip
        if kind == "seek_create":
            key = pick(["rated", "rating_min", "rating_max"], plan["picks"][3])
            wrong = plan["wrong_bool"] if key == "rated" else plan["wrong_int"]
            return {"type": kind, key: wrong}
        if kind in ("seek_cancel", "seek_accept"):
            return {**content, "seek_id": pick(wrong_ids, plan["picks"][3])}
        if kind == "challenge_create":
            if plan["flags"][1]:
                return {**content, "username": plan["wrong_username"]}
            return {**content, "rated": plan["wrong_bool"]}
        if kind.startswith("challenge_"):
            return {**content, "challenge_id": pick(wrong_ids, plan["picks"][3])}
        return {"type": pick(["seek_cancel", "challenge_accept"], plan["picks"][3]), "seek_id": "x"}

    def build_frame(self, category: str, name: str, plan) -> tuple:
        if category in JUNK_CATEGORIES:
            return name, category, plan
        if category == "request":
            content = self.request(name, plan)
            return name, f"request {content['type']}", json.dumps(content)
        if category == "wrong_types":
            return name, category, json.dumps(self.wrong_request(name, plan))
        if category == "unknown_type":
            return name, category, json.dumps({"type": plan["unknown"]})
        if category == "non_string_type":
            content = {"seek_id": 1} if plan["with_id"] else {}
            if plan["type_value"] != "<missing>":
                content["type"] = plan["type_value"]
            return name, category, json.dumps(content)
        if category == "ping":
            return name, category, json.dumps({"type": "ping", "t": plan["t"]})
        if category == "sync":
            return name, category, json.dumps({"type": "sync"})
        if category == "random_object":
            content = dict(plan["content"])
            if plan["typed"]:
                content["type"] = plan["type"]
            return name, category, json.dumps(content)
        raise AssertionError(category)

    # --- the run ---

    async def start(self) -> None:
        for name in ("ann", "bob"):
            await self.connect(name)
        await self.look_at_the_lobby()

    async def batch(self, plans) -> None:
        for category, name, plan in plans:
            if self.report.done():
                return
            await self.timed(self.build_frame(category, name, plan))

    async def finish(self) -> None:
        for name in sorted(self.sockets):
            await self.exchange(name, "ping", json.dumps({"type": "ping"}))

    def run(self) -> None:
        started = time.monotonic()
        try:
            self.loop.run_until_complete(self.start())
            hypothesis_batches(LOBBY_FRAMES, self.loop, self.batch, self.report)
            self.loop.run_until_complete(self.finish())
        finally:
            self.report.notes["seconds before closing"] = round(time.monotonic() - started, 1)
            close_loop(self.loop, self.sockets.values())
            self.report.seconds = time.monotonic() - started


LOBBY_KINDS = (
    ["seek_create"] * 6 + ["seek_cancel"] * 4 + ["seek_accept"] * 2 + ["challenge_create"] * 5
    + ["challenge_accept"] * 2 + ["challenge_decline"] * 2 + ["challenge_cancel"] * 2
    + ["quick_join"] * 2 + ["quick_leave"] * 2 + ["hotseat_start"]
)  # fmt: skip
REQUEST_MATERIAL = st.fixed_dictionaries(
    {
        "kind": st.sampled_from(LOBBY_KINDS),
        "picks": st.lists(st.integers(0, 2**16 - 1), min_size=4, max_size=4),
        "flags": st.lists(st.booleans(), min_size=2, max_size=2),
        "rated": st.sampled_from(["<missing>", False, True]),
        "rating_min": st.sampled_from(["<missing>", None, 0, 1200, 1500, -1, 4001, 10**20]),
        "rating_max": st.sampled_from(["<missing>", None, 1500, 1800, 4000, -1, 4001]),
        "made_up_id": st.integers(1, 10**6) | st.sampled_from([0, -1, 2**63 - 1, 2**63, 10**30]),
        "wrong_bool": st.sampled_from(["yes", "false", "true", 1, 0, [], {}, 1.0]),
        "wrong_int": st.sampled_from(["1400", "lots", 1400.0, 1400.5, True, False, [1400], {}]),
        "wrong_username": st.sampled_from([123, ["fuzz_bob"], {"name": "fuzz_bob"}, True, 1.5]),
    }
)
LOBBY_PLANS = {
    "request": REQUEST_MATERIAL,
    "wrong_types": REQUEST_MATERIAL,
    "unknown_type": st.fixed_dictionaries(
        {
            "unknown": st.sampled_from(UNKNOWN_TYPES + ["seek", "seek_create ", "SYNC"])
            | st.text(max_size=12)
        }
    ),  # fmt: skip
    "non_string_type": st.fixed_dictionaries(
        {"with_id": st.booleans(), "type_value": st.sampled_from(["<missing>", *NON_STRING_TYPES])}
    ),
    "ping": st.fixed_dictionaries({"t": small_json}),
    "sync": st.just({}),
    "random_object": st.fixed_dictionaries(
        {
            "content": st.dictionaries(
                st.sampled_from(["type", "seek_id", "challenge_id", "username", "rated"])
                | st.text(max_size=5),
                small_json,
                max_size=5,
            ),
            "typed": st.booleans(),
            "type": st.sampled_from(LOBBY_REQUESTS),
        }
    ),
}
LOBBY_CATEGORIES = (
    ["binary"] * 4 + ["not_json"] * 4 + ["empty"] * 2 + ["scalar"] * 4 + ["deep"] * 4
    + ["huge"] * 1 + ["at_limit"] * 2 + ["unknown_type"] * 5 + ["non_string_type"] * 3
    + ["wrong_types"] * 16 + ["request"] * 30 + ["ping"] * 4 + ["sync"] * 3
    + ["random_object"] * 4
)  # fmt: skip
LOBBY_FRAMES = st.sampled_from(LOBBY_CATEGORIES).flatmap(
    lambda category: st.tuples(
        st.just(category),
        st.sampled_from(["ann", "bob"]),
        junk_frames(category) if category in JUNK_CATEGORIES else LOBBY_PLANS[category],
    )
)


def changes(before: Lobby, after: Lobby) -> str:
    parts = []
    for name in ("seeks", "challenges", "matches"):
        old, new = getattr(before, name), getattr(after, name)
        diff = {
            k: (old.get(k), new.get(k)) for k in old.keys() | new.keys() if old.get(k) != new.get(k)
        }
        if diff:
            parts.append(f"{name} {diff}")
    if before.quick != after.quick:
        parts.append(f"quick {sorted(before.quick)} -> {sorted(after.quick)}")
    return "; ".join(parts) or "nothing"


@pytest.fixture(scope="module")
def lobby_fuzz(django_db_setup, django_db_blocker) -> Report:
    """One run of the lobby fuzzer (the database is flushed afterwards)."""
    report = Report("lobby socket")
    with django_db_blocker.unblock(), fuzz_environment() as logs:
        people = {
            "ann": signed_in("fuzz_ann", on_ladder=True, ladder_joined_at=timezone.now()),
            "bob": signed_in("fuzz_bob"),
            "cat": signed_in("fuzz_cat"),
        }
        users = {name: user for name, (user, _) in people.items()}
        fuzz = LobbyFuzz(report, users, {name: cookie for name, (_, cookie) in people.items()})
        fuzz.run()
        for match in Match.objects.filter(pk__in=fuzz.started_matches):
            _, problems = engine.audit(json.loads(json.dumps(match_record(match))))
            for problem in problems:
                report.violate(ENGINE, f"match {match.pk}: {problem}")
        report.notes.update(matches_started=len(fuzz.started_matches))
        report.logs = list(logs)
    print("\n" + report.summary())
    return report


# === the tests ===================================================================================


def test_each_socket_kind_gets_ten_thousand_fuzzed_frames_and_legal_moves_progress(
    match_fuzz, lobby_fuzz
):
    for report in (match_fuzz, lobby_fuzz):
        assert report.frames >= FRAMES_PER_KIND, report.summary()
        small = [c for c, n in report.categories.items() if n < 20 and "(" not in c]
        assert not small, f"{report.kind}: categories rarely drawn: {small}"
    assert match_fuzz.answers["ack"] >= 300, (
        "legal commands were rarely applied: " + match_fuzz.summary()
    )
    assert match_fuzz.notes["finished"] >= 2, "fewer than two fuzzed matches finished"
    # Rounds were dealt from the seats' contributions, and fuzzed while they waited for them.
    assert match_fuzz.notes["contributions"] >= 8, match_fuzz.summary()
    for code, least in (("dealing", 20), ("not_dealing", 20), ("bad_contribution", 10)):
        assert match_fuzz.answers[f"error:{code}"] >= least, match_fuzz.summary()
    assert lobby_fuzz.answers["ok"] >= 200, (
        "lobby requests were rarely accepted: " + lobby_fuzz.summary()
    )


@pytest.mark.parametrize("kind", ["match", "lobby"])
def test_every_frame_is_answered_with_a_documented_message_never_internal_error(
    kind, match_fuzz, lobby_fuzz
):
    report = match_fuzz if kind == "match" else lobby_fuzz
    assert not report.violations[ANSWERED], report.failures(ANSWERED)


@pytest.mark.parametrize("kind", ["match", "lobby"])
def test_a_socket_is_closed_only_with_a_documented_code(kind, match_fuzz, lobby_fuzz):
    report = match_fuzz if kind == "match" else lobby_fuzz
    assert not report.violations[CLOSES], report.failures(CLOSES)


@pytest.mark.parametrize("kind", ["match", "lobby"])
def test_no_traceback_is_logged(kind, match_fuzz, lobby_fuzz):
    report = match_fuzz if kind == "match" else lobby_fuzz
    tracebacks = traceback_records(report.logs)
    assert not tracebacks, f"{report.kind}: {len(tracebacks)} logged traceback(s): {tracebacks[:5]}"


def test_a_resent_cseq_is_a_duplicate_only_if_it_was_applied_otherwise_stale(match_fuzz):
    assert not match_fuzz.violations[CSEQS], match_fuzz.failures(CSEQS)
    assert match_fuzz.answers["ack (duplicate)"] >= 20, match_fuzz.summary()
    assert match_fuzz.answers["error:stale_cseq"] >= 20, match_fuzz.summary()


def test_the_match_record_changes_only_by_the_acked_legal_commands(match_fuzz):
    assert not match_fuzz.violations[RECORD], match_fuzz.failures(RECORD)


def test_no_one_sees_another_seats_contribution_before_the_deal(match_fuzz):
    assert not match_fuzz.violations[SECRET], match_fuzz.failures(SECRET)


@pytest.mark.parametrize("kind", ["match", "lobby"])
def test_every_match_of_the_run_replays_through_the_engine(kind, match_fuzz, lobby_fuzz):
    report = match_fuzz if kind == "match" else lobby_fuzz
    assert not report.violations[ENGINE], report.failures(ENGINE)


def test_the_lobby_changes_only_by_accepted_well_formed_requests(lobby_fuzz):
    assert not lobby_fuzz.violations[LOBBY_STATE], lobby_fuzz.failures(LOBBY_STATE)


# --- the documented closes at the door ----------------------------------------------------------


async def test_a_signed_out_lobby_socket_is_closed_with_4401():
    socket = Socket("/ws/lobby/", None)
    connected, code = await socket.open()
    if connected:
        output = await socket.receive()
        connected, code = output.kind != "close", output.code
    await socket.close()
    assert (connected, code) == (False, CLOSE_NOT_SIGNED_IN)


async def test_a_socket_for_no_such_match_is_closed_with_4404():
    socket = Socket("/ws/match/00000000-0000-4000-8000-000000000000/", None)
    connected, code = await socket.open()
    if connected:
        output = await socket.receive()
        connected, code = output.kind != "close", output.code
    await socket.close()
    assert (connected, code) == (False, CLOSE_NO_SUCH_MATCH)

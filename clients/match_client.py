"""A client of the match WebSocket (docs/protocol.md) that knows only what its seat is told.

``MatchClient`` keeps the latest state message, every event in order (asking for a resync when
it sees a gap) and the replies to its commands. ``choose`` picks a decision from a seat's view
alone: ``random`` among the legal ones, or ``greedy`` (engine.GreedyBot's choices, made from the
scores and costs the view carries: a client does no rules arithmetic). ``play_match`` plays a
whole match with them. The ``botmatch`` command, the end-to-end tests and load tools share it.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections import defaultdict
from collections.abc import Hashable
from urllib.parse import urlsplit

import orjson
import websockets

from engine import BOTS, contribution

RATE_LIMITED_BACKOFF_S = 0.2  # the server refills 10 messages a second
# Nothing changed: decide again (stale_cseq: with a cseq above the one another device used).
RETRY_CODES = ("rate_limited", "busy", "time_unavailable", "unavailable", "stale_cseq")
STALE_AFTER_S = 2.0  # a wait this long without news: ping, in case a broadcast was lost


def reconnect_wait_s(attempt: int, backoff_s=(0.1, 0.2, 0.5, 1.0, 2.0), rng=random) -> float:
    """How long to wait before reconnecting attempt ``attempt`` (0 first): between half the
    backoff of that attempt and all of it ("equal jitter"). The clients of a web process that
    died all lose their sockets in the same instant; waiting the same time, they would all come
    back in another, each asking the surviving processes for a full state at once. (Never less
    than half: a server that closes each new socket at once is not met with a tight loop.)"""
    step = backoff_s[min(attempt, len(backoff_s) - 1)]
    return rng.uniform(step / 2, step)


def ws_url_of(base_url: str, match_id) -> str:
    """``http://host:port`` (or ``ws://…``) to ``ws://host:port/ws/match/<id>/``."""
    parts = urlsplit(base_url)
    scheme = "wss" if parts.scheme in ("https", "wss") else "ws"
    return f"{scheme}://{parts.netloc}/ws/match/{match_id}/"


def origin_of(base_url: str) -> str:
    parts = urlsplit(base_url)
    scheme = "https" if parts.scheme in ("https", "wss") else "http"
    return f"{scheme}://{parts.netloc}"


def _parsed(raw: str) -> dict:
    """A frame's message: orjson first (a load generator's clients parse every broadcast), json
    for what only it reads (a lone surrogate's escape, say)."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(raw)


def _is_key(cseq) -> bool:
    """The server echoes a refused cseq as it was sent: a list, say, which keys nothing."""
    return isinstance(cseq, Hashable)


class MatchClient:
    """One client of one match. Made by ``connect``, it reconnects by itself after any close
    the server did not mean as final (with backoff, trying each base URL in turn: another web
    process may be alive), asks for what it missed (``hello`` with its last seq) and resends the
    commands still unanswered with the same ``cseq`` (the server applies each cseq once)."""

    FINAL_CLOSES = (4401, 4404, 4413)  # signed out, no such match, a frame too large
    GIVE_UP_AFTER_S = 60.0
    # A pong names the match's last event as soon as it is written, before its broadcast has
    # come through the channel layer: a gap is only one if that event is still missing this
    # long after. (Asking at once cost a loaded server a full state for every pong that beat
    # its broadcast, which slowed the broadcasts, which made more pongs beat them.)
    GAP_GRACE_S = 2.0

    def __init__(self, ws, *, name: str = "", opener=None):
        self.ws = ws
        self.name = name
        self.messages: list[dict] = []  # everything received, in order
        self._replies: defaultdict[object, list[dict]] = defaultdict(list)  # cseq -> ack, error
        self.state: dict | None = None  # the latest state message
        self.seq = 0  # the number of the last event this client has accounted for
        self.events: list[dict] = []  # every event seen since connecting, in order
        self.gaps = 0  # how many times a gap was seen (and a resync asked for)
        self.reconnects = 0
        self.cseq = 0
        self.closed = False
        self.close_code: int | None = None
        self._opener = opener  # opens a new connection (None: never reconnect)
        self._closing = False
        self._unanswered: dict[int, dict] = {}  # cseq -> command sent, no ack or error yet
        self._gap_check: asyncio.Task | None = None  # a pong named an event not seen yet
        self._changed = asyncio.Condition()
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def connect(
        cls, base_url: str | list[str], match_id, *, sessionid: str | None = None, name: str = ""
    ) -> MatchClient:
        """``base_url`` may be a list: the web processes to try, first to last."""
        urls = [base_url] if isinstance(base_url, str) else list(base_url)
        headers = {"Cookie": f"sessionid={sessionid}"} if sessionid else {}
        turn = iter(range(1 << 62))

        async def opener():
            url = urls[next(turn) % len(urls)]
            return await websockets.connect(
                ws_url_of(url, match_id),
                origin=origin_of(url),
                additional_headers=headers,
                open_timeout=10,
                max_size=2**22,
                # As a browser's page: no WebSocket pings of its own (the server sends them,
                # and its pongs and this client's pings tell a dead connection).
                ping_interval=None,
            )

        return cls(await opener(), name=name, opener=opener)

    # --- receiving ---------------------------------------------------------------------

    async def _read(self) -> None:
        try:
            while True:
                await self._read_until_closed()
                if not await self._reconnect():
                    return
        finally:
            self._cancel_gap_check()
            async with self._changed:
                self.closed = True
                self._changed.notify_all()

    async def _read_until_closed(self) -> None:
        try:
            async for raw in self.ws:
                message = _parsed(raw)
                if message.get("type") == "state":
                    await self._on_state(message)
                elif message.get("type") == "pong" and message.get("seq", 0) > self.seq:
                    self._suspect_gap(message["seq"])
                elif message.get("type") in ("ack", "error") and _is_key(message.get("cseq")):
                    self._unanswered.pop(message.get("cseq"), None)
                    self._replies[message.get("cseq")].append(message)
                    if message.get("code") == "stale_cseq":  # another device of this seat
                        self.cseq = max(self.cseq, message.get("last_cseq") or 0)
                async with self._changed:
                    self.messages.append(message)
                    self._changed.notify_all()
        except websockets.ConnectionClosed:
            pass
        self.close_code = self.ws.close_code

    def _suspect_gap(self, seq: int) -> None:
        """A pong named event ``seq``, not seen yet: its broadcast may be on its way, or lost
        with nothing after it to show the gap. Resync if it has not come within the grace."""
        if self.gap_check_pending:
            return
        self._gap_check = asyncio.create_task(self._resync_unless_seen(seq))

    async def _resync_unless_seen(self, seq: int) -> None:
        await asyncio.sleep(self.GAP_GRACE_S)
        if self.seq < seq and not self._closing:
            self.gaps += 1
            await self.send({"type": "sync", "last_seq": self.seq})
        async with self._changed:  # for a wait_for on gap_check_pending
            self._gap_check = None
            self._changed.notify_all()

    def _cancel_gap_check(self) -> None:
        if self._gap_check is not None:
            self._gap_check.cancel()
            self._gap_check = None

    @property
    def gap_check_pending(self) -> bool:
        return self._gap_check is not None and not self._gap_check.done()

    async def _reconnect(self) -> bool:
        """Open a new connection (with backoff) unless the close was final; then catch up and
        resend what is unanswered. False: stay closed."""
        if self._closing or self._opener is None or self.close_code in self.FINAL_CLOSES:
            return False
        self._cancel_gap_check()  # the hello below asks for everything missed
        loop = asyncio.get_running_loop()
        give_up = loop.time() + self.GIVE_UP_AFTER_S
        for attempt in range(1 << 30):
            await asyncio.sleep(reconnect_wait_s(attempt))
            if self._closing or loop.time() > give_up:
                return False
            try:
                self.ws = await self._opener()
                break
            except (OSError, websockets.WebSocketException, TimeoutError):
                continue
        self.reconnects += 1
        await self.send({"type": "hello", "last_seq": self.seq})
        for command in list(self._unanswered.values()):
            await self.send(command)
        return True

    async def _on_state(self, message: dict) -> None:
        events = message["events"]
        if self.state is None and not events:
            self.seq = message["seq"]  # the first state: what came before is history
        elif events and events[0]["seq"] > self.seq + 1:
            # The channel layer dropped a message: ask for everything after what we saw.
            self.gaps += 1
            await self.send({"type": "sync", "last_seq": self.seq})
            return
        for event in events:
            if event["seq"] > self.seq:
                self.events.append(event)
                self.seq = event["seq"]
        if self.state is None or message["seq"] >= self.state["seq"]:
            # A state that skips events (the one sent on reconnecting) is drawn, but the events
            # it skipped are still to come (the answer to hello): the seq waits for them.
            skips = self.state is not None and not events and message["seq"] > self.seq
            self.state = message
            if not skips:
                self.seq = max(self.seq, message["seq"])

    async def wait_for(self, predicate, timeout: float = 10.0):
        """Wait until ``predicate(self)`` is truthy (checked on every message) and return it."""

        async def waiting():
            async with self._changed:
                while True:
                    value = predicate(self)
                    if value:
                        return value
                    if self.closed:
                        raise ConnectionError(
                            f"{self.name}: closed ({self.close_code}) while waiting"
                        )
                    await self._changed.wait()

        return await asyncio.wait_for(waiting(), timeout)

    def replies_to(self, cseq: int) -> list[dict]:
        return list(self._replies.get(cseq, ()))

    # --- sending -----------------------------------------------------------------------

    async def send(self, message: dict) -> None:
        try:
            await self.ws.send(json.dumps(message))
        except websockets.ConnectionClosed:
            pass  # a command stays unanswered and is resent once reconnected

    async def command(
        self, command: dict, *, cseq: int | None = None, timeout: float = 10.0
    ) -> dict:
        """Send a command with the next ``cseq`` (or the one given) and return its ack or error."""
        if cseq is None:
            self.cseq += 1
            cseq = self.cseq
        seen = len(self.replies_to(cseq))
        message = {**command, "cseq": cseq}
        self._unanswered[cseq] = message
        await self.send(message)
        replies = await self.wait_for(lambda c: c.replies_to(cseq)[seen:], timeout)
        return replies[0]

    async def close(self) -> None:
        self._closing = True
        self._cancel_gap_check()
        await self.ws.close()
        await self._reader

    # --- reading the state -------------------------------------------------------------

    @property
    def view(self) -> dict | None:
        return None if self.state is None else self.state["view"]

    @property
    def seat(self) -> int | None:
        return None if self.state is None else self.state["you"]

    @property
    def over(self) -> bool:
        return self.state is not None and self.state["view"]["result"] is not None

    def my_turn(self) -> bool:
        """Is there something this seat should do now (contribute to the deal, press Start, or
        decide)?"""
        if self.state is None or self.over or self.seat is None:
            return False
        if self.contribution_due:
            return True
        if self.clocks_stand:
            return self.state["starter"] == self.seat
        return self.view["clock"]["running"] and self.view["to_act"] == self.seat

    @property
    def contribution_due(self) -> bool:
        """The round waits for this seat's contribution to its deal (docs/fairness.md)."""
        return self.seat is not None and self.view["legal"]["contribute"]

    @property
    def clocks_stand(self) -> bool:
        """The clocks stand until someone presses Start (the server names who: ``starter``)."""
        return self.state is not None and self.state["starter"] is not None

    def next_command(self, strategy: str, rng: random.Random) -> dict:
        """What this seat sends on its turn: a contribution to the deal (from the CSPRNG, as a
        browser's), Start, or a decision by ``strategy``."""
        if self.contribution_due:
            return contribution()
        if self.clocks_stand:
            return {"type": "start"}
        return choose(self.view, strategy, rng)


# --- choosing from a view ----------------------------------------------------------------


def choose(view: dict, strategy: str, rng: random.Random) -> dict:
    """A decision for the seat whose view this is (it must be that seat's turn), by the engine's
    bot of that name, from the view alone."""
    if strategy not in BOTS:
        raise ValueError(f"no strategy {strategy!r}")
    return BOTS[strategy]().choose_from_view(view, rng)


async def _wait_for_turn(client: MatchClient, acted_at, timeout: float) -> None:
    """Wait until the match is over or it is this seat's turn again. While waiting, ping now and
    then: the pong names the match's last event, so a lost broadcast is noticed and resynced."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        try:
            await client.wait_for(
                lambda c: c.over or (c.my_turn() and c.state["seq"] != acted_at),
                min(STALE_AFTER_S, max(0.0, deadline - asyncio.get_running_loop().time())),
            )
            return
        except TimeoutError:
            if asyncio.get_running_loop().time() >= deadline:
                raise
            await client.send({"type": "ping"})


async def play_match(
    client: MatchClient,
    *,
    strategy: str = "random",
    rng: random.Random | None = None,
    pace_ms: int = 0,
    timeout: float = 60.0,
) -> dict:
    """Play the client's seat until the match is over; returns the last state message.
    ``pace_ms`` is a pause before each decision (a person's thinking time)."""
    rng = rng or random.Random()
    acted_at = None  # the event number at which this seat last acted
    while True:
        await _wait_for_turn(client, acted_at, timeout)
        if client.over:
            return client.state
        acted_at = client.state["seq"]
        if pace_ms:
            await asyncio.sleep(pace_ms / 1000)
        reply = await client.command(client.next_command(strategy, rng), timeout=timeout)
        if reply["type"] == "error" and reply["code"] in RETRY_CODES:
            # Not taken: wait for the allowance to refill (or the server to catch up), then
            # decide again.
            acted_at = None
            await asyncio.sleep(RATE_LIMITED_BACKOFF_S)

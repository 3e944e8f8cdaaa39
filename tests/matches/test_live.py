"""End to end: WebSocket clients against a real Daphne, the channels-redis layer and a real
Celery worker (small clocks: a 1.5 s bank and a 0.3 s delay unless a test gives more).

Each test sets up its rows synchronously, runs its clients in ``asyncio.run``, then checks the
database; conditions are waited for, never slept on."""

import asyncio
import json
import random
import threading
import uuid
from unittest.mock import patch

import pytest
import websockets
from django.contrib.auth import get_user_model
from django.test import Client

import engine
from clients.match_client import MatchClient, origin_of, play_match, ws_url_of
from matches import broadcast, readings, services, timekeeping
from matches.broadcast import visible_event
from matches.models import Match, TimingFault
from matches.selectors import match_record, match_state
from tests.matches.conftest import session_cookie
from tests.support import wait_until
from tests.support.dealing import contribution, deal_by_service
from tests.support.fairness_verifier import verify

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

FAST = engine.ClockConfig(bank_ms=1_500, delay_ms=300)
ROOMY = engine.ClockConfig(bank_ms=60_000, delay_ms=5_000)  # latency never matters


class Duel:
    def __init__(self, match: Match, url: str, cookies: dict):
        self.match = match
        self.url = url
        self.cookies = cookies  # seat -> sessionid

    async def client(self, seat: int | None) -> MatchClient:
        cookie = None if seat is None else self.cookies[seat]
        client = await MatchClient.connect(
            self.url, self.match.pk, sessionid=cookie, name=f"seat{seat}"
        )
        await client.wait_for(lambda c: c.state is not None)
        return client

    def refreshed(self) -> Match:
        self.match.refresh_from_db()
        return self.match

    def events(self) -> list[dict]:
        return [e for r in self.refreshed().record["rounds"] for e in r["events"]]

    def deal_by_service(self) -> None:
        """Both players contribute to the first deal before anyone connects."""
        users = {0: self.match.player0, 1: self.match.player1}
        assert deal_by_service(self.match, users, timekeeping.now_ms())

    @staticmethod
    async def deal(*clients: MatchClient) -> None:
        """Each seat's client contributes to the round being dealt, as a browser does on
        connecting; returns once every client sees the round dealt."""
        for client in clients:
            if client.contribution_due:
                command = contribution(client.seat, client.view["round"])
                ack = await client.command({k: v for k, v in command.items() if k != "seat"})
                assert ack["type"] == "ack", ack
        for client in clients:
            await client.wait_for(lambda c: c.view["phase"] != "dealing")


@pytest.fixture
def duel(fast_servers, fast_settings, make_user):
    def make(clock=ROOMY, *, rated=False, grace_ms=600, users=None, mode=Match.Mode.ONLINE):
        fast_settings.START_GRACE_MS = grace_ms  # the first Start wait is set by this process
        player0, player1 = users or (make_user(), make_user())
        match = services.match_create(
            player0=player0,
            player1=player1,
            rated=rated,
            mode=mode,
            now_ms=timekeeping.now_ms(),
            clock=clock,
        )
        return Duel(
            match, fast_servers.url, {0: session_cookie(player0), 1: session_cookie(player1)}
        )

    return make


# --- what a seat may learn ----


def view_tiles(view: dict) -> set:
    """Every tile a view mentions (its hand, the drawn tile, the legal plays, the layout)."""
    tiles = [*(view["hand"] or []), *([view["must_play"]] if view["must_play"] else [])]
    layout = view["layout"]
    tiles += [t["tile"] for t in layout["tiles"]] + [p["tile"] for p in layout["places"]]
    tiles += [c["tile"] for c in layout["counted"]] + (
        [layout["spinner"]] if layout["spinner"] else []
    )
    for option in (view["legal"] or {}).get("plays", []):
        tiles.append(option["tile"])
        tiles += [p["tile"] for p in option["places"] if p]
    return {tuple(t) for t in tiles}


def assert_nothing_secret_reached(client: MatchClient, record: dict) -> None:
    """No message to this seat (or spectator) holds the opponent's tiles or the boneyard."""
    seat = client.seat
    rounds = record["rounds"]
    for message in client.messages:
        settlement = message.get("view", {}).get("settlement")
        if settlement is not None:
            # A settlement shows the final hands of its round, which is over by then.
            assert settlement["round"] < message["view"]["round"] or message["view"]["result"]
            message = {**message, "view": {**message["view"], "settlement": None}}
        raw = json.dumps(message)
        assert '"hands"' not in raw and '"boneyard"' not in raw and '"seed"' not in raw
        if message["type"] != "state":
            continue
        view, seq = message["view"], message["seq"]
        assert view["seat"] == seat
        if view["phase"] == "dealing":  # nobody learns a contribution before the deal
            assert all(c["value"] is None for c in view["contributions"])
            assert not any("value" in e for e in message["events"] if e["type"] == "contribute")
        played = rounds[view["round"] - 1]
        public = {
            tuple(e["tile"]) for e in played["events"] if e["type"] == "play" and e["seq"] <= seq
        }
        own = set()
        if seat is not None:
            own = {tuple(t) for t in played["hands"][seat]}
            own |= {
                tuple(e["tile"])
                for e in played["events"]
                if e["type"] == "draw" and e["seat"] == seat and e["seq"] <= seq
            }
        else:
            assert view["hand"] is None and view["legal"] is None
        assert view_tiles(view) <= own | public, (
            f"seat {seat} was told {view_tiles(view) - own - public}"
        )
        for event in message["events"]:
            if event["type"] == "draw" and event["seat"] != seat:
                assert "tile" not in event


def assert_saw_every_event(client: MatchClient, record: dict) -> None:
    """Every event, in order, as this seat may see it. A player's contribution broadcast
    before its round was dealt hides its value; one that reached the client after the deal
    shows it: a resync from the record, asked for by the client (a gap, a quiet spell, a
    reconnect) or made by its socket for a broadcast that overtook another (the two
    contributions, made on two web processes). That no value is seen before the deal is
    ``assert_nothing_secret_reached``'s to check."""
    seen = iter(client.events)
    events = []
    for r in record["rounds"]:
        for e in r["events"]:
            as_broadcast = visible_event(
                e, client.seat, dealing=broadcast_while_dealing(e, r["events"])
            )
            as_fetched = visible_event(e, client.seat, dealing=False)
            events.append(as_fetched if next(seen, None) == as_fetched else as_broadcast)
    assert client.events == events


def broadcast_while_dealing(event: dict, round_events: list[dict]) -> bool:
    """Was this event broadcast while its round still waited for a contribution? A player's
    contribution is its own broadcast; the server's stand-ins come together and deal."""
    if event["type"] != "contribute" or not event["from_player"]:
        return False
    so_far = [e for e in round_events if e["type"] == "contribute" and e["seq"] <= event["seq"]]
    return len(so_far) < 2


def explain(match: Match, clients) -> str:
    """What a failed end-to-end match looked like: its last events and the clients' replies."""
    events = [e for r in match.record["rounds"] for e in r["events"]]
    lines = [f"{len(events)} events; the last: {json.dumps(events[-4:])}"]
    for client in clients:
        replies = [m for m in client.messages if m["type"] in ("ack", "error")]
        lines.append(f"seat {client.seat}: seq {client.seq}, gaps {client.gaps}, "
                     f"last replies {json.dumps(replies[-3:])}")  # fmt: skip
    return "\n".join(lines)


# --- whole matches ----


def test_a_whole_match_to_a_zero_balance(duel, verifier, tmp_path):
    table = duel(ROOMY)

    async def scenario():
        seat0, seat1, watcher = (
            await table.client(0),
            await table.client(1),
            await table.client(None),
        )
        await asyncio.gather(
            play_match(seat0, strategy="greedy", rng=random.Random(1), timeout=120),
            play_match(seat1, strategy="random", rng=random.Random(2), timeout=120),
        )
        await watcher.wait_for(lambda c: c.over, 10)
        for client in (seat0, seat1, watcher):
            await client.close()
        return seat0, seat1, watcher

    clients = asyncio.run(scenario())
    match = table.refreshed()
    assert (match.status, match.reason) == ("finished", "points"), explain(match, clients)
    record = match_record(match)
    assert sorted(record["balances"]) == [0, 300]
    assert record["balances"][match.winner] == 300
    for client in clients:
        assert client.view["result"] == {"winner": match.winner, "reason": "points"}
        assert_saw_every_event(client, record)
        assert_nothing_secret_reached(client, record)
    assert clients[0].seat == 0 and clients[1].seat == 1 and clients[2].seat is None
    # Anyone can re-deal it: docs/fairness.md's own verifier, on the record the API serves.
    public = Client().get(f"/api/matches/{match.pk}/").json()
    assert verify(verifier, public, tmp_path) == (
        0,
        [f"round {r['number']}: deal verified" for r in public["rounds"]],
    )
    sources = {c["source"] for r in public["rounds"] for c in r["contributions"]}
    assert "player" in sources  # the clients' own contributions, sent over their sockets


def test_a_match_lost_on_time_with_both_clients_disconnected(duel):
    # A clock long enough for the server to see both disconnects before it runs out, even on a
    # busy machine (with FAST's 1.8 s it sometimes still counted the opener as connected).
    table = duel(engine.ClockConfig(bank_ms=5_000, delay_ms=1_000))

    async def scenario():
        seat0, seat1 = await table.client(0), await table.client(1)
        await table.deal(seat0, seat1)
        starter = seat0 if seat0.state["starter"] == 0 else seat1
        ack = await starter.command({"type": "start"})
        assert ack["type"] == "ack"
        await seat0.close()
        await seat1.close()
        return starter.seat  # Start is pressed by the first to act, whose clock then runs

    opener = asyncio.run(scenario())
    deadline = table.refreshed().deadline_ms
    wait_until(lambda: table.refreshed().is_over, 15, message="the worker to end the match")
    match = table.match
    assert (match.status, match.winner, match.reason) == ("finished", 1 - opener, "abandon")
    last = table.events()[-1]
    assert (last["type"], last["seat"]) == ("abandon", opener)
    assert 0 <= last["at_ms"] - deadline < 3_000
    assert not TimingFault.objects.filter(match=match).exists()

    async def later():  # whoever comes back sees the result
        client = await table.client(1 - opener)
        await client.close()
        return client.view["result"]

    assert asyncio.run(later()) == {"winner": 1 - opener, "reason": "abandon"}


def test_a_connected_player_who_does_not_act_loses_on_time(duel):
    table = duel(FAST)

    async def scenario():
        seat0, seat1 = await table.client(0), await table.client(1)
        # Nobody contributes nor presses Start: the server stands in for both contributions
        # (DEAL_CONTRIBUTION_MS), presses Start after the grace, then the opener's clock runs out.
        await seat0.wait_for(lambda c: c.over, 20)
        await seat1.wait_for(lambda c: c.over, 20)
        for client in (seat0, seat1):
            await client.close()
        return seat0, seat1

    seat0, seat1 = asyncio.run(scenario())
    match = table.refreshed()
    types = [e["type"] for e in table.events()]
    assert types == ["contribute", "contribute", "start", "timeout"]
    assert match.reason == "time"
    stand_ins = table.events()[:2]
    assert [(e["seat"], e["from_player"], e["source"]) for e in stand_ins] == [
        (0, False, "server"),
        (1, False, "server"),
    ]
    assert table.events()[2]["seat"] is None  # the server pressed Start
    for client in (seat0, seat1):
        assert [e["type"] for e in client.events] == types
        assert client.view["result"] == {"winner": match.winner, "reason": "time"}


# --- reconnecting, resync ----


def start_broadcast_by(match: Match, user, send_all) -> None:
    """The starter presses Start, its broadcast made by ``send_all`` instead of the layer's."""
    with patch("matches.broadcast._send_all", send_all):
        services.match_submit(
            match_id=match.pk, user=user, command={"type": "start"}, arrival_ms=timekeeping.now_ms()
        )


async def ping_until(client: MatchClient, predicate, timeout: float = 10.0):
    """Ping until ``predicate(client)`` holds: a pong names the seq its web process last read
    from Redis (matches/readings.py), a fraction of a second behind a change."""

    async def pinging():
        while True:
            await client.send({"type": "ping"})
            try:
                return await client.wait_for(predicate, 0.2)
            except TimeoutError:
                continue

    return await asyncio.wait_for(pinging(), timeout)


def test_a_lost_last_broadcast_is_noticed_at_the_next_pong_and_resynced(duel):
    table = duel(ROOMY, grace_ms=60_000)
    table.deal_by_service()
    match = table.match
    starter = engine.first_to_act(match_state(match))
    user = match.player0 if starter == 0 else match.player1

    async def dropped(messages):  # the channel layer drops every message
        return None

    async def scenario():
        client = await table.client(1 - starter)
        before = client.seq
        await asyncio.to_thread(start_broadcast_by, match, user, dropped)
        await ping_until(client, lambda c: c.seq > before)
        return client

    client = asyncio.run(scenario())
    assert client.gaps == 1
    assert [e["type"] for e in client.events] == ["start"]
    assert client.state["view"]["phase"] != "ready"


def test_a_pong_that_beats_its_broadcast_asks_for_no_resync(duel):
    """The seq is written before the broadcast is sent, so under load a pong can name an event
    still on its way: the client waits for it instead of asking the server for a full state."""
    table = duel(ROOMY, grace_ms=60_000)
    table.deal_by_service()
    match = table.match
    starter = engine.first_to_act(match_state(match))
    user = match.player0 if starter == 0 else match.player1
    release, real_send_all = threading.Event(), broadcast._send_all

    async def held_back(messages, *writes):  # waits until the pong has been answered
        await asyncio.to_thread(release.wait, 30)
        await real_send_all(messages, *writes)

    async def written_after(seq: int) -> None:
        while ((await readings.clock_and_seq(match.pk))[1] or 0) <= seq:
            await asyncio.sleep(0.01)

    async def scenario():
        client = await table.client(1 - starter)
        before = client.seq
        mover = asyncio.create_task(asyncio.to_thread(start_broadcast_by, match, user, held_back))
        await asyncio.wait_for(written_after(before), 10)
        await ping_until(
            client, lambda c: c.messages[-1]["type"] == "pong" and c.messages[-1]["seq"] > before
        )
        answered = len(client.messages)
        assert client.seq == before
        release.set()
        await client.wait_for(lambda c: c.seq > before)
        await mover
        await client.wait_for(lambda c: not c.gap_check_pending, MatchClient.GAP_GRACE_S + 5)
        return client, client.messages[answered:]

    client, after_pong = asyncio.run(scenario())
    assert client.gaps == 0
    assert [m["type"] for m in after_pong] == ["state"]
    assert "resync" not in after_pong[0]
    assert [e["type"] for e in client.events] == ["start"]


def test_reconnect_mid_turn_gets_the_missed_events_and_the_clock_runs_on(duel):
    table = duel(ROOMY, grace_ms=60_000)

    async def scenario():
        clients = {0: await table.client(0), 1: await table.client(1)}
        await table.deal(*clients.values())
        starter = clients[0].state["starter"]
        await clients[starter].command({"type": "start"})
        # Both must have seen the start: the mover plays from its own view, and what the
        # other saw is the point from which it asks to be caught up.
        for client in clients.values():
            await client.wait_for(lambda c: c.view["to_act"] is not None)
        mover = clients[0].view["to_act"]
        other = 1 - mover
        seen = clients[other].seq
        await clients[other].close()  # the other player drops out ...
        tile = clients[mover].view["legal"]["plays"][0]["tile"]
        ack = await clients[mover].command({"type": "play", "tile": tile, "place": None})
        assert ack["type"] == "ack" and not ack["late"]
        deadline = (
            await clients[mover].wait_for(lambda c: c.state["seq"] == ack["seq"] and c.state)
        )["deadline"]
        # ... and comes back mid-turn (its own turn now), saying what it saw.
        back = await table.client(other)
        assert back.state["deadline"] == deadline  # the clock neither stopped nor reset
        await back.send({"type": "hello", "last_seq": seen})
        resync = await back.wait_for(
            lambda c: next((m for m in c.messages if m.get("events")), None)
        )
        assert resync["resync"] is True
        assert [e["seq"] for e in resync["events"]] == list(range(seen + 1, ack["seq"] + 1))
        assert resync["events"][0]["tile"] == tile
        # It drops out again during its own turn and returns: still its turn, same deadline.
        await back.close()
        again = await table.client(other)
        assert (again.view["to_act"], again.state["deadline"]) == (other, deadline)
        reply = await again.command(play_options_first(again.view))
        assert reply["type"] == "ack" and not reply["late"]
        await again.close()
        await clients[mover].close()

    asyncio.run(scenario())
    assert table.refreshed().status == "live"


def play_options_first(view: dict) -> dict:
    if view["legal"]["plays"]:
        option = view["legal"]["plays"][0]
        return {"type": "play", "tile": option["tile"], "place": option["places"][0]}
    return {"type": "draw"}


# --- refusing ----


def test_each_kind_of_illegal_command_is_answered_with_its_error_and_changes_nothing(duel):
    table = duel(ROOMY, grace_ms=60_000)

    async def scenario():
        clients = {0: await table.client(0), 1: await table.client(1)}
        watcher = await table.client(None)
        await table.deal(*clients.values(), watcher)  # the watcher too: it counts states below
        starter = clients[0].state["starter"]

        async def refused(seat, message, code):
            client = watcher if seat is None else clients[seat]
            before = await asyncio.to_thread(table_seq)
            await client.wait_for(lambda c: c.seq >= before)  # every state so far has arrived
            states = sum(m["type"] == "state" for m in client.messages)
            if isinstance(message, str):
                await client.ws.send(message)
                reply = await client.wait_for(
                    lambda c: c.messages[-1]["type"] == "error" and c.messages[-1]
                )
            else:
                client.cseq += 1
                reply = await client.command(message, cseq=client.cseq)
            assert (reply["type"], reply["code"]) == ("error", code), reply
            assert reply["message"]
            assert await asyncio.to_thread(table_seq) == before
            assert sum(m["type"] == "state" for m in client.messages) == states

        await refused(starter, "[1, 2]", "bad_message")
        await refused(starter, "{not json", "bad_message")
        await refused(starter, json.dumps({"type": "start", "cseq": "one"}), "bad_message")
        await refused(starter, json.dumps({"type": "start", "cseq": 0}), "bad_message")
        await refused(starter, {"type": "dance"}, "unknown_command")
        await refused(
            starter, {"type": "resign", "nope": 1, "type2": 3} | {"type": 5}, "bad_command"
        )
        await refused(1 - starter, {"type": "start"}, "not_your_start")
        own = clients[starter].view["hand"][0]
        await refused(starter, {"type": "play", "tile": own, "place": None}, "clocks_standing")
        await refused(starter, {"type": "timeout"}, "server_only")
        await refused(None, {"type": "resign"}, "not_a_player")
        await clients[starter].command({"type": "start"})
        await clients[0].wait_for(lambda c: c.view["to_act"] is not None)
        mover = clients[0].view["to_act"]
        view = await clients[mover].wait_for(lambda c: c.view["legal"]["plays"] and c.view)
        forced = view["legal"]["plays"][0]["tile"]
        other_own = next(t for t in view["hand"] if t != forced)
        not_mine = next([a, b] for a in range(7) for b in range(a, 7) if [a, b] not in view["hand"])
        await refused(
            mover, {"type": "play", "tile": other_own, "place": None}, "wrong_opening_tile"
        )
        await refused(mover, {"type": "play", "tile": not_mine, "place": None}, "tile_not_in_hand")
        await refused(
            mover,
            {"type": "play", "tile": forced, "place": {"tile": forced, "side": "low"}},
            "opening_has_no_place",
        )
        await refused(mover, {"type": "play", "tile": [3, 9], "place": None}, "bad_command")
        await refused(mover, {"type": "offer", "amount": 20}, "no_auction")
        await refused(mover, {"type": "start"}, "already_started")
        # A command for the other seat: the seat field does not make one player act for another.
        await refused(
            1 - mover,
            {"type": "play", "tile": forced, "place": None, "seat": mover},
            "not_your_turn",
        )
        await refused(1 - mover, {"type": "draw"}, "not_your_turn")
        # A duplicate is acknowledged, not applied twice.
        first = await clients[mover].command(
            {"type": "play", "tile": forced, "place": None}, cseq=50
        )
        again = await clients[mover].command(
            {"type": "play", "tile": forced, "place": None}, cseq=50
        )
        assert (first["duplicate"], again["duplicate"], again["seq"]) == (False, True, first["seq"])
        for client in (*clients.values(), watcher):
            await client.close()

    def table_seq():  # run in a thread of its own: no database calls on the event loop
        from django.db import connection

        try:
            return Match.objects.values_list("seq", flat=True).get(pk=table.match.pk)
        finally:
            connection.close()

    asyncio.run(scenario())
    assert [e["type"] for e in table.events()] == ["contribute", "contribute", "start", "play"]


def test_a_match_that_does_not_exist_closes_with_4404(fast_servers):
    async def scenario():
        url = ws_url_of(fast_servers.url, uuid.uuid4())
        async with websockets.connect(url, origin=origin_of(fast_servers.url)) as ws:
            with pytest.raises(websockets.ConnectionClosed):
                await asyncio.wait_for(ws.recv(), 10)
            return ws.close_code

    assert asyncio.run(scenario()) == 4404


def test_ping_is_answered_with_the_server_time_and_a_flood_is_rate_limited(duel):
    table = duel(ROOMY, grace_ms=60_000)

    async def scenario():
        client = await table.client(0)
        before = timekeeping.now_ms()
        await client.send({"type": "ping", "t": 42})
        pong = await client.wait_for(
            lambda c: next((m for m in c.messages if m["type"] == "pong"), None)
        )
        # Read from the web process's last reading of the authority: off by half its round trip.
        slack_ms = 5
        assert pong["t"] == 42
        assert before - slack_ms <= pong["server_ms"] <= timekeeping.now_ms() + slack_ms
        for number in range(60):  # the burst allows 30
            await client.send({"type": "ping", "t": number})
        limited = await client.wait_for(
            lambda c: [m for m in c.messages if m.get("code") == "rate_limited"]
        )
        assert limited[0]["type"] == "error"
        await client.close()
        return sum(m["type"] == "pong" for m in client.messages)

    pongs = asyncio.run(scenario())
    assert 30 <= pongs < 61


def test_pass_and_play_hands_over_and_reveals(duel, make_user):
    solo = make_user()
    table = duel(ROOMY, grace_ms=60_000, users=(solo, solo), mode=Match.Mode.HOTSEAT)

    async def scenario():
        device = await table.client(0)
        # The one device contributes for both seats while the round is dealt.
        assert (device.view["phase"], device.state["starter"]) == ("dealing", None)
        for seat in (0, 1):
            ack = await device.command(contribution(seat, 1))
            assert ack["type"] == "ack", ack
        await device.wait_for(lambda c: c.view["phase"] == "ready")
        starter = device.state["starter"]
        assert device.seat == starter and device.view["hand"] is not None
        await device.command({"type": "start", "seat": starter})
        view = await device.wait_for(lambda c: c.view["legal"]["plays"] and c.view)
        option = view["legal"]["plays"][0]
        await device.command(
            {"type": "play", "tile": option["tile"], "place": None, "seat": starter}
        )
        handover = await device.wait_for(lambda c: c.view["phase"] == "handover" and c.state)
        assert handover["view"]["hand"] is None and handover["starter"] == 1 - starter
        assert handover["deadline"]["kind"] == "start"
        await device.command({"type": "start", "seat": 1 - starter})
        revealed = await device.wait_for(lambda c: c.view["phase"] == "play" and c.state)
        assert revealed["you"] == 1 - starter and revealed["view"]["hand"] is not None
        await device.close()

    asyncio.run(scenario())
    events = table.events()
    assert [(e["source"], e["seat"]) for e in events[:2]] == [("device", 0), ("device", 1)]
    assert [(e["type"], e["seat"]) for e in events][-1] == ("start", 1 - events[2]["seat"])


def in_own_thread(function, **kwargs):
    """Run a database call from a coroutine, in a thread with its own connection."""
    from django.db import connection

    def call():
        try:
            return function(**kwargs)
        finally:
            connection.close()

    return asyncio.to_thread(call)


def test_a_confirmed_fault_voids_a_live_rated_match_without_a_rating_result(duel, make_user):
    players = (make_user(on_ladder=True), make_user(on_ladder=True))
    table = duel(ROOMY, rated=True, grace_ms=60_000, users=players)

    def rating_rows():
        return [
            type(p)
            .objects.values_list("rating", "rated_games", "rated_wins", "rated_losses")
            .get(pk=p.pk)
            for p in players
        ]

    before = rating_rows()

    async def scenario():
        seat0, seat1 = await table.client(0), await table.client(1)
        await table.deal(seat0, seat1)
        starter = seat0 if seat0.state["starter"] == 0 else seat1
        await starter.command({"type": "start"})
        # The service reports a late arrival stamp while a clock runs; the worker's re-check
        # confirms it (conclusive).
        await in_own_thread(
            services.fault_report,
            match_id=table.match.pk,
            kind=TimingFault.Kind.LATE_STAMP,
            detail={"lag_ms": 2_500.0},
        )
        for client in (seat0, seat1):
            await client.wait_for(lambda c: c.over, 15)
            await client.close()
        return seat0

    seat0 = asyncio.run(scenario())
    match = table.refreshed()
    assert (match.status, match.winner, match.reason) == ("void", None, "void")
    assert rating_rows() == before
    assert (match.rating_after0, match.rating_after1) == (None, None)
    assert [e["type"] for e in table.events()] == ["contribute", "contribute", "start", "void"]
    assert [e["type"] for e in seat0.events][-1] == "void"
    assert TimingFault.objects.get(match=match).decided_by == "auto"


# --- the botmatch command ----


def test_botmatch_plays_whole_matches_through_the_server(
    fast_servers, fast_settings, transactional_db
):
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command(
        "botmatch", "--matches", "2", "--bots", "random", "--url", fast_servers.url, stdout=out
    )
    played = Match.objects.filter(player0__username__startswith="bot-").order_by("created_at")
    assert [m.status for m in played] == ["finished", "finished"]
    assert {m.player0.username for m in played} | {m.player1.username for m in played} == {
        "bot-1",
        "bot-2",
    }
    lines = out.getvalue().splitlines()
    assert [line.split()[0] for line in lines] == [str(m.pk) for m in played]
    assert all(line.endswith("replay OK") for line in lines)
    bots = get_user_model().objects.filter(username__in=["bot-1", "bot-2"])
    assert all(bot.last_login is not None for bot in bots)  # they signed in through the login form

"""Redis crashes mid-match (``kill -9``) and comes back on its port, empty: the players' sockets
stay open, the web process beats again and rebuilds its deadline set, channels-redis's pub/sub
layer subscribes its channels again, and the match's broadcasts reach both players.

The web process's Redis holds the channel layer (with the pub/sub layer a socket's channel and
its match group are subscriptions of the layer's connections, which a crash drops), the deadline
set, the web tier's beats, presence and the arrival stamps. Since realtime/forwarding.py swaps
the class of the layer's per-channel ``asyncio.Queue`` so that a socket takes a broadcast as the
layer's reader reads it, the queue must outlive the layer's reconnection: so a move is made
after the restart, and its broadcast must reach the other player's socket, which asks for
nothing (no ping, no sync, no reconnect's hello) that could bring the event another way.

What the crash means for the match is RULES §7's (docs/reliability.md, "Redis restarted"): the
beats Redis lost count as an outage of the web tier for a clock that ran through it, judged as
any outage against WEB_GAP_TOLERANCE_MS (3 s): a turn whose clock had run longer than that when
the web process beat again cannot be shown to have had the web tier up. So the crash comes the
moment a turn starts. Back at once, the mover's turn is shorter than the tolerance: the move is
applied, play goes on, and the match ends by the rules alone (here by a resignation: a whole
match takes up to a minute and more of play). Down for longer than the tolerance, the mover's
next move voids the match (a confirmed ``web_down`` fault, no rating result) instead of being
applied, and that void is the broadcast both sockets receive.

No command is sent while Redis is down: one would be answered ``time_unavailable`` and reported
as a suspected ``unreachable`` fault for a worker to judge, which the frozen-Redis test of
test_outages.py shows. So no worker is needed here.
"""

from __future__ import annotations

import asyncio
import random

import pytest

import engine
from clients.match_client import MatchClient, choose
from config.env import redis_channel_layers
from matches import deadlines
from matches.models import Match, TimingFault
from scripts.proc import Supervisor, wait_until
from tests.faults.play import audited, new_match, seated
from tests.support.servers import start_daphne, tail

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ROOMY = engine.ClockConfig(bank_ms=60_000, delay_ms=5_000)  # only an outage can cost a clock
UNDER_WAY_SEQ = 12  # the match's events before the crash
DOWN_S = 5.0  # longer than WEB_GAP_TOLERANCE_MS (3 s): an outage of the web tier
BACK_WITHIN_S = 10.0  # beats, deadline set and subscriptions back after Redis is
PLAYED_ON = 10  # events played after the restart's first move
BROADCAST_WITHIN_S = 5.0  # a broadcast of one move, on an idle machine, takes milliseconds
# The key Daphne beats under (matches/webbeats.py): in this process webbeats.BEATS_KEY is a
# test's private one (tests/conftest.py), so it is spelled out here.
SERVERS_BEATS_KEY = "sbo:web:beats"


@pytest.fixture
def own_redis(broker_redis, settings):
    """The test process on the test's Redis too: creating the match writes its seq and
    deadline there, not into the Redis of other tests."""
    settings.REDIS_URL = broker_redis.url
    settings.CHANNEL_LAYERS = redis_channel_layers(broker_redis.url)
    return broker_redis


@pytest.fixture
def web(own_redis, fault_env, tmp_path):
    """A Daphne on the test's Redis, and the path of its log."""
    log_path = tmp_path / "daphne.log"
    with Supervisor() as supervisor:
        yield start_daphne(supervisor, fault_env, log_path), log_path


def test_after_redis_restarts_at_once_a_move_reaches_the_other_socket_and_play_goes_on(
    own_redis, web, settings
):
    match, cookies = new_match(settings, ROOMY, dealt=False)  # the clients deal every round

    async def scenario():
        seats, mover, other, decision, rng = await crashed_mid_decision(
            web, match, cookies, own_redis, 0.0
        )
        seq_before = mover.seq
        reply = await mover.command(decision, timeout=15)
        assert (reply["type"], reply["duplicate"], reply["late"]) == ("ack", False, False)
        # The other socket asked for nothing: only the broadcast can bring it the move.
        await other.wait_for(lambda c: c.seq >= reply["seq"], BROADCAST_WITHIN_S)
        moved = next(e for e in other.events if e["seq"] == seq_before + 1)
        assert (moved["seat"], moved["type"]) == (mover.seat, decision["type"])
        await mover.wait_for(lambda c: c.seq >= reply["seq"], BROADCAST_WITHIN_S)
        # Play goes on through the same sockets, each seat's moves reaching the other. (A
        # whole match by points took some two thousand events and 20 to 90 s of play, held
        # to the sockets' message budget: the other player resigns instead.)
        await play_until(seats, rng, lambda: seats[0].seq >= reply["seq"] + PLAYED_ON)
        resigned = await other.command({"type": "resign"})
        assert resigned["type"] == "ack", resigned
        for client in seats:
            await client.wait_for(lambda c: c.over, BROADCAST_WITHIN_S)
            await client.close()
        return seats, seq_before, mover.seat, other.seat

    seats, seq_before, mover_seat, other_seat = asyncio.run(scenario())
    record = audited(match)
    # The restart cost the mover's clock less than the tolerance: nothing to judge, and the
    # match ends by the rules alone.
    assert (match.status, match.winner, match.reason) == ("finished", mover_seat, "resign")
    assert not TimingFault.objects.filter(match=match).exists()
    events = {e["seq"]: e for r in record["rounds"] for e in r["events"]}
    assert events[seq_before + 1]["seat"] == mover_seat  # the move after the restart, applied
    assert (events[match.seq]["type"], events[match.seq]["seat"]) == ("resign", other_seat)
    assert_both_ended_as_recorded(seats, match, record)


def test_a_redis_down_longer_than_the_tolerance_voids_the_running_clock_at_the_next_move(
    own_redis, web, settings
):
    match, cookies = new_match(settings, ROOMY, dealt=False)

    async def scenario():
        seats, mover, other, decision, _ = await crashed_mid_decision(
            web, match, cookies, own_redis, DOWN_S
        )
        seq_before = mover.seq
        reply = await mover.command(decision, timeout=15)
        # Acknowledged, not applied: the service could not hear the mover for DOWN_S of
        # their running clock, so their move voids the match instead (services._judge).
        assert (reply["type"], reply["duplicate"], reply["late"]) == ("ack", False, False)
        assert reply["seq"] == seq_before + 1  # one event: the void
        await other.wait_for(lambda c: c.over, BROADCAST_WITHIN_S)  # by the broadcast alone
        await mover.wait_for(lambda c: c.over, BROADCAST_WITHIN_S)
        for client in seats:
            await client.close()
        return seats, seq_before

    seats, seq_before = asyncio.run(scenario())
    record = audited(match)
    assert (match.status, match.winner, match.reason) == ("void", None, "void")
    events = [e for r in record["rounds"] for e in r["events"]]
    # The void follows the last event before the crash: the mover's decision was not applied.
    assert [e["seq"] for e in events[-2:]] == [seq_before, seq_before + 1]
    assert events[-1]["type"] == "void"
    fault = TimingFault.objects.get(match=match)
    assert (fault.kind, fault.status) == ("web_down", "confirmed")
    assert_both_ended_as_recorded(seats, match, record)


# --- the steps -------------------------------------------------------------------------------


def actor(seats: list[MatchClient]) -> MatchClient:
    """The client of the seat that must act now (contribute, press Start or decide)."""
    acting = [client for client in seats if client.my_turn()]
    assert acting, f"nobody to act at seq {seats[0].seq}"
    return acting[0]


def decides(client: MatchClient) -> bool:
    """Is it a decision this client must make, with its clock running?"""
    return not client.contribution_due and not client.clocks_stand


async def play_until(seats: list[MatchClient], rng: random.Random, done) -> None:
    """Play greedily, as play_match would, one command at a time, each seen by both sockets
    before the next (by its broadcast: neither client asks for anything), until ``done()``."""
    while not done():
        assert not any(client.over for client in seats), "the match ended"
        client = actor(seats)
        reply = await client.command(client.next_command("greedy", rng))
        assert reply["type"] == "ack", reply
        for each in seats:
            await each.wait_for(lambda c, seq=reply["seq"]: c.seq >= seq, BROADCAST_WITHIN_S)


async def under_way(seats: list[MatchClient], rng) -> tuple[MatchClient, MatchClient]:
    """The match played to UNDER_WAY_SEQ events and on to a decision, its clock running; the
    client who must make it, and the other. (Not play_match: the crash must come while a clock
    runs and nobody sends anything.)"""
    await play_until(seats, rng, lambda: seats[0].seq >= UNDER_WAY_SEQ and decides(actor(seats)))
    mover = actor(seats)
    return mover, seats[1 - seats.index(mover)]


async def crashed_mid_decision(web, match, cookies, broker_redis, down_s: float):
    """Both players seated on ``web``'s Daphne, the match under way, and Redis crashed and back
    (``crash_and_restart``) while the mover's clock runs: the clients, the mover, the other,
    the decision the mover makes next, and the random source of the rest of the play."""
    server, log_path = web
    seats = await seated(server.url, match, cookies)
    rng = random.Random(0)
    mover, other = await under_way(seats, rng)
    decision = choose(mover.view, "greedy", rng)
    await crash_and_restart(broker_redis, mover, down_s, log_path)
    return seats, mover, other, decision, rng


async def crash_and_restart(broker_redis, mover: MatchClient, down_s: float, log_path) -> None:
    """kill -9 the web process's Redis while ``mover``'s clock runs, keep it down ``down_s``,
    start it empty on the same port; return once the web process beats again, has its deadline
    set rebuilt, and its channel layer has every channel subscribed again that it had before."""
    assert mover.view["clock"]["running"] and mover.view["to_act"] == mover.seat
    deadline_ms = mover.state["deadline"]["at_ms"]
    match_id = mover.state["match"]["id"]
    before = await asyncio.to_thread(layer_channels, broker_redis)
    # Each seat's group, and each socket's own channel.
    assert sum("__group__" in channel for channel in before) == 2, before
    assert len(before) >= 4, before
    await asyncio.to_thread(broker_redis.kill)
    if down_s:
        await asyncio.sleep(down_s)  # the outage itself, not a wait for a condition
    await asyncio.to_thread(broker_redis.start)
    assert not mover.closed  # nothing of the match socket needs Redis to stay open

    def back(what: str, condition) -> None:
        wait_until(
            condition,
            BACK_WITHIN_S,
            message=f"{what} after Redis came back; Daphne's log:\n{tail(log_path)}",
        )

    def beating() -> bool:
        return bool(ask(broker_redis, lambda r: r.zcard(SERVERS_BEATS_KEY)))

    def deadline_rebuilt() -> bool:
        return ask(
            broker_redis,
            lambda r: (
                r.exists(deadlines.built_key())
                and r.zscore(deadlines.DEADLINES_KEY, match_id) == deadline_ms
            ),
        )

    def subscribed_again() -> bool:
        return before <= layer_channels(broker_redis)

    # Each is a condition the product must meet by itself. The move waits for the last: a
    # broadcast published before the layer has subscribed again (about a second after Redis
    # is back: channels-redis's reader, its read failed, waits a second before the next, which
    # reconnects and resubscribes) reaches nobody, and only a client's ping would then show the
    # gap (tests/matches/test_live.py); here the broadcast itself must arrive.
    await asyncio.to_thread(back, "the web process to beat again", beating)
    await asyncio.to_thread(back, "the deadline set rebuilt from the database", deadline_rebuilt)
    await asyncio.to_thread(back, "the channel layer to subscribe again", subscribed_again)


def ask(broker_redis, question):
    client = broker_redis.client()
    try:
        return question(client)
    finally:
        client.close()


def layer_channels(broker_redis) -> set[str]:
    """The channel layer's channels subscribed in Redis now (by any of its connections)."""
    prefix = redis_channel_layers(broker_redis.url)["default"]["CONFIG"]["prefix"]
    return {c.decode() for c in ask(broker_redis, lambda r: r.pubsub_channels(f"{prefix}*"))}


def assert_both_ended_as_recorded(seats: list[MatchClient], match: Match, record: dict) -> None:
    """Both clients saw every event, and the end the record has."""
    last_seq = record["rounds"][-1]["events"][-1]["seq"]
    assert [client.seq for client in seats] == [match.seq, match.seq] == [last_seq, last_seq]
    assert [client.reconnects for client in seats] == [0, 0]  # the sockets stayed open
    result = {"winner": match.winner, "reason": match.reason}
    assert [client.view["result"] for client in seats] == [result, result]

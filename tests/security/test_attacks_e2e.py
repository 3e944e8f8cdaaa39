"""End to end, one test per finding of the WebSocket security review, against a real Daphne, the
channels-redis layer and a real Celery worker (which re-checks suspected timing faults and voids
a match when one is confirmed). Each test attacks, then asserts that nothing changed: no match
resigned or voided, no rating moved, no timing fault recorded, no player's command left
unanswered, no socket crashed.

Each test starts a Daphne of its own (its own log, so tracebacks are its own; its own limits
for the caps test); the worker is shared. Conditions are waited for, never slept on: the floods
sleep only to pace their sends."""

# The fixtures are imported from tests/matches/conftest.py and tests/security/conftest_attacks.py
# (this folder's conftest.py is not ours), so the test parameters name imported fixtures:
# ruff: noqa: F811

import asyncio
import json
import random
import threading
import time
from collections import Counter

import pytest
import websockets
from django.contrib.auth import get_user_model

import engine
from accounts.models import RatingChange
from clients.match_client import MatchClient
from matches import services, timekeeping
from matches.models import Match, TimingFault
from matches.selectors import match_state
from tests.matches.conftest import (  # noqa: F401
    audit_finished_matches,
    make_user,
    session_cookie,
)
from tests.security.conftest_attacks import (  # noqa: F401
    Sock,
    attack_settings,
    attack_worker,
    documented_error_codes,
    fresh_loopback,
    match_client,
    open_or_refusal,
    own_daphne,
)
from tests.support import wait_until
from tests.support.dealing import deal_by_service

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ROOMY = engine.ClockConfig(bank_ms=60_000, delay_ms=5_000)  # nobody runs out of time
REPLY_TIMEOUT_S = 20.0  # a command not answered by then is unanswered
PLAYER_PACE_S = 0.1  # the players' thinking time between decisions
PLAYER_EVENTS = {"contribute", "start", "play", "draw", "offer", "accept", "waive"}
NOBODY_PLAYING_SENT = {"resign", "void", "timeout", "abandon"}
SPECTATOR_ANSWERS = {"not_a_player", "rate_limited"}
CLOSE_TOO_MANY = 4429
CLOSE_TRY_LATER = 4503
HANDSHAKE_DROPS = {"InvalidMessage", "TimeoutError", "ConnectionResetError", "EOFError"}


def match_path(match) -> str:
    return f"/ws/match/{match.pk}/"


def new_match(make, *, rated=False, users=None) -> tuple[Match, dict]:
    players = users or (make(), make())
    match = services.match_create(
        player0=players[0],
        player1=players[1],
        rated=rated,
        now_ms=timekeeping.now_ms(),
        clock=ROOMY,
    )
    return match, {seat: session_cookie(player) for seat, player in enumerate(players)}


async def player(url: str, match: Match, cookies: dict, seat: int, source: str) -> MatchClient:
    return await match_client(
        url, match.pk, sessionid=cookies[seat], source=source, name=f"seat{seat}"
    )


# --- the players ------------------------------------------------------------------------------


async def send_command(client: MatchClient, command: dict, log: list) -> dict | None:
    """Send the next cseq and wait for its answer; the log keeps (cseq, command, reply)."""
    client.cseq += 1
    entry = {"cseq": client.cseq, "command": command, "reply": None}
    log.append(entry)
    await client.send({**command, "cseq": client.cseq})
    try:
        replies = await client.wait_for(lambda c: c.replies_to(entry["cseq"]), REPLY_TIMEOUT_S)
    except (TimeoutError, ConnectionError):
        return None
    entry["reply"] = replies[0]
    return entry["reply"]


async def dealt(clients: dict, logs: dict) -> None:
    """Each player contributes to the first round's deal (docs/fairness.md), as its client
    would; the round is then dealt and waits for Start."""
    for seat, client in clients.items():
        ack = await send_command(client, engine.contribution(), logs[seat])
        assert ack and ack["type"] == "ack", ack
    for client in clients.values():
        await client.wait_for(lambda c: c.state["starter"] is not None, REPLY_TIMEOUT_S)


async def keep_playing(client: MatchClient, stop: asyncio.Event, seed: int, log: list) -> None:
    """Play legal moves (a random choice from the seat's own view) until ``stop``."""
    rng = random.Random(seed)
    acted_at = None
    while not stop.is_set() and not client.over:
        try:
            await client.wait_for(
                lambda c, acted_at=acted_at: c.over or (c.my_turn() and c.state["seq"] != acted_at),
                0.5,
            )
        except TimeoutError:
            # Half a second without our turn: a broadcast may have been lost (the channel layer
            # delivers at most once); the pong names the last event, and the client resyncs.
            await client.send({"type": "ping"})
            continue
        if stop.is_set() or client.over:
            return
        acted_at = client.state["seq"]
        # (a round after a settlement waits for its deal: a contribution)
        reply = await send_command(client, client.next_command("random", rng), log)
        if reply is None:
            return  # unanswered: reported by the test
        if reply["type"] == "error":
            acted_at = None  # nothing changed: decide again
        await asyncio.sleep(PLAYER_PACE_S)


def player_problems(logs: dict) -> list[str]:
    documented = documented_error_codes()
    problems = []
    for seat, log in logs.items():
        unanswered = [e for e in log if e["reply"] is None]
        if unanswered:
            problems.append(f"seat {seat}: unanswered commands {unanswered}")
        undocumented = [
            e for e in log if e["reply"] and e["reply"]["type"] not in ("ack", "error")
        ] + [
            e
            for e in log
            if e["reply"] and e["reply"]["type"] == "error" and e["reply"]["code"] not in documented
        ]
        if undocumented:
            problems.append(f"seat {seat}: answers that are neither ack nor a documented error "
                            f"{undocumented}")  # fmt: skip
    return problems


def answer_tally(logs: dict) -> dict:
    """How the players' commands were answered: ack, or the error code (None: unanswered)."""
    return dict(
        Counter(
            e["reply"]
            and (e["reply"]["type"] if e["reply"]["type"] == "ack" else e["reply"]["code"])
            for log in logs.values()
            for e in log
        )
    )


def fresh_acks(logs: dict) -> list[dict]:
    return [
        e["reply"]
        for log in logs.values()
        for e in log
        if e["reply"]
        and e["reply"]["type"] == "ack"
        and not e["reply"]["duplicate"]
        and not e["reply"]["late"]
    ]


def live_match_problems(match: Match, logs: dict, clients: dict) -> list[str]:
    """The live match is what its players' acknowledged commands made it, and nothing else."""
    match.refresh_from_db()
    events = [e for r in match.record["rounds"] for e in r["events"]]
    problems = []
    # Still live, or ended by the players' own play (their moves can win it during the flood);
    # never resigned, timed out or voided.
    if match.status != Match.Status.LIVE and match.reason != "points":
        problems.append(f"the live match is {match.status} ({match.reason}): {events[-3:]}")
    foreign = [e for e in events if e["type"] in NOBODY_PLAYING_SENT]
    if foreign:
        problems.append(f"the live match has events its players did not send: {foreign}")
    acks = fresh_acks(logs)
    made = [
        e
        for e in events
        if e["type"] in PLAYER_EVENTS
        and e.get("seat") is not None
        and not e.get("auto")
        and e.get("from_player") is not False  # not the server's stand-in for a contribution
    ]
    if len(made) != len(acks):
        problems.append(f"{len(made)} player events in the record, {len(acks)} acked commands")
    if acks and match.seq != max(a["seq"] for a in acks):
        problems.append(f"the match is at seq {match.seq}, the players' last ack at "
                        f"{max(a['seq'] for a in acks)}")  # fmt: skip
    replayed, stored = engine.replay(match.record), match_state(match)
    if replayed.banks_ms != stored.banks_ms:
        problems.append(f"banks {stored.banks_ms}, but the players' moves make {replayed.banks_ms}")
    if match.deadline_kind == Match.DeadlineKind.DECISION and (
        match.deadline_ms != replayed.deadline_ms
    ):
        problems.append(f"deadline {match.deadline_ms}, but the players' moves make "
                        f"{replayed.deadline_ms}")  # fmt: skip
    for seat, client in clients.items():
        if client.state["seq"] == match.seq and client.state["deadline"]["at_ms"] != (
            match.deadline_ms
        ):
            problems.append(f"seat {seat} was told the deadline {client.state['deadline']}, "
                            f"the match has {match.deadline_ms}")  # fmt: skip
    return problems


def fault_problems() -> list[str]:
    faults = list(TimingFault.objects.values_list("match_id", "kind", "status"))
    if faults:
        # Let the worker decide them, so what they did shows in the failure.
        try:
            wait_until(
                lambda: (
                    not TimingFault.objects.filter(status=TimingFault.Status.SUSPECTED).exists()
                ),
                10,
                message="the worker to re-check the faults",
            )
        except TimeoutError:
            pass
        faults = list(TimingFault.objects.values_list("match_id", "kind", "status"))
        kinds = sorted({(kind, status) for _, kind, status in faults})
        return [f"{len(faults)} TimingFault rows (kind, status): {kinds}"]
    return []


# --- the floods -------------------------------------------------------------------------------


async def flood(socks: list[Sock], message_for, seconds: float) -> None:
    """Every socket sends ``message_for(sock)`` every 100 ms for ``seconds`` (or until closed)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds

    async def one(sock: Sock) -> None:
        while loop.time() < end and not sock.closed:
            try:
                await sock.send(message_for(sock))
            except websockets.ConnectionClosed:
                return
            await asyncio.sleep(0.1)

    await asyncio.gather(*(one(sock) for sock in socks))


async def got_in_or_refused(sock: Sock) -> str:
    """``in`` (it got the match's state), ``refused <code>`` (closed first) or ``silent``."""
    try:
        await sock.wait_for(lambda s: s.of_type("state"), 20)
        return "in"
    except ConnectionError:
        return f"refused {sock.close_code}"
    except TimeoutError:
        return "silent"


async def until_answered(socks: list[Sock], answered, timeout: float) -> None:
    """Wait (at most ``timeout``) for every socket's messages to be answered or the socket
    closed: what the flood caused is then in the database."""
    waits = [
        asyncio.ensure_future(sock.wait_for(lambda s: s.closed or answered(s), timeout))
        for sock in socks
    ]
    await asyncio.gather(*waits, return_exceptions=True)


# --- 1. an anonymous flood voids any match ---------------------------------------------------


def test_an_anonymous_flood_of_resigns_neither_ends_nor_voids_a_live_or_a_finished_match(
    own_daphne, attack_worker, attack_settings, make_user
):
    server = own_daphne()
    source = fresh_loopback()  # the per-address cap counts only this test's sockets
    live, cookies = new_match(make_user)
    ladder = (make_user(on_ladder=True), make_user(on_ladder=True))
    finished, _ = new_match(make_user, rated=True, users=ladder)
    services.match_submit(
        match_id=finished.pk,
        user=ladder[1],
        command={"type": "resign"},
        arrival_ms=timekeeping.now_ms(),
    )
    finished.refresh_from_db()
    assert (finished.status, finished.winner, finished.reason) == ("finished", 0, "resign")
    result_fields = ("status", "winner", "reason", "seq", "rating_before0", "rating_before1",
                     "rating_after0", "rating_after1")  # fmt: skip

    def finished_result():
        return Match.objects.values_list(*result_fields).get(pk=finished.pk)

    def ratings():
        users = get_user_model().objects.filter(pk__in=[u.pk for u in ladder]).order_by("pk")
        changes = RatingChange.objects.filter(match=finished).order_by("user_id")
        return (
            list(users.values_list("rating", "rated_games", "rated_wins", "rated_losses")),
            list(changes.values_list("user_id", "before", "after", "voided")),
        )

    result_before, ratings_before = finished_result(), ratings()
    assert ratings_before[0][0][1] == 1  # the resign was rated

    async def scenario():
        clients = {seat: await player(server.url, live, cookies, seat, source) for seat in (0, 1)}
        logs = {0: [], 1: []}
        await dealt(clients, logs)
        starter = clients[0].state["starter"]
        ack = await send_command(clients[starter], {"type": "start"}, logs[starter])
        assert ack and ack["type"] == "ack", ack
        stop = asyncio.Event()
        playing = asyncio.gather(*(keep_playing(clients[s], stop, s, logs[s]) for s in (0, 1)))
        targets = [live, finished] * 75  # 150 signed-out sockets, half on each match
        opened = await asyncio.gather(
            *(open_or_refusal(server.url, match_path(m), name=f"anon{i}", source=source)
              for i, m in enumerate(targets))
        )  # fmt: skip
        socks = [o for o in opened if isinstance(o, Sock)]
        fates = await asyncio.gather(*(got_in_or_refused(s) for s in socks))
        acks_before_flood = len(fresh_acks(logs))
        await flood(socks, lambda sock: '{"type": "resign"}', 6.0)
        stop.set()
        await asyncio.wait_for(playing, REPLY_TIMEOUT_S + 5)
        acks_during_flood = len(fresh_acks(logs)) - acks_before_flood
        await until_answered(socks, lambda s: len(s.errors()) >= s.sent, 15)
        last = max((a["seq"] for a in fresh_acks(logs)), default=0)
        for client in clients.values():  # the broadcast of the last move has reached both
            try:
                await client.wait_for(lambda c: c.seq >= last, 10)
            except TimeoutError:
                pass
        await asyncio.gather(*(s.close() for s in socks), *(c.close() for c in clients.values()))
        return clients, logs, opened, socks, fates, acks_during_flood

    clients, logs, opened, socks, fates, acks_during_flood = asyncio.run(scenario())

    problems = []
    # An attacker's socket may be refused: closed with 4429 (the address's cap) or 4503 (try
    # later), or dropped at the handshake (Daphne's connect timeout, when the storm of
    # handshakes outruns the server) or right after it (1006: the connection ended without a
    # close frame, as a refusal's can when the server drops the connection after sending it;
    # seen once in CI, 1 of 150). It must not hang, nor be closed any other way (1011: a
    # crash). Enough of them must get in for the flood to be one.
    drops = [type(o).__name__ for o in opened if not isinstance(o, Sock)]
    outcomes = Counter([*fates, *drops])
    refusals = {f"refused {code}" for code in (CLOSE_TOO_MANY, CLOSE_TRY_LATER, 1006)}
    allowed = {"in", *refusals, *HANDSHAKE_DROPS}
    odd = {fate: n for fate, n in outcomes.items() if fate not in allowed}
    if odd:
        problems.append(f"sockets neither let in nor refused: {odd}")
    inside = [s for s, fate in zip(socks, fates, strict=True) if fate == "in"]
    if len(inside) < 50:
        problems.append(f"only {len(inside)} of the 150 sockets got in: no flood to speak of")
    flood_answers = Counter(e["code"] for s in inside for e in s.errors())
    codes = set(flood_answers)
    if codes - SPECTATOR_ANSWERS:
        problems.append(f"the flood was answered with {sorted(codes - SPECTATOR_ANSWERS)}")
    unanswered = sum(not s.errors() for s in inside)
    if unanswered:
        problems.append(f"{unanswered} sockets that got in got no answer to their resigns")
    if not acks_during_flood:
        problems.append("the players got no move acknowledged during the flood")
    problems += player_problems(logs)
    problems += fault_problems()
    problems += live_match_problems(live, logs, clients)
    if finished_result() != result_before:
        was = dict(zip(result_fields, result_before, strict=True))
        now = dict(zip(result_fields, finished_result(), strict=True))
        problems.append(f"the finished match {was} is now {now}")
    if ratings() != ratings_before:
        problems.append(f"ratings and rating changes {ratings_before} are now {ratings()}")
    summary = (f"the 150 sockets: {dict(outcomes)}; {acks_during_flood} moves acked during the "
               f"flood; the players' answers: {answer_tally(logs)}; "
               f"the flood's: {dict(flood_answers)}")  # fmt: skip
    print(summary)
    assert not problems, "\n".join([summary, *problems])


# --- 2. spectators must not slow the players --------------------------------------------------

SPECTATOR_COMMANDS = [
    {"type": "resign"},
    {"type": "start"},
    {"type": "contribute", "value": "5" * 64},
    {"type": "draw"},
    {"type": "play", "tile": [6, 6], "place": None},
    {"type": "offer", "amount": 20},
    {"type": "accept"},
    {"type": "waive"},
]


def test_spectators_commands_are_refused_without_touching_the_match_while_the_players_play(
    own_daphne, attack_worker, attack_settings, make_user
):
    server = own_daphne()
    source = fresh_loopback()  # the per-address cap counts only this test's sockets
    match, cookies = new_match(make_user)
    sampled: set[tuple[int, int, int]] = set()  # (seq, cseq0, cseq1) as the database had them
    pending: list[int] = []  # how many commands the match's timeout path had to wait for

    def sample(stop: threading.Event) -> None:
        from django.db import connection

        try:
            while not stop.is_set():
                sampled.add(Match.objects.values_list("seq", "cseq0", "cseq1").get(pk=match.pk))
                pending.append(
                    timekeeping.pending_before(str(match.pk), 2**62, timekeeping.now_ms())
                )
                time.sleep(0.01)  # the sampling period
        finally:
            connection.close()

    def next_command(sock: Sock) -> str:
        command = SPECTATOR_COMMANDS[sock.sent % len(SPECTATOR_COMMANDS)]
        return json.dumps({**command, "cseq": sock.sent + 1})

    async def scenario():
        clients = {seat: await player(server.url, match, cookies, seat, source) for seat in (0, 1)}
        logs = {0: [], 1: []}
        await dealt(clients, logs)
        starter = clients[0].state["starter"]
        ack = await send_command(clients[starter], {"type": "start"}, logs[starter])
        assert ack and ack["type"] == "ack", ack
        opened = []
        for batch in range(6):  # not a storm of handshakes: the storm is the first test's
            opened += await asyncio.gather(
                *(
                    Sock.open(server.url, match_path(match), name=f"spectator{i}", source=source)
                    for i in range(batch * 10, batch * 10 + 10)
                )
            )
        for sock in opened:
            await sock.wait_for(lambda s: s.of_type("state"), 20)
        sampling = threading.Event()
        sampler = asyncio.ensure_future(asyncio.to_thread(sample, sampling))
        stop = asyncio.Event()
        playing = asyncio.gather(*(keep_playing(clients[s], stop, s, logs[s]) for s in (0, 1)))
        await flood(opened, next_command, 4.0)  # 60 sockets, 10 commands a second each
        stop.set()
        await asyncio.wait_for(playing, REPLY_TIMEOUT_S + 5)
        await until_answered(
            opened, lambda s: all(s.replies_to(n) for n in range(1, s.sent + 1)), REPLY_TIMEOUT_S
        )
        sampling.set()
        await sampler
        await asyncio.gather(*(s.close() for s in opened), *(c.close() for c in clients.values()))
        return clients, logs, opened

    clients, logs, spectators = asyncio.run(scenario())

    problems = []
    answers: dict[str, int] = {}
    for sock in spectators:
        for cseq in range(1, sock.sent + 1):
            replies = sock.replies_to(cseq)
            kind = "unanswered" if not replies else ",".join(r["code"] for r in replies)
            answers[kind] = answers.get(kind, 0) + 1
    wrong = {kind: n for kind, n in answers.items() if kind not in SPECTATOR_ANSWERS}
    if wrong:
        problems.append(f"spectator commands answered otherwise: {wrong} (all: {answers})")
    problems += player_problems(logs)
    acks = fresh_acks(logs)
    if len(acks) < 2:
        problems.append(f"the players got {len(acks)} moves acked while the spectators sent")
    acked_seqs = {a["seq"] for a in acks}
    cseqs = {seat: {0} | {e["cseq"] for e in log} for seat, log in logs.items()}
    foreign = sorted(
        (seq, cseq0, cseq1)
        for seq, cseq0, cseq1 in sampled
        if seq not in acked_seqs or cseq0 not in cseqs[0] or cseq1 not in cseqs[1]
    )
    if foreign:
        problems.append(f"the match row held (seq, cseq0, cseq1) {foreign} that no player's acked "
                        f"command made (acked seqs {sorted(acked_seqs)})")  # fmt: skip
    # Each player has at most one command in flight: more pending arrivals than that are the
    # spectators', and the timeout path waits for every one of them (a flood holds a clock).
    if max(pending) > 2:
        problems.append(f"the match had up to {max(pending)} pending arrivals (commands its "
                        f"timeout must wait for) with 2 players")  # fmt: skip
    problems += fault_problems()
    problems += live_match_problems(match, logs, clients)
    assert sampled and pending, "the match was never sampled"
    summary = (f"{sum(s.sent for s in spectators)} spectator commands sent, answered {answers}; "
               f"the players' answers: {answer_tally(logs)}; up to {max(pending)} pending "
               f"arrivals")  # fmt: skip
    print(summary)
    assert not problems, "\n".join([summary, *problems])


# --- 3. frames that crash a socket ------------------------------------------------------------

BAD_FRAMES = {
    "2 KB nested 1,000 deep": "[" * 1000 + "]" * 1000,
    "binary": b'{"type": "ping", "t": 1}',
    "not JSON": "{not json",
    "empty text": "",
    "a JSON array": "[1, 2]",
}
BAD_LOBBY_FRAMES = {
    **BAD_FRAMES,
    'seek_accept of seek "x"': json.dumps({"type": "seek_accept", "seek_id": "x"}),
    "challenge_accept of challenge [1]": json.dumps(
        {"type": "challenge_accept", "challenge_id": [1]}
    ),
}
OVERSIZED = {
    "over 4,096 bytes": json.dumps({"type": "ping", "t": 1, "pad": "x" * 5_000}),
    "over 64 KiB": json.dumps({"type": "ping", "t": 1, "pad": "x" * 70_000}),
}


async def frame_outcome(open_socket, ready, frame, ping: dict) -> str:
    """Send ``frame`` on a fresh socket: what it answered, and whether a ping still gets a pong."""
    sock = await open_socket()
    await sock.wait_for(ready, 10)
    mark = len(sock.messages)
    try:
        await sock.send(frame)
        reply = await sock.wait_for(
            lambda s: next((m for m in s.messages[mark:] if m["type"] == "error"), None), 5
        )
    except (ConnectionError, websockets.ConnectionClosed):
        return f"closed ({sock.close_code}) without an answer"
    except TimeoutError:
        await sock.close()
        return f"no answer: {sock.messages[mark:]}"
    mark = len(sock.messages)
    try:
        await sock.send(ping)
        await sock.wait_for(lambda s: any(m["type"] == "pong" for m in s.messages[mark:]), 5)
    except (ConnectionError, websockets.ConnectionClosed):
        return f"error {reply['code']}, then closed ({sock.close_code})"
    except TimeoutError:
        await sock.close()
        return f"error {reply['code']}, then no pong"
    await sock.close()
    return f"error {reply['code']}, still open"


async def oversized_outcome(open_socket, ready, frame: str) -> str:
    sock = await open_socket()
    await sock.wait_for(ready, 10)
    mark = len(sock.messages)
    await sock.send(frame)
    try:
        await sock.wait_closed(5)
    except TimeoutError:
        await sock.close()
        codes = [m.get("code", m["type"]) for m in sock.messages[mark:]]
        return f"answered {codes}, still open"
    codes = [m["code"] for m in sock.messages[mark:] if m["type"] == "error"]
    return f"errors {codes}, closed ({sock.close_code})"


def test_malformed_and_oversized_frames_are_answered_and_crash_no_socket(
    own_daphne, attack_settings, make_user
):
    server = own_daphne()
    source = fresh_loopback()  # the per-address cap counts only this test's sockets
    match, cookies = new_match(make_user)

    def on_match():
        return Sock.open(
            server.url, match_path(match), sessionid=cookies[0], name="match", source=source
        )

    def on_lobby():
        return Sock.open(
            server.url, "/ws/lobby/", sessionid=cookies[1], name="lobby", source=source
        )

    def match_ready(s):
        return s.of_type("state")

    def lobby_ready(s):
        return s.of_type("personal")

    async def scenario():
        outcomes = {}
        for name, frame in BAD_FRAMES.items():
            outcomes[f"match: {name}"] = await frame_outcome(
                on_match, match_ready, frame, {"type": "ping", "t": 1}
            )
        for name, frame in BAD_LOBBY_FRAMES.items():
            outcomes[f"lobby: {name}"] = await frame_outcome(
                on_lobby, lobby_ready, frame, {"type": "ping"}
            )
        for name, frame in OVERSIZED.items():
            outcomes[f"match: {name}"] = await oversized_outcome(on_match, match_ready, frame)
            outcomes[f"lobby: {name}"] = await oversized_outcome(on_lobby, lobby_ready, frame)
        return outcomes

    outcomes = asyncio.run(scenario())
    for name, outcome in outcomes.items():
        if outcome in ("errors [], closed (1009)", "errors [], closed (1006)"):
            outcomes[name] = "dropped by Daphne"
    expected = {f"match: {name}": "error bad_message, still open" for name in BAD_FRAMES}
    expected |= {f"lobby: {name}": "error bad_message, still open" for name in BAD_LOBBY_FRAMES}
    expected |= {
        # Over the application's limit: answered, then closed by the application.
        "match: over 4,096 bytes": "errors ['too_large'], closed (4413)",
        "lobby: over 4,096 bytes": "errors ['too_large'], closed (4413)",
        # Over Daphne's own limit: the connection is failed before the application reads it
        # (autobahn sends 1009 and drops the TCP connection, so the client may see 1006).
        "match: over 64 KiB": "dropped by Daphne",
        "lobby: over 64 KiB": "dropped by Daphne",
    }
    tracebacks = server.tracebacks()
    wrong = [
        f"{name}: {outcomes.get(name)!r}, expected {want!r}"
        for name, want in expected.items()
        if outcomes.get(name) != want
    ]
    logged = [f"Daphne logged a Traceback{text}" for text in tracebacks[:2]]
    assert not wrong and not tracebacks, "\n".join(
        [*wrong, f"{len(tracebacks)} tracebacks in Daphne's log", *logged]
    )
    match.refresh_from_db()
    assert match.seq == 0  # nothing of it reached the match


# --- 4. a false duplicate ---------------------------------------------------------------------


def test_a_lower_cseq_from_another_socket_of_the_player_is_stale_not_a_duplicate(
    own_daphne, attack_settings, make_user
):
    server = own_daphne()
    source = fresh_loopback()  # the per-address cap counts only this test's sockets
    match, cookies = new_match(make_user)
    deal_by_service(match, {0: match.player0, 1: match.player1}, timekeeping.now_ms())
    starter = engine.first_to_act(match_state(match))

    async def scenario():
        one = await player(server.url, match, cookies, starter, source)
        other = await player(server.url, match, cookies, starter, source)  # the same player
        start = await one.command({"type": "start"}, cseq=8)
        resign = await other.command({"type": "resign"}, cseq=7)
        again = await one.command({"type": "start"}, cseq=8)
        await one.close()
        await other.close()
        return start, resign, again

    start, resign, again = asyncio.run(scenario())
    match.refresh_from_db()
    events = [e for r in match.record["rounds"] for e in r["events"]]
    assert (start["type"], start["duplicate"]) == ("ack", False), start
    assert {
        "cseq 7 after cseq 8": (resign["type"], resign.get("code"), resign.get("duplicate")),
        "cseq 8 again": (again["type"], again.get("duplicate"), again.get("seq")),
        "recorded": [(e["type"], e["seat"]) for e in events],
        "status": match.status,
        "last cseq": getattr(match, f"cseq{starter}"),
    } == {
        "cseq 7 after cseq 8": ("error", "stale_cseq", None),
        "cseq 8 again": ("ack", True, start["seq"]),
        "recorded": [("contribute", 0), ("contribute", 1), ("start", starter)],
        "status": "live",
        "last cseq": 8,
    }


# --- 5. origin --------------------------------------------------------------------------------


def test_a_handshake_from_another_origin_is_refused(own_daphne, attack_settings, make_user):
    server = own_daphne()
    source = fresh_loopback()  # the per-address cap counts only this test's sockets
    match, cookies = new_match(make_user)
    own = server.url  # http://127.0.0.1:<port>
    port = int(own.rsplit(":", 1)[1])
    others = ["http://localhost:9999", f"http://127.0.0.1:{port + 1}", f"https://127.0.0.1:{port}"]

    async def attempt(path: str, origin: str, sessionid=None):
        opened = await open_or_refusal(
            server.url, path, origin=origin, sessionid=sessionid, source=source
        )
        if not isinstance(opened, Sock):
            return opened if isinstance(opened, int) else repr(opened)
        try:
            await opened.wait_for(lambda s: s.messages, 10)
            return "accepted"
        except (ConnectionError, TimeoutError):
            return f"opened, then closed ({opened.close_code}) silently"
        finally:
            await opened.close()

    async def scenario():
        outcomes = {}
        for origin in [*others, own]:
            outcomes[f"match from {origin}"] = await attempt(match_path(match), origin)
            outcomes[f"lobby from {origin}"] = await attempt("/ws/lobby/", origin, cookies[0])
        return outcomes

    expected = {}
    for origin in others:
        expected |= {f"match from {origin}": 403, f"lobby from {origin}": 403}
    expected |= {f"match from {own}": "accepted", f"lobby from {own}": "accepted"}
    assert asyncio.run(scenario()) == expected


# --- 6. connection caps -----------------------------------------------------------------------


def test_sockets_past_the_address_and_user_caps_are_closed_with_4429_until_one_closes(
    own_daphne, attack_settings, make_user
):
    server = own_daphne(WS_MAX_CONNECTIONS_PER_ADDRESS="5", WS_MAX_CONNECTIONS_PER_USER="3")
    source = fresh_loopback()  # the per-address cap counts only this test's sockets
    match, cookies = new_match(make_user)
    path = match_path(match)

    async def connect(sessionid=None) -> tuple[Sock, str]:
        sock = await Sock.open(server.url, path, sessionid=sessionid, source=source)
        try:
            await sock.wait_for(lambda s: s.of_type("state"), 10)
            return sock, "in"
        except ConnectionError:
            codes = [e["code"] for e in sock.errors()]
            return sock, f"refused: {codes}, closed ({sock.close_code})"
        except TimeoutError:
            return sock, "silent"

    kept: list[Sock] = []

    async def in_once_a_place_is_free(sessionid=None) -> str:
        """Closing a socket frees its place: retry (polling) until one gets in, for 5 s."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 5
        while True:
            sock, fate = await connect(sessionid)
            if fate == "in" or loop.time() > deadline:
                kept.append(sock)
                return fate
            await sock.close()
            await asyncio.sleep(0.05)  # the polling interval

    async def scenario():
        fates = {}
        user = cookies[0]
        mine = []
        for n in (1, 2, 3):
            sock, fates[f"user socket {n}"] = await connect(user)
            mine.append(sock)
        sock, fates["user socket 4 (past the user cap)"] = await connect(user)
        await sock.close()
        await mine.pop(0).close()
        fates["user socket after one closed"] = await in_once_a_place_is_free(user)
        anonymous = []
        for n in (1, 2):  # with the user's 3: the address's 5
            sock, fates[f"anonymous socket {n}"] = await connect()
            anonymous.append(sock)
        sock, fates["anonymous socket 3 (past the address cap)"] = await connect()
        await sock.close()
        await anonymous.pop(0).close()
        fates["anonymous socket after one closed"] = await in_once_a_place_is_free()
        still_open = []
        for sock in [*mine, *anonymous, *kept]:
            mark = len(sock.messages)
            try:
                await sock.send({"type": "ping", "t": 7})
                await sock.wait_for(
                    lambda s, mark=mark: any(m["type"] == "pong" for m in s.messages[mark:]), 5
                )
                still_open.append(True)
            except (ConnectionError, TimeoutError, websockets.ConnectionClosed):
                still_open.append(False)
            await sock.close()
        return fates, still_open

    fates, still_open = asyncio.run(scenario())
    refused = f"refused: ['too_many_connections'], closed ({CLOSE_TOO_MANY})"
    assert fates == {
        "user socket 1": "in",
        "user socket 2": "in",
        "user socket 3": "in",
        "user socket 4 (past the user cap)": refused,
        "user socket after one closed": "in",
        "anonymous socket 1": "in",
        "anonymous socket 2": "in",
        "anonymous socket 3 (past the address cap)": refused,
        "anonymous socket after one closed": "in",
    }
    assert all(still_open), still_open

"""Who is connected to a match, per seat, and which matches have spectators (see
realtime/presence.py). A player whose clock runs out while none of their sockets has been heard
from lately has abandoned the match."""

from __future__ import annotations

from realtime.presence import SocketPresence, wall_ms

SEATS = SocketPresence("sbo:presence:{}")
# Every spectator's socket of every match, in one set: a web process reads which matches are
# watched in one command (matches/readings.py).
SPECTATORS = SocketPresence("sbo:spectators")


def subject(match_id, seat: int) -> str:
    return f"{match_id}:{seat}"


async def seen(match_id, seat: int, channel_name: str) -> None:
    await SEATS.seen(subject(match_id, seat), channel_name, wall_ms())


async def left(match_id, seat: int, channel_name: str) -> None:
    await SEATS.left(subject(match_id, seat), channel_name, wall_ms())


def query_connected(pipe, match_id, seat: int) -> None:
    """Queue into ``pipe`` how many of the seat's sockets are open (connected if any)."""
    SEATS.query_count(pipe, subject(match_id, seat), wall_ms())


def _spectator(match_id, channel_name: str) -> str:
    return f"{match_id}/{channel_name}"


async def watching(match_id, channel_name: str) -> None:
    await SPECTATORS.seen(None, _spectator(match_id, channel_name), wall_ms())


async def stopped_watching(match_id, channel_name: str) -> None:
    await SPECTATORS.left(None, _spectator(match_id, channel_name), wall_ms())


def query_watched(pipe) -> None:
    """Queue into ``pipe`` the spectators' sockets marked open lately."""
    pipe.zrangebyscore(SPECTATORS.key(None), wall_ms() - SPECTATORS.stale_ms, "+inf")


def watched_matches(spectators: list[str]) -> set[str]:
    """The matches of the sockets ``query_watched`` found."""
    return {spectator.partition("/")[0] for spectator in spectators}

"""Who is connected to a match, per seat (see realtime/presence.py). A player whose clock runs
out while none of their sockets has been heard from lately has abandoned the match."""

from __future__ import annotations

from realtime.presence import SocketPresence, wall_ms

SEATS = SocketPresence("sbo:presence:{}")


def subject(match_id, seat: int) -> str:
    return f"{match_id}:{seat}"


async def seen(match_id, seat: int, channel_name: str) -> None:
    await SEATS.seen(subject(match_id, seat), channel_name, wall_ms())


async def left(match_id, seat: int, channel_name: str) -> None:
    await SEATS.left(subject(match_id, seat), channel_name, wall_ms())


def is_connected(match_id, seat: int) -> bool:
    return SEATS.count(subject(match_id, seat), wall_ms()) > 0

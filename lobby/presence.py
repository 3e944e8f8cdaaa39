"""Which lobby sockets each user has open: when a user's last lobby socket closes, their seek and
queue place go (services.lobby_leave); see realtime/presence.py."""

from __future__ import annotations

from realtime.presence import SocketPresence

SOCKETS = SocketPresence("sbo:lobby:sockets:{}")
seen = SOCKETS.seen
left = SOCKETS.left

"""A client of the lobby WebSocket, ``/ws/lobby/`` (docs/protocol.md): how a computer player
meets its opponent exactly as a person does, by offering or accepting a seek."""

from __future__ import annotations

import asyncio
import json

import websockets

from .match_client import origin_of


def lobby_url_of(base_url: str) -> str:
    return origin_of(base_url).replace("http", "ws", 1) + "/ws/lobby/"


class LobbyClient:
    """One signed-in player's lobby socket; ``latest`` holds the last message of each type."""

    def __init__(self, ws):
        self.ws = ws
        self.latest: dict[str, dict] = {}

    @classmethod
    async def connect(cls, base_url: str, *, sessionid: str) -> LobbyClient:
        ws = await websockets.connect(
            lobby_url_of(base_url),
            origin=origin_of(base_url),
            additional_headers={"Cookie": f"sessionid={sessionid}"},
            open_timeout=10,
        )
        return cls(ws)

    async def request(self, message: dict, timeout: float) -> dict:
        """Send a request and return the server's ``ok`` for it; an error raises LobbyRefused."""
        await self.ws.send(json.dumps(message))
        reply = await self.wait_for(
            lambda m: m.get("request") == message["type"] and m["type"] in ("ok", "error"),
            timeout,
        )
        if reply["type"] == "error":
            raise LobbyRefused(reply["code"], reply["message"])
        return reply

    async def wait_for(self, predicate, timeout: float) -> dict:
        """The first message (the latest of each type seen so far included) that satisfies
        ``predicate``."""
        for message in self.latest.values():
            if predicate(message):
                return message

        async def reading():
            while True:
                message = json.loads(await self.ws.recv())
                self.latest[message.get("type")] = message
                if predicate(message):
                    return message

        return await asyncio.wait_for(reading(), timeout)

    async def close(self) -> None:
        await self.ws.close()


class LobbyRefused(Exception):
    def __init__(self, code: str, message: str):
        super().__init__(f"{code}: {message}")
        self.code = code

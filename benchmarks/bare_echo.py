"""The floor of the live benchmark: a bare ASGI WebSocket echo on Daphne (no Django, no
Channels, no Redis). ``daphne benchmarks.bare_echo:application``."""


async def application(scope, receive, send):
    if scope["type"] != "websocket":
        return
    while True:
        message = await receive()
        if message["type"] == "websocket.connect":
            await send({"type": "websocket.accept"})
        elif message["type"] == "websocket.receive":
            await send({"type": "websocket.send", "text": message.get("text")})
        elif message["type"] == "websocket.disconnect":
            return

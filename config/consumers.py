"""A diagnostic WebSocket: each text frame goes out through the channel layer and back."""

from realtime.sockets import GuardedJsonConsumer


class EchoConsumer(GuardedJsonConsumer):
    """Proves the round trip client -> Daphne -> channel layer (Redis) -> client.

    The group is private to the connection, so nothing crosses between clients.
    """

    async def opened(self):
        self.group = f"echo.{self.channel_name.replace('!', '.')}"
        await self.channel_layer.group_add(self.group, self.channel_name)

    def joined_groups(self) -> list[str]:
        return [self.group]

    async def closing(self):
        await self.channel_layer.group_discard(self.group, self.channel_name)

    async def handle(self, content: dict) -> None:
        await self.channel_layer.group_send(self.group, {"type": "echo.message", "body": content})

    async def echo_message(self, event):
        await self.send_json({"type": "echo", "body": event["body"]})

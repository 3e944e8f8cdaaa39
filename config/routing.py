"""Every WebSocket route of the site.

An app adds its routes by importing its own list here and unpacking it into this one, e.g.
`from lobby.routing import websocket_urlpatterns as lobby_routes`, then `*lobby_routes`.
"""

from django.urls import path

from config.consumers import EchoConsumer
from lobby.routing import websocket_urlpatterns as lobby_routes
from matches.routing import websocket_urlpatterns as match_routes

websocket_urlpatterns = [
    path("ws/echo/", EchoConsumer.as_asgi()),
    *match_routes,
    *lobby_routes,
]

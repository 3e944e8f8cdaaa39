"""The ASGI application: HTTP through Django, WebSockets through Channels."""

import os
import sys

from django.core.asgi import get_asgi_application
from django.core.handlers.asgi import ASGIHandler
from django.core.signals import request_finished

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
http_application = get_asgi_application()  # sets Django up before consumers are imported

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from config.routing import websocket_urlpatterns  # noqa: E402
from realtime.database import close_request_connections  # noqa: E402
from realtime.sockets import SameOriginValidator  # noqa: E402

# Each HTTP request's connections die with the thread Django made for it (realtime/database.py).
request_finished.connect(close_request_connections, sender=ASGIHandler)

application = ProtocolTypeRouter(
    {
        "http": http_application,
        "websocket": SameOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)

if "twisted.internet.reactor" in sys.modules:  # served by Daphne
    from twisted.internet import reactor

    from matches import rows, scheduler
    from realtime.collector import settle_after_startup

    rows.keep_written_rows()  # this process hears of every change to its matches: broadcasts

    # Once the event loop runs: this process fires deadlines and beats for the web tier from its
    # start, not only from its first match socket.
    reactor.callLater(0, scheduler.ensure_running)
    settle_after_startup()  # what start-up made stays out of the collections that pause the loop

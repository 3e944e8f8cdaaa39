"""What every WebSocket of the site shares: the guard at the door and the guard on each frame.

``SameOriginValidator`` refuses a handshake unless its ``Origin`` is the page's own (scheme, host
and port) or one of ``WS_TRUSTED_ORIGINS``. ``GuardedJsonConsumer`` caps the connections of one
client address and of one user, takes JSON text only, checks a frame's size and nesting before
parsing it, rate-limits, and answers any failure with an error message instead of closing the
socket. The close codes and error codes are listed in docs/protocol.md; docs/security.md says
why each limit exists.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from urllib.parse import urlsplit

import orjson
from channels.consumer import get_handler_name
from channels.exceptions import StopConsumer
from channels.generic.websocket import AsyncWebsocketConsumer
from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.db import DatabaseError
from django.http.request import split_domain_port, validate_host
from redis.exceptions import RedisError

from engine import Rejection
from realtime.forwarding import SendWaited, forward_as_read, send_now
from realtime.presence import wall_ms
from realtime.ratelimit import TokenBucket
from realtime.redis_clients import PoolBusy, async_redis

log = logging.getLogger(__name__)

# Our close codes mirror HTTP statuses. (RFC 6455's 1009 and 1013 would say the same, but Daphne's
# autobahn lets an application close only with 1000 or 3000-4999; Daphne itself closes with 1009
# a message over its --websocket_max_message_size, before it reaches the application.)
CLOSE_TOO_LARGE = 4413
CLOSE_TOO_MANY_CONNECTIONS = 4429
CLOSE_TRY_LATER = 4503

# Every character that can matter to nesting: brackets, quotes, and the backslash, which may
# escape the character after it (and only the character right after it, so "\\x" is kept).
_STRUCTURE = re.compile(r'[\[\]{}"]|\\.', re.DOTALL)


class BadFrame(Exception):
    """A frame that cannot be a message; ``code`` is the error code sent back."""

    def __init__(self, code: str, text: str):
        super().__init__(text)
        self.code = code
        self.text = text


# --- the origin --------------------------------------------------------------------------------


def _normalised(origin: str) -> str | None:
    try:
        parts = urlsplit(origin.strip().lower())
        port = parts.port
    except ValueError:  # "http://[::1", a port that is not a number
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return f"{parts.scheme}://{parts.hostname}:{port or (443 if parts.scheme == 'https' else 80)}"


def origin_allowed(scope) -> bool:
    """Is the handshake's Origin this site's page (same scheme, host and port), or trusted?"""
    headers = dict(scope.get("headers") or [])
    origin = headers.get(b"origin", b"").decode("latin-1")
    host = headers.get(b"host", b"").decode("latin-1")
    if not origin or not host:
        return False
    domain, _port = split_domain_port(host)
    if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
        return False
    secure = getattr(settings, "HTTPS", False) or scope.get("scheme") in ("wss", "https")
    own = _normalised(f"{'https' if secure else 'http'}://{host}")
    trusted = {_normalised(o) for o in getattr(settings, "WS_TRUSTED_ORIGINS", [])}
    candidate = _normalised(origin)
    return candidate is not None and (candidate == own or candidate in trusted)


class SameOriginValidator:
    """ASGI middleware: a WebSocket handshake from another origin gets HTTP 403."""

    def __init__(self, application):
        self.application = application

    async def __call__(self, scope, receive, send):
        if scope["type"] == "websocket" and not origin_allowed(scope):
            return await WebsocketDenier()(scope, receive, send)
        return await self.application(scope, receive, send)


# --- one frame ---------------------------------------------------------------------------------


def json_depth(text: str) -> int:
    """How deeply the arrays and objects of ``text`` nest, found in one linear pass without
    parsing (and so without the parser's recursion, which a deep frame would exhaust)."""
    depth = deepest = 0
    in_string = False
    for token in _STRUCTURE.findall(text):
        if len(token) == 2:
            continue  # an escape: the character after the backslash is not structure
        if token == '"':
            in_string = not in_string
        elif in_string:
            continue
        elif token in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def parse_frame(text_data: str | None, bytes_data: bytes | None) -> dict:
    """The JSON object a frame carries, or BadFrame saying why it is not one."""
    if text_data is None:
        raise BadFrame("bad_message", "a message is a JSON object sent as a text frame")
    limit = settings.WS_MAX_FRAME_BYTES
    if len(text_data) > limit or len(text_data.encode("utf-8", "surrogatepass")) > limit:
        raise BadFrame("too_large", f"a message is at most {limit} bytes")
    if json_depth(text_data) > settings.WS_MAX_JSON_DEPTH:
        raise BadFrame("bad_message", "a message nests too deeply")
    try:
        # json, not orjson: orjson reads an integer past 64 bits as a float, and a cseq must come
        # back in its error exactly as it was sent.
        content = json.loads(text_data)
    except ValueError:
        raise BadFrame("bad_message", "a message is a JSON object") from None
    if not isinstance(content, dict):
        raise BadFrame("bad_message", "a message is a JSON object")
    return content


# --- how many sockets ----------------------------------------------------------------------------


class ConnectionCaps:
    """Open sockets per client address and per user, in Redis so every web process agrees.

    Each subject has a sorted set of its sockets scored by when each was last confirmed; a socket
    not confirmed for ``STALE_MS`` (its process died) stops counting.
    """

    STALE_MS = 120_000
    REFRESH_S = 30
    _ADMIT = """
    local now, stale, member = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
    for i, key in ipairs(KEYS) do
      redis.call('ZREMRANGEBYSCORE', key, '-inf', now - stale)
      if redis.call('ZCARD', key) >= tonumber(ARGV[3 + i]) then return i end
    end
    for _, key in ipairs(KEYS) do
      redis.call('ZADD', key, now, member)
      redis.call('PEXPIRE', key, stale)
    end
    return 0
    """

    def __init__(self, address: str | None, user_id: int | None, channel_name: str):
        self.channel_name = channel_name
        self.limits: dict[str, int] = {}
        if address:
            self.limits[f"sbo:sockets:addr:{address}"] = settings.WS_MAX_CONNECTIONS_PER_ADDRESS
        if user_id is not None:
            self.limits[f"sbo:sockets:user:{user_id}"] = settings.WS_MAX_CONNECTIONS_PER_USER

    _CONFIRM = """
    for _, key in ipairs(KEYS) do
      redis.call('ZADD', key, 'XX', ARGV[1], ARGV[2])
      redis.call('PEXPIRE', key, ARGV[3])
    end
    """

    async def admit(self) -> bool:
        """Count this socket in, unless a cap is reached. A Redis that cannot answer lets it in:
        the caps protect the service, and refusing everyone would be the outage itself. A busy
        pool (PoolBusy) is raised: this process is overloaded, and the socket should come back
        later."""
        if not self.limits:
            return True
        try:
            refused = await async_redis().eval(
                self._ADMIT, len(self.limits), *self.limits, wall_ms(), self.STALE_MS,
                self.channel_name, *self.limits.values(),
            )  # fmt: skip
        except PoolBusy:
            raise
        except RedisError as error:
            log.warning("connection caps not checked (Redis: %r)", error)
            return True
        return int(refused) == 0

    async def confirm(self) -> None:
        """This socket is still open (called every REFRESH_S): its score and its sets' expiry
        move on together, so a set of long-lived sockets never expires under them."""
        if not self.limits:
            return
        try:
            await async_redis().eval(
                self._CONFIRM, len(self.limits), *self.limits,
                wall_ms(), self.channel_name, self.STALE_MS,
            )  # fmt: skip
        except RedisError:
            pass  # counted until stale: a process that cannot reach Redis keeps its place

    async def release(self) -> None:
        try:
            client = async_redis()
            for key in self.limits:
                await client.zrem(key, self.channel_name)
        except RedisError:
            pass  # the entry goes stale on its own


# --- the consumer ------------------------------------------------------------------------------


class GuardedJsonConsumer(AsyncWebsocketConsumer):
    """A JSON-over-WebSocket consumer that nothing a client sends can crash.

    Subclasses implement ``opening`` (look up what the connection is for; return a close code to
    refuse it), ``opened`` (join groups, send the first state), ``closing`` and ``handle`` (one
    parsed message), and say what an error echoes of the refused message (``error_context``).
    ``budget`` is the message budget of the connection (called after ``opening``).
    """

    dispatching = False  # a handler of this socket is running (or waiting) now

    async def websocket_connect(self, message):
        self.failures = 0
        self.finished = False
        self.admitted = False
        self.caps = None
        self.keeper = None
        await super().websocket_connect(message)

    async def connect(self):
        try:
            refusal = await self.opening()
        except Exception:
            self._log_failure("opening")
            await self.accept()
            await self.close(code=CLOSE_TRY_LATER)
            return
        # Accept before closing: a close before the handshake is a bare HTTP 403, and the client
        # would never see the code.
        await self.accept()
        if refusal is not None:
            await self.close(code=refusal)
            return
        user = self.scope.get("user")
        client = self.scope.get("client") or (None, None)
        self.caps = ConnectionCaps(
            client[0], user.pk if user is not None and user.is_authenticated else None,
            self.channel_name,
        )  # fmt: skip
        try:
            admitted = await self.caps.admit()
        except PoolBusy:
            self.caps = None
            await self.send_error({}, "busy", "the server is busy; connect again shortly")
            await self.close(code=CLOSE_TRY_LATER)
            return
        if not admitted:
            self.caps = None
            await self.send_error({}, "too_many_connections", "too many open connections")
            await self.close(code=CLOSE_TOO_MANY_CONNECTIONS)
            return
        self.keeper = asyncio.ensure_future(self._keep())
        self.bucket = self.budget()
        self.admitted = True
        if type(self).forward is not GuardedJsonConsumer.forward:
            forward_as_read(self.channel_layer, self.channel_name, self._take_as_read)
        try:
            await self.opened()
        except Exception:
            self._log_failure("opened")
            await self.close(code=CLOSE_TRY_LATER)

    async def __call__(self, scope, receive, send):
        # However the connection ends (a disconnect, or the consumer cancelled), it lets go of
        # its place and its presence.
        try:
            await super().__call__(scope, receive, send)
        finally:
            await self._finish()

    async def dispatch(self, message):
        """Any handler's failure (a group message's too) is logged, never a 1011 close.

        Unlike Channels' own dispatch, it does not first close stale database connections on
        the process's one sync thread: that is a thread hop per frame and per group message, all
        queued behind whatever that thread is doing, and the sockets' database calls close their
        own threads' stale connections (realtime/database.py)."""
        self.dispatching = True
        try:
            handler = getattr(self, get_handler_name(message), None)
            if handler is None:
                raise ValueError(f"no handler for a message of type {message['type']}")
            await handler(message)
        except StopConsumer:
            raise
        except Exception:
            self._log_failure(message.get("type", "a message"))
        finally:
            self.dispatching = False

    def _take_as_read(self, raw: bytes) -> bool:
        """A channel-layer message offered as the layer reads it (realtime/forwarding.py): the
        subclass's ``forward`` may handle it now, while this socket is between messages."""
        if self.dispatching or self.finished:
            return False
        return self.forward(self.channel_layer.deserialize(raw))

    def send_now(self, text_data: str) -> None:
        """``send`` for ``forward``, outside this socket's task; a client gone meanwhile is let
        go, as ``send`` lets it go (its disconnect follows)."""
        try:
            send_now(self.base_send, {"type": "websocket.send", "text": text_data})
        except SendWaited:
            raise
        except Exception:
            pass

    async def disconnect(self, code):
        await self._finish()

    async def _keep(self) -> None:
        """Every REFRESH_S while open: confirm this socket's place under the caps, and join its
        groups again (a Redis that lost its data lost the groups too, and with them every
        broadcast to this socket)."""
        while True:
            await asyncio.sleep(ConnectionCaps.REFRESH_S)
            await self.caps.confirm()
            try:
                for group in self.joined_groups():
                    await self.channel_layer.group_add(group, self.channel_name)
            except RedisError:
                pass  # joined again on the next round

    async def _finish(self) -> None:
        if getattr(self, "finished", True):
            return  # never connected, or already finished
        self.finished = True
        if self.keeper is not None:
            self.keeper.cancel()
        if self.caps is not None:
            await self.caps.release()
        if self.failures > 1:
            log.warning("%s: %d failures on one connection", type(self).__name__, self.failures)
        if self.admitted:
            try:
                await self.closing()
            except Exception:
                self._log_failure("closing")

    async def receive(self, text_data=None, bytes_data=None):
        if not self.admitted:
            return  # a refused socket, closing: nothing it sends is read
        content: dict = {}
        try:
            if not self.bucket.allow(_monotonic_ms()):
                await self.send_error(_peek(text_data), "rate_limited", "too many messages")
                return
            content = parse_frame(text_data, bytes_data)
            await self.handle(content)
        except BadFrame as bad:
            await self.send_error(content, bad.code, bad.text)
            if bad.code == "too_large":
                await self.close(code=CLOSE_TOO_LARGE)
        except (DatabaseError, RedisError):
            # A part of ours failed mid-message; every change is one transaction, so nothing was
            # half-written, and a resent command with the same cseq is never applied twice.
            self._log_failure("a message (a database or Redis failure)")
            await self.send_error(
                content, "unavailable", "the server could not reach its storage; send it again"
            )
        except Exception:
            self._log_failure("a message")
            await self.send_error(
                content, "internal_error", "the server failed on this message; try again"
            )

    async def send_json(self, content: dict) -> None:
        await self.send(text_data=encode_json(content))

    async def send(self, text_data=None, bytes_data=None, close=False):
        try:
            await super().send(text_data, bytes_data, close)
        except Exception:  # the client has gone (autobahn's Disconnected): its disconnect follows
            pass

    async def send_error(self, content: dict, code: str, message: str, **details) -> None:
        await self.send_rejection(content, Rejection(code, message, **details))

    async def send_rejection(self, content: dict, rejection: Rejection) -> None:
        """Every refusal has one shape: ``{"type": "error", "code", "message", **details}``, plus
        what the socket adds to tie it to the refused message (``error_context``)."""
        await self.send_json(
            {"type": "error", **rejection.as_dict(), **self.error_context(content)}
        )

    def _log_failure(self, where: str) -> None:
        """The first failure of a connection is logged with its traceback; later ones are only
        counted (a client repeating a frame that trips a bug must not flood the log)."""
        self.failures = getattr(self, "failures", 0) + 1
        if self.failures == 1:
            log.exception("%s failed in %s", type(self).__name__, where)

    # --- for subclasses ---

    async def opening(self) -> int | None:
        return None

    async def opened(self) -> None:
        pass

    async def closing(self) -> None:
        pass

    def forward(self, message: dict) -> bool:
        """Handle a channel-layer message the moment it is read, if it needs nothing that
        waits (sending with ``send_now``); return whether it was handled. One left is dispatched
        to its handler as usual, after any message this socket is handling now."""
        return False

    async def handle(self, content: dict) -> None:
        raise NotImplementedError

    def budget(self) -> TokenBucket:
        return TokenBucket.for_connections()

    def joined_groups(self) -> list[str]:
        """The channel-layer groups this socket belongs to (joined in ``opened``)."""
        return []

    def error_context(self, content: dict) -> dict:
        """Fields of the refused message that its error echoes (a command's cseq, say)."""
        return {}


def encode_json(content: dict) -> str:
    """A message as JSON text: orjson, several times faster than json on the frames every move
    sends, except for what it refuses (an integer past 64 bits, echoed back as a client's cseq)."""
    try:
        return orjson.dumps(content, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        return json.dumps(content)


def _peek(text_data: str | None) -> dict:
    """The refused frame's own fields for the error reply (its cseq), if it is small JSON."""
    if not text_data or len(text_data) > 512:
        return {}
    try:
        content = parse_frame(text_data, None)
    except BadFrame:
        return {}
    return content


def _monotonic_ms() -> float:
    return asyncio.get_running_loop().time() * 1000

"""A socket's channel-layer messages forwarded in the turn of the event loop that reads them.

Channels hands a consumer each message of the channel layer through a queue that a task of its
own waits on, beside the client's frames (``channels.utils.await_many_dispatch``). From the
moment the layer reads a message, that is three turns of the event loop before its handler
runs: the task waiting on the queue wakes, then the task waiting on both sources, then the
handler. On a loaded web process every turn waits behind everything else that is ready, so a
broadcast waited three times the loop's lag. With the pub/sub layer a consumer may instead take
a message as it is read, in the same turn (``forward_as_read``). It is offered one only while
its task waits on the queue: no earlier message is queued, nor taken from the queue and not yet
handled, so it sees them in the order they were read. A message it does not take goes through
the queue as always. A group's sockets in one process are served in one pass of the reader, as
they were before in one turn of the loop (each socket's task, back to back).

Only channels-redis's pub/sub layer reads messages so: its reader puts each one into
``channels[name]`` (``RedisPubSubLoopLayer._receive_message``), a plain ``asyncio.Queue`` made by
``new_channel``. That queue is made a ``_ForwardingQueue``; with any other layer (the core
layer, the in-memory one) nothing changes. ``tests/foundation/test_forwarding.py`` and the match
socket's tests fail if a release of channels-redis stops reading messages this way.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Awaitable, Callable

from channels_redis.pubsub import RedisPubSubChannelLayer

log = logging.getLogger(__name__)


class SendWaited(RuntimeError):
    """An ASGI ``send`` that did not finish in one step (Daphne's always does)."""


class _ForwardingQueue(asyncio.Queue):
    """A channel's queue in the pub/sub layer that first offers each message to its socket."""

    take: weakref.WeakMethod | None = None  # the consumer's, while it may forward

    def put_nowait(self, item) -> None:
        take = self.take() if self.take is not None else None
        if take is not None and self._awaited():
            try:
                if take(item):
                    return
            except (Exception, asyncio.CancelledError):  # the queue's way works still
                # (a CancelledError let through would end the layer's reader for good)
                self.take = None
                log.exception("a socket could not forward a message as read: queued from now on")
        super().put_nowait(item)

    def _awaited(self) -> bool:
        """Is the consumer's task waiting on this queue (so it holds no message of it)?"""
        return any(not getter.done() for getter in self._getters)


def forward_as_read(layer, channel_name: str, take: Callable[[bytes], bool]) -> bool:
    """Offer each message for ``channel_name`` to the bound method ``take`` as the pub/sub layer
    reads it: ``take`` gets the message as the layer carries it (serialized) and returns whether
    it took it; a message it leaves is queued for the consumer's handler as usual. The consumer
    is held weakly. Returns whether the layer forwards so (False: the queue alone, as before)."""
    if not isinstance(layer, RedisPubSubChannelLayer):
        return False
    queue = layer._get_layer().channels.get(channel_name)
    if type(queue) is not asyncio.Queue:  # not the layer's own plain queue: leave it alone
        return False
    queue.__class__ = _ForwardingQueue
    queue.take = weakref.WeakMethod(take)
    return True


def send_now(send: Callable[[dict], Awaitable[None]], message: dict) -> None:
    """Run the ASGI ``send`` of ``message`` to its end, here, in the layer reader's turn rather
    than the consumer's task: Daphne's hands the frame to Twisted and returns without waiting
    on anything. A send that waits (or is no coroutine) is closed where it waited and
    ``SendWaited`` raised: the caller queues the message (a client drops events it has
    already, by their seq, if that send had sent it)."""
    step = send(message)
    if not asyncio.iscoroutine(step):
        raise SendWaited("the ASGI send is no coroutine")
    try:
        step.send(None)
    except StopIteration:
        return
    try:
        step.close()
    except RuntimeError:  # it would not stop: it is let go
        pass
    raise SendWaited("the ASGI send waited")

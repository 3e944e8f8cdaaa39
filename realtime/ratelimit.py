"""A token bucket per WebSocket connection: bursts are fine, floods are refused."""

from __future__ import annotations

from django.conf import settings


class TokenBucket:
    def __init__(self, capacity: int, per_second: float):
        self.capacity = capacity
        self.per_ms = per_second / 1000
        self.tokens = float(capacity)
        self.last_ms: float | None = None

    @classmethod
    def for_connections(cls) -> TokenBucket:
        return cls(
            capacity=getattr(settings, "WS_RATE_BURST", 30),
            per_second=getattr(settings, "WS_RATE_PER_SECOND", 10),
        )

    def allow(self, now_ms: float) -> bool:
        """Take a token at ``now_ms`` (a monotonic time) if one is left."""
        if self.last_ms is not None:
            self.tokens = min(self.capacity, self.tokens + (now_ms - self.last_ms) * self.per_ms)
        self.last_ms = now_ms
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True

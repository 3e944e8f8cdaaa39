"""Login throttling against password guessing, in the shared cache (Redis).

Failures are counted per username (``USERNAME_LIMIT`` = 5) and per client address
(``IP_LIMIT`` = 20) within ``WINDOW_S`` (15 minutes). Reaching a limit refuses further attempts
for that username or address for ``LOCK_S`` (10 minutes) from the last failure, whatever the
password. Time (``now_s``) is a parameter, so tests step it.
"""

from __future__ import annotations

from django.core.cache import cache

USERNAME_LIMIT = 5
IP_LIMIT = 20
WINDOW_S = 15 * 60
LOCK_S = 10 * 60


def _keys(username: str, ip: str | None) -> list[tuple[str, int]]:
    keys = [(f"login-fail:user:{(username or '').strip().lower()}", USERNAME_LIMIT)]
    if ip:
        keys.append((f"login-fail:ip:{ip}", IP_LIMIT))
    return keys


def _recent(key: str, now_s: float) -> list[float]:
    return [t for t in cache.get(key, []) if now_s - t < WINDOW_S]


def locked_for(username: str, ip: str | None, now_s: float) -> float:
    """Seconds until a login for ``username`` from ``ip`` may be tried again (0: allowed)."""
    wait = 0.0
    for key, limit in _keys(username, ip):
        failures = _recent(key, now_s)
        if len(failures) >= limit:
            wait = max(wait, failures[-1] + LOCK_S - now_s)
    return max(wait, 0.0)


def record_failure(username: str, ip: str | None, now_s: float) -> None:
    for key, _limit in _keys(username, ip):
        failures = _recent(key, now_s)[-IP_LIMIT:] + [now_s]
        cache.set(key, failures, timeout=WINDOW_S + LOCK_S)


def record_success(username: str) -> None:
    cache.delete(_keys(username, None)[0][0])


def client_ip(request) -> str | None:
    return request.META.get("REMOTE_ADDR") if request is not None else None

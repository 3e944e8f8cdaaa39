"""Sign-in protection on django-axes: its handler with a limit per lockout parameter, the
client's address, and the answer to a refused sign-in (settings: the AXES_* block).

axes counts every failure of every ``authenticate()`` (the site's sign-in and the admin's) in
``axes.AccessAttempt``, one row per username, address and user agent: in one transaction it takes
the row with ``select_for_update().get_or_create()`` (a unique constraint on those three columns
settles two first failures at once) and adds ``F("failures_since_start") + 1``. On SQLite the
FOR UPDATE is dropped, but config.env opens every transaction IMMEDIATE (the write lock at
BEGIN), so the read and the increment still happen one request at a time.

An attempt meets the lock before its password is checked and is counted after: attempts that
arrive together before the limit is reached all have their passwords checked (each is counted);
the next one is refused.
"""

from __future__ import annotations

import ipaddress
import math
from datetime import datetime

from axes.handlers.database import AxesDatabaseHandler
from axes.helpers import (
    get_client_username,
    get_cool_off,
    get_credentials,
    get_lockout_parameters,
)
from axes.signals import user_locked_out
from django.conf import settings
from django.http import HttpResponse


def failure_limit(parameter: str | list[str]) -> int:
    """The limit for one entry of AXES_LOCKOUT_PARAMETERS."""
    if "username" in parameter:
        return settings.SIGNIN_FAILURES_PER_ACCOUNT
    return settings.SIGNIN_FAILURES_PER_ADDRESS


class SignInLockoutHandler(AxesDatabaseHandler):
    """axes' database handler, each lockout parameter held to its own limit.

    axes compares the largest count with the one AXES_FAILURE_LIMIT, and the count per address is
    always the largest, so alone it cannot hold an account (from one address) to a smaller limit.
    """

    def lock_ends(self, request, credentials: dict | None = None) -> datetime | None:
        """When the lock on this sign-in lifts; None when there is none."""
        cool_off = get_cool_off(request)
        ends = []
        parameters = get_lockout_parameters(request, credentials)
        attempts_list = self.get_user_attempts(request, credentials)
        for parameter, attempts in zip(parameters, attempts_list, strict=True):
            counted = 0
            newest_first = attempts.order_by("-attempt_time")
            for attempt_time, failures in newest_first.values_list(
                "attempt_time", "failures_since_start"
            ):
                counted += failures
                if counted >= failure_limit(parameter):
                    ends.append(attempt_time + cool_off)
                    break
        return max(ends, default=None)

    def is_locked(self, request, credentials: dict | None = None) -> bool:
        return (
            settings.AXES_LOCK_OUT_AT_FAILURE and self.lock_ends(request, credentials) is not None
        )

    def user_login_failed(self, sender, credentials: dict, request=None, **kwargs):
        super().user_login_failed(sender, credentials, request, **kwargs)
        if request is None or request.axes_locked_out or not self.is_locked(request, credentials):
            return
        request.axes_locked_out = True
        request.axes_credentials = credentials
        user_locked_out.send(
            "axes",
            request=request,
            username=get_client_username(request, credentials),
            ip_address=request.axes_ip_address,
        )


def minutes_left(request, username: str | None) -> int:
    """Whole minutes (at least 1) until a refused sign-in may be tried again."""
    ends = SignInLockoutHandler().lock_ends(request, get_credentials(username))
    wait = ends - request.axes_attempt_time if ends else get_cool_off(request)
    return max(1, math.ceil(wait.total_seconds() / 60))


def client_ip(request) -> str | None:
    """The client's address: REMOTE_ADDR, or behind SIGNIN_TRUSTED_PROXIES proxies the entry of
    X-Forwarded-For the outermost of them appended (the client may put anything before it)."""
    remote = request.META.get("REMOTE_ADDR")
    proxies = settings.SIGNIN_TRUSTED_PROXIES
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    entries = [entry.strip() for entry in forwarded.split(",") if entry.strip()]
    if proxies <= 0 or not entries:
        return remote
    try:
        return str(ipaddress.ip_address(entries[-min(proxies, len(entries))]))
    except ValueError:  # only a misconfigured proxy writes that
        return remote


def lockout_response(request, original_response=None, credentials=None) -> HttpResponse:
    """axes' answer to a refused sign-in (AXES_LOCKOUT_CALLABLE): the sign-in page as its view
    rendered it, with its form saying for how long (accounts.forms), and status 429."""
    if not isinstance(original_response, HttpResponse):
        # axes 8.3's async middleware passes the credentials in the response's place
        # (jazzband/django-axes#1494): run the view again. axes refuses it before any password
        # is checked and counts nothing more.
        match = request.resolver_match
        original_response = match.func(request, *match.args, **match.kwargs)
    if hasattr(original_response, "render"):
        original_response.render()
    original_response.status_code = settings.AXES_HTTP_RESPONSE_CODE
    return original_response

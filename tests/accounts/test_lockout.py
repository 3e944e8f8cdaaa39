"""Sign-in protection (django-axes with accounts/lockout.py).

Failed sign-ins are counted per account from one address (5) and per address (20). Reaching a
limit refuses sign-in from that address (for that account, or for every account) until 10 minutes
after the failures, whatever the password; the owner signing in from another address is never
refused. Every attempt is counted under parallel requests, the admin's sign-in included, and
X-Forwarded-For only counts behind the configured number of trusted proxies.
"""

from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from threading import Barrier

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth.backends import ModelBackend
from django.db import connections
from django.test import AsyncClient, Client, RequestFactory

from tests.accounts.factories import PASSWORD, make_user

pytestmark = pytest.mark.django_db

LOGIN = "/accounts/login/"
ADMIN_LOGIN = "/admin/login/"
ATTACKER = "203.0.113.7"
OWNER_HOME = "198.51.100.20"
PROXY = "10.0.0.2"
WRONG = "not-the-password"
LOCKED_10 = "Too many failed sign-ins from here. Try again in 10 minutes."
WRONG_PASSWORD = "Please enter a correct username and password"


def attempt(username, password, *, address=ATTACKER, url=LOGIN, **headers):
    """One sign-in from ``address`` with a fresh client: (response, signed in?)."""
    client = Client(REMOTE_ADDR=address)
    response = client.post(url, {"username": username, "password": password}, **headers)
    return response, "_auth_user_id" in client.session


def failures_counted(**filters) -> int:
    from axes.models import AccessAttempt
    from django.db.models import Sum

    total = AccessAttempt.objects.filter(**filters).aggregate(n=Sum("failures_since_start"))
    return total["n"] or 0


def age_failures(by: timedelta) -> None:
    """Moves every recorded failure ``by`` into the past (time passing for the lock)."""
    from axes.models import AccessAttempt
    from django.db.models import F

    AccessAttempt.objects.update(attempt_time=F("attempt_time") - by)


def in_parallel(count: int, one):
    """``one(i)`` for i in range(count), all released at once from their own threads."""
    start = Barrier(count)

    def run(i):
        try:
            start.wait()
            return one(i)
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(run, range(count)))


def test_five_failures_lock_the_account_from_that_address_but_not_for_its_owner_elsewhere():
    make_user("ann")
    for _ in range(4):
        response, _ = attempt("ann", WRONG)
        assert response.status_code == 200
        assert WRONG_PASSWORD in response.content.decode()
    response, _ = attempt("ann", WRONG)
    assert response.status_code == 429
    assert LOCKED_10 in response.content.decode()
    assert failures_counted(username="ann", ip_address=ATTACKER) == 5

    response, signed_in = attempt("ann", PASSWORD)
    assert (response.status_code, signed_in) == (429, False)
    html = response.content.decode()
    assert LOCKED_10 in html
    assert f'<form method="post" action="{LOGIN}"' in html  # the sign-in page, rendered as usual
    assert failures_counted(username="ann", ip_address=ATTACKER) == 5  # refusals add nothing

    response, signed_in = attempt("ann", PASSWORD, address=OWNER_HOME)
    assert (response.status_code, response["Location"], signed_in) == (302, "/lobby/", True)
    response, signed_in = attempt("bob-is-not-ann", WRONG)  # other accounts from there: allowed
    assert response.status_code == 200


def test_the_lock_lifts_ten_minutes_after_the_failures():
    make_user("ann")
    for _ in range(5):
        attempt("ann", WRONG)
    age_failures(timedelta(minutes=3, seconds=30))
    response, _ = attempt("ann", PASSWORD)
    assert response.status_code == 429
    assert "Try again in 7 minutes." in response.content.decode()
    age_failures(timedelta(minutes=6))
    response, _ = attempt("ann", PASSWORD)
    assert "Try again in 1 minute." in response.content.decode()
    age_failures(timedelta(seconds=31))
    response, signed_in = attempt("ann", PASSWORD)
    assert (response.status_code, signed_in) == (302, True)


def test_twenty_failures_from_one_address_lock_it_for_every_account():
    make_user("bob")
    for i in range(19):
        attempt(f"guess{i}", WRONG)
    # A success does not wash the address: the attacker's own account cannot reset the count.
    response, signed_in = attempt("bob", PASSWORD)
    assert (response.status_code, signed_in) == (302, True)
    response, _ = attempt("guess19", WRONG)
    assert response.status_code == 429
    response, signed_in = attempt("bob", PASSWORD)
    assert (response.status_code, signed_in) == (429, False)
    assert LOCKED_10 in response.content.decode()
    response, signed_in = attempt("bob", PASSWORD, address=OWNER_HOME)
    assert (response.status_code, signed_in) == (302, True)


@pytest.fixture
def password_checks(monkeypatch) -> list:
    """One entry per sign-in that got past axes to the password check."""
    checks = []
    authenticate = ModelBackend.authenticate

    def checked(self, request, *args, **kwargs):
        checks.append(kwargs.get("username"))
        return authenticate(self, request, *args, **kwargs)

    monkeypatch.setattr(ModelBackend, "authenticate", checked)
    return checks


@pytest.mark.django_db(transaction=True)
def test_parallel_wrong_passwords_for_one_account_are_all_counted(password_checks):
    make_user("ann")
    results = in_parallel(30, lambda i: attempt("ann", WRONG))
    assert not any(signed_in for _, signed_in in results)
    assert {response.status_code for response, _ in results} <= {200, 429}
    # Each attempt was either counted or refused before its password was looked at.
    assert failures_counted(username="ann", ip_address=ATTACKER) == len(password_checks) >= 5

    response, signed_in = attempt("ann", PASSWORD)
    assert (response.status_code, signed_in) == (429, False)
    response, signed_in = attempt("ann", PASSWORD, address=OWNER_HOME)
    assert (response.status_code, signed_in) == (302, True)


@pytest.mark.django_db(transaction=True)
def test_parallel_wrong_passwords_from_a_fresh_address_hold_the_address_limit(password_checks):
    make_user("bob")
    fresh = "192.0.2.60"
    results = in_parallel(60, lambda i: attempt(f"guess{i}", WRONG, address=fresh))
    assert {response.status_code for response, _ in results} <= {200, 429}
    assert failures_counted(ip_address=fresh) == len(password_checks) >= 20

    response, signed_in = attempt("bob", PASSWORD, address=fresh)
    assert (response.status_code, signed_in) == (429, False)
    response, signed_in = attempt("bob", PASSWORD, address=OWNER_HOME)
    assert (response.status_code, signed_in) == (302, True)


def test_admin_sign_in_failures_count_and_the_admin_refuses_after_the_limit():
    make_user("boss", is_staff=True, is_superuser=True)
    for _ in range(3):
        response, _ = attempt("boss", WRONG, url=ADMIN_LOGIN)
        assert response.status_code == 200
    assert failures_counted(username="boss", ip_address=ATTACKER, path_info=ADMIN_LOGIN) == 3
    for _ in range(2):  # the site's sign-in and the admin's share the counts
        attempt("boss", WRONG)
    assert failures_counted(username="boss", ip_address=ATTACKER) == 5

    response, signed_in = attempt("boss", PASSWORD, url=ADMIN_LOGIN)
    assert (response.status_code, signed_in) == (429, False)
    assert LOCKED_10 in response.content.decode()
    response, signed_in = attempt("boss", PASSWORD, url=ADMIN_LOGIN, address=OWNER_HOME)
    assert (response.status_code, signed_in) == (302, True)


def test_x_forwarded_for_is_ignored_without_trusted_proxies():
    make_user("ann")
    for i in range(5):
        attempt("ann", WRONG, HTTP_X_FORWARDED_FOR=f"192.0.2.{i}")
    assert failures_counted(ip_address=ATTACKER) == 5
    response, _ = attempt("ann", PASSWORD, HTTP_X_FORWARDED_FOR=OWNER_HOME)
    assert response.status_code == 429


def test_behind_one_trusted_proxy_the_address_the_proxy_saw_counts(settings):
    settings.SIGNIN_TRUSTED_PROXIES = 1
    make_user("ann")
    for i in range(5):  # the attacker's own entries come first: the proxy appends its peer
        forged = f"192.0.2.{i}, {ATTACKER}"
        attempt("ann", WRONG, address=PROXY, HTTP_X_FORWARDED_FOR=forged)
    assert failures_counted(ip_address=ATTACKER) == 5
    assert failures_counted(ip_address=PROXY) == 0
    response, _ = attempt("ann", PASSWORD, address=PROXY, HTTP_X_FORWARDED_FOR=ATTACKER)
    assert response.status_code == 429
    response, signed_in = attempt("ann", PASSWORD, address=PROXY, HTTP_X_FORWARDED_FOR=OWNER_HOME)
    assert (response.status_code, signed_in) == (302, True)


@pytest.mark.parametrize(
    ("proxies", "forwarded_for", "address"),
    [
        (0, None, ATTACKER),
        (0, "192.0.2.1", ATTACKER),
        (1, None, ATTACKER),
        (1, "192.0.2.1", "192.0.2.1"),
        (1, "192.0.2.9, 192.0.2.1", "192.0.2.1"),
        (2, "192.0.2.9, 192.0.2.1, 10.0.0.1", "192.0.2.1"),
        (2, "192.0.2.1", "192.0.2.1"),  # fewer entries than proxies: the outermost one's peer
        (1, "not-an-address", ATTACKER),
        (1, " 2001:DB8::1 ", "2001:db8::1"),
    ],
)
def test_the_client_address(settings, proxies, forwarded_for, address):
    from accounts.lockout import client_ip

    settings.SIGNIN_TRUSTED_PROXIES = proxies
    headers = {"HTTP_X_FORWARDED_FOR": forwarded_for} if forwarded_for is not None else {}
    request = RequestFactory().post(LOGIN, REMOTE_ADDR=ATTACKER, **headers)
    assert client_ip(request) == address


def test_the_lockout_message_is_translated():
    make_user("ann")
    for _ in range(5):
        attempt("ann", WRONG)
    response, _ = attempt("ann", PASSWORD, HTTP_ACCEPT_LANGUAGE="pl")
    assert response.status_code == 429
    assert "Zbyt wiele nieudanych prób logowania stąd. Spróbuj za 10 minut." in (
        response.content.decode()
    )


def test_under_asgi_the_refusal_is_the_sign_in_page_too():
    """axes 8.3's async middleware drops the view's response (jazzband/django-axes#1494)."""
    make_user("ann")
    for _ in range(5):
        attempt("ann", WRONG, address="127.0.0.1")
    client = AsyncClient()  # REMOTE_ADDR 127.0.0.1, through Django's ASGI handler
    response = async_to_sync(client.post)(LOGIN, {"username": "ann", "password": PASSWORD})
    assert response.status_code == 429
    html = response.content.decode()
    assert LOCKED_10 in html
    assert f'<form method="post" action="{LOGIN}"' in html
    assert failures_counted(username="ann") == 5

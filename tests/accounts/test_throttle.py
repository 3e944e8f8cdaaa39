"""Login throttling: 5 failures for a username (20 for an address) in 15 minutes lock sign-in
for 10 minutes from the last failure, even with the right password."""

import pytest
from django.urls import reverse

from accounts import throttle
from accounts.forms import ThrottledLoginForm
from tests.accounts.factories import PASSWORD, make_user

pytestmark = pytest.mark.django_db

T0 = 1_800_000_000.0


def test_five_failures_lock_the_username_for_ten_minutes_from_the_last():
    for i in range(4):
        throttle.record_failure("ann", "10.0.0.1", T0 + i)
    assert throttle.locked_for("ann", "10.0.0.2", T0 + 4) == 0
    throttle.record_failure("ann", "10.0.0.1", T0 + 4)
    assert throttle.locked_for("ANN", "10.0.0.2", T0 + 5) == pytest.approx(599)
    assert throttle.locked_for("ann", None, T0 + 4 + 600) == 0
    assert throttle.locked_for("bob", "10.0.0.3", T0 + 5) == 0


def test_failures_older_than_the_window_do_not_count():
    for i in range(4):
        throttle.record_failure("ann", None, T0 + i)
    throttle.record_failure("ann", None, T0 + 15 * 60 + 1)
    assert throttle.locked_for("ann", None, T0 + 15 * 60 + 2) == 0


def test_twenty_failures_from_one_address_lock_it_for_every_username():
    for i in range(20):
        throttle.record_failure(f"user{i}", "10.9.9.9", T0 + i)
    assert throttle.locked_for("someone-else", "10.9.9.9", T0 + 21) > 0
    assert throttle.locked_for("someone-else", "10.9.9.8", T0 + 21) == 0


def test_a_success_clears_the_username_count():
    for i in range(4):
        throttle.record_failure("ann", None, T0 + i)
    throttle.record_success("ann")
    throttle.record_failure("ann", None, T0 + 5)
    assert throttle.locked_for("ann", None, T0 + 6) == 0


def test_the_login_page_refuses_the_right_password_after_five_wrong_ones(client, monkeypatch):
    make_user("ann")
    monkeypatch.setattr(ThrottledLoginForm, "now_s", staticmethod(lambda: T0))
    url = reverse("login")
    for _ in range(5):
        response = client.post(url, {"username": "ann", "password": "wrong-password"})
        assert response.status_code == 200
        assert "_auth_user_id" not in client.session
    response = client.post(url, {"username": "ann", "password": PASSWORD})
    assert response.status_code == 200
    assert "Too many failed sign-ins. Try again in 10 minutes." in response.content.decode()
    assert "_auth_user_id" not in client.session
    monkeypatch.setattr(ThrottledLoginForm, "now_s", staticmethod(lambda: T0 + 601))
    response = client.post(url, {"username": "ann", "password": PASSWORD})
    assert response.status_code == 302
    assert response["Location"] == reverse("lobby")

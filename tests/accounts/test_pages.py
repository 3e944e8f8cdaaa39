"""Account pages: sign up (signed in at once), sign in and out, password change, profile,
leaderboard, the ladder buttons, and the nav every visitor sees."""

import pytest
from django.urls import reverse

from accounts.models import User
from accounts.services import rating_record_result
from tests.accounts.factories import PASSWORD, make_match, make_user

pytestmark = pytest.mark.django_db


def test_the_fixed_urls():
    assert reverse("register") == "/accounts/register/"
    assert reverse("login") == "/accounts/login/"
    assert reverse("logout") == "/accounts/logout/"
    assert reverse("password_change") == "/accounts/password/"
    assert reverse("profile", args=["ann"]) == "/players/ann/"
    assert reverse("leaderboard") == "/leaderboard/"
    assert reverse("lobby") == "/lobby/"


@pytest.mark.parametrize("url", ["/", "/leaderboard/", "/accounts/login/"])
def test_visitors_see_sign_up_on_every_page(client, url):
    html = client.get(url).content.decode()
    assert 'href="/accounts/register/"' in html
    assert "Sign up" in html


def test_signing_up_signs_the_new_user_in(client):
    response = client.post(
        reverse("register"),
        {
            "username": "newbie",
            "email": "",
            "password1": PASSWORD,
            "password2": PASSWORD,
        },
    )
    assert response.status_code == 302 and response["Location"] == "/lobby/"
    user = User.objects.get(username="newbie")
    assert int(client.session["_auth_user_id"]) == user.pk
    assert (user.rating, user.rated_games, user.on_ladder, user.email) == (1500, 0, False, "")
    html = client.get("/lobby/").content.decode()
    assert "Sign out" in html and 'href="/players/newbie/"' in html


def test_signing_up_with_a_weak_password_is_refused_by_the_validators(client):
    response = client.post(
        reverse("register"),
        {
            "username": "newbie",
            "email": "n@example.com",
            "password1": "12345678",
            "password2": "12345678",
        },
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert "This password is too common." in html
    assert "This password is entirely numeric." in html
    assert not User.objects.filter(username="newbie").exists()


def test_a_taken_username_is_refused_whatever_its_case(client):
    make_user("Ann")
    response = client.post(
        reverse("register"),
        {
            "username": "ann",
            "password1": PASSWORD,
            "password2": PASSWORD,
        },
    )
    assert response.status_code == 200
    assert User.objects.filter(username__iexact="ann").count() == 1


def test_an_email_is_optional_and_kept(client):
    client.post(
        reverse("register"),
        {
            "username": "mailer",
            "email": "Mailer@Example.COM",
            "password1": PASSWORD,
            "password2": PASSWORD,
        },
    )
    assert User.objects.get(username="mailer").email == "Mailer@example.com"


def test_sign_in_then_out(client):
    make_user("ann")
    response = client.post(reverse("login"), {"username": "ann", "password": PASSWORD})
    assert response.status_code == 302 and response["Location"] == "/lobby/"
    assert client.get(reverse("logout")).status_code == 405  # signing out is a POST
    response = client.post(reverse("logout"))
    assert response.status_code == 302 and response["Location"] == "/"
    assert "_auth_user_id" not in client.session


def test_a_wrong_password_does_not_sign_in(client):
    make_user("ann")
    response = client.post(reverse("login"), {"username": "ann", "password": "not-it-at-all"})
    assert response.status_code == 200
    assert "Please enter a correct username and password" in response.content.decode()


def test_the_lobby_needs_a_signed_in_user(client):
    response = client.get("/lobby/")
    assert response.status_code == 302 and response["Location"] == "/accounts/login/?next=/lobby/"


def test_changing_the_password(client):
    user = make_user("ann")
    client.force_login(user)
    response = client.post(
        reverse("password_change"),
        {
            "old_password": PASSWORD,
            "new_password1": "another-long-phrase-7",
            "new_password2": "another-long-phrase-7",
        },
    )
    assert response.status_code == 302 and response["Location"] == "/players/ann/"
    user.refresh_from_db()
    assert user.check_password("another-long-phrase-7")
    assert "_auth_user_id" in client.session  # still signed in


def test_joining_and_leaving_the_ladder_from_the_profile(client):
    user = make_user("ann")
    client.force_login(user)
    assert "Join the rated ladder" in client.get("/players/ann/").content.decode()
    client.post(reverse("ladder"), {"action": "join"})
    user.refresh_from_db()
    assert user.on_ladder and user.ladder_joined_at is not None
    client.post(reverse("ladder"), {"action": "leave", "next": "/lobby/"})
    user.refresh_from_db()
    assert not user.on_ladder and user.ladder_joined_at is None


def test_the_profile_shows_rating_provisional_marker_chart_matches_and_record(client):
    ann = make_user("ann", on_ladder=True)
    bob = make_user("bob", on_ladder=True)
    match = make_match(ann, bob)
    match.winner, match.reason = 0, "points"
    rating_record_result(match=match)
    match.save()
    html = client.get("/players/ann/").content.decode()
    assert 'data-testid="rating">1520<' in html
    assert ">provisional<" in html
    assert "<svg" in html and "<polyline" in html and "<title>1520</title>" in html
    assert f'href="/match/{match.pk}/"' in html
    assert 'data-testid="wins">1<' in html and 'data-testid="losses">0<' in html
    assert "+20" in html
    assert "Join the rated ladder" not in html  # not your own profile: no buttons


def test_a_profile_of_nobody_is_404(client):
    assert client.get("/players/nobody/").status_code == 404


def test_the_leaderboard_page_lists_ranked_players(client):
    from django.utils import timezone

    make_user("ace", rating=1700, rated_games=8, on_ladder=True, last_rated_at=timezone.now())
    make_user("casual", rating=1900, rated_games=8, on_ladder=False, last_rated_at=timezone.now())
    html = client.get("/leaderboard/").content.decode()
    assert 'href="/players/ace/"' in html
    assert "casual" not in html

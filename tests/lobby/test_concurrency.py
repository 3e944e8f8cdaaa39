"""Races: real threads, each with its own database connection, released together."""

import threading

import pytest
from django.db import connection

from lobby import services
from lobby.models import Seek
from lobby.services import LobbyError
from matches.models import Match
from tests.accounts.factories import make_user

pytestmark = pytest.mark.django_db(transaction=True)


def race(*calls):
    """Run the calls at once in threads; returns each one's result or LobbyError."""
    barrier = threading.Barrier(len(calls))
    results = [None] * len(calls)

    def run(index, call):
        try:
            barrier.wait(timeout=10)
            results[index] = call()
        except LobbyError as error:
            results[index] = error
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i, call)) for i, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads)
    return results


def test_two_players_accepting_one_seek_at_once_get_exactly_one_match():
    owner, bob, cat = make_user("owner"), make_user("bob"), make_user("cat")
    seek = services.seek_create(user=owner, rated=False)
    results = race(
        lambda: services.seek_accept(user=bob, seek_id=seek.pk),
        lambda: services.seek_accept(user=cat, seek_id=seek.pk),
    )
    matches = [r for r in results if isinstance(r, Match)]
    errors = [r for r in results if isinstance(r, LobbyError)]
    assert len(matches) == 1 and len(errors) == 1
    assert errors[0].code in ("no_such_seek", "opponent_in_match")
    assert Match.objects.count() == 1
    assert not Seek.objects.exists()


def test_one_player_accepting_two_seeks_at_once_gets_one_match():
    ann, bob, cat = make_user("ann"), make_user("bob"), make_user("cat")
    seek_a = services.seek_create(user=ann, rated=False)
    seek_b = services.seek_create(user=bob, rated=False)
    results = race(
        lambda: services.seek_accept(user=cat, seek_id=seek_a.pk),
        lambda: services.seek_accept(user=cat, seek_id=seek_b.pk),
    )
    assert sorted(type(r).__name__ for r in results) == ["LobbyError", "Match"]
    assert [r.code for r in results if isinstance(r, LobbyError)] == ["in_match"]
    assert Match.objects.count() == 1


def test_accepting_a_seek_while_its_owner_accepts_a_challenge_gives_the_owner_one_match():
    ann, bob, cat = make_user("ann"), make_user("bob"), make_user("cat")
    seek = services.seek_create(user=ann, rated=False)
    challenge = services.challenge_create(user=cat, opponent_username="ann", rated=False)
    results = race(
        lambda: services.seek_accept(user=bob, seek_id=seek.pk),
        lambda: services.challenge_accept(user=ann, challenge_id=challenge.pk),
    )
    assert sum(isinstance(r, Match) for r in results) == 1
    assert Match.objects.count() == 1

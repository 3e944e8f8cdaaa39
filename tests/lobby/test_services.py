"""Seeks, challenges, pass-and-play and the one-live-match rule (lobby/services.py)."""

import pytest

from accounts.services import ladder_leave
from lobby import services
from lobby.models import Challenge, QuickEntry, Seek
from lobby.services import LobbyError
from matches.models import Match
from tests.accounts.factories import NOW_MS, make_user

pytestmark = pytest.mark.django_db


def refused(code, call, **kwargs):
    with pytest.raises(LobbyError) as error:
        call(**kwargs)
    assert error.value.code == code
    return error.value


def test_accepting_a_seek_starts_a_match_between_both_and_removes_the_seek():
    ann, bob = make_user("ann"), make_user("bob")
    seek = services.seek_create(user=ann, rated=False)
    match = services.seek_accept(user=bob, seek_id=seek.pk)
    assert {match.player0_id, match.player1_id} == {ann.pk, bob.pk}
    assert (match.mode, match.rated, match.status) == ("online", False, "waiting")
    assert not Seek.objects.exists()


def test_seats_are_random():
    seats = set()
    for i in range(12):
        owner, taker = make_user(f"own{i}"), make_user(f"take{i}")
        seek = services.seek_create(user=owner, rated=False)
        seats.add(services.seek_accept(user=taker, seek_id=seek.pk).player0_id == owner.pk)
    assert seats == {True, False}


def test_nobody_accepts_their_own_seek():
    ann = make_user("ann")
    seek = services.seek_create(user=ann, rated=False)
    refused("own_seek", services.seek_accept, user=ann, seek_id=seek.pk)
    assert Seek.objects.filter(pk=seek.pk).exists()


def test_a_cancelled_seek_cannot_be_accepted():
    ann, bob = make_user("ann"), make_user("bob")
    seek = services.seek_create(user=ann, rated=False)
    refused("no_such_seek", services.seek_cancel, user=bob, seek_id=seek.pk)
    services.seek_cancel(user=ann, seek_id=seek.pk)
    refused("no_such_seek", services.seek_accept, user=bob, seek_id=seek.pk)


def test_a_new_seek_replaces_the_players_old_one():
    ann = make_user("ann")
    services.seek_create(user=ann, rated=False)
    newer = services.seek_create(user=ann, rated=False, rating_min=1400)
    assert list(Seek.objects.values_list("pk", flat=True)) == [newer.pk]


def test_a_rating_range_admits_only_ratings_inside_it():
    ann = make_user("ann")
    low, high, mid = make_user("low", rating=1399), make_user("high", rating=1601), make_user("mid")
    seek = services.seek_create(user=ann, rated=False, rating_min=1400, rating_max=1600)
    refused("outside_range", services.seek_accept, user=low, seek_id=seek.pk)
    refused("outside_range", services.seek_accept, user=high, seek_id=seek.pk)
    assert services.seek_accept(user=mid, seek_id=seek.pk).status == "waiting"


@pytest.mark.parametrize(("low", "high"), [(1600, 1400), (-5, None), (None, 99999), ("1400", None)])
def test_a_bad_range_is_refused(low, high):
    refused(
        "bad_range",
        services.seek_create,
        user=make_user("ann"),
        rated=False,
        rating_min=low,
        rating_max=high,
    )


def test_rated_seeks_are_for_ladder_members_only():
    member, visitor = make_user("member", on_ladder=True), make_user("visitor")
    refused("not_on_ladder", services.seek_create, user=visitor, rated=True)
    seek = services.seek_create(user=member, rated=True)
    refused("not_on_ladder", services.seek_accept, user=visitor, seek_id=seek.pk)
    other = make_user("other", on_ladder=True)
    match = services.seek_accept(user=other, seek_id=seek.pk)
    assert match.rated


def test_leaving_the_ladder_withdraws_rated_seeks_and_challenges():
    ann, bob = make_user("ann", on_ladder=True), make_user("bob", on_ladder=True)
    services.seek_create(user=ann, rated=True)
    challenge = services.challenge_create(user=bob, opponent_username="ann", rated=True)
    ladder_leave(user=ann)
    assert not Seek.objects.exists()
    challenge.refresh_from_db()
    assert challenge.status == "cancelled"


def test_a_player_in_a_live_match_can_neither_seek_nor_accept_nor_be_paired():
    ann, bob, cat = make_user("ann"), make_user("bob"), make_user("cat")
    services.seek_accept(user=bob, seek_id=services.seek_create(user=ann, rated=False).pk)
    refused("in_match", services.seek_create, user=ann, rated=False)
    seek = services.seek_create(user=cat, rated=False)
    refused("in_match", services.seek_accept, user=ann, seek_id=seek.pk)
    refused("in_match", services.hotseat_start, user=bob)
    refused("in_match", services.quick_join, user=bob, now_ms=NOW_MS)
    refused("in_match", services.challenge_create, user=ann, opponent_username="cat", rated=False)
    challenge = services.challenge_create(user=cat, opponent_username="ann", rated=False)
    refused("in_match", services.challenge_accept, user=ann, challenge_id=challenge.pk)
    assert Match.objects.count() == 1


def test_a_seek_whose_owner_is_now_playing_cannot_be_accepted():
    ann, bob, cat = make_user("ann"), make_user("bob"), make_user("cat")
    from matches.services import match_create

    seek = services.seek_create(user=ann, rated=False)
    match_create(player0=ann, player1=cat, now_ms=NOW_MS)  # started elsewhere (not the lobby)
    refused("opponent_in_match", services.seek_accept, user=bob, seek_id=seek.pk)


def test_starting_a_match_clears_both_players_seeks_queue_places_and_challenges():
    ann, bob = make_user("ann"), make_user("bob")
    make_user("cat")
    services.seek_create(user=bob, rated=False)
    services.quick_join(user=bob, now_ms=NOW_MS)  # alone in the queue: waits
    to_cat = services.challenge_create(user=bob, opponent_username="cat", rated=False)
    seek = services.seek_create(user=ann, rated=False)
    services.seek_accept(user=bob, seek_id=seek.pk)
    assert not Seek.objects.exists() and not QuickEntry.objects.exists()
    to_cat.refresh_from_db()
    assert to_cat.status == "cancelled"


def test_a_challenge_accepted_starts_the_match():
    ann, bob = make_user("ann"), make_user("bob")
    challenge = services.challenge_create(user=ann, opponent_username="BOB", rated=False)
    refused("no_such_challenge", services.challenge_accept, user=ann, challenge_id=challenge.pk)
    match = services.challenge_accept(user=bob, challenge_id=challenge.pk)
    challenge.refresh_from_db()
    assert (challenge.status, challenge.match_id) == ("accepted", match.pk)
    assert {match.player0_id, match.player1_id} == {ann.pk, bob.pk}


def test_a_challenge_declined_cannot_then_be_accepted():
    ann, bob = make_user("ann"), make_user("bob")
    challenge = services.challenge_create(user=ann, opponent_username="bob", rated=False)
    refused("no_such_challenge", services.challenge_decline, user=ann, challenge_id=challenge.pk)
    services.challenge_decline(user=bob, challenge_id=challenge.pk)
    assert Challenge.objects.get(pk=challenge.pk).status == "declined"
    refused("no_such_challenge", services.challenge_accept, user=bob, challenge_id=challenge.pk)
    assert not Match.objects.exists()


def test_a_challenger_may_cancel_and_a_repeat_replaces_the_pending_one():
    ann, bob = make_user("ann"), make_user("bob")
    first = services.challenge_create(user=ann, opponent_username="bob", rated=False)
    second = services.challenge_create(user=ann, opponent_username="bob", rated=False)
    assert Challenge.objects.get(pk=first.pk).status == "cancelled"
    refused("no_such_challenge", services.challenge_cancel, user=bob, challenge_id=second.pk)
    services.challenge_cancel(user=ann, challenge_id=second.pk)
    assert Challenge.objects.get(pk=second.pk).status == "cancelled"


def test_challenges_to_nobody_to_yourself_or_rated_off_the_ladder_are_refused():
    ann = make_user("ann", on_ladder=True)
    make_user("bob")
    refused(
        "no_such_player", services.challenge_create, user=ann, opponent_username="zed", rated=False
    )
    refused(
        "own_challenge", services.challenge_create, user=ann, opponent_username="ann", rated=False
    )
    refused(
        "opponent_not_on_ladder",
        services.challenge_create,
        user=ann,
        opponent_username="bob",
        rated=True,
    )


def test_pass_and_play_gives_one_user_both_seats_unrated():
    ann = make_user("ann", on_ladder=True)
    match = services.hotseat_start(user=ann)
    assert (match.player0_id, match.player1_id, match.mode, match.rated) == (
        ann.pk,
        ann.pk,
        "hotseat",
        False,
    )


def test_leaving_the_lobby_removes_the_seek_queue_place_and_sent_challenges():
    ann, bob = make_user("ann"), make_user("bob")
    services.seek_create(user=ann, rated=False)
    services.quick_join(user=ann, now_ms=NOW_MS)
    sent = services.challenge_create(user=ann, opponent_username="bob", rated=False)
    received = services.challenge_create(user=bob, opponent_username="ann", rated=False)
    services.lobby_leave(user=ann)
    assert not Seek.objects.exists() and not QuickEntry.objects.exists()
    assert Challenge.objects.get(pk=sent.pk).status == "cancelled"
    assert Challenge.objects.get(pk=received.pk).status == "pending"


def test_the_lobby_state_lists_seeks_waiting_players_and_live_matches():
    from lobby.selectors import lobby_state, personal_state

    ann, bob, cat = make_user("ann", rating=1620), make_user("bob"), make_user("cat")
    seek = services.seek_create(user=ann, rated=False, rating_max=1700)
    services.quick_join(user=cat, now_ms=NOW_MS)
    challenge = services.challenge_create(user=bob, opponent_username="ann", rated=False)
    state = lobby_state()
    assert state["seeks"] == [
        {
            "id": seek.pk,
            "owner": {"username": "ann", "rating": 1620, "provisional": True, "computer": None},
            "rated": False,
            "rating_min": None,
            "rating_max": 1700,
        }
    ]
    assert (state["waiting"], state["live"]) == (1, 0)
    mine = personal_state(ann)
    assert [c["id"] for c in mine["incoming"]] == [challenge.pk] and mine["outgoing"] == []
    assert personal_state(cat)["quick_since_ms"] == NOW_MS

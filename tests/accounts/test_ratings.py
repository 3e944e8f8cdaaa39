"""Rating results applied in the match's transaction (a result is never taken back: a finished
match is never voided, see tests/matches/test_service.py)."""

import pytest

from accounts.models import RatingChange, User
from accounts.services import rating_record_result
from tests.accounts.factories import make_match, make_user

pytestmark = pytest.mark.django_db


def finish(match, winner: int):
    """What the match service does when a rated match ends."""
    match.winner, match.reason = winner, "points"
    rating_record_result(match=match)
    match.save()
    return match


def test_a_rated_result_moves_both_ratings_and_is_stored_with_the_match():
    strong = make_user("strong", rating=1800, rated_games=30, on_ladder=True)
    weak = make_user("weak", rating=1500, rated_games=30, on_ladder=True)
    match = finish(make_match(strong, weak), winner=0)
    match.refresh_from_db()
    assert (match.rating_before0, match.rating_before1) == (1800, 1500)
    assert (match.rating_after0, match.rating_after1) == (1803, 1497)
    strong.refresh_from_db()
    weak.refresh_from_db()
    assert (strong.rating, strong.rated_games, strong.rated_wins, strong.rated_losses) == (
        1803,
        31,
        1,
        0,
    )
    assert (weak.rating, weak.rated_games, weak.rated_wins, weak.rated_losses) == (1497, 31, 0, 1)
    assert strong.last_rated_at is not None
    changes = {
        c.user_id: (c.before, c.after, c.score, c.k)
        for c in RatingChange.objects.filter(match=match)
    }
    assert changes == {strong.pk: (1800, 1803, 1, 20), weak.pk: (1500, 1497, 0, 20)}


def test_a_provisional_player_moves_by_k_40_against_an_established_one():
    newcomer = make_user("newcomer", rating=1500, rated_games=3, on_ladder=True)
    veteran = make_user("veteran", rating=1600, rated_games=40, on_ladder=True)
    match = finish(make_match(veteran, newcomer), winner=1)
    assert (match.rating_after0, match.rating_after1) == (1587, 1526)


def test_recording_twice_applies_the_result_once():
    a = make_user("ann", on_ladder=True)
    b = make_user("bob", on_ladder=True)
    match = finish(make_match(a, b), winner=0)
    rating_record_result(match=match)
    a.refresh_from_db()
    assert (a.rating, a.rated_games) == (1520, 1)
    assert RatingChange.objects.filter(match=match).count() == 2


def test_the_rating_history_leaves_voided_changes_out():
    from accounts.selectors import rating_history

    a = make_user("ann", on_ladder=True)
    b = make_user("bob", on_ladder=True)
    kept = finish(make_match(a, b), winner=0)
    voided = finish(make_match(a, b), winner=1)
    # Rows voided by earlier versions, which took a voided match's rating change back.
    RatingChange.objects.filter(match=voided).update(voided=True)
    assert [change.match_id for change in rating_history(User.objects.get(pk=a.pk))] == [kept.pk]

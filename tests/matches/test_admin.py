"""The admin shows a match and never writes it: a save from its form would put back the row as
the page read it, over every move made since (the service is the only writer of a match)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from matches.models import Match

pytestmark = pytest.mark.django_db


def test_staff_see_a_match_but_cannot_save_it_over_the_moves_made_since(table, make_user, client):
    client.force_login(make_user("root", is_staff=True, is_superuser=True))
    page = reverse("admin:matches_match_change", args=[table.match.pk])
    assert client.get(page).status_code == 200
    table.start(after_ms=1_000)  # a move after the page was read
    before = Match.objects.get(pk=table.match.pk)
    answer = client.post(page, {"mode": before.mode, "status": "waiting", "seq": 0})
    assert answer.status_code == 403
    after = Match.objects.get(pk=table.match.pk)
    assert (after.seq, after.status, bytes(after.snapshot)) == (
        before.seq, before.status, bytes(before.snapshot),
    )  # fmt: skip

"""What the match page and the replay show as "deal verified": each revealed round's seed,
commitment and contributions with the engine's fairness proof; and the page with the recipe,
whose verifier is docs/fairness.md's own."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from django.test import Client
from django.utils.html import escape

import engine
from matches import services
from matches.models import Match
from matches.selectors import match_state

from .conftest import T0

pytestmark = pytest.mark.django_db
DOC = Path(__file__).resolve().parents[2] / "docs" / "fairness.md"


def play_out(match: Match, *, until_round: int | None = None) -> Match:
    rng, now = random.Random(3), T0
    while not match.is_over and (until_round is None or match.round_count < until_round):
        state = match_state(match)
        now += 1_000
        starter = engine.starter(state)
        if starter is not None:
            seat, command = starter, {"type": "start"}
        elif state.decider is not None:
            seat = state.decider
            command = engine.BOTS["greedy"]().choose_from_view(engine.view(state, seat), rng)
        else:  # the deal waits for the players' contributions: each sends its own
            seat = next(s for s in (0, 1) if engine.view(state, s)["legal"].get("contribute"))
            command = engine.bots.contribution()
        player = match.player0 if seat == 0 else match.player1
        services.match_submit(match_id=match.pk, user=player, command=command, arrival_ms=now)
        match.refresh_from_db()
    return match


def test_every_revealed_round_is_listed_with_its_proof(make_user):
    match = services.match_create(player0=make_user(), player1=make_user(), now_ms=T0)
    match = play_out(match, until_round=3)
    deals = Client().get(f"/match/{match.pk}/deals.json").json()["deals"]
    revealed = [r for r in match.record["rounds"] if r["seed"] is not None]
    assert [d["round"] for d in deals] == list(range(1, len(revealed) + 1))
    assert all(d["verified"] for d in deals)
    assert [d["seed"] for d in deals] == [r["seed"] for r in revealed]
    assert all(engine.commitment_of(d["seed"]) == d["commitment"] for d in deals)


def test_a_round_whose_deal_does_not_follow_from_its_seed_is_not_verified(make_user):
    match = services.match_create(player0=make_user(), player1=make_user(), now_ms=T0)
    match = play_out(match, until_round=2)
    header = match.header  # the stored record (a live match's events are rows of their own)
    header["rounds"][0]["seed"] = engine.new_seed()  # not the committed one
    Match.objects.filter(pk=match.pk).update(header=header)
    deals = Client().get(f"/match/{match.pk}/deals.json").json()["deals"]
    assert deals[0]["verified"] is False


def test_the_recipe_page_shows_the_docs_own_verifier(db):
    page = Client().get("/fairness/").content.decode()
    block = re.search(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S).group(1)
    assert "import hashlib" in block and escape(block) in page

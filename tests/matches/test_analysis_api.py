"""/api/matches/{id}/analysis/: the expert's analysis of a finished match, requested by the first
GET, computed once by the task (this test plays the worker's part), kept and served."""

from __future__ import annotations

import random

import pytest
from django.test import Client

import engine
from matches import analysis, services
from matches.models import MatchAnalysis
from matches.selectors import match_state
from tests.support.dealing import deal_by_service

from .conftest import T0

pytestmark = pytest.mark.django_db


@pytest.fixture
def finished(make_user, settings):
    settings.ANALYSIS_BUDGET_MS = 2
    match = services.match_create(player0=make_user(), player1=make_user(), now_ms=T0)
    rng, now = random.Random(8), T0
    while not match.is_over:
        state = match_state(match)
        now += 1_000
        if deal_by_service(match, {0: match.player0, 1: match.player1}, now):
            continue
        if engine.starter(state) is not None:
            seat, command = engine.starter(state), {"type": "start"}
        else:
            seat = state.decider
            command = engine.BOTS["greedy"]().choose_from_view(engine.view(state, seat), rng)
        player = match.player0 if seat == 0 else match.player1
        services.match_submit(match_id=match.pk, user=player, command=command, arrival_ms=now)
        match.refresh_from_db()
    return match


def url(match) -> str:
    return f"/api/matches/{match.pk}/analysis/"


def test_the_first_request_queues_the_analysis_and_the_task_computes_it_once(
    finished, monkeypatch, django_capture_on_commit_callbacks
):
    queued = []
    monkeypatch.setattr(analysis, "_queue", queued.append)
    client = Client()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.get(url(finished))
        client.get(url(finished))
    assert (response.status_code, response.json()) == (202, {"status": "pending"})
    assert queued == [str(finished.pk)]  # asked twice, queued once
    assert analysis.analysis_compute(match_id=str(finished.pk)) == "done"
    done = client.get(url(finished))
    assert done.status_code == 200
    body = done.json()
    assert body["status"] == "done" and body["match"] == str(finished.pk)
    decisions = body["decisions"]
    assert decisions and {d["seat"] for d in decisions} == {0, 1}
    assert [s["seat"] for s in body["summary"]] == [0, 1]
    computed_at = MatchAnalysis.objects.get(pk=finished.pk).computed_at
    assert analysis.analysis_compute(match_id=str(finished.pk)) == "done"
    assert MatchAnalysis.objects.get(pk=finished.pk).computed_at == computed_at


def test_a_live_match_has_no_analysis(make_user):
    match = services.match_create(player0=make_user(), player1=make_user(), now_ms=T0)
    response = Client().get(url(match))
    assert response.status_code == 409 and response.json()["code"] == "not_finished"
    assert not MatchAnalysis.objects.exists()


def test_no_such_match_is_404(db):
    response = Client().get("/api/matches/00000000-0000-0000-0000-000000000000/analysis/")
    assert response.status_code == 404

"""The OpenAPI schema and its docs page; schemathesis drives every operation from the schema and
finds no server error and no response that breaks the schema. The cursor of the match lists is
fuzzed beyond the schema's plain string: base64 of ``p=``/``o=``/``r=`` with garbage in them."""

from __future__ import annotations

import pytest
import schemathesis
from django.core import signals
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from rest_framework.throttling import SimpleRateThrottle
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

from tests.api.strategies import cursors

pytestmark = pytest.mark.django_db

schema = schemathesis.openapi.from_wsgi("/api/schema/", get_wsgi_application())


@schema.hook
def flatmap_query(context, query):
    """An operation that takes a cursor gets one from ``tests.api.strategies.cursors`` in its
    fuzzed examples (a random string is almost never base64 of a query string, so the position
    would go untested); its coverage examples keep theirs (no cursor, empty, too long)."""
    if not isinstance(query, dict) or "cursor" not in context.operation.query:
        return st.just(query)
    return cursors().map(lambda cursor: {**query, "cursor": cursor})


@pytest.fixture
def like_the_test_client():
    """As Django's test client does (it reconnects the signals after each of its own requests,
    so this is per test): a request neither opens nor closes the test database's connection;
    and no throttling of the many examples."""
    rates = {scope: "1000000/min" for scope in ("anon", "user", "export")}
    for signal in (signals.request_started, signals.request_finished):
        signal.disconnect(close_old_connections)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(SimpleRateThrottle, "THROTTLE_RATES", rates)
        yield
    for signal in (signals.request_started, signals.request_finished):
        signal.connect(close_old_connections)


def test_the_schema_lists_every_endpoint(api):
    response = api.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    paths = set(response.json()["paths"])
    assert paths == {
        "/api/leaderboard/", "/api/players/{username}/", "/api/players/{username}/matches/",
        "/api/players/{username}/matches/export/", "/api/matches/", "/api/matches/live/",
        "/api/matches/{match_id}/", "/api/matches/{match_id}/analysis/",
    }  # fmt: skip


def test_the_docs_page_serves_swagger_ui_from_this_server(api):
    page = api.get("/api/docs/").content.decode()
    assert "swagger-ui" in page and "cdn" not in page.lower()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/" in page


def test_the_api_root_leads_to_its_docs(api):
    # Someone who types /api/ into the address bar lands on the docs, not on a 404.
    response = api.get("/api/")
    assert (response.status_code, response["Location"]) == (302, "/api/docs/")


@schema.parametrize()
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
def test_no_operation_errors_or_breaks_its_schema(case, world, like_the_test_client):
    case.call_and_validate(checks=[not_a_server_error, response_schema_conformance])

"""The home page."""

import pytest


@pytest.mark.django_db
def test_the_home_page_explains_the_game_inside_the_site_layout(client):
    response = client.get("/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "Spectacular Bid" in html
    assert 'class="site-header"' in html and 'class="site-nav"' in html
    assert "Fives" in html and "auction" in html
    assert "/static/css/site." in html  # hashed name from the manifest


@pytest.mark.django_db
def test_the_api_schema_is_served(client):
    response = client.get("/api/schema/")
    assert response.status_code == 200
    assert b"Spectacular Bid online API" in response.content

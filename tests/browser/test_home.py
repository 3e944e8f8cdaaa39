"""The home page in a real browser, served by a real Daphne."""

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.slow


def test_the_home_page_shows_the_game_with_the_site_styles(page: Page, daphne_server):
    page.goto(f"{daphne_server.url}/")
    expect(page).to_have_title("Spectacular Bid online")
    expect(page.get_by_role("heading", name="Spectacular Bid", exact=True)).to_be_visible()
    expect(page.get_by_role("navigation", name="Main")).to_be_visible()
    header_background = page.locator(".site-header").evaluate(
        "el => getComputedStyle(el).backgroundColor"
    )
    assert header_background == "rgb(29, 35, 43)"  # --ink: the stylesheet was served


def test_every_page_has_an_icon_and_favicon_ico_answers(page: Page, daphne_server):
    page.goto(f"{daphne_server.url}/")
    icon = page.locator('link[rel="icon"]').get_attribute("href")
    assert page.request.get(f"{daphne_server.url}{icon}").ok
    favicon = page.request.get(f"{daphne_server.url}/favicon.ico")
    assert favicon.ok and favicon.headers["content-type"].startswith("image/svg+xml")

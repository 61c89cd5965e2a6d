"""The address follows the open conversation (issue 37) in Chromium: opening one from the list pushes
its own address with the list's tab in the query; a reload lands on the same conversation and tab;
a tab chosen while it is open keeps it in the address; back and forward go through each, loading
the address again (no snapshot of a page with customers' data is kept in localStorage); a search and
a result opened from it survive a reload, the search box filled in."""
import re

from playwright.sync_api import expect

from core.db import db
from tests.conftest import customer_conversation
from tests.support.browser import log_in


def address(live_server, path: str):
    return re.compile(re.escape(f"{live_server}{path}") + "$")


def test_reload_back_and_forward_land_where_the_agent_was(page, live_server, tenant, agent):
    mine = customer_conversation(tenant, "Where is my refund?", name="Pending Pan")
    mine.status, mine.assignee_member_id = "pending", agent.id
    db.session.commit()
    log_in(page, live_server, agent.user.email)
    page.get_by_role("link", name="Pending", exact=True).click()
    expect(page).to_have_url(address(live_server, "/workbench?status=pending&view=all"))
    page.get_by_role("link", name="Mine", exact=True).click()
    expect(page).to_have_url(address(live_server, "/workbench?status=pending&view=mine"))
    page.get_by_role("link", name="Pending Pan").click()
    opened = f"/workbench/conversations/{mine.id}?status=pending&view=mine"
    expect(page).to_have_url(address(live_server, opened))
    page.reload()
    expect(page.locator("#thread-live h2")).to_have_text("Pending Pan")
    expect(page.get_by_role("link", name="Pending", exact=True)).to_have_attribute("aria-current", "page")
    expect(page.get_by_role("link", name="Mine", exact=True)).to_have_attribute("aria-current", "page")
    page.get_by_role("link", name="Open", exact=True).click()
    expect(page).to_have_url(address(live_server, f"/workbench/conversations/{mine.id}?status=open&view=mine"))
    for step, landed in ((page.go_back, opened), (page.go_back, "/workbench?status=pending&view=mine"),
                         (page.go_forward, opened)):
        with page.expect_navigation():  # the address is loaded again
            step()
        expect(page).to_have_url(address(live_server, landed))
        expect(page.locator("#thread-live")).to_have_count(1 if landed == opened else 0)
    expect(page.locator("#thread-live h2")).to_have_text("Pending Pan")
    assert page.evaluate("localStorage.getItem('htmx-history-cache')") is None  # no page kept in the browser


def test_a_search_and_the_result_opened_from_it_survive_a_reload(page, live_server, tenant, agent):
    found = customer_conversation(tenant, "Hello", name="Open Ou")
    customer_conversation(tenant, "Hi", name="Other Oz")
    db.session.commit()
    log_in(page, live_server, agent.user.email)
    page.get_by_role("searchbox", name="Search conversations").fill("Open Ou")
    page.get_by_role("button", name="Search", exact=True).click()
    expect(page).to_have_url(address(live_server, "/workbench/search?q=Open%20Ou&content=&from=&to="))
    results = page.get_by_role("list", name="Search results")
    results.get_by_role("link", name="Open Ou").click()
    expect(page).to_have_url(address(live_server, f"/workbench/conversations/{found.id}?q=Open%20Ou&content=&from=&to="))
    page.reload()
    expect(page.locator("#thread-live h2")).to_have_text("Open Ou")
    expect(page.get_by_role("list", name="Search results").get_by_role("link")).to_have_count(1)
    expect(page.get_by_role("searchbox", name="Search conversations")).to_have_value("Open Ou")

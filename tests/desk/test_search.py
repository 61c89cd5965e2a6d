"""Workbench search: customer fields, message content, Beijing date range with the end day whole,
every condition together, the 200-conversation scan bound with "continue looking", isolation."""
from datetime import timedelta

import pytest

from core.clock import utcnow
from desk.search import SCAN_STEP
from tests.support.desk import HX
from tests.support.search import beijing, fillers, make
from tests.support.sql import statements

CONTINUE = "Continue looking for older conversations"


def search(browser, **args) -> str:
    response = browser.get("/workbench/search", query_string=args, headers=HX)
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_data(as_text=True)


@pytest.mark.parametrize("typed", ["wang", "138 0013", "fang@example", "prefers e-mail"])
def test_the_search_box_matches_name_phone_email_and_internal_note(agent_client, tenant, typed):
    make(tenant, "Wang Fang", phone="+86 138 0013 8000", email="fang@example.com", note="Prefers e-mail")
    make(tenant, "Li Lei")
    page = search(agent_client, q=typed)
    assert "Wang Fang" in page and "Li Lei" not in page


@pytest.mark.parametrize("kind,direction", [("public", "inbound"), ("public", "outbound"),
                                            ("private_note", "outbound")])
def test_message_content_matches_incoming_outgoing_and_private_notes(agent_client, tenant, kind, direction):
    make(tenant, "Wang Fang", text="快递显示已签收", kind=kind, direction=direction)
    make(tenant, "Li Lei", text="退款")
    page = search(agent_client, content="已签收")
    assert "Wang Fang" in page and "Li Lei" not in page


def test_message_content_never_matches_attachment_text(agent_client, tenant):
    make(tenant, "Wang Fang", text="see the file", attachments=[{"name": "invoice-secret.pdf", "size": 10}])
    assert "No conversation matches" in search(agent_client, content="invoice-secret")


def test_every_condition_must_hold(agent_client, tenant):
    make(tenant, "Wang Fang", text="parcel late")
    make(tenant, "Wang Wei", text="refund please")
    page = search(agent_client, q="wang", content="refund")
    assert "Wang Wei" in page and "Wang Fang" not in page


def test_the_end_date_is_included_to_235959_beijing_and_the_next_midnight_is_not(agent_client, tenant):
    make(tenant, "Last Second", at=beijing("2026-11-20", "23:59:59.999999"))
    make(tenant, "Next Midnight", at=beijing("2026-11-21", "00:00:00"))
    make(tenant, "First Midnight", at=beijing("2026-11-19", "00:00:00"))
    make(tenant, "Day Before", at=beijing("2026-11-18", "23:59:59"))
    page = search(agent_client, **{"from": "2026-11-19", "to": "2026-11-20"})
    assert "Last Second" in page and "First Midnight" in page
    assert "Next Midnight" not in page and "Day Before" not in page


def test_one_sided_date_ranges(agent_client, tenant):
    make(tenant, "Old Case", at=beijing("2026-01-05", "12:00:00"))
    make(tenant, "New Case", at=beijing("2026-11-05", "12:00:00"))
    assert "Old Case" not in search(agent_client, **{"from": "2026-06-01"})
    assert "New Case" not in search(agent_client, to="2026-06-01")


def test_a_match_beyond_the_first_200_appears_only_after_continue_looking(agent_client, tenant):
    now = utcnow()
    make(tenant, "Needle Person", at=now - timedelta(days=1))  # the 201st most recent
    fillers(tenant, SCAN_STEP, now)
    first = search(agent_client, q="needle")
    assert "Needle Person" not in first and CONTINUE in first
    assert "No match found so far among the 200 most recent conversations" in first
    after = first.split("after=", 1)[1].split("&", 1)[0].replace("%7C", "|").replace("%3A", ":")
    second = search(agent_client, q="needle", after=after, seen="200", found="0")
    assert "Needle Person" in second and CONTINUE not in second and 'hx-swap-oob="outerHTML"' in second
    assert "1 found among the 201 most recent conversations: all searched" in second


def test_changing_a_condition_restarts_from_the_newest(agent_client, tenant):
    make(tenant, "Needle Person", at=utcnow())
    page = search(agent_client, q="needle")
    assert "Needle Person" in page and 'id="search-matches"' in page  # a fresh result list, not appended


def test_another_tenants_conversations_are_never_found(agent_client, tenant, other_tenant):
    make(other_tenant, "Foreign Needle", text="needle")
    assert "No conversation matches" in search(agent_client, q="needle")
    assert "No conversation matches" in search(agent_client, content="needle")


@pytest.mark.parametrize("args,says", [({"from": "yesterday"}, "Enter the first day"),
                                       ({"to": "2026-02-30"}, "Enter the last day"),
                                       ({"to": "9999-12-31"}, "Enter the last day"),
                                       ({"from": "0001-01-01"}, "Enter the first day"),
                                       ({"to": "0001-01-01"}, "Enter the last day"),
                                       ({"to": "1999-12-31"}, "Enter the last day"),
                                       ({"from": "1999-12-31", "to": "2026-11-19"}, "Enter the first day"),
                                       ({"q": "a", "after": "0001-01-01T00:00:00+14:00|"
                                                            "00000000-0000-0000-0000-000000000000"}, "search again"),
                                       ({"q": "a", "after": "2026-11-19T00:00:00|"
                                                            "00000000-0000-0000-0000-000000000000"}, "search again"),
                                       ({"from": "2026-11-20", "to": "2026-11-19"}, "swap them"),
                                       ({"q": "x" * 201}, "at most 200 characters"),
                                       ({"content": "a\x00b"}, "at most 200 characters"),
                                       ({"q": "a", "after": "garbage"}, "search again")])
def test_bad_conditions_are_explained(agent_client, args, says):
    response = agent_client.get("/workbench/search", query_string=args, headers=HX)
    assert response.status_code == 422 and says in response.get_data(as_text=True)


def test_no_condition_goes_back_to_the_list(agent_client, tenant):
    response = agent_client.get("/workbench/search", query_string={"q": "  "}, headers=HX)
    assert response.headers["HX-Redirect"] == "/workbench"


def test_without_javascript_a_search_is_a_whole_page(agent_client, tenant):
    make(tenant, "Needle Person")
    page = agent_client.get("/workbench/search", query_string={"q": "needle"}).get_data(as_text=True)
    assert "<html" in page and "Needle Person" in page and 'id="search-matches"' in page


def test_a_search_step_costs_the_same_statements_for_20_and_400_conversations(app, agent_client, tenant):
    fillers(tenant, 20, utcnow())
    search(agent_client, q="needle")  # the agent's heartbeat, written at most every 30 s, is not the search's cost
    few = statements(app, lambda: search(agent_client, q="needle", content="x"))
    fillers(tenant, 380, utcnow() - timedelta(days=1))
    many = statements(app, lambda: search(agent_client, q="needle", content="x"))
    assert few == many

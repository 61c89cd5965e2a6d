"""The console pages of record actions: addresses per version and action, a record's review page
(exact payload and target, confirmation, progress, outcome) and the marketing drafts page."""
import html
import re
import uuid

from sqlalchemy import func, select

from core.db import db
from studio.models import StudioActionBinding
from tests.conftest import csrf_from
from tests.support.actions import (TOKEN, action_definition, bound, drafts, professional, publish_new_version,
                                   run_count, save, send_actions)

HTMX = {"HX-Request": "true"}


def form_post(client, path: str, data: dict, headers: dict | None = None):
    """POST a console form with the page's CSRF token."""
    token = csrf_from(client.get("/extensions").get_data(as_text=True))
    return client.post(path, data={"csrf_token": token, **data}, headers=headers or {})


def text_of(response) -> str:
    """The page's text: tags dropped, spaces collapsed."""
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", "", response.get_data(as_text=True))))


def test_the_app_page_links_each_live_record_to_its_actions_and_the_addresses(api, admin_client, acting):
    record_id = save(api, acting, {"title": "Order 7"})
    page = admin_client.get(f"/extensions/{acting}").get_data(as_text=True)
    assert f'href="/extensions/{acting}/records/{record_id}/actions"' in page
    assert f'href="/extensions/{acting}/actions"' in page
    assert "v1 has 2 actions: Send to CRM, Promotion draft." in text_of(admin_client.get(f"/extensions/{acting}"))


def test_an_app_without_actions_says_so(api, admin_client, live_app):
    page = text_of(admin_client.get(f"/extensions/{live_app}"))
    assert "The live version defines no actions." in page and ">Actions<" not in page
    addresses = text_of(admin_client.get(f"/extensions/{live_app}/actions"))
    assert "No version of this application defines actions." in addresses


def test_binding_from_the_page_needs_the_confirmation_and_says_why_an_address_is_refused(admin_client, acting,
                                                                                         receiver, dns):
    path = f"/extensions/{acting}/actions/bind"
    form = {"version": "1", "action_key": "crm", "endpoint": receiver.url("localhost"), "bearer_token": TOKEN}
    refused = form_post(admin_client, path, form)
    assert refused.status_code == 422 and "Tick the confirmation first: nothing was done." in text_of(refused)
    dns.update({"internal.test": [["10.0.0.9"]], "localhost": [["127.0.0.1"]]})
    internal_url = f"https://internal.test:{receiver.port}/hook"
    internal = form_post(admin_client, path, {**form, "endpoint": internal_url, "confirm": "yes"})
    assert internal.status_code == 422
    assert "The host resolves to an internal or otherwise non-public address." in text_of(internal)
    assert f'value="{internal_url}"' in internal.get_data(as_text=True)  # kept to correct it
    assert db.session.scalar(select(func.count()).select_from(StudioActionBinding)) == 0
    done = form_post(admin_client, path, {**form, "confirm": "yes"})
    assert done.status_code == 302
    page = admin_client.get(f"/extensions/{acting}/actions")
    assert "v1 · crm: bound to localhost." in text_of(page)
    assert "Bound to localhost by" in text_of(page)
    assert "Bearer token: set (stored encrypted, never shown)." in text_of(page)
    assert TOKEN not in page.get_data(as_text=True)


def test_revoking_from_the_page_stops_the_action(admin_client, api, acting, receiver):
    bound(api, acting, receiver.url("localhost"))
    revoked = form_post(admin_client, f"/extensions/{acting}/actions/revoke", {"version": "1", "action_key": "crm"})
    assert revoked.status_code == 302
    assert "The address on localhost was revoked" in text_of(admin_client.get(f"/extensions/{acting}/actions"))
    again = form_post(admin_client, f"/extensions/{acting}/actions/revoke", {"version": "1", "action_key": "crm"})
    assert again.status_code == 422
    record_id = save(api, acting, {"title": "A"})
    review = text_of(admin_client.get(f"/extensions/{acting}/records/{record_id}/actions"))
    assert "No address is bound to this action of v1." in review and "Run Send to CRM" not in review


def test_the_review_page_shows_the_exact_payload_and_target_then_runs_once(admin_client, api, acting, receiver,
                                                                         redis_conn):
    binding_id = bound(api, acting, receiver.url("localhost", "/hooks/orders"), bearer_token=TOKEN)
    record_id = save(api, acting, {"title": "Order 7", "amount": 120, "tag": "vip"})
    path = f"/extensions/{acting}/records/{record_id}/actions"
    review = admin_client.get(path)
    text = text_of(review)
    assert f"POST {receiver.url('localhost', '/hooks/orders')}" in text
    assert '{ "title": "Order 7", "amount": 120 }' in text  # exactly what is sent, declared and filled fields only
    assert "Authorization: Bearer with the stored token (not shown)" in text and TOKEN not in text
    run_path = f"{path}/crm/run"
    unconfirmed = form_post(admin_client, run_path, {"version": "1", "binding_id": binding_id}, HTMX)
    assert unconfirmed.status_code == 422 and "Tick the confirmation first" in text_of(unconfirmed)
    assert run_count() == 0
    started = form_post(admin_client, run_path, {"version": "1", "binding_id": binding_id, "confirm": "yes"}, HTMX)
    assert started.status_code == 200 and 'aria-busy="true"' in started.get_data(as_text=True)
    poll = re.search(r'hx-get="([^"]+)"', started.get_data(as_text=True))[1]
    assert "Queued…" in text_of(started)
    send_actions(redis_conn)
    outcome = text_of(admin_client.get(poll, headers=HTMX))
    assert "Accepted: the receiver answered HTTP 200. Accepted means it took the request, not that its business " \
           "process completed." in outcome
    assert admin_client.get(poll).status_code == 302  # without HTMX: the record's review page
    form_post(admin_client, run_path, {"version": "1", "binding_id": binding_id, "confirm": "yes"}, HTMX)
    assert "Accepted" in text_of(admin_client.get(path)) and len(receiver.received) == 1 and run_count() == 1


def test_a_campaign_run_from_the_page_creates_a_draft_on_the_marketing_page(admin_client, api, acting, tenant):
    professional(tenant)
    record_id = save(api, acting, {"title": "Spring sale", "notes": "20% off", "tag": "vip"})
    path = f"/extensions/{acting}/records/{record_id}/actions"
    review = text_of(admin_client.get(path))
    assert all(shown in review for shown in ("NameSpring sale", "Content20% off", "AudienceCustomers tagged “vip”"))
    done = form_post(admin_client, f"{path}/promo/run", {"version": "1", "confirm": "yes"})
    assert done.status_code == 302
    assert "Marketing draft created. It sends nothing" in text_of(admin_client.get(path))
    page = text_of(admin_client.get("/marketing/drafts"))
    assert "Spring sale20% off Customers tagged “vip” Awaiting review" in page
    assert len(drafts()) == 1


def test_a_refused_campaign_says_why_on_the_page(admin_client, api, acting, tenant):
    professional(tenant, "shared")
    record_id = save(api, acting, {"title": "Sale", "notes": "Hi", "tag": "vip"})
    answer = form_post(admin_client, f"/extensions/{acting}/records/{record_id}/actions/promo/run",
                       {"version": "1", "confirm": "yes"}, HTMX)
    assert answer.status_code == 422
    assert "Campaign drafts need an independent official account of this workspace; a shared account is refused." \
        in text_of(answer)
    assert drafts() == []


def test_the_marketing_drafts_page_is_for_administrators(admin_client, agent_client):
    assert "No drafts yet." in text_of(admin_client.get("/marketing/drafts"))
    assert agent_client.get("/marketing/drafts").status_code == 403


def test_a_record_of_an_older_version_offers_no_run(admin_client, api, acting, receiver):
    bound(api, acting, receiver.url("localhost"))
    record_id = save(api, acting, {"title": "Old"})
    publish_new_version(api, acting, action_definition(name="Second"), 2)
    review = text_of(admin_client.get(f"/extensions/{acting}/records/{record_id}/actions"))
    assert "Actions run only on records of the live version." in review and "Run Send to CRM" not in review


def test_an_unknown_record_or_action_is_not_found(admin_client, acting):
    assert admin_client.get(f"/extensions/{acting}/records/{uuid.uuid4()}/actions").status_code == 404
    assert admin_client.get(f"/extensions/{acting}/action-runs/{uuid.uuid4()}", headers=HTMX).status_code == 404

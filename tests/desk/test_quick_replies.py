"""Quick replies: the console page (add, edit, delete, limits), the template market's bilingual
replies imported as the tenant's own with origin and licence, and tenant isolation."""
import pytest
from sqlalchemy import func, select

from core.db import db
from desk.models import QuickReply
from desk.quick_replies import LIMIT, add_reply
from desk.quick_reply_market import LICENSE, ORIGIN, REPLIES
from tests.conftest import csrf_from, login, seat


def post(browser, path: str, **data):
    token = csrf_from(browser.get("/quick-replies").get_data(as_text=True))
    return browser.post(path, data={"csrf_token": token, **data})


def replies(tenant) -> list[QuickReply]:
    db.session.expire_all()
    return list(db.session.scalars(select(QuickReply).where(QuickReply.tenant_id == tenant.id)
                                   .order_by(QuickReply.title)))


def test_an_administrator_adds_edits_and_deletes_a_quick_reply(admin_client, tenant):
    assert post(admin_client, "/quick-replies", title="Greeting", body="Hello!").status_code == 302
    [reply] = replies(tenant)
    assert "Greeting" in admin_client.get("/quick-replies").get_data(as_text=True)
    assert post(admin_client, f"/quick-replies/{reply.id}", title="Hello", body="Hi there").status_code == 302
    assert [(r.title, r.body) for r in replies(tenant)] == [("Hello", "Hi there")]
    assert post(admin_client, f"/quick-replies/{reply.id}/delete").status_code == 302
    assert replies(tenant) == []


@pytest.mark.parametrize("title,body,says", [
    ("", "Hello", "Give it a title"), ("x" * 81, "Hello", "Give it a title"),
    ("Greeting", "", "Write the reply"), ("Greeting", "x" * 2001, "Write the reply")])
def test_bad_titles_and_bodies_are_refused_next_to_the_field_keeping_the_input(admin_client, tenant, title, body,
                                                                              says):
    response = post(admin_client, "/quick-replies", title=title, body=body)
    page = response.get_data(as_text=True)
    assert response.status_code == 422 and says in page and 'aria-invalid="true"' in page
    assert replies(tenant) == []


def test_a_second_reply_with_the_same_title_is_refused(admin_client, tenant):
    post(admin_client, "/quick-replies", title="Greeting", body="Hello!")
    response = post(admin_client, "/quick-replies", title="Greeting", body="Hi!")
    assert response.status_code == 422 and "Another quick reply has this title" in response.get_data(as_text=True)
    assert len(replies(tenant)) == 1


def test_a_tenant_keeps_at_most_200_quick_replies(admin_client, tenant):
    for n in range(LIMIT - 1):
        add_reply(tenant.id, f"Reply {n:03}", "text")
    db.session.commit()
    assert post(admin_client, "/quick-replies", title="Last one", body="text").status_code == 302
    response = post(admin_client, "/quick-replies", title="One too many", body="text")
    assert response.status_code == 422 and "the most it may keep" in response.get_data(as_text=True)
    assert len(replies(tenant)) == LIMIT


def test_the_market_offers_the_replies_in_both_languages_with_origin_and_licence(admin_client):
    page = admin_client.get("/template-market/quick_replies").get_data(as_text=True)
    assert {r["lang"] for r in REPLIES} == {"zh-CN", "en"}
    for reply in REPLIES:
        assert reply["title"] in page
    assert ORIGIN in page and LICENSE in page


def test_importing_one_reply_makes_it_the_tenants_own_keeping_origin_and_licence(admin_client, tenant):
    entry = next(r for r in REPLIES if r["lang"] == "zh-CN")
    assert post(admin_client, f"/template-market/quick_replies/{entry['slug']}/import").status_code == 302
    [reply] = replies(tenant)
    assert (reply.title, reply.body, reply.license) == (entry["title"], entry["body"], LICENSE)
    assert reply.origin == f"{ORIGIN}: {entry['slug']}"
    assert post(admin_client, f"/quick-replies/{reply.id}", title="我的问候", body="改过的").status_code == 302


def test_importing_a_language_skips_the_titles_the_tenant_has(admin_client, tenant):
    english = [r for r in REPLIES if r["lang"] == "en"]
    add_reply(tenant.id, english[0]["title"], "our own wording")
    db.session.commit()
    response = post(admin_client, "/template-market/quick_replies/import", language="en")
    assert response.status_code == 302
    owned = {r.title: r.body for r in replies(tenant)}
    assert set(owned) == {r["title"] for r in english} and owned[english[0]["title"]] == "our own wording"


@pytest.mark.parametrize("path,data", [("/template-market/quick_replies/no-such-reply/import", {}),
                                       ("/template-market/quick_replies/import", {"language": "fr"})])
def test_unknown_market_entries_are_not_found(admin_client, path, data):
    assert post(admin_client, path, **data).status_code == 404


def test_another_tenants_reply_can_be_neither_edited_nor_deleted(admin_client, other_tenant):
    theirs = add_reply(other_tenant.id, "Theirs", "text")
    db.session.commit()
    assert post(admin_client, f"/quick-replies/{theirs.id}", title="Mine", body="x").status_code == 404
    assert post(admin_client, f"/quick-replies/{theirs.id}/delete").status_code == 404
    assert [r.title for r in replies(other_tenant)] == ["Theirs"]


def test_agents_cannot_reach_the_quick_replies_console(app, tenant):
    browser = app.test_client()
    login(browser, seat(tenant, "agent").user.email)
    assert browser.get("/quick-replies").status_code == 403
    assert browser.get("/template-market/quick_replies").status_code == 403
    assert db.session.scalar(select(func.count()).select_from(QuickReply)) == 0

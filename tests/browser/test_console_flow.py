"""What a person clicks through: log in, move around the console and workbench, log out."""
from playwright.sync_api import expect

from core.db import db
from desk.models import Conversation, Customer, Message
from tests.conftest import seat
from tests.support.browser import log_in


def test_admin_logs_in_reads_a_conversation_and_logs_out(page, live_server, tenant, admin):
    customer = Customer(tenant_id=tenant.id, name="Wang Fang")
    db.session.add(customer)
    db.session.flush()
    conversation = Conversation(tenant_id=tenant.id, customer_id=customer.id)
    db.session.add(conversation)
    db.session.flush()
    db.session.add(Message(tenant_id=tenant.id, conversation_id=conversation.id, direction="inbound",
                           text="快递显示已签收，但我没有收到包裹。"))
    db.session.commit()

    log_in(page, live_server, admin.user.email)
    expect(page).to_have_url(f"{live_server}/extensions")
    expect(page.get_by_role("navigation", name="Main")).to_contain_text("Open platform")
    expect(page.locator(".tenant")).to_have_text("Acme")

    page.get_by_role("link", name="Workbench").click()
    page.evaluate("window.stayed = true")
    page.get_by_role("link", name="Wang Fang").click()
    expect(page.locator("#conversation-pane")).to_contain_text("我没有收到包裹")
    expect(page).to_have_url(f"{live_server}/workbench/conversations/{conversation.id}?status=open&view=all")
    assert page.evaluate("window.stayed") is True  # swapped in by htmx, not a page load

    page.get_by_role("button", name="Log out").click()
    expect(page).to_have_url(f"{live_server}/login")
    page.goto(f"{live_server}/extensions")
    expect(page).to_have_url(f"{live_server}/login?next=%2Fextensions")


def test_wrong_password_shows_an_error_next_to_the_field(page, live_server, admin):
    page.goto(f"{live_server}/login")
    page.get_by_label("Email").fill(admin.user.email)
    page.get_by_label("Password").fill("wrong password")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("alert")).to_contain_text("Email or password is wrong")


def test_member_of_two_tenants_picks_one_by_keyboard(page, live_server, tenant, other_tenant):
    seat(tenant, "admin", "both@test.example")
    seat(other_tenant, "agent", "both@test.example")
    log_in(page, live_server, "both@test.example")
    expect(page.get_by_role("heading", name="Choose a tenant")).to_be_visible()
    page.get_by_role("button", name="Other Co").focus()
    page.keyboard.press("Enter")
    expect(page).to_have_url(f"{live_server}/workbench")
    expect(page.locator(".tenant")).to_have_text("Other Co")

"""The operator CLI of the contract, with --json output."""
import uuid

from sqlalchemy import func, select

from core.crypto import decrypt
from core.db import db
from desk.models import (Channel, Conversation, Customer, KnowledgeDocument, Member, Message,
                         OfficialAccount, Tenant)
from tests.support.cli import run


def test_tenants_create_prints_the_id(app):
    out = run(app, "tenants", "create", "--name", "Blue Sky", "--tier", "professional", "--json")
    tenant = db.session.get(Tenant, uuid.UUID(out["tenant_id"]))
    assert (tenant.name, tenant.tier, tenant.active) == ("Blue Sky", "professional", True)


def test_members_add_creates_a_user_who_can_log_in(app, tenant, client):
    out = run(app, "members", "add", "--tenant", str(tenant.id), "--email", "new@x.example",
              "--password", "long-enough-pw", "--role", "supervisor", "--display-name", "Nia", "--json")
    member = db.session.get(Member, uuid.UUID(out["member_id"]))
    assert str(member.user_id) == out["user_id"] and member.role == "supervisor"
    from tests.conftest import login
    assert login(client, "new@x.example", "long-enough-pw").headers["Location"] == "/workbench"


def test_members_add_refuses_a_duplicate_seat(app, tenant):
    args = ("members", "add", "--tenant", str(tenant.id), "--email", "dup@x.example",
            "--password", "long-enough-pw", "--role", "agent", "--json")
    run(app, *args)
    result = app.test_cli_runner().invoke(args=list(args))
    assert result.exit_code != 0 and "member_exists" in result.output


def test_channels_create_prints_a_secret_that_is_stored_encrypted(app, tenant):
    out = run(app, "channels", "create", "--tenant", str(tenant.id), "--name", "Chat", "--json")
    channel = db.session.get(Channel, uuid.UUID(out["channel_id"]))
    assert out["secret"] not in channel.secret_encrypted
    assert decrypt(channel.secret_encrypted) == out["secret"]


def test_channels_create_for_a_missing_tenant_fails(app):
    result = app.test_cli_runner().invoke(args=["channels", "create", "--tenant", str(uuid.uuid4()),
                                                "--name", "Chat", "--json"])
    assert result.exit_code != 0 and "not_found" in result.output


def _per_tenant(model, tenant_id) -> int:
    return db.session.scalar(select(func.count()).select_from(model).where(model.tenant_id == tenant_id))


def test_demo_seed_builds_two_complete_tenants(app):
    out = run(app, "demo", "seed", "--json")
    assert [t["tier"] for t in out["tenants"]] == ["professional", "standard"]
    kinds = {}
    for entry in out["tenants"]:
        tenant_id = uuid.UUID(entry["tenant_id"])
        roles = sorted(db.session.scalars(select(Member.role).where(Member.tenant_id == tenant_id)))
        assert roles == ["admin", "admin", "agent", "agent", "agent", "supervisor"]
        assert _per_tenant(Customer, tenant_id) == 30
        assert _per_tenant(Conversation, tenant_id) == 40
        assert _per_tenant(Channel, tenant_id) == 1
        statuses = set(db.session.scalars(select(KnowledgeDocument.status).where(
            KnowledgeDocument.tenant_id == tenant_id)))
        assert statuses == {"published", "draft", "expired"}
        kinds[entry["tier"]] = db.session.scalar(select(OfficialAccount.kind).where(
            OfficialAccount.tenant_id == tenant_id))
        assert decrypt(db.session.get(Channel, uuid.UUID(entry["channel_id"])).secret_encrypted) == \
            entry["channel_secret"]
    assert kinds["professional"] == "independent"


def test_demo_messages_span_sixty_days_in_chinese_and_english(app):
    run(app, "demo", "seed", "--json")
    texts = list(db.session.scalars(select(Message.text)))
    assert any("\u4e00" <= ch <= "\u9fff" for t in texts for ch in t)
    assert any(t.startswith("Hi") for t in texts)
    first, last = db.session.execute(select(func.min(Message.created_at), func.max(Message.created_at))).one()
    assert (last - first).days >= 40
    assert db.session.scalar(select(func.count()).where(Message.kind == "private_note")) > 0


def test_demo_customers_have_at_most_one_conversation_per_channel(app):
    run(app, "demo", "seed", "--json")
    pairs = db.session.execute(select(Conversation.customer_id, Conversation.channel_id, func.count())
                               .where(Conversation.channel_id.is_not(None))
                               .group_by(Conversation.customer_id, Conversation.channel_id)).all()
    assert len(pairs) == 60 and max(count for _, _, count in pairs) == 1


def test_demo_seed_refuses_to_run_twice(app):
    run(app, "demo", "seed", "--json")
    result = app.test_cli_runner().invoke(args=["demo", "seed", "--json"])
    assert result.exit_code != 0 and "demo_exists" in result.output


def test_demo_logins_work(app, client):
    out = run(app, "demo", "seed", "--json")
    from tests.conftest import login
    admin = out["tenants"][0]["members"][0]
    assert login(client, admin["email"], out["password"]).headers["Location"] == "/extensions"


def test_staff_links_open_restricted_sessions(app, admin, client):
    url = run(app, "staff", "impersonate", "--member", str(admin.id), "--json")["url"]
    assert client.get(url.replace("http://127.0.0.1:5000", "")).status_code == 302
    assert client.get("/extensions").status_code == 403
    link = run(app, "staff", "assistant-link", "--member", str(admin.id), "--json")["url"]
    assert "/assistant/login/" in link

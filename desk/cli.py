"""Operator CLI of the contract (DESIGN.md §6); every command prints JSON with --json."""
import json

import click
from flask.cli import AppGroup
from flask import Flask
from sqlalchemy import select

from core.api import ApiError
from core.db import db
from desk.channels import create_channel
from desk.handoff import issue_link_token
from desk.models import TIERS, Member, ROLES, Tenant
from desk.points import set_ai_points
from desk.sessions import ASSISTANT, IMPERSONATION
from desk.tenancy import add_member, create_tenant, deactivate_member, get_member, set_password

tenants_cli = AppGroup("tenants", help="Manage tenants.")
members_cli = AppGroup("members", help="Manage members.")
channels_cli = AppGroup("channels", help="Manage inbound channels.")
demo_cli = AppGroup("demo", help="Demo data.")
staff_cli = AppGroup("staff", help="Operator hand-off links for restricted sessions.")


def emit(data: dict, as_json: bool, text: str) -> None:
    """Print JSON for machines or one line for people."""
    click.echo(json.dumps(data, ensure_ascii=False) if as_json else text)


def commit_or_fail(action):
    """Run a service call in one transaction; domain errors become a clean CLI failure."""
    try:
        result = action()
        db.session.commit()
        return result
    except ApiError as err:
        db.session.rollback()
        raise click.ClickException(err.code) from None


@tenants_cli.command("create")
@click.option("--name", required=True)
@click.option("--tier", type=click.Choice(TIERS), default="standard")
@click.option("--json", "as_json", is_flag=True)
def tenants_create(name: str, tier: str, as_json: bool):
    """Create a tenant."""
    tenant = commit_or_fail(lambda: create_tenant(name, tier))
    emit({"tenant_id": str(tenant.id)}, as_json, f"tenant {tenant.id} created")


@tenants_cli.command("ai-points")
@click.option("--tenant", "tenant_id", type=click.UUID, required=True)
@click.option("--enable/--disable", "enabled", required=True)
@click.option("--json", "as_json", is_flag=True)
def tenants_ai_points(tenant_id, enabled: bool, as_json: bool):
    """Turn AI points on (generation metered, not capped at 20 a day) or off for a tenant."""
    tenant = commit_or_fail(lambda: set_ai_points(tenant_id, enabled))
    emit({"tenant_id": str(tenant.id), "ai_points_enabled": tenant.ai_points_enabled}, as_json,
         f"AI points {'enabled' if tenant.ai_points_enabled else 'disabled'} for tenant {tenant.id}")


@members_cli.command("add")
@click.option("--tenant", "tenant_id", type=click.UUID, required=True)
@click.option("--email", required=True)
@click.option("--password", required=True)
@click.option("--role", type=click.Choice(ROLES), required=True)
@click.option("--display-name")
@click.option("--json", "as_json", is_flag=True)
def members_add(tenant_id, email, password, role, display_name, as_json):
    """Add a member (creating the user on first use)."""
    member = commit_or_fail(lambda: add_member(tenant_id, email, password, role, display_name))
    emit({"user_id": str(member.user_id), "member_id": str(member.id)}, as_json,
          f"member {member.id} added")


def _on_member(member_id, action):
    """Apply `action` to the member in one transaction; the member (a CLI failure if unknown)."""
    def run():
        member = get_member(member_id)
        action(member)
        return member
    return commit_or_fail(run)


@members_cli.command("set-password")
@click.option("--member", "member_id", type=click.UUID, required=True)
@click.option("--password", required=True)
@click.option("--json", "as_json", is_flag=True)
def members_set_password(member_id, password, as_json):
    """Set the member's user's password (every tenant they belong to) and end all their sessions."""
    member = _on_member(member_id, lambda found: set_password(found.user, password))
    emit({"member_id": str(member.id), "user_id": str(member.user_id)}, as_json,
         f"password of user {member.user_id} set; their sessions have ended")


@members_cli.command("deactivate")
@click.option("--member", "member_id", type=click.UUID, required=True)
@click.option("--json", "as_json", is_flag=True)
def members_deactivate(member_id, as_json):
    """Deactivate a member's seat and end all of that user's sessions."""
    member = _on_member(member_id, deactivate_member)
    emit({"member_id": str(member.id), "user_id": str(member.user_id), "active": member.active},
         as_json, f"member {member.id} deactivated; their sessions have ended")


@channels_cli.command("create")
@click.option("--tenant", "tenant_id", type=click.UUID, required=True)
@click.option("--name", required=True)
@click.option("--json", "as_json", is_flag=True)
def channels_create(tenant_id, name, as_json):
    """Create a channel and print its signing secret once."""
    def create():
        if db.session.get(Tenant, tenant_id) is None:
            raise ApiError("not_found", 404)
        return create_channel(tenant_id, name)
    channel, secret = commit_or_fail(create)
    emit({"channel_id": str(channel.id), "secret": secret}, as_json,
          f"channel {channel.id} created; secret {secret}")


@demo_cli.command("seed")
@click.option("--json", "as_json", is_flag=True)
def demo_seed(as_json: bool):
    """Seed two demo tenants with members, customers, conversations and knowledge."""
    from desk.demo import seed_demo

    summary = commit_or_fail(seed_demo)
    emit(summary, as_json, demo_logins_text(summary))


def demo_logins_text(summary: dict) -> str:
    """The demo logins for people."""
    lines = ["Demo logins (password for all: %s):" % summary["password"]]
    for tenant in summary["tenants"]:
        lines.append(f"  {tenant['name']} ({tenant['tier']}):")
        lines += [f"    {m['role']:<10} {m['email']}" for m in tenant["members"]]
    return "\n".join(lines)


def _handoff_command(name: str, kind: str, route: str, summary: str) -> None:
    """Add a `staff` command that prints a one-time link opening a `kind` session as a member."""
    @staff_cli.command(name, help=summary)
    @click.option("--member", "member_id", type=click.UUID, required=True)
    @click.option("--base-url", default="http://127.0.0.1:5000")
    @click.option("--json", "as_json", is_flag=True)
    def command(member_id, base_url, as_json):
        member = db.session.scalar(select(Member).where(Member.id == member_id))
        if member is None:
            raise click.ClickException("not_found")
        url = f"{base_url.rstrip('/')}/{route}/{issue_link_token(kind, member)}"
        emit({"url": url}, as_json, url)


_handoff_command("impersonate", IMPERSONATION, "staff/impersonate",
                 "Print a one-time link (5 minutes) that opens an impersonation session as the member.")
_handoff_command("assistant-link", ASSISTANT, "assistant/login",
                 "Print a one-time link (5 minutes) for the embedded assistant's login path.")


def register(app: Flask) -> None:
    """Add the desk's command groups to `flask`."""
    for group in (tenants_cli, members_cli, channels_cli, demo_cli, staff_cli):
        app.cli.add_command(group)

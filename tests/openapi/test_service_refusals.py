"""The application service itself refuses what the administrator did not confirm, whoever calls it:
the processing by an external server, and each sensitive scope on its own (no page in between)."""
import pytest
from sqlalchemy import func, select

from core.api import ApiError
from core.db import db
from openapi.apps import CONFIRMED_SCOPES, SCOPES, create_app
from openapi.models import OpenApp, OpenTenantUsage
from openapi.views import SCOPE_CONFIRMATIONS

CUSTOMER_SCOPES = ["customers.basic.read", "customers.contact.read", "customers.notes.read"]


def _apps() -> int:
    return db.session.scalar(select(func.count()).select_from(OpenApp))


def _refused(tenant, admin, name="Partner CRM", scopes=CUSTOMER_SCOPES, **confirmations) -> list[str]:
    """What the service says is unconfirmed; nothing is created and no slot is taken."""
    with pytest.raises(ApiError) as refused:
        create_app(tenant.id, admin.user_id, name, scopes,
                   **{"processing_confirmed": True, "confirmed_scopes": CONFIRMED_SCOPES, **confirmations})
    assert (refused.value.code, refused.value.status) == ("confirmation_required", 400)
    db.session.rollback()
    assert _apps() == 0
    assert not db.session.scalar(select(OpenTenantUsage.app_count).where(OpenTenantUsage.tenant_id == tenant.id))
    return refused.value.extra["unconfirmed"]


def test_without_the_processing_confirmation_nothing_is_created(tenant, admin):
    assert _refused(tenant, admin, scopes=["app.records.read"], processing_confirmed=False) == ["processing"]


@pytest.mark.parametrize("processing", [None, "on", 1])
def test_only_true_confirms_the_processing(tenant, admin, processing):
    assert _refused(tenant, admin, scopes=["app.records.read"], processing_confirmed=processing) == ["processing"]


@pytest.mark.parametrize("scope", CONFIRMED_SCOPES)
def test_a_sensitive_scope_needs_its_own_confirmation(tenant, admin, scope):
    others = set(CONFIRMED_SCOPES) - {scope}
    assert _refused(tenant, admin, processing_confirmed=True, confirmed_scopes=others) == [scope]


def test_every_missing_confirmation_is_named_at_once(tenant, admin):
    assert _refused(tenant, admin, processing_confirmed=False, confirmed_scopes=set()) == \
        ["processing", *CONFIRMED_SCOPES]


def test_the_confirmations_come_before_anything_else_is_checked(tenant, admin):
    assert _refused(tenant, admin, name=" ", scopes=["customers.notes.read", "no.such.scope"],
                    confirmed_scopes=set()) == ["customers.notes.read"]


def test_with_every_confirmation_the_application_is_created(tenant, admin):
    made = create_app(tenant.id, admin.user_id, "Partner CRM", list(reversed(SCOPES)),
                      processing_confirmed=True, confirmed_scopes=set(CONFIRMED_SCOPES))
    db.session.commit()
    assert made.app.scopes == list(SCOPES) and made.token and _apps() == 1


def test_a_scope_that_needs_no_confirmation_needs_only_the_processing_one(tenant, admin):
    made = create_app(tenant.id, admin.user_id, "Partner CRM", ["customers.basic.read", "app.records.write"],
                      processing_confirmed=True, confirmed_scopes=set())
    assert made.app.scopes == ["customers.basic.read", "app.records.write"]


def test_the_console_offers_a_checkbox_for_exactly_the_scopes_that_need_one():
    assert set(SCOPE_CONFIRMATIONS) == set(CONFIRMED_SCOPES)

"""Finding rules, revisions and grants inside a tenant: one place for the queries that services,
plans, the scheduler and message events share. Foreign and missing ids are both 404."""
import uuid

from sqlalchemy import Select, select

from core.api import ApiError
from core.db import db, tenant_row
from rules.catalog import LIMITS
from rules.models import AutomationGrant, AutomationRule, AutomationRuleRevision


def possible_revision(number: int) -> bool:
    """Whether a rule could have this revision (also keeps huge numbers out of SQL)."""
    return number <= LIMITS["revisions_per_rule"]


def get_rule(tenant_id: uuid.UUID, rule_id: uuid.UUID) -> AutomationRule:
    """One rule of the tenant (404 otherwise)."""
    return tenant_row(AutomationRule, tenant_id, rule_id)


def get_revision(rule: AutomationRule, number: int) -> AutomationRuleRevision:
    """One saved revision of a rule (404 when it does not exist)."""
    row = None
    if possible_revision(number):
        row = db.session.scalar(select(AutomationRuleRevision).where(
            AutomationRuleRevision.rule_id == rule.id,
            AutomationRuleRevision.tenant_id == rule.tenant_id,
            AutomationRuleRevision.revision == number))
    if row is None:
        raise ApiError("not_found", 404)
    return row


def revision_definition(rule_id: uuid.UUID, revision: int) -> dict:
    """The saved definition of one revision of a rule."""
    return db.session.scalar(select(AutomationRuleRevision.definition).where(
        AutomationRuleRevision.rule_id == rule_id, AutomationRuleRevision.revision == revision))


def current_grant(tenant_id: uuid.UUID, rule_id: uuid.UUID) -> AutomationGrant | None:
    """The live grant the rule holds now; None when it is a draft, paused or missing."""
    return db.session.scalar(select(AutomationGrant).join(
        AutomationRule, AutomationRule.grant_id == AutomationGrant.id).where(
        AutomationRule.id == rule_id, AutomationRule.tenant_id == tenant_id,
        AutomationRule.state == "published", AutomationGrant.tenant_id == tenant_id,
        AutomationGrant.revoked_at.is_(None)))


def granted(mode: str) -> Select:
    """(tenant_id, rule_id, grant_id, revision, granted_at, definition, name) of every published
    rule whose current grant has execution mode `mode`, with the definition of the granted revision."""
    return (select(AutomationRule.tenant_id, AutomationRule.id.label("rule_id"), AutomationGrant.id.label("grant_id"),
                   AutomationGrant.revision, AutomationGrant.created_at.label("granted_at"),
                   AutomationRuleRevision.definition, AutomationRule.name)
            .join(AutomationGrant, AutomationGrant.id == AutomationRule.grant_id)
            .join(AutomationRuleRevision, (AutomationRuleRevision.rule_id == AutomationRule.id)
                  & (AutomationRuleRevision.revision == AutomationGrant.revision))
            .where(AutomationRule.state == "published", AutomationGrant.tenant_id == AutomationRule.tenant_id,
                   AutomationGrant.revoked_at.is_(None), AutomationGrant.execution_mode == mode))

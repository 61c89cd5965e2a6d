"""Marketing drafts: campaigns prepared from elsewhere (a Studio record's campaign action) that wait
here for audience and consent review, approval and scheduling by the bulk-send process. Nothing
here sends: a draft is only a row in `draft` state (sending is reviewed separately)."""
import uuid

from flask_babel import lazy_gettext as _l
from sqlalchemy import select

from core.api import ApiError
from core.db import db
from desk.models import MarketingDraft, OfficialAccount, Tenant

CAMPAIGN_TIER = "professional"
REVIEW_STATES = {"draft": _l("Awaiting review")}  # approval and scheduling happen in the bulk-send process
ALL_OPTED_IN = _l("All eligible opted-in recipients")
LIST_LIMIT = 100


def campaign_account(tenant_id: uuid.UUID) -> OfficialAccount:
    """The tenant's independent official account that campaigns go out from.

    403 `campaign_tier_required` below the professional tier; 403 `independent_account_required`
    when the tenant has no official account of its own (a shared account is refused).
    """
    tier = db.session.scalar(select(Tenant.tier).where(Tenant.id == tenant_id))
    if tier != CAMPAIGN_TIER:
        raise ApiError("campaign_tier_required", 403)
    account = db.session.scalar(select(OfficialAccount).where(
        OfficialAccount.tenant_id == tenant_id, OfficialAccount.kind == "independent")
        .order_by(OfficialAccount.created_at, OfficialAccount.id).limit(1))
    if account is None:
        raise ApiError("independent_account_required", 403)
    return account


def create_draft(account: OfficialAccount, actor_id: uuid.UUID | None, title: str, body: str,
                 audience_tag: str | None, source: str, source_ref: str) -> MarketingDraft:
    """Save an unsent campaign draft on the independent official account (`campaign_account`)."""
    draft = MarketingDraft(tenant_id=account.tenant_id, official_account_id=account.id, title=title, body=body,
                           audience_tag=audience_tag, source=source, source_ref=source_ref, created_by=actor_id)
    db.session.add(draft)
    db.session.flush()
    return draft


def tenant_drafts(tenant_id: uuid.UUID) -> list[MarketingDraft]:
    """The tenant's latest drafts, newest first."""
    return list(db.session.scalars(select(MarketingDraft).where(MarketingDraft.tenant_id == tenant_id)
                                   .order_by(MarketingDraft.created_at.desc(), MarketingDraft.id).limit(LIST_LIMIT)))

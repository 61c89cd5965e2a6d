"""The AI usage console page: whether AI points are on, the generation quota, the points ledger."""
from flask import Blueprint, render_template

from desk.points import latest_entries, usage_summary
from desk.sessions import admin_console_required, current_member
from studio.catalog import LIMITS
from studio.quota import quota_state

bp = Blueprint("points", __name__)


@bp.get("/ai-usage")
@admin_console_required
def ai_usage():
    """The tenant's AI points setting, generation quota and ledger (read-only)."""
    tenant = current_member().tenant
    quota = quota_state(tenant.id, tenant.ai_points_enabled)
    return render_template("studio/ai_usage.html", tenant=tenant, quota=quota,
                           day_limit=LIMITS["generations_per_tenant_per_day"],
                           summary=usage_summary(tenant.id), entries=latest_entries(tenant.id))

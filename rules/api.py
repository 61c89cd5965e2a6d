"""Console JSON API of the automation rules under /api/extensions (document 2).

Thin views: the body as one JSON object, read by `rules.bodies` into the service's typed
arguments, one service call, commit, the envelope.
"""
import uuid

from flask import Blueprint
from flask_login import current_user

from core.api import ApiError, ok
from core.db import db
from core.guards import console_json_body
from core.queue import commit_then_enqueue
from core.web import answer_unreachable_stores, close_when_off
from desk.sessions import admin_console_required, current_member
from rules import bodies, execution, plans, preview, runs, service
from rules.catalog import LIMITS

bp = Blueprint("rules_api", __name__, url_prefix="/api/extensions")
answer_unreachable_stores(bp, "extensions_unavailable")
close_when_off(bp, "EXTENSIONS_ENABLED", "extensions_disabled")


def _body() -> dict:
    """The console POST body as one JSON object (32,000 bytes at most)."""
    return console_json_body(LIMITS["body_bytes"])


def _done(data: dict, status: int = 200):
    """Commit what the service wrote (an audit row, a ledger row), then answer."""
    db.session.commit()
    return ok(data, status)


@bp.post("/automation-preview")
@admin_console_required
def automation_preview():
    """Simulate a rule on synthetic samples: nothing read, saved, started or assigned. The only
    write is the AI points ledger row of a semantic preview, kept also when a model call failed."""
    simulation = bodies.simulation(_body())
    try:
        data = preview.preview(current_member().tenant_id, simulation)
    except ApiError:
        db.session.commit()  # the tokens of the model calls that answered before the failure
        raise
    return _done(data)


@bp.get("/automation-rules")
@admin_console_required
def rules_index():
    """The tenant's rules, the members they can bind, the permissions per mode and the switches."""
    return ok(service.overview(current_member().tenant_id))


@bp.post("/automation-rules")
@admin_console_required
def save_rule():
    """Save a new rule or a new draft revision of one (201)."""
    definition, change = bodies.rule_to_save(_body())
    return _done(service.save_rule(current_member().tenant_id, current_user.id, definition, change), 201)


@bp.get("/<uuid:rule_id>/rule-versions")
@admin_console_required
def rule_versions(rule_id: uuid.UUID):
    """A rule and its recent revisions."""
    return ok(service.rule_versions(current_member().tenant_id, rule_id))


@bp.post("/<uuid:rule_id>/rule-publish")
@admin_console_required
def publish_rule(rule_id: uuid.UUID):
    """Publish a revision under a fresh grant for the confirmed execution mode."""
    publication = bodies.publication(_body())
    return _done(service.publish(current_member().tenant_id, current_user.id, rule_id, publication))


@bp.post("/<uuid:rule_id>/rule-pause")
@admin_console_required
def pause_rule(rule_id: uuid.UUID):
    """Pause a rule: later commands are blocked."""
    bodies.empty(_body())
    return _done(service.pause(current_member().tenant_id, current_user.id, rule_id))


@bp.post("/<uuid:rule_id>/rule-plan")
@admin_console_required
def plan_rule(rule_id: uuid.UUID):
    """Queue a read-only plan of the published rule (202): committed, then its job enqueued."""
    bodies.empty(_body())
    run = plans.request_plan(current_member().tenant_id, current_user.id, rule_id)
    commit_then_enqueue(plans.plan_job(run.id))
    return ok(runs.run_json(run), 202)


@bp.get("/<uuid:rule_id>/rule-runs")
@admin_console_required
def rule_runs(rule_id: uuid.UUID):
    """The rule's latest 30 runs with their per-conversation results."""
    return ok(runs.rule_runs(current_member().tenant_id, rule_id))


@bp.post("/<uuid:run_id>/execute-plan")
@admin_console_required
def execute_plan(run_id: uuid.UUID):
    """Approve one execution of a fresh complete plan (202): its commands are queued, not done."""
    confirmed, permission = bodies.approval(_body())
    tenant_id = current_member().tenant_id
    data = execution.request_execution(tenant_id, current_user.id, run_id, confirmed=confirmed, permission=permission)
    db.session.commit()
    execution.queue_jobs(tenant_id, run_id)
    return ok(data, 202)


@bp.get("/<uuid:run_id>/execution-status")
@admin_console_required
def execution_status(run_id: uuid.UUID):
    """The run's command receipts."""
    return ok(execution.execution_status(current_member().tenant_id, run_id))

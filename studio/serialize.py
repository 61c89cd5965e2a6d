"""JSON shapes of applications, versions and records, as the console API returns them."""
from core.clock import iso
from studio.actions import Entry
from studio.models import StudioActionBinding, StudioActionRun, StudioApp, StudioRecord, StudioVersion


def app_json(studio_app: StudioApp) -> dict:
    """An application with its latest version number."""
    return {"tenant_id": str(studio_app.tenant_id), "extension_id": str(studio_app.id), "name": studio_app.name,
            "enabled": studio_app.enabled, "active_version": studio_app.active_version,
            "latest_version": studio_app.latest_version, "created_at": iso(studio_app.created_at),
            "updated_at": iso(studio_app.updated_at)}


def version_json(version: StudioVersion) -> dict:
    """One immutable version."""
    return {"tenant_id": str(version.tenant_id), "extension_id": str(version.app_id),
            "version": version.version, "definition": version.definition,
            "definition_hash": version.definition_hash,
            "created_by": str(version.created_by) if version.created_by else None,
            "created_at": iso(version.created_at), "simulated": version.simulated}


def record_json(record: StudioRecord) -> dict:
    """One saved record with its rule trace."""
    return {"record_id": str(record.id), "version": record.version, "data": record.data,
            "trace": record.trace, "created_at": iso(record.created_at)}


def run_json(run: StudioActionRun) -> dict:
    """A record action's run: its status and, once known, the receiver's answer, the failure or the
    marketing draft (never the address or the token)."""
    data = {"run_id": str(run.id), "record_id": str(run.record_id), "version": run.version,
            "action_key": run.action_key, "kind": run.kind, "status": run.status,
            "requested_at": iso(run.created_at), "finished_at": iso(run.finished_at)}
    if run.http_status is not None:
        data["http_status"] = run.http_status
    if run.error is not None:
        data["error"] = run.error
    if run.campaign_id is not None:
        data["campaign_id"] = str(run.campaign_id)
    return data


def entry_json(entry: Entry) -> dict:
    """An action and its binding as GET /{id}/actions answers it."""
    return {"version": entry.version, "live": entry.live, "action_key": entry.action["key"],
            "title": entry.action["title"], "kind": entry.action["kind"],
            "binding": binding_json(entry.binding, entry.bound_by) if entry.binding else None}


def binding_json(binding: StudioActionBinding, bound_by_email: str | None) -> dict:
    """What an administrator sees of a binding: the host, never the path, the token or its value."""
    return {"binding_id": str(binding.id), "version": binding.version, "action_key": binding.action_key,
            "endpoint_host": binding.endpoint_host, "bearer_token_set": binding.bearer_token is not None,
            "enabled": binding.enabled, "bound_at": iso(binding.bound_at), "bound_by": bound_by_email,
            "revoked_at": iso(binding.revoked_at)}

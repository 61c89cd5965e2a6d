"""The automation console pages driven through their forms: the editor as the rotation template
posts it, and the publish dialog."""
from tests.conftest import csrf_from

BASE = "/extensions/automation"
HTMX = {"HX-Request": "true"}


def page_text(response) -> str:
    """The response body as text."""
    return response.get_data(as_text=True)


def post_form(client, path: str, data: dict, **kwargs):
    """POST a page form with the page's CSRF token."""
    token = csrf_from(page_text(client.get(BASE)))
    return client.post(path, data={"csrf_token": token, **data}, **kwargs)


def editor(**changes) -> dict:
    """The editor as the rotation template posts it (placeholders, nothing bound), plus changes."""
    return {
        "rule_id": "", "name": "Weekday rotation", "trigger": "weekly", "slots_count": "2",
        "slots-0-weekdays": ["1", "3", "5"], "slots-0-time": "09:00", "slots-0-member": "",
        "slots-0-placeholder": "Agent A",
        "slots-1-weekdays": ["2", "4"], "slots-1-time": "09:00", "slots-1-member": "",
        "slots-1-placeholder": "Agent B",
        "assignee-member": "", "assignee-placeholder": "", "filter": "none", "keywords": "", "labels": "",
        "min_confidence": "0.8", "statuses": ["open", "pending"], "max_actions": "20",
        "samples_count": "0", "samples_paste": "", "instant": "2026-11-23T08:30", **changes}


def bound(first, second=None, **changes) -> dict:
    """The template's two slots bound to agents."""
    return editor(**{"slots-0-member": str(first.id), "slots-1-member": str((second or first).id), **changes})


def publish(client, rule_id: str, mode: str = "plan_only", revision: int = 1, expected: str = "", confirm=True):
    """Submit the publish dialog."""
    data = {"revision": str(revision), "expected_active_revision": expected, "execution_mode": mode}
    if confirm:
        data["confirm"] = "on"
    return post_form(client, f"{BASE}/{rule_id}/publish", data, follow_redirects=True)

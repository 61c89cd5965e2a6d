"""Turning HTML form posts into the JSON shapes the studio services take."""
import json

from flask_babel import gettext as _
from werkzeug.datastructures import MultiDict

from core import strict_json
from core.api import ApiError
from core.forms import form_decimal, number_or_text


def form_to_input(definition: dict, form: MultiDict) -> dict:
    """The submitted input of a definition's form: empty means not provided, checkboxes are booleans."""
    data = {}
    for field in definition["fields"]:
        key, kind = field["key"], field["type"]
        if kind == "checkbox":
            data[key] = form.get(f"f_{key}") == "on"
            continue
        text = form.get(f"f_{key}", "")
        if text == "":
            continue
        data[key] = number_or_text(text.strip(), form_decimal) if kind == "number" else text
    return data


def parse_definition_text(text: str) -> object:
    """The advanced editor's text as JSON through the strict reader: `400 invalid_json` when it is
    not JSON, or names a property twice (which copy would count is not for us to guess); the detail
    says which in the page's language (only the editor's page shows it)."""
    try:
        return strict_json.loads(text)
    except strict_json.DuplicateName as twice:
        problem = _("the text names %(name)s twice", name=json.dumps(twice.name))
        raise ApiError("invalid_json", 400, detail=problem) from None
    except (ValueError, RecursionError):  # RecursionError: nested too deeply to be a definition
        raise ApiError("invalid_json", 400, detail=_("the text is not valid JSON")) from None


def split_script(definition: dict) -> tuple[dict, str]:
    """The advanced editor's two boxes: the definition without `code`, and the script source."""
    rest = {key: value for key, value in definition.items() if key != "code"}
    return rest, definition.get("code", {}).get("source", "")


def with_script(raw: object, script: str) -> object:
    """Put the script box's source into the definition (browsers post CRLF line breaks)."""
    source = script.replace("\r\n", "\n")
    if not source.strip() or not isinstance(raw, dict):
        return raw
    if "code" in raw:
        raise ApiError("invalid_definition", 400, detail="code")
    return {**raw, "code": {"language": "javascript", "source": source}}

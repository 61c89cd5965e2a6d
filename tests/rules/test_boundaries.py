"""What the rules package may touch (document 2, "Events" 4 and 6; issue 14): rules never write a
desk table themselves (reassignment only through the desk's atomic adapter, AI points only through
the desk's ledger), and never run scripts, send webhooks or messages, or call out except to the
model through `core.model`."""
import ast

from core.config import PROJECT_ROOT
from desk import models as desk_models
from core.db import Base

RULES = sorted((PROJECT_ROOT / "rules").glob("*.py"))
DESK_MODELS = {name for name, value in vars(desk_models).items()
               if isinstance(value, type) and issubclass(value, Base) and value is not Base}
WRITES = {"update", "insert", "delete"}
FORBIDDEN_IMPORTS = ("openapi", "studio.scripting", "core.egress", "desk.channels", "requests", "httpx",
                     "urllib", "smtplib", "socket", "subprocess")


def _imports(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append(node.module or "")
    return found


def test_rules_never_write_a_desk_table_themselves():
    assert {"Conversation", "AssignmentReceipt", "Message", "AiPointsEntry"} <= DESK_MODELS
    writes = []
    for path in RULES:
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
                continue
            target = node.args[0] if node.args else None
            if node.func.id in WRITES and isinstance(target, ast.Name) and target.id in DESK_MODELS:
                writes.append(f"{path.name}:{node.lineno} {node.func.id}({target.id})")
            if node.func.id in DESK_MODELS:  # a new desk row built here
                writes.append(f"{path.name}:{node.lineno} {node.func.id}(...)")
    assert writes == []


def test_rules_never_import_scripts_webhooks_channels_or_an_http_client():
    offending = [f"{path.name}: {name}" for path in RULES for name in _imports(ast.parse(path.read_text()))
                 if any(name == banned or name.startswith(banned + ".") for banned in FORBIDDEN_IMPORTS)]
    assert offending == []

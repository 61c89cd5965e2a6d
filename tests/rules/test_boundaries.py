"""What the rules package may touch (document 2, "Events" 4 and 6; issue 14): rules never write a
desk table themselves (reassignment only through the desk's atomic adapter, AI points only through
the desk's ledger). That they never run scripts, send webhooks or messages, or call out except to
the model is a contract of `.importlinter` (tests/test_layers.py)."""
import ast

from core.config import PROJECT_ROOT
from desk import models as desk_models
from core.db import Base

RULES = sorted((PROJECT_ROOT / "rules").rglob("*.py"))
DESK_MODELS = {name for name, value in vars(desk_models).items()
               if isinstance(value, type) and issubclass(value, Base) and value is not Base}
WRITES = {"update", "insert", "delete"}


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

"""Asking the platform model for one label out of a list (intent classification, semantic routing):
the answer's schema, the untrusted text block of the prompt and the reading of the answer."""
import json
import math
import re

from core.api import ApiError

LABEL_SCHEMA = {
    "type": "object",
    "properties": {"label": {"type": "string"},
                   "confidence": {"type": "number", "minimum": 0, "maximum": 1}},
    "required": ["label", "confidence"],
    "additionalProperties": False,
}
_DELIMITER_RUN = re.compile(r"<{3,}|>{3,}")


def labelled_prompt(labels: list[str], texts: list[str], fence: tuple[str, str]) -> str:
    """The labels as a JSON list, then each text as one JSON line between the fence's lines; a run
    of `<` or `>` inside a text is spaced out, so no text can open or close the block."""
    lines = [json.dumps(_DELIMITER_RUN.sub(lambda m: " ".join(m[0]), text), ensure_ascii=False) for text in texts]
    return "\n".join([f"Labels: {json.dumps(labels, ensure_ascii=False)}", fence[0], *lines, fence[1]])


def _confidence(value: object) -> float | None:
    """The model's confidence when it is a number from 0 to 1, else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) and 0 <= value <= 1 else None


def read_label(content: object) -> tuple[str | None, float | None]:
    """The label (None when not a string) and confidence (None when not a number from 0 to 1) the
    model answered; 502 model_invalid_response when either key is missing. The caller decides
    whether the label is one of its list."""
    if not isinstance(content, dict) or not {"label", "confidence"} <= content.keys():
        raise ApiError("model_invalid_response", 502)
    label = content["label"] if isinstance(content["label"], str) else None
    return label, _confidence(content["confidence"])

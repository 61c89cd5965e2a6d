"""Asking the platform model for one label out of a list (intent classification, semantic routing):
the reserved label, the check of an administrator's label list, the prompt, the answer's schema and
the reading of the answer."""
import json
import math

from core.api import ApiError
from core.prompt import fenced
from core.validation import check_array, check_distinct, check_text, fail, item_at

# The label the model answers when it cannot tell (spec); administrators' labels never contain it.
RESERVED_LABEL = "无法判断"
LABEL_SCHEMA = {
    "type": "object",
    "properties": {"label": {"type": "string"},
                   "confidence": {"type": "number", "minimum": 0, "maximum": 1}},
    "required": ["label", "confidence"],
    "additionalProperties": False,
}


def check_labels(value: object, path: str, most: int, chars: int) -> list[str]:
    """1 to `most` distinct single-line labels of at most `chars` characters, none containing the
    reserved label anywhere."""
    items = check_array(value, path, 1, most)
    labels = [check_text(item, item_at(path, index), chars) for index, item in enumerate(items)]
    for index, label in enumerate(labels):
        if RESERVED_LABEL in label:
            fail(item_at(path, index))
    check_distinct(labels, path)
    return labels


def labelled_prompt(labels: list[str], texts: list[str], fence: tuple[str, str]) -> str:
    """The labels as a JSON list, then each text as one JSON line inside the fence."""
    lines = [json.dumps(text, ensure_ascii=False) for text in texts]
    return "\n".join([f"Labels: {json.dumps(labels, ensure_ascii=False)}", fenced(lines, fence)])


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

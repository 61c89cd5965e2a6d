"""Building blocks of the JSON schemas given to the model, built from a validator's own tables."""
from core.labels import RESERVED_LABEL


def enum(values: tuple) -> dict:
    """One of fixed values."""
    return {"enum": list(values)}


def array(items: dict, low: int, high: int, unique: bool = True) -> dict:
    """An array of `low` to `high` items."""
    return {"type": "array", "items": items, "minItems": low, "maxItems": high, "uniqueItems": unique}


def shaped_object(shapes: dict, shape: str, properties: dict, description: str | None = None) -> dict:
    """The object `shape` of a validator's `shapes` table: exactly its properties, its required ones
    required. Refuses to build when the table and `properties` disagree, so a schema cannot drift
    from the validator it describes."""
    required, optional = shapes[shape]
    if set(properties) != {*required, *optional}:
        raise RuntimeError(f"the schema of `{shape}` is out of step with the validator's SHAPES")
    schema = {"type": "object", "additionalProperties": False, "required": list(required),
              "properties": {name: properties[name] for name in (*required, *optional)}}
    if description:
        schema["description"] = description
    return schema


def text(max_length: int, note: str = "", multiline: bool = False, min_length: int = 1) -> dict:
    """A trimmed text of at most `max_length` characters, with what else it must be."""
    lines = "may span lines" if multiline else "one line, no control characters"
    return {"type": "string", "minLength": min_length, "maxLength": max_length,
            "description": "; ".join(filter(None, (lines, note)))}


def label_list(most: int, chars: int) -> dict:
    """An administrator's label list (core.labels.check_labels): none contains the reserved label."""
    return array({**text(chars), "not": {"pattern": RESERVED_LABEL}}, 1, most)

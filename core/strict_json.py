"""The one reader of JSON that comes from outside (request bodies, model answers, the editor's
text): RFC 8259 text in UTF-8 only (§8.1; UTF-16 or a byte order mark is refused), no NaN or
Infinity, and no name twice in one object, so what a validator checks is what a reviewer reads.
Values stay the validators' to judge at their path: a number literal too large for a float reads
as infinity, an escaped lone surrogate or NUL as that character, and each validator refuses them."""
import json


class DuplicateName(ValueError):
    """An object names the same member twice."""

    def __init__(self, name: str):
        super().__init__(name)
        self.name = name


def _object(pairs: list[tuple[str, object]]) -> dict:
    """An object from its members, refusing a repeated name."""
    found = {}
    for name, value in pairs:
        if name in found:
            raise DuplicateName(name)
        found[name] = value
    return found


def _constant(name: str):
    """NaN and Infinity are not JSON."""
    raise ValueError(name)


def loads(data: bytes | str) -> object:
    """The JSON value of `data`; ValueError (DuplicateName for a repeated name, UnicodeDecodeError
    for bytes that are not UTF-8) or RecursionError (nested too deeply) otherwise."""
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    return json.loads(text, parse_constant=_constant, object_pairs_hook=_object)

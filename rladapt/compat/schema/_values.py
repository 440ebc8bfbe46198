"""Types as snapshot names (``bool int float str list dict null any``) and whether a given value fits one.

Values reach the checker as the framework would read them: verl's overrides through a small reader of Hydra's
override grammar (scalars, quoted strings, flat lists and mappings; anything richer is not judged), OpenRLHF's flag
values as argparse would convert them, NeMo-RL's from its YAML file.
"""

from __future__ import annotations

import re
from typing import Any

#: A value the reader could not judge (an interpolation, a nested structure): never a type error.
UNKNOWN = object()
#: How a snapshot writes a default computed when the framework starts (a clock, the environment): this, the
#: expression, then ``>``.
COMPUTED = "<computed: "

_INT = re.compile(r"^[+-]?\d+$")
_FLOAT = re.compile(r"^[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?$")


def type_of(value: Any) -> str:
    """The snapshot type name of a default value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "any" if value.startswith("${") or value == "???" else "str"
    if isinstance(value, (list, tuple)):
        return "list"
    if isinstance(value, dict):
        return "dict"
    return "any"


def fits(value: Any, type_names: str) -> bool:
    """Whether ``value`` is acceptable where the framework declares ``type_names``."""
    if value is UNKNOWN:
        return True
    names = set(type_names.split("|"))
    if "any" in names:
        return True
    if isinstance(value, str) and (value.startswith("${") or value == "???"):
        return True  # an interpolation or an explicit MISSING: resolved (and judged) by the framework
    found = type_of(value)
    if found in names:
        return True
    if found == "int" and "float" in names:
        return True
    # a number or a boolean where a string is declared is converted by OmegaConf/argparse; a list or mapping isn't
    return found in ("int", "float", "bool") and "str" in names


def describe(value: Any) -> str:
    return type_of(value) if value is not UNKNOWN else "?"


# --- Hydra's override grammar, the part rladapt and users write ----------------------------------------------


def hydra_value(text: str) -> Any:
    """The value of a Hydra override's right-hand side (``UNKNOWN`` for what this reader does not cover)."""
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        inner = text[1:-1].strip()
        if not inner:
            return []
        parts = _split_top(inner)
        return UNKNOWN if parts is None else [hydra_value(p) for p in parts]
    if text.startswith("{") and text.endswith("}"):
        return {}  # a mapping: its keys are not judged here
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return _unquoted(text)
    lowered = text.lower()
    if lowered in ("null", "~"):
        return None
    if lowered in ("true", "false"):
        return lowered == "true"
    if _INT.match(text):
        return int(text)
    if _FLOAT.match(text) or lowered in ("inf", "-inf", "+inf", "nan"):
        return float(text)
    if "(" in text or "${" in text or text.startswith("interval"):
        return UNKNOWN  # a sweep, a function call or an interpolation
    return text


def _unquoted(text: str) -> str:
    """A quoted value's text: a run of backslashes before a quote (or the closing one) is halved, any other
    backslash is literal (hydra 1.3 overrides_visitor.py ``_unescape_quoted_string``)."""
    quote_char, body = text[0], text[1:-1]

    def half(match: re.Match[str]) -> str:
        return match.group(1)[: len(match.group(1)) // 2]

    return re.sub(r"(\\+)(?=" + re.escape(quote_char) + r"|\Z)", half, body)


def _split_top(text: str) -> list[str] | None:
    """Split a list body at top-level commas; None when it nests brackets (not judged)."""
    parts: list[str] = []
    current: list[str] = []
    quote: str | None = None
    for ch in text:
        if quote:
            current.append(ch)
            if ch == quote:
                quote = None
            continue
        if ch in "'\"":
            quote = ch
            current.append(ch)
        elif ch in "[{(":
            return None
        elif ch == ",":
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return parts

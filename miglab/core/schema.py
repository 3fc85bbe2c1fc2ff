"""Small strict-schema helpers: check a parsed YAML value and record problems by field path."""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable
from typing import Any

from miglab.errors import Problems

_TYPE_NAMES = {
    dict: "a mapping",
    list: "a list",
    str: "a string",
    int: "an integer",
    bool: "true or false",
    float: "a number",
}


def type_name(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    return _TYPE_NAMES.get(type(value), type(value).__name__)


# A did-you-mean hint is for typos: a word much longer than any name is none, and comparing it
# (difflib is quadratic in its length) took minutes for YAML aliases of a huge string.
HINT_MAX_LEN = 64


def close_matches(word: str, known) -> list[str]:
    """The known name closest to ``word`` (a list of at most one), none for a long word."""
    word = str(word)
    if len(word) > HINT_MAX_LEN:
        return []
    return difflib.get_close_matches(word, list(known), n=1)


def mapping(
    value: Any,
    path: str,
    problems: Problems,
    *,
    required: Iterable[str] = (),
    optional: Iterable[str] = (),
) -> dict | None:
    """A mapping with exactly the known keys; unknown keys get a did-you-mean hint."""
    if not isinstance(value, dict):
        problems.add(path, f"must be a mapping, got {type_name(value)}")
        return None
    required = list(required)
    known = required + list(optional)
    for key in value:
        if not isinstance(key, str):
            problems.add(path, f"key {key!r} must be a string")
        elif key not in known:
            hint = close_matches(key, known)
            extra = f"; did you mean {hint[0]!r}?" if hint else f"; known keys: {', '.join(known)}"
            problems.add(_join(path, key), f"unknown key{extra}")
    for key in required:
        if key not in value:
            problems.add(_join(path, key), "is required")
    return value


def integer(
    value: Any,
    path: str,
    problems: Problems,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        problems.add(path, f"must be an integer, got {type_name(value)} {value!r}")
        return None
    return value if _within(value, path, problems, minimum, maximum) else None


def number(
    value: Any,
    path: str,
    problems: Problems,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        problems.add(path, f"must be a number, got {type_name(value)} {value!r}")
        return None
    if isinstance(value, float) and not math.isfinite(value):
        problems.add(path, f"must be a finite number, got {value!r}")
        return None
    return float(value) if _within(value, path, problems, minimum, maximum) else None


def _within(value: float, path: str, problems: Problems, minimum, maximum) -> bool:
    """Whether minimum <= value <= maximum (a bound of None is open); one problem if not."""
    if minimum is not None and value < minimum:
        problems.add(path, f"must be at least {minimum}, got {value}")
        return False
    if maximum is not None and value > maximum:
        problems.add(path, f"must be at most {maximum}, got {value}")
        return False
    return True


def string(
    value: Any, path: str, problems: Problems, *, pattern: str | None = None, hint: str = ""
) -> str | None:
    import re

    if not isinstance(value, str) or not value.strip():
        problems.add(path, f"must be a non-empty string, got {type_name(value)} {value!r}")
        return None
    if pattern and not re.fullmatch(pattern, value):
        problems.add(path, f"{value!r} is not valid{': ' + hint if hint else ''}")
        return None
    return value


def boolean(value: Any, path: str, problems: Problems) -> bool | None:
    if not isinstance(value, bool):
        problems.add(path, f"must be true or false, got {type_name(value)} {value!r}")
        return None
    return value


def choice_list(
    value: Any, path: str, problems: Problems, choices: Iterable[str]
) -> list[str] | None:
    """A non-empty list of unique values from ``choices`` (matched case-insensitively)."""
    choices = list(choices)
    canon = {c.lower(): c for c in choices}
    if not isinstance(value, list) or not value:
        problems.add(path, f"must be a non-empty list, got {type_name(value)} {value!r}")
        return None
    out = []
    for i, item in enumerate(value):
        key = str(item).lower() if isinstance(item, str) else None
        if key not in canon:
            hint = close_matches(str(item).lower(), list(canon))
            extra = (
                f"; did you mean {canon[hint[0]]!r}?" if hint else f" (known: {', '.join(choices)})"
            )
            problems.add(f"{path}[{i}]", f"unknown value {item!r}{extra}")
        elif canon[key] in out:
            problems.add(f"{path}[{i}]", f"{item!r} is listed twice")
        else:
            out.append(canon[key])
    return out


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key

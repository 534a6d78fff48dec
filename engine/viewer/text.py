"""How the site keeps a run's text: long strings cut, and one escaping rule for the data it embeds.

Every string of the site comes from the run's files (task data, model output, judge replies), so
none is trusted. The template escapes what it writes (Jinja autoescape, on for every template); the
data the page's script reads is JSON made safe inside a ``<script>`` element (`js_literal`); the
script itself puts text into the page only as text nodes and attribute values, never as markup.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import overload

from engine.contract import is_number

MAX_TEXT = 20_000
"""Longest string kept in the site's data; a longer one is cut with a note of its full length."""
MAX_REPLY = 600
"""Longest judge reply kept in the site (the judge file keeps it whole)."""
_SCRIPT_SAFE = (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029"))


def js_literal(value: object) -> str:
    """Compact JSON that reads as the same value inside a <script> element or a .js file:
    ``<``, ``>``, ``&``, U+2028 and U+2029 written as \\u escapes (they occur only inside strings),
    so no text of the run can end the element, open a comment or start markup."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    for char, escape in _SCRIPT_SAFE:  # str.replace per character: many times faster than str.translate
        text = text.replace(char, escape)
    return text


def number_or_none(value: object) -> float | None:
    """A finite number of a run's file as a float (engine.contract.is_number); None for anything else."""
    return float(value) if isinstance(value, (int, float)) and is_number(value) else None


@overload
def cut(value: str) -> str: ...


@overload
def cut(value: Mapping[str, object]) -> dict[str, object]: ...


@overload
def cut(value: object) -> object: ...


def cut(value: object) -> object:
    """The value with every string longer than MAX_TEXT cut, noting its length (JSON-ready)."""
    if isinstance(value, str):
        return value if len(value) <= MAX_TEXT else value[:MAX_TEXT] + f"\u2026 [{len(value):,} characters in all]"
    if isinstance(value, list):
        return [cut(v) for v in value]
    if isinstance(value, dict):
        return {str(k): cut(v) for k, v in value.items()}
    return value


def cut_reply(text: object) -> object:
    """A judge reply cut at MAX_REPLY characters (pointing to the judge file for the rest)."""
    if not isinstance(text, str) or len(text) <= MAX_REPLY:
        return text
    return text[:MAX_REPLY] + f"\u2026 [{len(text):,} characters in all: see the judge file]"

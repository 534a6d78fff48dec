"""JSON in and out: reading with one-line errors, checked canonical texts, strict output.

Input policy (what `read_json` and `checked_canonical_json` accept):

- a file is UTF-8 text, with or without a byte-order mark; anything else is refused;
- a repeated key in an object keeps its last value (as Python's and the published scorer's reader do);
- a value that the outputs echo (call arguments) must be strict JSON that UTF-8 can hold: NaN,
  Infinity and numbers beyond the double range (1e999 reads as Infinity) are refused, and so are
  lone surrogate escapes (``"\\ud800"``) and nesting deeper than `MAX_DEPTH` levels;
- model output (the arguments of predicted calls) is read leniently (`lenient_canonical_json`): NaN,
  the infinities and any nesting Python's reader takes are scored as the published scorer scores
  them, serialized as its ``json.dumps`` writes them (``NaN``, ``Infinity``, ``-Infinity``), with a
  warning; what it cannot score (a lone surrogate, which no encoder takes) is refused as above.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, TypeAlias

from engine.contract.errors import InputError, WriteFailed

JsonValue: TypeAlias = "None | bool | int | float | str | list[JsonValue] | dict[str, JsonValue]"
"""A JSON value as Python reads it (recursive; narrow it with isinstance where it is read)."""
JsonObject: TypeAlias = "dict[str, JsonValue]"
"""A JSON object (what a file's root, its meta or an entry is)."""
JsonMapping: TypeAlias = "Mapping[str, JsonValue]"
"""A JSON object a function only reads (dict is invariant: take a Mapping, give a JsonObject)."""

MAX_DEPTH = 100
"""Deepest nesting of containers allowed in a checked value (real call arguments use a handful)."""

_SURROGATE = re.compile("[\ud800-\udfff]")
_STRICT_CANONICAL = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"),
                                     allow_nan=False)
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class ValueProblem(ValueError):
    """A JSON value strict UTF-8 JSON cannot hold; `where` is the path inside it ('' for the value)."""

    def __init__(self, where: str, problem: str) -> None:
        self.where = where
        self.problem = problem
        super().__init__(f"{where or 'value'}: {problem}")


def canonical_json(value: object) -> str:
    """JSON with keys sorted, non-ASCII kept, and ',' / ':' separators without spaces."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def digest(value: object) -> str:
    """SHA-256 hex digest of a value's canonical JSON."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def file_digest(path: str | Path) -> str:
    """SHA-256 hex digest of a file's bytes, read in 1 MiB blocks."""
    sha = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()


def lone_surrogate(text: str) -> str | None:
    """A description of the first lone surrogate in text, or None when text is valid Unicode."""
    found = _SURROGATE.search(text)
    if found is None:
        return None
    return (f"a lone surrogate \\u{ord(found.group()):04x} cannot be written as UTF-8 "
            "(write the character itself, or a valid surrogate pair)")


def _number_problem(value: float) -> str:
    if math.isnan(value):
        return "NaN is not a JSON number (strict JSON has no NaN or Infinity)"
    return ("Infinity is not a JSON number (strict JSON has no NaN or Infinity; a number beyond the "
            "double range, like 1e999, reads as Infinity)")


def _step(key: str | int) -> str:
    if isinstance(key, int):
        return f"[{key}]"
    return f".{key}" if _PLAIN_KEY.fullmatch(key) else f"[{json.dumps(key, ensure_ascii=True)}]"


def value_problem(value: object, max_depth: int = MAX_DEPTH, nonfinite: bool = True) -> tuple[str, str] | None:
    """(path inside value, problem) of the first part strict UTF-8 JSON cannot hold, else None
    (NaN and the infinities are no problem when `nonfinite` is false).

    Walks the value without recursion, so any depth is safe to inspect.
    """
    stack: list[tuple[object, str, int]] = [(value, "", 0)]
    while stack:
        item, where, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth >= max_depth:
                return where, f"nested more than {max_depth} levels deep"
            pairs = item.items() if isinstance(item, dict) else enumerate(item)
            children = []
            for key, child in pairs:
                if isinstance(key, str) and (problem := lone_surrogate(key)):
                    return where + _step(key), f"key: {problem}"
                children.append((child, where + _step(key), depth + 1))
            stack.extend(reversed(children))
        elif nonfinite and isinstance(item, float) and not math.isfinite(item):
            return where, _number_problem(item)
        elif isinstance(item, str) and (problem := lone_surrogate(item)):
            return where, problem
    return None


def checked_canonical_json(value: object) -> str:
    """canonical_json of a value strict UTF-8 JSON can hold (see the module's policy), else ValueProblem.

    The common case costs one C-level dump and two scans of its text; only a suspicious text is walked.
    """
    try:
        text = _STRICT_CANONICAL.encode(value)
    except (ValueError, RecursionError):
        text = None
    if text is None or text.count("[") + text.count("{") > MAX_DEPTH or _SURROGATE.search(text):
        found = value_problem(value)
        if found is not None:
            raise ValueProblem(*found)
        if text is None:
            raise ValueProblem("", "not a JSON value")
    return text


def lenient_canonical_json(value: object) -> tuple[str, tuple[str, str] | None]:
    """canonical_json of model output as the published scorer serializes it, and the first part strict
    JSON cannot hold ((path inside the value, problem), to warn about; None when it is strict).

    NaN and the infinities are written ``NaN``, ``Infinity``, ``-Infinity`` and any depth Python's reader
    took is kept; a lone surrogate, which no encoder takes, is a ValueProblem as in the strict policy.
    """
    try:
        return checked_canonical_json(value), None
    except ValueProblem as exc:
        departure = (exc.where, exc.problem)
    try:
        text = canonical_json(value)
    except RecursionError:
        raise ValueProblem("", "nested too deeply to serialize") from None
    except (TypeError, ValueError):
        raise ValueProblem("", "not a JSON value") from None
    if _SURROGATE.search(text):
        raise ValueProblem(*(value_problem(value, sys.maxsize, nonfinite=False) or departure))
    return text, departure


def json_strings(value: object) -> Iterator[str]:
    """Every string of a JSON value, depth first in document order (object keys left out).

    >>> list(json_strings({"a": ["x", {"b": "y"}, 3], "c": "z"}))
    ['x', 'y', 'z']
    """
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from json_strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from json_strings(item)


def strict_value(value: object) -> JsonValue:
    """A copy of a JSON value with NaN and the infinities as the strings ``"NaN"``, ``"Infinity"`` and
    ``"-Infinity"``, so strict JSON outputs can echo model output that held them."""
    return json.loads(json.dumps(value, ensure_ascii=False), parse_constant=str)


def dumps_json(value: object, indent: int | None = 2) -> str:
    """Strict JSON text (UTF-8 friendly: non-ASCII kept); NaN and infinities are refused."""
    return json.dumps(value, ensure_ascii=False, indent=indent, allow_nan=False)


def read_json(path: str | Path, what: str = "file", error: type[InputError] = InputError) -> Any:
    """Parse a JSON file; any failure becomes an `error` (an InputError) naming the file.

    A UTF-8 byte-order mark is skipped; see the module's policy for the rest.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise error(path, f"{what} not found") from None
    except OSError as exc:
        raise error(path, f"cannot read {what} ({exc.strerror or exc})") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise error(path, f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})") from None
    if not text.strip():
        raise error(path, f"empty {what}")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(path, f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except RecursionError:
        raise error(path, "not valid input: JSON nested too deeply") from None
    except ValueError:  # the only other failure: an integer longer than Python converts
        raise error(path, f"not valid input: an integer longer than {sys.get_int_max_str_digits()} "
                          "digits") from None


def read_keyed_lines(path: str | Path) -> dict[str, JsonObject]:
    """The entries of a JSON-lines log by their "key" (a later line wins); a line cut short by a
    killed writer, or one that is not such an entry, is skipped."""
    path = Path(path)
    entries: dict[str, JsonObject] = {}
    if not path.exists():
        return entries
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(entry, dict) and isinstance(entry.get("key"), str):
                entries[entry["key"]] = entry
    return entries


def append_line(path: str | Path, entry: object) -> None:
    """Append one compact JSON line with one write of an O_APPEND descriptor, so concurrent
    writers never interleave inside a line; WriteFailed naming the file when the system refuses."""
    data = memoryview((json.dumps(entry, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
                       + "\n").encode("utf-8"))
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        try:
            while data:
                data = data[os.write(fd, data):]
        finally:
            os.close(fd)
    except OSError as exc:
        raise WriteFailed(exc.errno, exc.strerror or str(exc), str(path)) from None

"""JSON in and out: reading with one-line errors, canonical texts, strict output."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from engine.contract.errors import InputError


def canonical_json(value: Any) -> str:
    """JSON with keys sorted, non-ASCII kept, and ',' / ':' separators without spaces."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def dumps_json(value: Any, indent: int | None = 2) -> str:
    """Strict JSON text (UTF-8 friendly: non-ASCII kept); NaN and infinities are refused."""
    return json.dumps(value, ensure_ascii=False, indent=indent, allow_nan=False)


def read_json(path: str | Path, what: str = "file", error: type[InputError] = InputError) -> Any:
    """Parse a JSON file; any failure becomes an `error` (an InputError) naming the file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(path, f"{what} not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise error(path, f"cannot read {what} ({exc})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(path, f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except RecursionError:
        raise error(path, "not valid input: JSON nested too deeply") from None

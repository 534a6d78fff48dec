"""Helpers of the demo's check modules: the sheet of a workbook as rows, and whether the tool log holds
a call of a tool that did not fail."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def sheet_rows(path: Path, sheet: str | None = None) -> list[list[Any]] | None:
    """The rows of a sheet (the first when `sheet` is None), None when the file or the sheet is missing."""
    from openpyxl import load_workbook

    if not path.is_file():
        return None
    book = load_workbook(path, read_only=True)
    if sheet is not None and sheet not in book.sheetnames:
        return None
    rows = [list(r) for r in (book[sheet] if sheet else book.worksheets[0]).iter_rows(values_only=True)]
    book.close()
    return rows


def called(tool_log: list[dict[str, Any]] | None, server: str, tool: str) -> bool:
    """Whether the tool log has a call of server/tool that did not fail."""
    return any(c["server"] == server and c["tool"] == tool and not c["is_error"] for c in tool_log or [])

"""MCP server: spreadsheet writer (.xlsx with openpyxl).

Create workbooks and worksheets, write rows of values from a start cell, read a range back, and
list worksheets. Files are confined to the task workspace.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from openpyxl import Workbook, load_workbook
from openpyxl.utils.cell import column_index_from_string, coordinate_from_string, get_column_letter
from openpyxl.worksheet.worksheet import Worksheet
from pydantic import Field

from rollout.servers._workspace import resolve

server = MCPServer("excel", instructions="Write and read .xlsx spreadsheets in the task workspace.",
                   log_level="WARNING")

Cell = str | int | float | bool | None
FilePath = Annotated[str, Field(description="Path of the .xlsx file, relative to the task workspace")]
_locks: dict[Path, threading.Lock] = {}
_locks_guard = threading.Lock()


def _lock(path: Path) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(path, threading.Lock())


def _cell(ref: str) -> tuple[int, int]:
    try:
        column, row = coordinate_from_string(ref.strip().upper())
        return row, column_index_from_string(column)
    except ValueError:
        raise ToolError(f"not a cell reference: {ref!r} (expected e.g. A1)") from None


def _load(full: Path, filepath: str) -> Workbook:
    try:
        return load_workbook(full)
    except Exception as exc:  # boundary: openpyxl raises many types for unreadable files
        raise ToolError(f"cannot open '{filepath}' as a workbook: {exc}") from None


def _sheet(workbook: Workbook, sheet_name: str | None, filepath: str) -> Worksheet:
    if sheet_name is None:
        return workbook.active
    if sheet_name not in workbook.sheetnames:
        raise ToolError(f"'{filepath}' has no worksheet '{sheet_name}' (it has: {', '.join(workbook.sheetnames)})")
    return workbook[sheet_name]


@server.tool()
def create_workbook(filepath: FilePath, ctx: Context, sheet_name: str | None = None,
                    overwrite: bool = False) -> str:
    """Create an empty .xlsx workbook (its first sheet named sheet_name, default 'Sheet')."""
    full, rel = resolve(ctx, filepath, suffixes=(".xlsx",))
    with _lock(full):
        if full.exists() and not overwrite:
            raise ToolError(f"'{rel}' already exists (pass overwrite=true to replace it)")
        workbook = Workbook()
        if sheet_name:
            workbook.active.title = sheet_name
        full.parent.mkdir(parents=True, exist_ok=True)
        workbook.save(full)
    return f"Workbook created at {rel}"


@server.tool()
def create_worksheet(filepath: FilePath, sheet_name: str, ctx: Context) -> str:
    """Add a worksheet to an existing workbook."""
    full, rel = resolve(ctx, filepath, must_exist=True, suffixes=(".xlsx",))
    with _lock(full):
        workbook = _load(full, rel)
        if sheet_name in workbook.sheetnames:
            raise ToolError(f"'{rel}' already has a worksheet '{sheet_name}'")
        try:
            workbook.create_sheet(sheet_name)
        except ValueError as exc:
            raise ToolError(f"bad worksheet name {sheet_name!r}: {exc}") from None
        workbook.save(full)
    return f"Worksheet '{sheet_name}' created in {rel}"


@server.tool()
def write_data_to_excel(filepath: FilePath, data: list[list[Cell]], ctx: Context, sheet_name: str | None = None,
                        start_cell: str = "A1") -> str:
    """Write rows of values starting at start_cell; the workbook and worksheet are created if missing."""
    if not data:
        raise ToolError("data has no rows")
    full, rel = resolve(ctx, filepath, suffixes=(".xlsx",))
    row0, col0 = _cell(start_cell)
    with _lock(full):
        if full.exists():
            workbook = _load(full, rel)
        else:
            workbook = Workbook()
            if sheet_name:
                workbook.active.title = sheet_name
        if sheet_name and sheet_name not in workbook.sheetnames:
            workbook.create_sheet(sheet_name)
        sheet = _sheet(workbook, sheet_name, rel)
        for r, row in enumerate(data):
            for c, value in enumerate(row):
                sheet.cell(row=row0 + r, column=col0 + c, value=value)
        full.parent.mkdir(parents=True, exist_ok=True)
        workbook.save(full)
    width = max(len(row) for row in data)
    end = f"{get_column_letter(col0 + max(width, 1) - 1)}{row0 + len(data) - 1}"
    return f"Wrote {len(data)} rows to {rel} [{sheet.title}] {start_cell.upper()}:{end}"


@server.tool()
def read_data_from_excel(filepath: FilePath, ctx: Context, sheet_name: str | None = None, start_cell: str = "A1",
                         end_cell: str | None = None) -> dict[str, object]:
    """Read the values of a range (default: from start_cell to the sheet's last used cell)."""
    full, rel = resolve(ctx, filepath, must_exist=True, suffixes=(".xlsx",))
    with _lock(full):
        workbook = _load(full, rel)
    sheet = _sheet(workbook, sheet_name, rel)
    row0, col0 = _cell(start_cell)
    row1, col1 = _cell(end_cell) if end_cell else (sheet.max_row, sheet.max_column)
    rows = [list(r) for r in sheet.iter_rows(min_row=row0, max_row=max(row0, row1), min_col=col0,
                                             max_col=max(col0, col1), values_only=True)]
    return {"sheet": sheet.title, "rows": rows}


@server.tool()
def list_worksheets(filepath: FilePath, ctx: Context) -> dict[str, object]:
    """Names and used sizes of a workbook's worksheets."""
    full, rel = resolve(ctx, filepath, must_exist=True, suffixes=(".xlsx",))
    with _lock(full):
        workbook = _load(full, rel)
    return {"worksheets": [{"name": s.title, "rows": s.max_row, "columns": s.max_column} for s in workbook]}


if __name__ == "__main__":
    server.run()

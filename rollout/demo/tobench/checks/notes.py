"""tb-05: notes.xlsx has a sheet Notes with 'hello' in A1."""

from _common import sheet_rows


def check(trajectory, workspace, tool_log):
    rows = sheet_rows(workspace / "notes.xlsx", "Notes") if workspace else None
    return [rows is not None, bool(rows) and rows[0][0] == "hello"]

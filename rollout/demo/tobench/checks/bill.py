"""tb-03: bill.xlsx lists both items and a Total row with their sum; the sum was computed with a tool."""

from _common import called, sheet_rows


def check(trajectory, workspace, tool_log):
    rows = sheet_rows(workspace / "bill.xlsx") if workspace else None
    items = {r[0]: r[1] for r in rows or [] if r and r[0] is not None}
    return [rows is not None,
            items.get("Tea") == 3.5 and items.get("Cake") == 4.25,
            items.get("Total") == 7.75,
            called(tool_log, "math", "evaluate")]

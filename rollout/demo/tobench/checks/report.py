"""tb-01: report.xlsx has a sheet Sales with the header and both regions, written with the spreadsheet tool."""

from _common import called, sheet_rows


def check(trajectory, workspace, tool_log):
    rows = sheet_rows(workspace / "report.xlsx", "Sales") if workspace else None
    return [rows is not None,
            bool(rows) and rows[0][:2] == ["Region", "Total"],
            bool(rows) and ["North", 120] in [r[:2] for r in rows] and ["South", 80] in [r[:2] for r in rows],
            called(tool_log, "excel", "write_data_to_excel")]

"""Comparing runs: the report app groups results by the settings that make them comparable, the score app's
multirun gets one combined table, and every score run is listed in the run index."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from chromium import browser, page  # noqa: F401  (fixtures)
from preloaded import run_python

from engine.apps import report, view
from engine.reports.groups import group_results
from engine.reports.index import append_run, read_index
from engine.reports.read import collect_run
from tests.test_reports import block

ROOT = Path(__file__).resolve().parents[1]


def _page_data(page: Path) -> dict:
    """The data a runs page holds (its inline M3R_DATA)."""
    html = page.read_text(encoding="utf-8")
    return json.loads(html.split("var M3R_DATA = ", 1)[1].split(";</script>", 1)[0])


def _score_multirun(tmp_path: Path, cache: Path, sweep: str) -> tuple[Path, str]:
    """A score multirun of the 3-task demo sweeping `sweep`; returns its folder and what it printed."""
    runs = tmp_path / "runs"
    proc = run_python([str(ROOT / "scripts" / "score.py"), "-m", f"demo.dir={tmp_path / 'demo'}",
                           "demo.n_tasks=3", f"encoder.cache_dir={cache}", f"output_dir={runs}",
                           f"index_dir={tmp_path / 'index'}", "device=cpu", "progress=false", sweep],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return runs, proc.stdout


@pytest.mark.slow
def test_runs_of_other_thresholds_are_separated_and_named(tmp_path: Path, embedding_cache: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Two runs with other align.tau_weak: the multirun's table and report.py on their parent give one
    leaderboard per group and say that tau_weak differs; --one-table refuses; the index lists both runs."""
    runs, printed = _score_multirun(tmp_path, embedding_cache, "align.tau_weak=0.5,0.7")
    combined = json.loads((runs / "report" / "comparison.json").read_text())
    assert {row["tau_weak"] for row in combined["rows"]} == {0.5, 0.7} and len(combined["rows"]) == 10
    assert "tau_weak differs (0.5, 0.7)" in combined["note"]
    pivot = json.loads((runs / "report" / "comparison_pivot.json").read_text())
    assert pivot["columns"] == ["Model", "tau_weak 0.5", "tau_weak 0.7"] and len(pivot["rows"]) == 5
    by_cell = {(row["Model"].split("/")[-1], row["tau_weak"]): row["Average Score"] for row in combined["rows"]}
    assert all(row[f"tau_weak {t}"] == by_cell[(row["Model"], t)] for row in pivot["rows"] for t in (0.5, 0.7))
    assert "| Model | tau_weak 0.5 | tau_weak 0.7 |" in printed
    assert printed.count("comparison_pivot.md") == 1 and printed.strip().splitlines()[-1].startswith("multirun: 10")

    assert report.run([str(runs), "--out", str(tmp_path / "again")]) == 0
    groups = (tmp_path / "again" / "groups.md").read_text()
    assert "tau_weak differs (0.5, 0.7)" in groups and groups.count("- ") == 2
    boards = sorted((tmp_path / "again").glob("*/leaderboard.json"))
    assert [len(json.loads(b.read_text())["rows"]) for b in boards] == [5, 5]

    assert report.run([str(runs), "--one-table"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "tau_weak differs (0.5, 0.7)" in err
    assert not (runs / "leaderboard.md").exists()  # nothing written into the folder of the runs

    entries = read_index(tmp_path / "index")
    assert sorted(e["settings"]["tau_weak"] for e in entries) == [0.5, 0.7]
    assert all(len(e["average_score"]) == 5 for e in entries)
    assert report.run(["--list", str(tmp_path / "index")]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert listed[0] == "Scoring runs (2)"
    assert listed[1].split() == ["Run", "Time", "Models", "Best", "model", "Average", "Score", "Set", "tau_weak",
                                 "Site"]
    rows = {line.split()[0]: line.split() for line in listed[2:4]}  # one row per run, its path under the runs'
    assert set(rows) == {"align.tau_weak=0.5", "align.tau_weak=0.7"} and str(runs) not in "".join(listed[:4])
    assert [rows[f"align.tau_weak={t}"][-2] for t in ("0.5", "0.7")] == ["0.5000", "0.7000"]
    assert all(row[3] == "5" for row in rows.values())  # the five models folded
    assert listed[4].startswith(f"paths under {runs}; every run: reference ") and "tau_strong 0.8" in listed[4]
    assert view.run([str(runs / "align.tau_weak=0.5")]) == 0
    assert view.run([str(tmp_path / "index")]) == 0
    data = _page_data(tmp_path / "index" / "runs.html")
    assert [r["run"] for r in data["runs"]] == ["align.tau_weak=0.5", "align.tau_weak=0.7"]
    assert [len(r["models"]) for r in data["runs"]] == [5, 5] and data["base"] == str(runs)
    assert [bool(r["site"]) for r in data["runs"]] == [True, False]
    assert data["runs"][0]["set"] != data["runs"][1]["set"]
    assert data["runs"][0]["board"]["rows"].keys() == {m for m, _ in data["runs"][0]["models"]}


@pytest.mark.slow
def test_runs_of_the_same_settings_share_one_table(tmp_path: Path, embedding_cache: Path) -> None:
    """Two runs differing only in how they were computed (encoder.batch_size): one leaderboard of both, in
    the folder's report/ and not among the runs."""
    runs, printed = _score_multirun(tmp_path, embedding_cache, "encoder.batch_size=16,32")
    assert "multirun: 10 results, all comparable" in printed
    assert report.run([str(runs), "--one-table"]) == 0
    board = json.loads((runs / "report" / "leaderboard.json").read_text())
    assert len(board["rows"]) == 10
    assert not (runs / "report" / "groups.md").exists() and not (runs / "leaderboard.md").exists()


def _result(folder: Path, gt: Path, **meta: object) -> None:
    folder.mkdir(parents=True)
    data = {"aggregate": block(0.5), "by_type": {}, "per_id": [],
            "meta": {"model": folder.name, "gt": str(gt), "tau_weak": 0.5, "tau_strong": 0.8, "profile": "reference",
                     **meta}}
    (folder / "results_eval.json").write_text(json.dumps(data))


def test_the_reference_is_compared_by_content(tmp_path: Path) -> None:
    """The same reference file at two paths is one reference set; another content, or another profile or
    encoder (read from the run's .hydra/config.yaml), is another group."""
    same_a, same_b, other = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.json"
    same_a.write_text("[1]")
    same_b.write_text("[1]")
    other.write_text("[2]")
    _result(tmp_path / "runs" / "one", same_a)
    _result(tmp_path / "runs" / "two", same_b)
    _result(tmp_path / "runs" / "three", other)
    _result(tmp_path / "runs" / "four", same_a, profile="paper")
    run = tmp_path / "runs" / "five"
    _result(run / "m", same_a)
    (run / ".hydra").mkdir()
    (run / ".hydra" / "config.yaml").write_text("encoder:\n  model: /models/other-encoder\n")
    groups = group_results(collect_run(tmp_path / "runs"), tmp_path / "runs")
    assert sorted(sorted(r.name for r in g.results) for g in groups) == [["four"], ["m"], ["one", "two"], ["three"]]
    encoders = {g.results[0].name: g.settings["encoder"] for g in groups}
    assert encoders["m"] == "/models/other-encoder" and encoders["one"] == "unrecorded"


DAMAGED = [(5, "not an object (int)"), ({"models": ["m"]}, "no 'run' folder"),
           ({"run": "/r/two", "models": 5}, "'models' must be a list of model names, got 5"),
           ({"run": "/r/three", "models": [["a"]]}, "'models' must be a list of model names, got [['a']]"),
           ({"run": "/r/four", "models": ["m"], "average_score": {"m": "high"}},
            "'average_score' must map each model to a number or null"),
           ({"run": "/r/five", "models": ["m"], "settings": [1]}, "'settings' must be an object")]
"""Hand-edited index entries (each once a TypeError of report.py --list or view.py) and the warning naming each."""


def test_a_damaged_index_entry_is_skipped_with_a_warning_naming_it(tmp_path: Path) -> None:
    good = {"run": "/r/one", "time": "2025-01-01T00:00:00+0000", "models": ["m"], "settings": {"tau_weak": 0.6},
            "average_score": {"m": 0.5}}
    entries = [good, *(entry for entry, _ in DAMAGED)]
    (tmp_path / "index.json").write_text(json.dumps(entries))
    warnings = [f"warning: {tmp_path / 'index.json'}: entry [{i}] skipped: {why}"
                for i, (_, why) in enumerate(DAMAGED, 1)]
    listed = run_python([str(ROOT / "scripts" / "report.py"), "--list", str(tmp_path)])
    assert (listed.returncode, listed.stderr.splitlines()) == (0, warnings), listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0] == "Scoring runs (1)" and lines[2].split()[:5] == ["one", "2025-01-01", "00:00", "1", "m"]
    assert "0.5000" in lines[2] and lines[3].startswith("paths under /r; every run: ") and "two" not in listed.stdout
    page = run_python([str(ROOT / "scripts" / "view.py"), str(tmp_path)])
    assert (page.returncode, page.stderr.splitlines()) == (0, warnings), page.stderr
    assert [r["path"] for r in _page_data(tmp_path / "runs.html")["runs"]] == ["/r/one"]

    append_run(tmp_path, {**good, "run": "/r/six"})  # a new run keeps the entries it cannot read as they are
    assert json.loads((tmp_path / "index.json").read_text()) == [*entries, {**good, "run": "/r/six"}]


PWN = "window.__pwned=1"
HOSTILE = f"<!--<script></script><script>{PWN}</script>\"><svg onload={PWN}>\u2028<img src=x onerror={PWN}>'&amp;"
SETTINGS = {"reference": "7fd5d514a8ec", "tau_weak": 0.6, "tau_strong": 0.8, "profile": "reference",
            "encoder": "all-MiniLM-L6-v2"}
COLUMNS = ["Model", "Recall", "Precision", "Average Score"]


def _entry(base: Path, name: str, scores: dict[str, float], site: bool = False, **settings: object) -> dict:
    """An index entry of a run folder `base/name` holding a leaderboard.json of these Average Scores (Recall and
    Precision derived from them), and a viewer site when asked."""
    run = base / name
    run.mkdir(parents=True)
    rows = [{"Model": m, "Recall": v + 0.1, "Precision": v - 0.1, "Average Score": v} for m, v in scores.items()]
    (run / "leaderboard.json").write_text(json.dumps({"title": "Leaderboard", "columns": COLUMNS, "rows": rows}))
    if site:
        (run / "viewer").mkdir()
        (run / "viewer" / "index.html").write_text(f"<title>site of {name}</title>")
    return {"run": str(run), "time": "2026-01-01T10:00:00+0000", "models": list(scores),
            "settings": {**SETTINGS, **settings}, "average_score": scores}


def _index(tmp_path: Path) -> tuple[Path, list[dict]]:
    """Six runs of 26 models (as the issue saw): two comparable pairs, runs of another tau_weak and reference,
    one named with markup and with a model named so."""
    base = tmp_path / "runs"
    entries = [_entry(base, "a", {"m1": 0.5, "m2": 0.6, "m3": 0.7, "m4": 0.2, "m5": 0.3}, site=True),
               _entry(base, "b", {"m1": 0.55, "m2": 0.58, "m3": 0.7, "m4": 0.25, "m5": 0.1}),
               _entry(base, "c/tau", {f"x{i}": 0.1 * i for i in range(5)}, tau_weak=0.5),
               _entry(base, "d/other-reference", {f"x{i}": 0.05 * i for i in range(5)}, reference="0123456789ab"),
               _entry(base, HOSTILE.replace("/", "_"), {HOSTILE: 0.9, "y": 0.1, "z": 0.2}, site=True),
               _entry(base, "f", {"m1": 0.4, "m2": 0.4, "m3": 0.4}, tau_weak=0.5)]
    index = tmp_path / "index"
    for day, entry in enumerate(entries, 1):
        entry["time"] = f"2026-01-{day:02d}T10:00:00+0000"
        append_run(index, entry)
    return index, entries


def test_list_is_one_row_per_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    index, entries = _index(tmp_path)
    assert report.run(["--list", str(index)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Scoring runs (6)" and len(lines) == 1 + 1 + 6 + 1
    assert [line.split()[0] for line in lines[2:4]] == ["a", "b"]
    assert lines[2].split()[3:6] == ["5", "m3", "0.7000"]  # five models folded, the best with its Average Score
    assert lines[2].split()[-1] == "yes" and lines[3].split()[-1] == "-"  # the site built
    assert str(tmp_path) not in "".join(lines[:-1]) and lines[-1].startswith(f"paths under {tmp_path / 'runs'}; ")
    assert "every run: tau_strong 0.8, profile reference, encoder all-MiniLM-L6-v2" in lines[-1]
    assert lines[1].split()[-3:] == ["reference", "tau_weak", "Site"]  # the settings that differ, alone


def test_the_runs_page_sorts_filters_and_compares_only_comparable_runs(tmp_path: Path, page) -> None:
    index, entries = _index(tmp_path)
    assert view.run([str(index)]) == 0
    page.goto((index / "runs.html").as_uri())
    page.wait_for_selector("#runs > tbody > tr")
    rows = page.locator("#runs > tbody > tr")
    assert rows.count() == 6  # one row per run, its models folded
    assert page.locator("#runs thead th").all_text_contents()[-3:] == ["reference", "tau_weak", "Site"]
    assert page.locator("#shared").text_content() == (  # the settings every run shares, named once
        "Every run: tau_strong 0.8, profile reference, encoder all-MiniLM-L6-v2.")
    assert page.locator("#runs > tbody > tr > td.run").all_text_contents() == [  # newest first
        "f", HOSTILE.replace("/", "_"), "d/other-reference", "c/tau", "b", "a"]
    hostile = page.locator("#runs > tbody > tr", has_text="onerror")
    hostile.locator("details summary").click()
    assert hostile.locator("table.inner td").first.text_content() == HOSTILE
    page.click("#runs th[data-col='score']")  # best first
    assert page.locator("#runs > tbody > tr > td.run").first.text_content() == HOSTILE.replace("/", "_")
    page.click("#runs th[data-col='score']")
    assert page.locator("#runs > tbody > tr > td.run").first.text_content() == "d/other-reference"
    page.fill("#q", "m4")
    page.wait_for_function("document.querySelectorAll('#runs > tbody > tr').length === 2")
    assert sorted(page.locator("#runs > tbody > tr > td.run").all_text_contents()) == ["a", "b"]
    page.fill("#q", "")
    page.locator("#runs > tbody > tr", has_text="c/tau").locator("td.set a").click()  # the runs comparable with it
    page.wait_for_function("document.querySelectorAll('#runs > tbody > tr').length === 2")
    assert sorted(page.locator("#runs > tbody > tr > td.run").all_text_contents()) == ["c/tau", "f"]
    page.select_option("#set", "")
    page.wait_for_function("document.querySelectorAll('#runs > tbody > tr').length === 6")
    for name in ("a", "b"):
        row = page.locator("#runs > tbody > tr").filter(has=page.locator(f"td.run:text-is('{name}')"))
        row.locator("input").check()
    table = page.locator("#compare-table")
    table.wait_for()
    heads = table.locator("thead tr").first.locator("th").all_text_contents()
    assert heads == ["Model", "Average Score", "Recall", "Precision"]  # the headline first
    m5 = table.locator("tbody tr", has_text="m5").locator("td").all_text_contents()
    assert m5[1:4] == ["0.3000", "0.1000", "-0.2000"] and m5[4:6] == ["0.4000", "0.2000"]
    page.locator("#runs > tbody > tr", has_text="c/tau").locator("input").check()  # b and c: another tau_weak
    page.wait_for_selector("#not-comparable")
    assert "tau_weak differs (0.6, 0.5)" in page.locator("#not-comparable").text_content()
    assert page.locator("#compare-table").count() == 0
    page.locator("#runs > tbody > tr", has_text="d/other-reference").locator("input").check()  # c and d: two settings
    page.wait_for_function("document.getElementById('not-comparable').textContent.includes('reference differs')")
    assert "tau_weak differs (0.5, 0.6)" in page.locator("#not-comparable").text_content()
    page.reload()  # the state is in the address
    page.wait_for_selector("#not-comparable")
    assert page.evaluate("window.__pwned") is None and page.errors == []


def test_served_runs_show_a_run_added_while_serving(tmp_path: Path, page) -> None:
    """view.py INDEX --serve: the page, then a run added to the index shows without a restart; each run's site
    is served from its viewer folder alone (no link followed, nothing above it)."""
    index, entries = _index(tmp_path)
    key = tmp_path / "secret"
    key.write_text("CANARY-runs-page")
    (Path(entries[0]["run"]) / "viewer" / "key.js").symlink_to(key)
    (Path(entries[0]["run"]) / "notes.txt").write_text("CANARY-runs-page")
    proc = subprocess.Popen([sys.executable, str(ROOT / "scripts" / "view.py"), str(index), "--serve", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+/", line).group(0)
        page.goto(url)
        page.wait_for_selector("#runs > tbody > tr")
        assert page.locator("#runs > tbody > tr").count() == 6
        first = json.loads(urllib.request.urlopen(url + "runs.json", timeout=10).read())
        served = {r["run"]: r for r in first["runs"]}
        with urllib.request.urlopen(url + served["a"]["site"], timeout=10) as response:
            assert b"site of a" in response.read()
        for bad in ("key.js", "../notes.txt", "%2e%2e/notes.txt", "..%2fnotes.txt"):
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(url + f"site/{served['a']['key']}/{bad}", timeout=10)
            assert refused.value.code == 404, bad
        append_run(index, _entry(tmp_path / "runs", "new", {"n": 0.99}))
        page.wait_for_function("document.querySelectorAll('#runs > tbody > tr').length === 7", timeout=15000)
        assert page.locator("#runs > tbody > tr.fresh td.run").all_text_contents() == ["new"]
        assert page.errors == []
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
    assert proc.returncode == 130 and err.strip().endswith("stopped serving the runs"), err


def test_the_element_helper_is_defined_once_and_loaded_before_the_scripts_that_use_it() -> None:
    """h() lives in static/dom.js only: the site loads it first (and its layout names it), and the runs page
    inlines it before runs.js."""
    from engine.viewer.folder import SITE_LAYOUT
    from engine.viewer.runs import RUNS_SCRIPTS, STATIC, runs_page
    from engine.viewer.site import SCRIPTS

    defining = sorted(p.name for p in STATIC.glob("*.js")
                      if re.search(r"^function h\(", p.read_text(encoding="utf-8"), re.M))
    assert defining == ["dom.js"]
    assert SCRIPTS[0] == "dom.js" and RUNS_SCRIPTS == ("dom.js", "runs.js") and "dom.js" in SITE_LAYOUT
    page = runs_page({"index": "index.json", "base": ".", "compared": [], "runs": [], "live": False, "poll": 3})
    helper = page.index("function h(tag, attrs, ...children)")
    assert page.count("function h(") == 1 and helper < page.index("let DATA = window.M3R_DATA")

"""The viewer of a repeated run: the trials summary (mean ± std, pass@k / pass^k / avg@k, the slot
inventory) equal to trials.json, and each trial's task view one click away, in the data and in Chromium.

The run is built offline as a user builds it: the rollout demo with the noisy scripted model, three
trials, one task's record taken out of the third trial (what a killed rollout leaves: a lost slot),
the scripted judges, the leaderboard sweep.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from chromium import browser, page  # noqa: F401  (fixtures)
from script_runs import run_script

from engine.apps.view import run as view_main
from engine.reports.trials import conventions_table, read_trials
from engine.trials import TRIALS_FILE

MODEL = "scripted_noisy"
PWN = "window.__pwned=1"
HOSTILE = f"<!--<script></script><script>{PWN}</script>\"><svg onload={PWN}>\u2028<img src=x onerror={PWN}>'&amp;"


@pytest.fixture(scope="module")
def trials_run(tmp_path_factory, embedding_cache: Path) -> Path:
    """Three noisy trials of the rollout demo, one slot lost, judged, scored and viewed."""
    base = tmp_path_factory.mktemp("trials-viewer")
    results, out = base / "results", base / "score"
    run_script("rollout", f"model={MODEL}", "tasks=demo", "trials=3", f"results_dir={results}", cwd=base)
    third = results / f"{MODEL}_test_mcp_fuzzy_trial3.json"
    records = json.loads(third.read_text(encoding="utf-8"))
    third.write_text(json.dumps(records[1:]), encoding="utf-8")
    run_script("judge", f"model={MODEL}", "judges=scripted", "data=rollout_demo", f"results_dir={results}", cwd=base)
    run_script("score", "sweep=leaderboard", "data=rollout_demo", f"results_dir={results}", f"output_dir={out}",
               f"encoder.cache_dir={embedding_cache}", "device=cpu", "trials.success.threshold=0.95", cwd=base)
    assert view_main([str(out)]) == 0
    return out


def _site(run: Path) -> dict:
    html = (run / "viewer" / "index.html").read_text(encoding="utf-8")
    return json.loads(html.split("var M3V_SITE = ", 1)[1].split(";</script>", 1)[0])


@pytest.mark.slow
def test_trials_summary_equals_trials_json(trials_run: Path) -> None:
    doc = read_trials(trials_run / TRIALS_FILE)[MODEL]
    site = _site(trials_run)
    summary = site["trials"][MODEL]
    assert summary["trials"] == 3 and doc["inventory"]["infrastructure"] == 1
    spread = {key: (mean, std) for key, _, mean, std, _ in summary["aggregate"]}
    assert spread["task_completion"] == (doc["aggregate"]["task_completion"]["mean"],
                                         doc["aggregate"]["task_completion"]["std"])
    assert "average" in spread
    for row in summary["rates"]:
        for losses in ("losses_as_failures", "losses_excluded"):
            for cell, name in zip(row[losses], ("pass_at_k", "pass_hat_k", "avg_at_k")):
                block = doc[name][losses][str(row["k"])]
                assert cell == [block["value"], block["tasks"]]
    assert summary["inventory"]["per_trial"] == [[b["trial"], b["finished"], b["agent_failure"], b["infrastructure"]]
                                                 for b in doc["inventory"]["per_trial"]]
    lost = doc["inventory"]["missing"][0]
    assert summary["inventory"]["missing"] == [[lost["id"], 3, lost["reason"]]]
    # each trial is a model of the site, and knows its summary
    assert [site["models"][key] for key in summary["slugs"]] == [f"{MODEL}_trial{i}" for i in (1, 2, 3)]
    assert site["trial_of"][summary["slugs"][1]] == [MODEL, 2]
    # the header counts the model once, its trials apart
    assert site["counts"] == {"models": len(set(site["models"].values())) - 2, "trials": 3}
    html = (trials_run / "viewer" / "index.html").read_text(encoding="utf-8")
    assert f"{site['counts']['models']} model" in html and "(3 trial runs)" in html
    # the peer conventions' figures, as the reports' table gives them
    table = conventions_table(read_trials(trials_run / TRIALS_FILE))
    assert table is not None
    assert summary["conventions"]["rows"] == [[r[1], r[2]] for r in table.rows if r[0] == MODEL]
    assert [r[0] for r in summary["conventions"]["rows"]] == ["project", "tau2", "mcpmark"]


@pytest.mark.slow
def test_each_trial_s_transcripts_are_its_own(trials_run: Path) -> None:
    """The M3-Bench rollout demo over trials: each trial's task has its transcript, its results those of the
    trial's own record and its images (the workspace's, the blurred and boxed pictures) from the trial's own
    workspace (<workspace>/trial<i>)."""
    site = _site(trials_run)
    results = trials_run.parent / "results"
    for i, key in enumerate(site["trials"][MODEL]["slugs"], 1):
        text = (trials_run / "viewer" / "data" / "m" / f"{key}.js").read_text(encoding="utf-8")
        data = json.loads("[" + text.strip()[len("M3V.put("):-2] + "]")[2]
        records = {r["id"]: r for r in json.loads((results / f"{MODEL}_test_mcp_fuzzy_trial{i}.json").read_text())}
        text = (trials_run / "viewer" / "data" / "x" / key / "0.js").read_text(encoding="utf-8")
        chunk = json.loads("[" + text.strip()[len("M3V.put("):-2] + "]")[2]  # the trial's transcripts, in order
        assert data["order"] and [data["tasks"][tid]["x"] for tid in data["order"]] == [[0, k] for k in
                                                                                       range(len(data["order"]))]
        images = 0
        for k, tid in enumerate(data["order"]):
            x = chunk[k]
            assert [[c["r"] for c in s] for s in x["calls"]] == [[c["result"] for c in s["calls"]]
                                                                for s in records[tid]["steps"]]
            log = json.loads((results / "rollout" / MODEL / "tool_logs" / f"trial{i}" / f"{tid}.json").read_text())
            assert [c.get("d") for s in x["calls"] for c in s] == [line["duration_s"] for line in log["calls"]]
            shown = [f for s in x["calls"] for c in s for f in c.get("f", [])]
            assert all("src" in f for f in shown if f["name"].endswith(".png")), shown
            assert all((trials_run / "viewer" / f["src"]).is_file() for f in shown if "src" in f)
            images += sum("src" in f for f in shown)
        assert images > 0


def _cells(page, selector: str) -> list[list[str]]:
    return page.eval_on_selector_all(f"{selector} tbody tr",
                                     "rows => rows.map(r => [...r.cells].map(c => c.textContent.trim()))")


@pytest.mark.slow
def test_trials_summary_in_the_browser(page, trials_run: Path) -> None:
    doc = read_trials(trials_run / TRIALS_FILE)[MODEL]
    page.goto((trials_run / "viewer" / "index.html").as_uri())
    page.click("#trials-models a.model")
    page.wait_for_selector("#trials-rates")
    assert page.evaluate("document.body.dataset.view") == "trials"
    tc = doc["aggregate"]["task_completion"]
    assert page.text_content("#trials-aggregate tr[data-key='task_completion'] td.num") == \
        f"{tc['mean']:.4f} ± {tc['std']:.4f}"
    rates = _cells(page, "#trials-rates")
    assert [row[0] for row in rates] == ["1", "2", "3"]
    for row in rates:
        k = row[0]
        assert row[2] == f"{doc['pass_hat_k']['losses_as_failures'][k]['value']:.4f}"
        assert row[6] == f"{doc['pass_hat_k']['losses_excluded'][k]['value']:.4f}"
    inventory = _cells(page, "#trials-inventory")
    assert inventory[2][1:] == ["3", "0", "1"] and inventory[3] == ["all 12 slots", "11", "0", "1"]
    lost = doc["inventory"]["missing"][0]["id"]
    assert f"{lost} in trial 3" in page.text_content("#trials-lost")
    assert page.text_content(f"#trials-tasks tr[data-id='{lost}'] td:nth-child(5)") == "lost"
    conventions = _cells(page, "#trials-conventions")
    assert [row[0] for row in conventions] == ["project", "tau2", "mcpmark"]
    assert conventions[1][1].startswith("avg_reward ")
    shot = os.environ.get("M3BENCH_SCREENSHOTS")
    if shot:
        page.screenshot(path=str(Path(shot) / "trials.png"), full_page=True)
    # a trial's result of a task, then back to the summary from the trial's page
    page.click(f"#trials-tasks tr[data-id='{lost}'] td:nth-child(4) a")
    page.wait_for_selector("#pair")
    assert page.evaluate("document.body.dataset.view") == "task"
    assert f"{MODEL}_trial2" in page.text_content("h1")
    page.click("#crumbs a:nth-of-type(2)")
    page.wait_for_selector("#trial-of")
    page.click("#trial-of a")
    page.wait_for_selector("#trials-rates")
    assert not page.errors


def _copy_with_trials(run: Path, target: Path, edit) -> Path:
    """The run's folder without its site, its trials.json changed by `edit` (a function of the document)."""
    shutil.copytree(run, target, ignore=shutil.ignore_patterns("viewer"))
    path = target / TRIALS_FILE
    document = json.loads(path.read_text(encoding="utf-8"))
    edit(document)
    path.write_text(json.dumps(document), encoding="utf-8")
    return target


@pytest.mark.slow
def test_hostile_trials_texts_stay_text(page, trials_run: Path, tmp_path: Path) -> None:
    def edit(document: dict) -> None:
        doc = document["models"].pop(MODEL)
        doc["meta"]["success_rule"] = HOSTILE
        doc["inventory"]["missing"][0]["reason"] = HOSTILE
        for record in doc["inventory"]["records"]:
            record["reason"] = record["reason"] and HOSTILE
        document["models"][HOSTILE] = doc

    run = _copy_with_trials(trials_run, tmp_path / "run", edit)
    assert view_main([str(run)]) == 0
    page.on("dialog", lambda dialog: (page.errors.append("dialog: " + dialog.message), dialog.dismiss()))
    page.goto((run / "viewer" / "index.html").as_uri())
    page.click("#trials-models a.model")
    page.wait_for_selector("#trials-rates")
    assert page.text_content("h1") == f"{HOSTILE} over 3 trials"
    assert HOSTILE in page.text_content("#trials-lost")
    assert page.get_attribute("#trials-tasks td.slot.infrastructure", "title") == HOSTILE
    assert page.evaluate("window.__pwned") is None and not page.errors


def test_a_broken_trials_file_is_one_line(trials_run: Path, tmp_path: Path, capsys) -> None:
    def edit(document: dict) -> None:
        del document["models"][MODEL]["pass_hat_k"]["losses_excluded"]["2"]

    run = _copy_with_trials(trials_run, tmp_path / "run", edit)
    assert view_main([str(run)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "trials.json" in err and f"models.{MODEL}.pass_hat_k.losses_excluded.2" in err
    assert not (run / "viewer").exists()

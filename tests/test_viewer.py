"""The run viewer: the site a scored run gets, its data, bad input, and the pages in a real browser.

The browser tests drive Debian's Chromium through Playwright (tests/chromium.py: skipped without it,
failed under CI). The hostile inputs and the output folder rules are in test_viewer_hostile.py.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from chromium import browser, page  # noqa: F401  (fixtures)
from script_runs import call_app

from engine.apps.view import run as view_main
from engine.contract import InputError, read_trajectories
from engine.contract.staged import check_output_folder
from engine.synthetic import write_demo
from engine.viewer.text import MAX_TEXT

ROOT = Path(__file__).resolve().parents[1]
MODELS = ("demo_strong", "demo_weak", "demo_chaotic")
HUGE = "x" * (MAX_TEXT + 5000)
LONG_RESULT = "".join(f"row {i}: value {i * i}\n" for i in range(60))


def _run(cmd: list[str]) -> None:
    """`python scripts/<app>.py ARGS` run to success, in this process (script_runs.call_app)."""
    done = call_app(Path(cmd[0]).stem, *cmd[1:], cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.fixture(scope="module")
def scored_run(tmp_path_factory, embedding_cache: Path) -> Path:
    """Three demo models on 12 tasks, demo_weak judged by the scripted judges, scored and viewed."""
    base = tmp_path_factory.mktemp("viewer")
    gt, paths = write_demo(base / "data", n_tasks=12, seed=5)
    chaotic = json.loads(paths["demo_chaotic"].read_text(encoding="utf-8"))
    first = next(t for t in chaotic if t["steps"] and t["steps"][0]["calls"])
    first["steps"][0]["calls"][0]["arguments"]["note"] = HUGE
    first["steps"][0]["calls"][0]["result"] = LONG_RESULT  # a record of results alone (no dialogue)
    bare = next(t for t in chaotic if t is not first and t["steps"])
    for step in bare["steps"]:  # a record of the calls alone (the published format)
        for call in step["calls"]:
            call.pop("result", None)
    paths["demo_chaotic"].write_text(json.dumps(chaotic), encoding="utf-8")
    _run(["scripts/judge.py", "judges=scripted", f"data.gt={gt}", f"predictions={paths['demo_weak']}",
          f"results_dir={base}", f"cache_dir={base / 'judge-cache'}"])
    run = base / "run"
    _run(["scripts/score.py", f"data.gt={gt}", f"inputs.files=[{','.join(str(paths[m]) for m in MODELS)}]",
          f"output_dir={run}", f"encoder.cache_dir={embedding_cache}"])
    assert view_main([str(run)]) == 0
    return run


def _site(run: Path) -> dict:
    html = (run / "viewer" / "index.html").read_text(encoding="utf-8")
    return json.loads(html.split("var M3V_SITE = ", 1)[1].split(";</script>", 1)[0])


def _model_data(run: Path, slug: str) -> dict:
    text = (run / "viewer" / "data" / "m" / f"{slug}.js").read_text(encoding="utf-8")
    kind, key, data = json.loads("[" + text.strip()[len("M3V.put("):-2] + "]")
    assert (kind, key) == ("model", slug)
    return data


def _blocks(blocks: list[dict], evaluator: str) -> list[dict]:
    """The blocks an evaluator's display gave (of a task, or of a model)."""
    return [b for b in blocks if b["evaluator"] == evaluator]


def _parts(blocks: list[dict], evaluator: str, kind: str) -> list[dict]:
    return [p for b in _blocks(blocks, evaluator) for p in b["parts"] if p["kind"] == kind]


def _call_labels(task: dict) -> dict[tuple[int, int], str]:
    """(step, call) -> the call outcome's label key of a task's call outcomes block."""
    return {(si, ci): key for p in _parts(task["blocks"], "call_outcomes", "calls") for si, ci, key, _ in p["labels"]}


def _flat(path: Path, task_id: str, step: int, call: int) -> int:
    steps = read_trajectories(path).tasks[task_id].steps
    return sum(len(s.calls) for s in steps[:step]) + call


def _slug(run: Path, name: str) -> str:
    return next(slug for slug, model in _site(run)["models"].items() if model == name)


def _known(run: Path, model: str, kind: str) -> dict:
    """The first record of a model's strong_matches.json / unmatched_predictions.json, with flat indices."""
    meta = json.loads((run / model / "results_eval.json").read_text(encoding="utf-8"))["meta"]
    record = json.loads((run / model / f"{kind}.json").read_text(encoding="utf-8"))[0]
    out = {"id": record["id"], "pred": _flat(Path(meta["predictions"]), record["id"], record["pred"]["step_index"],
                                             record["pred"]["call_index_in_step"])}
    if "gt" in record:
        out["gt"] = _flat(Path(meta["gt"]), record["id"], record["gt"]["step_index"],
                          record["gt"]["call_index_in_step"])
    return out


@pytest.mark.slow
def test_site_holds_the_run(scored_run: Path) -> None:
    site_dir = scored_run / "viewer"
    site = _site(scored_run)
    assert sorted(site["models"].values()) == sorted(MODELS)
    published = json.loads((scored_run / "leaderboard.json").read_text(encoding="utf-8"))["rows"]
    assert [r["model"] for r in site["board"]["rows"]] == [r["Model"] for r in published]
    assert [r["cells"][-1] for r in site["board"]["rows"]] == [r["Average Score"] for r in published]
    assert "Task Completion" in site["board"]["columns"]
    assert {p.name for p in (site_dir / "plots").iterdir()} == {p.name for p in scored_run.glob("*.png")}
    for name in MODELS:
        assert (site_dir / "data" / "m" / f"{_slug(scored_run, name)}.js").is_file()
    strong = _known(scored_run, "demo_weak", "strong_matches")
    data = _model_data(scored_run, _slug(scored_run, "demo_weak"))
    assert [strong["gt"], strong["pred"], 1] in [m[:2] + m[3:] for m in data["tasks"][strong["id"]]["matches"]]
    unmatched = _known(scored_run, "demo_weak", "unmatched_predictions")
    assert unmatched["pred"] in data["tasks"][unmatched["id"]]["upred"]
    for kind, flag in (("strong_matches", 1), ("weak_matches", 0)):
        records = json.loads((scored_run / "demo_weak" / f"{kind}.json").read_text(encoding="utf-8"))
        assert len(records) == sum(m[3] == flag for t in data["tasks"].values() for m in t["matches"])
    records = json.loads((scored_run / "demo_weak" / "unmatched_predictions.json").read_text(encoding="utf-8"))
    assert len(records) == sum(len(t["upred"]) for t in data["tasks"].values())
    judged = _parts(data["tasks"][strong["id"]]["blocks"], "m3_judges", "rows")
    assert [len(p["rows"]) for p in judged] == [4, 4]  # both metrics, each judge's score and reply
    headings = [p["text"] for p in _parts(data["tasks"][strong["id"]]["blocks"], "m3_judges", "heading")]
    assert [h.split(":")[0] for h in headings] == ["Task Completion", "Information Grounding"]
    agreement = _parts(data["blocks"], "m3_judges", "rows")[0]["rows"]
    assert {row[0] for row in agreement} == {"task completion", "information grounding"}
    assert any(_call_labels(t) for t in data["tasks"].values())
    chaotic = (site_dir / "data" / "m" / f"{_slug(scored_run, 'demo_chaotic')}.js").read_text(encoding="utf-8")
    assert HUGE not in chaotic and f"{len(HUGE):,} characters in all" in chaotic
    # the site is listed as the run's output: scoring into the folder again replaces it
    assert "viewer" in json.loads((scored_run / ".m3bench-outputs.json").read_text(encoding="utf-8"))["outputs"]
    check_output_folder(scored_run)


def _results(folder: Path, meta: dict, details: bool = True) -> None:
    block = {"recall": 0.5, "precision": 0.5, "avg_sim_all_cov": 0.5, "avg_sim_strong_cov": 0.5,
             "step_coherence_cov": 0.5, "order_consistency_cov": 0.5, "merge_purity_cov": 0.5,
             "avg_Rounds": 1.0, "avg_tool_calls": 1.0, "num_ids": 1}
    record = {"id": "1", **block, "details": {"matches": []} if details else {}}
    if not details:
        del record["details"]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "results_eval.json").write_text(json.dumps({"aggregate": block, "by_type": {}, "per_id": [record],
                                                          "meta": meta}))


@pytest.mark.parametrize("case, message", [
    ("empty", "no results_eval.json found"),
    ("older", "per-task match details (per_id[].details.matches), which the viewer needs: score the run again"),
    ("no-gt", "missing: meta.gt (the reference file)"),
    ("gone", "the prediction file"),
    ("changed", "the run scored 2 call(s) but"),
])
def test_incomplete_or_older_run_is_one_line(tmp_path: Path, capsys, case: str, message: str) -> None:
    gt = tmp_path / "gt.json"
    gt.write_text(json.dumps([{"id": "1", "steps": []}]))
    meta = {"model": "m", "tau_strong": 0.8, "tau_weak": 0.6, "gt": str(gt), "predictions": str(tmp_path / "p.json")}
    run = tmp_path / "run"
    run.mkdir()
    if case == "older":
        _results(run / "m", meta, details=False)
    elif case == "no-gt":
        _results(run / "m", {k: v for k, v in meta.items() if k != "gt"})
    elif case == "gone":
        _results(run / "m", meta)
    elif case == "changed":
        Path(meta["predictions"]).write_text(json.dumps([{"id": "1", "steps": []}]))
        _results(run / "m", meta)
        result = json.loads((run / "m" / "results_eval.json").read_text())
        result["per_id"][0].update(total_gt_calls=0, total_pred_calls=2)
        (run / "m" / "results_eval.json").write_text(json.dumps(result))
    assert view_main([str(run)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and message in err, err
    assert not (run / "viewer").exists()


def test_serve_on_loopback(tmp_path: Path) -> None:
    gt = tmp_path / "gt.json"
    gt.write_text(json.dumps([{"id": "1", "steps": [{"calls": [{"name": "a/b", "arguments": {"x": 1}}]}]}]))
    pred = tmp_path / "p.json"
    pred.write_text(json.dumps([{"id": "1", "steps": []}]))
    run = tmp_path / "run"
    _results(run / "m", {"model": "m", "tau_strong": 0.8, "gt": str(gt), "predictions": str(pred)})
    proc = subprocess.Popen([sys.executable, "scripts/view.py", str(run), "--serve", "--port", "0"], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().startswith("wrote ")
        line = proc.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+/", line).group(0)
        with urllib.request.urlopen(url + "index.html", timeout=10) as response:
            assert response.status == 200 and b"M3V_SITE" in response.read()
        with urllib.request.urlopen(url + "data/gt.js", timeout=10) as response:
            assert b"a/b" in response.read()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _rows(page, table: str) -> list[list[str]]:
    return page.eval_on_selector_all(f"#{table} tbody tr",
                                     "rows => rows.map(r => [...r.cells].map(c => c.textContent))")


@pytest.mark.slow
def test_leaderboard_to_task_with_matches(page, scored_run: Path) -> None:
    page.goto((scored_run / "viewer" / "index.html").as_uri())
    page.wait_for_selector("#leaderboard tbody tr")
    board = _rows(page, "leaderboard")
    assert sorted(r[0].split(" #")[0] for r in board) == sorted(MODELS)  # the name, then its rank interval
    page.click("#leaderboard th:text-is('Recall')")
    recall = [float(r[1].split(" [")[0]) for r in _rows(page, "leaderboard")]  # the value, then its interval
    assert recall == sorted(recall, reverse=True)
    page.click("#leaderboard th:text-is('Recall')")
    assert [float(r[1].split(" [")[0]) for r in _rows(page, "leaderboard")] == sorted(recall)
    page.click("#leaderboard a:text-is('demo_weak')")
    page.wait_for_selector("#task-list tbody tr")
    assert page.locator("#ev-agreement tbody tr").count() == 2  # the judged model's agreement per metric
    assert page.locator("#ev-agreement tbody tr a").count() > 0  # its most disagreed tasks, linked
    strong = _known(scored_run, "demo_weak", "strong_matches")
    page.click(f"#task-list a:text-is('{strong['id']}')")
    page.wait_for_selector("#pair path.match", state="attached")
    line = page.locator(f"#pair path.match[data-kind=strong][data-gt='{strong['gt']}'][data-pred='{strong['pred']}']")
    assert line.count() == 1
    assert "strong" in page.get_attribute(f"#pred-{strong['pred']}", "class")
    assert page.locator("#ev-judges .group").count() == 2
    assert page.locator("#ev-judges .group").first.locator("tr").count() == 4
    unmatched = _known(scored_run, "demo_weak", "unmatched_predictions")
    page.goto((scored_run / "viewer" / "index.html").as_uri()
              + f"#/m/{_slug(scored_run, 'demo_weak')}/t/{unmatched['id']}")
    page.wait_for_selector(f"#pred-{unmatched['pred']}")
    assert "unmatched" in page.get_attribute(f"#pred-{unmatched['pred']}", "class")
    assert page.locator(f"#pair path.match[data-pred='{unmatched['pred']}']").count() == 0
    assert page.locator("#pred-0 .badge.outcome").count() == 1
    page.click("a:text-is('all models on this task')")
    page.wait_for_selector("#task-models tbody tr")
    scored = [m for m in MODELS if unmatched["id"] in _model_data(scored_run, _slug(scored_run, m))["tasks"]]
    assert page.locator("#task-models tbody tr a").count() == len(scored)
    assert page.errors == []


def _open(page, url: str, view: str) -> None:
    page.evaluate("document.body.dataset.view = ''")
    page.goto(url)
    page.wait_for_selector(f"body[data-view='{view}']")


@pytest.mark.slow
def test_a_model_s_address_is_its_name_or_its_slug(page, scored_run: Path) -> None:
    """`#/m/demo_weak` (the model's name as the user wrote it) opens the model, as its slug does; the links
    the viewer writes name the model."""
    index = (scored_run / "viewer" / "index.html").as_uri()
    page.goto(index)
    page.wait_for_selector("#leaderboard tbody tr")
    assert page.get_attribute("#leaderboard a:text-is('demo_weak')", "href") == "#/m/demo_weak"
    slug = _slug(scored_run, "demo_weak")
    for key in ("demo_weak", slug):
        _open(page, f"{index}#/m/{key}", "model")
        assert page.locator("h1").first.text_content() == "demo_weak"
        first = page.locator("#task-list tbody a").first
        assert first.get_attribute("href") == f"#/m/demo_weak/t/{first.text_content()}"
        _open(page, f"{index}#/m/{key}/t/{first.text_content()}", "task")
        assert page.locator("h1").first.text_content().startswith("demo_weak \u00b7 task ")
        assert page.locator("#crumbs a").nth(1).get_attribute("href") == "#/m/demo_weak"
    _open(page, f"{index}#/m/demo_nobody", "not-found")
    assert "no model demo_nobody in this run" in page.locator("p.error").text_content()
    assert page.errors == []


@pytest.mark.slow
def test_filters_and_long_values(page, scored_run: Path) -> None:
    slug = _slug(scored_run, "demo_weak")
    page.goto((scored_run / "viewer" / "index.html").as_uri() + f"#/m/{slug}")
    page.wait_for_selector("#task-list tbody tr")
    everything = _rows(page, "task-list")
    families = sorted({r[1] for r in everything})
    page.select_option("#f-fam", families[0])
    page.wait_for_function(f"document.querySelectorAll('#task-list tbody tr').length === "
                           f"{sum(r[1] == families[0] for r in everything)}")
    assert {r[1] for r in _rows(page, "task-list")} == {families[0]}
    page.select_option("#f-fam", "")
    page.wait_for_function(f"document.querySelectorAll('#task-list tbody tr').length === {len(everything)}")
    data = _model_data(scored_run, slug)
    expected = {tid for tid, t in data["tasks"].items() if "invalid_arguments" in _call_labels(t).values()}
    assert 0 < len(expected) < len(everything)
    page.select_option("#f-tag", "invalid_arguments")
    page.wait_for_function(f"document.querySelectorAll('#task-list tbody tr').length === {len(expected)}")
    assert {r[0] for r in _rows(page, "task-list")} == expected
    page.select_option("#f-tag", "")
    target = everything[-1][0]
    page.fill("#f-q", target)
    page.press("#f-q", "Enter")
    page.wait_for_function("document.querySelectorAll('#task-list tbody tr').length === 1")
    assert _rows(page, "task-list")[0][0] == target
    page.fill("#f-q", "")
    page.press("#f-q", "Enter")
    page.check("#f-differ")
    page.wait_for_function(f"document.querySelectorAll('#task-list tbody tr').length < {len(everything)}")
    assert page.locator("#count").text_content().startswith("10 of ")
    # a huge argument value is shown cut, with a button that shows it all
    chaotic = _slug(scored_run, "demo_chaotic")
    cdata = _model_data(scored_run, chaotic)
    tid = next(t for t, v in cdata["tasks"].items() if "characters in all" in json.dumps(v["steps"]))
    page.goto((scored_run / "viewer" / "index.html").as_uri() + f"#/m/{chaotic}/t/{tid}")
    button = page.locator("#pair button.expand").first
    button.wait_for()
    cell = button.locator("xpath=preceding-sibling::code")
    assert len(cell.text_content()) < 200
    button.click()
    assert len(cell.text_content()) > MAX_TEXT
    # what the call returned, folded under it in the alignment and shown cut in the transcript
    fold = page.locator("#pred-0 details.returned-fold")
    assert "row 0: value 0 row 1: value 1" in fold.locator("summary").text_content()
    result = page.locator("#transcript .x-call pre.result").first
    assert result.text_content().startswith("row 0: value 0\n") and "row 59" not in result.text_content()
    page.locator("#transcript .x-call .folded button.expand").first.click()
    assert result.text_content() == LONG_RESULT
    assert page.locator("#transcript .msg.agent.final pre").text_content() == cdata["tasks"][tid]["final_reply"]
    bare = [t for t in cdata["order"] if "x" not in cdata["tasks"][t]]
    assert len(bare) == 1
    page.goto((scored_run / "viewer" / "index.html").as_uri() + f"#/m/{chaotic}/t/{bare[0]}")
    page.wait_for_selector("#transcript p.note")
    assert "records neither a dialogue nor what the tools returned" in page.locator("#transcript").text_content()
    assert page.errors == []


def test_extra_aggregate_columns(tmp_path: Path) -> None:
    gt = tmp_path / "gt.json"
    gt.write_text(json.dumps([{"id": "1", "type": "maps", "question": "q?", "steps": []}]))
    pred = tmp_path / "p.json"
    pred.write_text(json.dumps([{"id": "1", "steps": []}]))
    run = tmp_path / "run"
    _results(run / "m", {"model": "m", "tau_strong": 0.8, "gt": str(gt), "predictions": str(pred)})
    path = run / "m" / "results_eval.json"
    result = json.loads(path.read_text())
    result["aggregate"].update({"rubric": {"mean": 0.75, "std": 0.1}, "tool_use": {"proactivity": 1.0,
                                "success_rate": None, "volume": 2.5}, "verifier_pass": 0.5, "note": "text"})
    path.write_text(json.dumps(result))
    assert view_main([str(run)]) == 0
    board = _site(run)["board"]
    assert [c["label"] for c in board["extra"]] == ["rubric", "Tool-Call Proactivity", "Tool-Call Volume",
                                                    "verifier_pass"]
    assert board["rows"][0]["extra"] == [[0.75, 0.1], 1.0, 2.5, 0.5]


def test_task_image_kept_as_thumbnail(tmp_path: Path) -> None:
    from PIL import Image

    (tmp_path / "images").mkdir()
    Image.new("RGB", (1200, 900), (200, 30, 30)).save(tmp_path / "images" / "1.png")
    gt = tmp_path / "gt.json"
    gt.write_text(json.dumps([{"id": "1", "image": "images/1.png", "steps": []},
                              {"id": "2", "image": "images/absent.png", "steps": []}]))
    pred = tmp_path / "p.json"
    pred.write_text(json.dumps([{"id": "1", "steps": []}, {"id": "2", "steps": []}]))
    run = tmp_path / "run"
    _results(run / "m", {"model": "m", "tau_strong": 0.8, "gt": str(gt), "predictions": str(pred)})
    result = json.loads((run / "m" / "results_eval.json").read_text())
    result["per_id"].append({**result["per_id"][0], "id": "2"})
    (run / "m" / "results_eval.json").write_text(json.dumps(result))
    assert view_main([str(run)]) == 0
    text = (run / "viewer" / "data" / "gt.js").read_text(encoding="utf-8")
    reference = json.loads("[" + text.strip()[len("M3V.put("):-2] + "]")[2]
    assert reference["1"]["image_file"] == "img/0.jpg" and reference["2"]["image_file"] is None
    with Image.open(run / "viewer" / "img" / "0.jpg") as thumb:
        assert max(thumb.size) == 480


def test_judge_replies_and_call_outcomes_of_the_judge_files(tmp_path: Path) -> None:
    from engine.viewer.text import MAX_REPLY

    gt = tmp_path / "gt.json"
    gt.write_text(json.dumps([{"id": "1", "steps": [{"calls": [{"name": "a/b", "arguments": {}}]}]}]))
    pred = tmp_path / "p.json"
    pred.write_text(json.dumps([{"id": "1", "steps": [{"calls": [{"name": "a/b", "arguments": {}},
                                                                  {"name": "a/c", "arguments": {}}]}]}]))
    judge = tmp_path / "p_taskcompletion.json"
    reply = "Planning is sound. " * 100 + "\\boxed{7}"
    judge.write_text(json.dumps({"pre_id": {"1": {
        "final": 0.7, "judges": [{"name": "j1", "score": 0.7, "reply": reply}, {"name": "j2", "score": 0.5}],
        "info_grounding": {"final": 0.4, "judges": [{"name": "j1", "score": 0.4}]}}},
        "meta": {"agreement": {"task_completion": {"judges": ["j1", "j2"], "tasks": 1}}}}))
    calls = tmp_path / "p_callanalysis.json"
    calls.write_text(json.dumps({"illegal_calling": 0, "unknown_tool": 1, "invalid_arguments": 0,
                                 "resource_not_found": 0, "success": 1, "illegal": {},
                                 "calls": [{"id": "1", "step": 0, "call": 0, "label": "success"},
                                           {"id": "1", "step": 0, "call": 1, "label": "unknown_tool"}]}))
    run = tmp_path / "run"
    _results(run / "m", {"model": "m", "tau_strong": 0.8, "gt": str(gt), "predictions": str(pred),
                         "judge": str(judge), "calls": str(calls)})
    assert view_main([str(run)]) == 0
    task = _model_data(run, _slug(run, "m"))["tasks"]["1"]
    completion, grounding = _parts(task["blocks"], "m3_judges", "rows")
    (j1, score1, cut_reply), second = completion["rows"]
    assert (j1, score1) == ("j1", "0.700") and cut_reply["reply"].startswith(reply[:MAX_REPLY])
    assert f"{len(reply):,} characters in all" in cut_reply["reply"]
    assert second == ["j2", "0.500", ""] and grounding["rows"] == [["j1", "0.400", ""]]
    assert _parts(task["blocks"], "m3_judges", "heading")[1]["text"] == "Information Grounding: 0.400"
    assert _call_labels(task) == {(0, 0): "success", (0, 1): "unknown_tool"}


# -- the evaluators' verdicts: the VTB demo and the outcome demos, as the README runs them ---------------------

DEMOS = {"vtb": ("scripted", "vtb_demo", "vtb_rubrics", "rubrics"),
         "mcpverse": ("scripted_mcpverse", "mcpverse_demo", "answer_equivalence", "answers"),
         "tobench": ("scripted_tobench", "tobench_demo", "verifiers", "checks")}
CRITICAL = ("vtb-04", 0, 4)  # its rubric 'Also reports "5.69"' is Not Met: flagged critical below


@pytest.fixture(scope="module")
def evaluated_runs(tmp_path_factory, embedding_cache: Path) -> dict[str, Path]:
    """The three demo flows with the scripted model and judges, each scored and viewed: name -> run folder.
    The VTB demo is scored with the strict profile (the task's critical flag first), and one Not Met rubric
    flagged critical before scoring, so that one task fails a critical rubric."""
    from script_runs import run_script

    base = tmp_path_factory.mktemp("evaluated")
    runs = {}
    for name, (model, data, evaluator, suffix) in DEMOS.items():
        results = base / name
        script = ["model.script=${rollout_path:demo/vtb_reference.json}"] if name == "vtb" else []
        run_script("rollout", f"model={model}", f"tasks={data}", *script, f"results_dir={results}", cwd=base)
        run_script("judge", "model=scripted", "judges=scripted", f"data={data}", f"evaluators=[{evaluator}]",
                   *(["evaluators.vtb_rubrics.profile=strict"] if name == "vtb" else []),  # every judge asked
                   f"results_dir={results}", cwd=base)
        if name == "vtb":
            path = results / f"scripted_test_mcp_fuzzy_{suffix}.json"
            doc = json.loads(path.read_text(encoding="utf-8"))
            tid, turn, j = CRITICAL
            rubric = doc["per_id"][tid]["turns"][turn]["rubrics"][j]
            assert rubric["met"] is False
            rubric.update(critical=True, critical_flag=True)
            path.write_text(json.dumps(doc), encoding="utf-8")
        run_script("score", "sweep=leaderboard", f"data={data}", f"results_dir={results}",
                   *(["vtb.profile=strict"] if name == "vtb" else []),
                   f"output_dir={results / 'score'}", f"encoder.cache_dir={embedding_cache}", "device=cpu", cwd=base)
        assert view_main([str(results / "score")]) == 0
        runs[name] = results / "score"
    return runs


@pytest.mark.slow
def test_site_holds_the_evaluators_verdicts(evaluated_runs: dict[str, Path]) -> None:
    for name, run in evaluated_runs.items():
        result = json.loads((run / "scripted" / "results_eval.json").read_text(encoding="utf-8"))
        predictions = {t["id"]: t for t in json.loads(Path(result["meta"]["predictions"]).read_text())}
        file = json.loads(Path(result["meta"]["predictions"]).with_name(
            f"scripted_test_mcp_fuzzy_{DEMOS[name][3]}.json").read_text(encoding="utf-8"))["per_id"]
        data = _model_data(run, _slug(run, "scripted"))
        for record in result["per_id"]:
            task = data["tasks"][record["id"]]
            counts = _parts(task["blocks"], "tool_use", "rows")[0]["rows"]
            assert counts == [[record["tool_use"][k] for k in ("calls", "flagged", "valid")]]
            flags = [c.get("is_error") for s in predictions[record["id"]]["steps"] for c in s["calls"]]
            assert [f for s in task["errors"] or [] for f in s] == (flags if any(f is not None for f in flags) else [])
            assert not {"tool_use", "rubric_score", "answer_success", "check_error"} & set(task["extra"])
        if name == "vtb":
            tid, turn, j = CRITICAL
            table = _parts(data["tasks"][tid]["blocks"], "vtb_rubrics", "rows")[turn]
            description, weight, _, critical, verdict, judges = table["rows"][j]
            entry = file[tid]["turns"][turn]["rubrics"][j]
            assert (description, weight, critical["badge"], verdict) == (entry["description"], entry["weight"],
                                                                         "critical", {"badge": "Not Met",
                                                                                      "pass": False})
            assert j in table["marked"]
            assert judges["rows"] == [[v["name"], v["verdict"], {"reply": v["explanation"]}] for v in entry["judges"]]
            assert _parts(data["tasks"][tid]["blocks"], "vtb_rubrics", "verdict")[0]["pass"] is False
            assert _parts(data["tasks"][tid]["blocks"], "vtb_rubrics", "tags")[0]["tags"][0][0] == "critical_failed"
            assert {r["id"]: r["pass_rate"] for r in result["per_id"]}[tid] == 0.0
        elif name == "mcpverse":
            judges = _parts(data["tasks"]["mv-03"]["blocks"], "answer_equivalence", "rows")[0]["rows"]
            assert [j[:2] for j in judges] == list(map(list, file["mv-03"]["judges"].items()))
            assert all('{"score": 0}' in j[2]["reply"] for j in judges)
            assert _parts(data["tasks"]["mv-07"]["blocks"], "answer_equivalence", "verdict")[0]["text"] == "skipped"
        else:
            errors = _parts(data["tasks"]["tb-04"]["blocks"], "verifiers", "error")
            assert [e["text"] for e in errors] == [file["tb-04"]["error"]] == ["KeyError: 'answer'"]
            badges = _parts(data["tasks"]["tb-02"]["blocks"], "verifiers", "badges")[0]["items"]
            assert badges == [["1", True], ["0", False], ["1", True]]


def _transcript(run: Path, slug: str, at: list[int]) -> dict:
    """The transcript a task's ``x`` ([file, place]) points to."""
    text = (run / "viewer" / "data" / "x" / slug / f"{at[0]}.js").read_text(encoding="utf-8")
    kind, key, data = json.loads("[" + text.strip()[len("M3V.put("):-2] + "]")
    assert (kind, key) == ("x", f"{slug}/{at[0]}")
    return data[at[1]]


@pytest.mark.slow
def test_each_flow_s_transcripts_hold_its_dialogue_and_tool_results(evaluated_runs: dict[str, Path]) -> None:
    """For each demo flow the rollout runs (VisualToolBench multi-turn, MCPVerse, TOBench; M3-Bench's in
    test_viewer_trials.py), every task's transcript holds the record's replies in order, each step's results
    before the message that gave them to the model, the tool log's files and durations, the images shown."""
    for name, run in evaluated_runs.items():
        meta = json.loads((run / "scripted" / "results_eval.json").read_text(encoding="utf-8"))["meta"]
        records = {t["id"]: t for t in json.loads(Path(meta["predictions"]).read_text(encoding="utf-8"))}
        logs = Path(meta["predictions"]).parent / "rollout" / "scripted" / "tool_logs"
        slug = _slug(run, "scripted")
        data = _model_data(run, slug)
        assert [data["tasks"][tid]["x"] for tid in data["order"]] == [[0, k] for k in range(len(data["order"]))]
        for tid in data["order"]:
            x, record = _transcript(run, slug, data["tasks"][tid]["x"]), records[tid]
            assert [[c["r"] for c in s] for s in x["calls"]] == [[c["result"] for c in s["calls"]]
                                                                for s in record["steps"]]
            assert [[c.get("e") for c in s] for s in x["calls"]] == [[c["is_error"] for c in s["calls"]]
                                                                    for s in record["steps"]]
            replies = [m for m in record["dialogue"] if m["role"] == "assistant"]
            assert [it[1:3] for it in x["items"] if it[0] == "agent"] == [[m["phase"], m["content"]] for m in replies]
            assert [it[1] for it in x["items"] if it[0] == "step"] == list(range(len(record["steps"])))
            for i, item in enumerate(x["items"]):
                if item[0] == "step":  # the message right after a step gives the model its results
                    assert x["items"][i + 1][2].startswith(f"Results of step {item[1] + 1}:"), (name, tid)
            log = json.loads((logs / f"{tid}.json").read_text(encoding="utf-8"))["calls"]
            assert [c["d"] for s in x["calls"] for c in s] == [line["duration_s"] for line in log]
            files = [[f["name"] for f in c.get("f", [])] for s in x["calls"] for c in s]
            assert files == [line["files"] for line in log]
            for item in x["items"]:
                for image in item[3] if item[0] in ("prompt", "harness") else []:
                    assert (run / "viewer" / image["src"]).is_file(), (name, tid, image)
        if name == "vtb":
            x = _transcript(run, slug, data["tasks"]["vtb-01-mt"]["x"])
            assert [it[1] for it in x["items"] if it[0] == "prompt"] == [None, 2]
            prompts = [it[2] for it in x["items"] if it[0] == "prompt"]
            assert prompts[0] == "Crop the red box out of the picture and tell me how large the crop is.\n\nImage in " \
                                 "the workspace: media/demo_shapes.png"
            assert prompts[1] == "Now say where the result is, in one sentence."
            files = x["calls"][1][0]["f"]
            assert [f["name"] for f in files] == ["media/red_box.png"] and (run / "viewer" / files[0]["src"]).is_file()


@pytest.mark.slow
def test_a_task_page_shows_its_transcript(page, evaluated_runs: dict[str, Path]) -> None:
    """A multi-turn task's page: both turns in order, what each tool returned (the failed crop's error under
    its call in the alignment and in the transcript), the images the agent saw, drawn."""
    vtb = evaluated_runs["vtb"]
    record = next(t for t in json.loads((vtb.parent / "scripted_test_mcp_fuzzy.json").read_text(encoding="utf-8"))
                  if t["id"] == "vtb-01-mt")
    error = record["steps"][0]["calls"][0]["result"]
    assert error.startswith("Error executing tool crop")
    page.goto((vtb / "viewer" / "index.html").as_uri() + f"#/m/{_slug(vtb, 'scripted')}/t/vtb-01-mt")
    page.wait_for_selector("#transcript .x-call")
    assert page.locator("#pair path.match").count() == 2  # the alignment still drawn
    assert error[:60] in page.locator("#pred-0 details.returned-fold summary").text_content()
    assert page.locator("#pred-0 details.returned-fold").get_attribute("open") is None
    assert page.locator("#transcript .turn-head").all_text_contents() == ["Turn 1", "Turn 2"]
    calls = page.locator("#transcript .x-call")
    assert calls.first.locator("pre.result").text_content() == error
    assert calls.first.locator(".returned .badge.is-error").count() == 1
    assert calls.nth(1).locator("pre.result").text_content() == record["steps"][1]["calls"][0]["result"]
    assert [r.text_content() for r in page.locator("#transcript .msg.agent.final pre").all()] == [
        turn["final_reply"] for turn in record["turns"]]
    images = page.locator("#transcript img")
    assert images.count() == 2  # the task's picture, and the crop the second call made
    for image in images.all():
        image.scroll_into_view_if_needed()
        page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=image.element_handle())
    assert page.locator("#transcript figcaption").all_text_contents()[:2] == ["media/demo_shapes.png",
                                                                               "media/red_box.png"]
    assert page.errors == []


@pytest.mark.slow
def test_rubrics_outcomes_and_call_errors_in_the_browser(page, evaluated_runs: dict[str, Path]) -> None:
    vtb = evaluated_runs["vtb"]
    slug = _slug(vtb, "scripted")
    page.goto((vtb / "viewer" / "index.html").as_uri() + f"#/m/{slug}")
    page.wait_for_selector("#task-list tbody tr")
    everything = _rows(page, "task-list")
    page.select_option("#f-tag", "critical_failed")
    page.wait_for_function(f"document.querySelectorAll('#task-list tbody tr').length < {len(everything)}")
    assert [r[0] for r in _rows(page, "task-list")] == [CRITICAL[0]]
    page.select_option("#f-tag", "")
    page.wait_for_function(f"document.querySelectorAll('#task-list tbody tr').length === {len(everything)}")
    page.goto((vtb / "viewer" / "index.html").as_uri() + f"#/m/{slug}/t/{CRITICAL[0]}")
    row = page.locator("#ev-rubrics table.rows > tbody > tr").nth(CRITICAL[2])
    row.wait_for()
    assert "marked" in row.get_attribute("class")
    assert row.locator("> td").first.text_content() == 'Also reports "5.69".'
    assert row.locator(".badge.fail").text_content() == "Not Met"
    assert row.locator(".badge:text-is('critical')").count() == 1
    assert not row.locator("table.inner").is_visible()
    row.locator("summary").first.click()
    assert row.locator("table.inner > tbody > tr").count() == 4
    assert "the answer lacks 5.69" in row.locator("table.inner").text_content()
    assert page.locator("#ev-rubrics .verdict b").text_content() == "fail"
    assert page.locator("#ev-rubrics table.rows > tbody > tr").first.locator(".badge.pass").count() == 1
    # a call the prediction file marks is_error, and the task's tool-use counts
    page.goto((vtb / "viewer" / "index.html").as_uri() + f"#/m/{slug}/t/vtb-01-mt")
    page.wait_for_selector("#pred-0")
    assert page.locator("#pred-0 .call-head .badge.is-error").count() == 1
    assert page.locator("#pred-1 .call-head .badge.no-error").count() == 1
    assert [c.text_content() for c in page.locator("#ev-tool-use tbody td").all()] == ["2", "2", "1"]
    # the verifier's evaluator error shown apart from a failure; the answer judges' replies
    tobench = evaluated_runs["tobench"]
    page.goto((tobench / "viewer" / "index.html").as_uri() + f"#/m/{_slug(tobench, 'scripted')}/t/tb-04")
    page.wait_for_selector("#ev-checks")
    assert "KeyError: 'answer'" in page.locator("#ev-checks .evaluator-error").text_content()
    page.goto((tobench / "viewer" / "index.html").as_uri() + f"#/m/{_slug(tobench, 'scripted')}/t/tb-02")
    page.wait_for_selector("#ev-checks .badges")
    assert [b.text_content() for b in page.locator("#ev-checks .badges .badge").all()] == ["1", "0", "1"]
    assert page.locator("#ev-checks .verdict b.fail").text_content() == "failed"
    assert page.locator("#ev-checks .evaluator-error").count() == 0
    mcpverse = evaluated_runs["mcpverse"]
    page.goto((mcpverse / "viewer" / "index.html").as_uri() + f"#/m/{_slug(mcpverse, 'scripted')}/t/mv-03")
    page.wait_for_selector("#ev-answer")
    assert page.locator("#ev-answer .verdict b.fail").text_content() == "0"
    assert "level L2" in page.locator("#ev-answer .verdict").text_content()
    page.locator("#ev-answer summary").first.click()
    assert '{"score": 0}' in page.locator("#ev-answer pre").first.text_content()
    assert page.errors == []


def test_the_reference_a_task_was_aligned_against(tmp_path: Path, page) -> None:
    gt = tmp_path / "gt.json"
    one = {"steps": [{"calls": [{"name": "a/b", "arguments": {}}]}]}
    two = {"steps": [{"calls": [{"name": "a/c", "arguments": {}}, {"name": "a/d", "arguments": {}}]}]}
    gt.write_text(json.dumps({"1": [one, two], "2": one}))
    pred = tmp_path / "p.json"
    pred.write_text(json.dumps([{"id": "1", "steps": []}, {"id": "2", "steps": []}]))
    run = tmp_path / "run"
    _results(run / "m", {"model": "m", "tau_strong": 0.8, "gt": str(gt), "predictions": str(pred)})
    result = json.loads((run / "m" / "results_eval.json").read_text())
    result["per_id"] = [{**result["per_id"][0], "id": "1", "reference": 1, "total_gt_calls": 2, "total_pred_calls": 0},
                        {**result["per_id"][0], "id": "2", "reference": 0, "total_gt_calls": 1, "total_pred_calls": 0}]
    (run / "m" / "results_eval.json").write_text(json.dumps(result))
    assert view_main([str(run)]) == 0
    tasks = _model_data(run, _slug(run, "m"))["tasks"]
    assert tasks["1"]["reference"] == {"index": 1, "of": 2, "steps": [[["a/c", {}], ["a/d", {}]]]}
    assert tasks["2"]["reference"] == {"index": 0, "of": 1, "steps": None}
    page.goto((run / "viewer" / "index.html").as_uri() + f"#/m/{_slug(run, 'm')}/t/1")
    page.wait_for_selector("#reference")
    assert page.locator("#reference").text_content() == "aligned against reference 2 of 2"
    assert [t.text_content() for t in page.locator(".col.gt .tool").all()] == ["a/c", "a/d"]
    assert page.errors == []


@pytest.mark.slow
def test_a_reference_from_a_second_references_file_is_drawn(tmp_path: Path, embedding_cache: Path) -> None:
    """With data.references=[G1,G2] the run's meta names both files, so a task aligned against its
    reference from G2 shows that reference's steps."""
    one = {"id": "1", "question": "q", "steps": [{"calls": [{"name": "a/b", "arguments": {"x": 1}}]}]}
    two = {"id": "1", "question": "q", "steps": [{"calls": [{"name": "a/c", "arguments": {"y": "left"}},
                                                           {"name": "a/d", "arguments": {"z": "right"}}]}]}
    g1, g2, pred = tmp_path / "g1.json", tmp_path / "g2.json", tmp_path / "p.json"
    g1.write_text(json.dumps([one]))
    g2.write_text(json.dumps([two]))
    pred.write_text(json.dumps([{**two, "final_reply": "done"}]))
    run = tmp_path / "run"
    _run(["scripts/score.py", f"data.references=[{g1},{g2}]", f"inputs.file={pred}", f"output_dir={run}",
          f"encoder.cache_dir={embedding_cache}"])
    meta = json.loads((run / "results_eval.json").read_text())["meta"]
    assert meta["references"] == [str(g1), str(g2)] and meta["gt"] == str(g1)
    assert view_main([str(run)]) == 0
    task = _model_data(run, _slug(run, "p"))["tasks"]["1"]
    assert task["reference"]["index"] == 1 and task["reference"]["of"] == 2
    assert [[call[0] for call in step] for step in task["reference"]["steps"]] == [["a/c", "a/d"]]


def test_a_prediction_the_scorer_reads_leniently_is_shown(tmp_path: Path) -> None:
    """Scoring reads predictions leniently (NaN and the infinities scored with a warning), so the viewer
    does too, and shows such arguments as the results echo them."""
    gt, pred = tmp_path / "gt.json", tmp_path / "p.json"
    gt.write_text(json.dumps([{"id": "1", "steps": []}]))
    pred.write_text('[{"id": "1", "steps": [{"calls": [{"name": "a/b", "arguments": {"x": NaN, "y": -Infinity}}]}]}]')
    run = tmp_path / "run"
    _results(run / "m", {"model": "m", "tau_strong": 0.8, "gt": str(gt), "predictions": str(pred)})
    assert view_main([str(run)]) == 0
    task = _model_data(run, _slug(run, "m"))["tasks"]["1"]
    assert task["steps"] == [[["a/b", {"x": "NaN", "y": "-Infinity"}]]]


def test_a_failed_task_and_the_tasks_lost_to_the_infrastructure_are_shown(tmp_path: Path) -> None:
    """The model's own failure is scored and shown with its reason; a task lost to the infrastructure was
    not scored (the scorer leaves it out) and is named with the model."""
    gt, pred = tmp_path / "gt.json", tmp_path / "p.json"
    gt.write_text(json.dumps([{"id": "1", "steps": []}, {"id": "2", "steps": []}]))
    pred.write_text(json.dumps([
        {"id": "1", "steps": [], "error": {"kind": "agent", "reason": "step 1: not tool-call JSON", "attempts": 2}},
        {"id": "2", "steps": [], "error": {"kind": "model_api", "reason": "HTTP 429: rate limited", "attempts": 4}}]))
    run = tmp_path / "run"
    _results(run / "m", {"model": "m", "tau_strong": 0.8, "gt": str(gt), "predictions": str(pred)})
    assert view_main([str(run)]) == 0
    model = _model_data(run, _slug(run, "m"))
    assert model["tasks"]["1"]["error"] == ["agent", "step 1: not tool-call JSON"]
    assert model["lost"] == {"2": ["model_api", "HTTP 429: rate limited"]} and model["order"] == ["1"]


def test_one_step_order_consistency_all_models_steps_and_the_width(tmp_path: Path, page) -> None:
    """Order Consistency of a one-step reference (0 under the published rule) is kept and marked n/a with
    its reason; "all models on this task" shows each model's predicted steps; the tool-use counts say what
    they count; a model's task list fits 1400 px."""
    call = {"name": "a/b", "arguments": {"x": 1}}
    gt, pred = tmp_path / "gt.json", tmp_path / "p.json"
    gt.write_text(json.dumps([{"id": "1", "type": "f", "question": "one step?", "steps": [{"calls": [call, call]}]},
                              {"id": "2", "type": "f", "question": "two steps? " + "long words " * 40,
                               "steps": [{"calls": [call]}, {"calls": [call]}]}]))
    pred.write_text(json.dumps([{"id": i, "steps": [{"calls": [{**call, "is_error": False}]}]} for i in ("1", "2")]))
    run = tmp_path / "run"
    for name, order in (("m", 0.0), ("n", 0.0)):
        _results(run / name, {"model": name, "tau_strong": 0.8, "gt": str(gt), "predictions": str(pred)})
        result = json.loads((run / name / "results_eval.json").read_text())
        result["per_id"] = [{**result["per_id"][0], "id": i, "order_consistency_cov": order, "total_gt_calls": 2,
                             "total_pred_calls": 1, "tool_use": {"calls": 1, "flagged": 1, "valid": 1}}
                            for i in ("1", "2")]
        (run / name / "results_eval.json").write_text(json.dumps(result))
    assert view_main([str(run)]) == 0
    tasks = _model_data(run, _slug(run, "m"))["tasks"]
    assert tasks["1"]["one_step"] is True and tasks["2"]["one_step"] is False
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto((run / "viewer" / "index.html").as_uri())
    page.wait_for_selector("#leaderboard tbody tr")
    assert "no pair of steps" in page.locator("#one-step").text_content()
    page.goto((run / "viewer" / "index.html").as_uri() + f"#/m/{_slug(run, 'm')}")
    page.wait_for_selector("#task-list tbody tr")
    assert page.evaluate("document.documentElement.scrollWidth") <= 1400
    cells = {r[0]: r for r in _rows(page, "task-list")}
    column = page.locator("#task-list th").all_text_contents().index("Order Consistency")
    assert cells["1"][column] == "0.000 n/a (single step)" and cells["2"][column] == "0.000"
    assert "no pair of steps to compare" in page.get_attribute("#task-list td.na", "title")
    page.goto((run / "viewer" / "index.html").as_uri() + f"#/m/{_slug(run, 'm')}/t/1")
    page.wait_for_selector("table.metrics td.na")
    assert page.locator("#ev-tool-use thead th").all_text_contents() == ["Tool calls", "outcome recorded", "valid"]
    assert "calls that carry is_error" in page.locator("#ev-tool-use .note").text_content()
    page.goto((run / "viewer" / "index.html").as_uri() + "#/t/2")
    page.wait_for_selector("#all-steps .model-steps")
    assert [r[2] for r in _rows(page, "task-models")] == ["1 step(s), 1 call(s)"] * 2
    assert page.locator("#all-steps .model-steps").count() == 2
    assert page.locator("#all-steps .model-steps .col.pred .tool").all_text_contents() == ["a/b", "a/b"]
    assert page.errors == []


# -- a new evaluator is shown with no viewer edit ----------------------------------------------------------------

THROWAWAY = '''"""A throwaway evaluator: the length of a prediction's final reply, read from <stem>_length.json."""

from pathlib import Path

from engine.evaluators.base import PROFILES, Metric, Verdicts, file_document, format_record
from engine.evaluators.protocol import Card, EvaluatorOptions, Plain

NAME = "reply_length"


def _entry(path, tid, entry):
    return entry


class ReplyLength(Plain[dict, EvaluatorOptions]):
    card = Card(name=NAME, reads=frozenset({"prediction"}), position=90, suffix="length",
                metrics=(Metric("reply_chars", "Reply Characters", NAME, PROFILES, "judged_mean", False, False, 0.0),))
    options_type = EvaluatorOptions

    def read(self, path, settings):
        found, meta = file_document(Path(path), "reply length file", _entry, "length")
        return Verdicts(per_id={t: {"reply_chars": e["chars"]} for t, e in found.items()}, detail=found, meta=meta)

    def display(self, task, meta):
        if task is None:
            return [{"title": "Reply length overall", "parts": [{"kind": "note", "text": meta.get("note", "")}]}]
        return [{"title": "Reply length", "id": "reply-length", "parts": [
            {"kind": "verdict", "label": "short enough", "pass": task["chars"] < 100, "text": str(task["chars"])},
            {"kind": "rows", "rows": [["counted by", task["by"]]]},
            {"kind": "reply", "label": "reply", "text": task["text"]},
            {"kind": "calls", "labels": [[0, 0, "long", "came before a long reply"]]}]}]


EVALUATOR = ReplyLength()
'''


@pytest.fixture
def throwaway_evaluator(tmp_path: Path, monkeypatch):
    """The module above registered in engine.evaluators for one test (a folder added to the package's path)."""
    import engine.evaluators as package

    folder = tmp_path / "more_evaluators"
    folder.mkdir()
    (folder / "reply_length.py").write_text(THROWAWAY, encoding="utf-8")
    caches = (package.names, package.evaluator, package.evaluators)
    monkeypatch.setattr(package, "__path__", [*package.__path__, str(folder)])
    for cached in caches:
        cached.cache_clear()
    yield
    monkeypatch.undo()
    sys.modules.pop("engine.evaluators.reply_length", None)
    for cached in caches:
        cached.cache_clear()


@pytest.mark.slow
def test_a_new_evaluator_is_shown_with_no_viewer_edit(tmp_path: Path, throwaway_evaluator, page) -> None:
    from engine.evaluators import evaluators

    assert "reply_length" in [e.card.name for e in evaluators()]
    gt = tmp_path / "gt.json"
    gt.write_text(json.dumps([{"id": "1", "steps": [{"calls": [{"name": "a/b", "arguments": {}}]}]}]))
    pred = tmp_path / "p.json"
    pred.write_text(json.dumps([{"id": "1", "final_reply": "x" * 120,
                                 "steps": [{"calls": [{"name": "a/b", "arguments": {}}]}]}]))
    (tmp_path / "p_length.json").write_text(json.dumps({
        "per_id": {"1": {"chars": 120, "by": "<b>len</b>", "text": "x" * 120}},
        "meta": {"format": {"name": "m3bench.length", "version": 1}, "note": "one task"}}))
    run = tmp_path / "run"
    _results(run / "m", {"model": "m", "tau_strong": 0.8, "gt": str(gt), "predictions": str(pred)})
    assert view_main([str(run)]) == 0
    data = _model_data(run, _slug(run, "m"))
    assert [b["title"] for b in _blocks(data["blocks"], "reply_length")] == ["Reply length overall"]
    verdict = _parts(data["tasks"]["1"]["blocks"], "reply_length", "verdict")
    assert verdict == [{"kind": "verdict", "label": "short enough", "pass": False, "text": "120"}]
    page.goto((run / "viewer" / "index.html").as_uri() + f"#/m/{_slug(run, 'm')}/t/1")
    page.wait_for_selector("#ev-reply-length")
    assert page.locator("#ev-reply-length .verdict b.fail").text_content() == "120"
    assert page.locator("#ev-reply-length table.rows td").text_content() == "<b>len</b>"  # text, not markup
    assert page.locator("#pred-0 .badge.o-long").text_content() == "came before a long reply"
    assert page.errors == []
    # a file of a later version of its format is refused in one line
    (tmp_path / "p_length.json").write_text(json.dumps({"per_id": {}, "meta": {"format": {
        "name": "m3bench.length", "version": 2}}}))
    from engine.evaluators import evaluator
    from engine.evaluators.protocol import ReadSettings

    with pytest.raises(InputError, match=r"p_length\.json: field 'meta\.format\.version': version 2"):
        evaluator("reply_length").read(tmp_path / "p_length.json", ReadSettings())


@pytest.mark.slow
def test_a_call_never_made_is_shown_so_and_never_matched(tmp_path: Path, embedding_cache: Path, page, capsys) -> None:
    """A call the rollout never made (illegal format) is drawn beside its step as not made, with no match
    line; a run that matched one (scored before such calls were left unmatched) is refused in one line."""
    call = {"name": "a/b", "arguments": {"city": "Paris"}}
    unmade = {"name": "a/b", "arguments": '{"city": "Paris"', "result": "Error: Invalid arguments: bad JSON "
              "(the call was not made)", "is_error": True, "made": False}
    gt, pred = tmp_path / "gt.json", tmp_path / "p.json"
    gt.write_text(json.dumps([{"id": "1", "question": "q", "steps": [{"calls": [call]}, {"calls": [call]}]}]))
    pred.write_text(json.dumps([{"id": "1", "steps": [{"calls": [unmade]}, {"calls": [call]}], "illegal_calls": 1}]))
    run = tmp_path / "run"
    _run(["scripts/score.py", f"data.gt={gt}", f"inputs.file={pred}", f"output_dir={run}",
          f"encoder.cache_dir={embedding_cache}"])
    assert view_main([str(run)]) == 0
    task = _model_data(run, _slug(run, "p"))["tasks"]["1"]
    assert task["unmade"] == [0] and [m[1] for m in task["matches"]] == [1]
    page.goto((run / "viewer" / "index.html").as_uri() + f"#/m/{_slug(run, 'p')}/t/1")
    page.wait_for_selector("#pred-0")
    assert page.locator("#pred-0 .badge.not-made").text_content() == "not made (illegal format)"
    assert page.locator("#pred-0 .badge.strong, #pred-0 .badge.weak, #pred-0 .badge.unmatched").count() == 0
    assert "not-made" in page.get_attribute("#pred-0", "class") and page.locator("#pred-1 .badge.strong").count() == 1
    assert page.errors == []

    result = json.loads((run / "results_eval.json").read_text())
    match = result["per_id"][0]["details"]["matches"][0]
    result["per_id"][0]["details"]["matches"].append({**match, "pred_call_index": 0, "gt_call_index": 0})
    (run / "results_eval.json").write_text(json.dumps(result))
    capsys.readouterr()
    assert view_main([str(run)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "matched predicted call #0, which was never made" in err and "score it again" in err


@pytest.mark.slow
def test_leaderboard_intervals_in_every_column_fit_1400_px(tmp_path: Path, scored_run: Path, embedding_cache: Path,
                                                           page) -> None:
    """Three models scored with their statistics (on by default for a leaderboard), one judged (Task Completion and
    Information Grounding columns) and every one with tool use: each value shows its interval from stats.json under
    it, the tool-use columns included, with the rank interval and the tie mark; a value without an interval says
    why in its title; the whole leaderboard fits a 1400 px window (measured in Chromium); the plots are listed."""
    data = scored_run.parent / "data"
    run = tmp_path / "run"
    _run(["scripts/score.py", f"data.gt={data / 'reference.json'}",
          f"inputs.files=[{','.join(str(data / f'{m}.json') for m in MODELS)}]", "stats.cluster=sample",
          "stats.resamples=2000", f"output_dir={run}", f"encoder.cache_dir={embedding_cache}", "device=cpu"])
    assert view_main([str(run)]) == 0
    stats = json.loads((run / "stats.json").read_text(encoding="utf-8"))
    board = _site(run)["board"]
    labels = [*board["columns"], *(c["label"] for c in board["extra"])]
    keys = [*({v: k for k, v in stats["metrics"].items()}.get(label) for label in board["columns"]),
            *(c["key"] for c in board["extra"])]
    assert {"Task Completion", "Information Grounding", "Tool-Call Proactivity", "Tool-Call Volume"} <= set(labels)
    tied = set(stats["tied_with_top"]["average_score"])
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto((run / "viewer" / "index.html").as_uri())
    page.wait_for_selector("#leaderboard tbody tr")
    cells = _rows(page, "leaderboard")
    titles = page.eval_on_selector_all("#leaderboard tbody tr",
                                       "rows => rows.map(r => [...r.cells].map(c => c.getAttribute('title')))")
    shown = 0
    for row, cell, title in zip(board["rows"], cells, titles):
        record = stats["models"][row["model"]]
        for i, key in enumerate(keys):
            block = record["metrics"].get(key) if key else None
            if block is None:
                continue
            text = f"{block['value']:.4f}"
            if block["low"] is not None:
                text += f" [{block['low']:.4f}, {block['high']:.4f}]"
                shown += labels[i] == "Tool-Call Volume"
            else:
                assert title[i + 1] == block["reason"]
            assert cell[i + 1] == text, (row["model"], labels[i])
        assert f"#{record['rank']} ({record['rank_low']}\u2013{record['rank_high']})" in cell[0]
        assert ("tied with top" in cell[0]) == (row["model"] in tied) == (record["rank_low"] == 1)
    assert shown == len(MODELS)
    assert page.locator("#leaderboard tr.tied").count() == len(tied) >= 1
    assert "[low, high]" in page.text_content("#intervals-note")
    right = page.evaluate("document.querySelector('#leaderboard').getBoundingClientRect().right")
    assert right <= 1400 and page.evaluate("document.documentElement.scrollWidth") <= 1400, right
    for png in ("leaderboard_forest.png", "rank_intervals.png", "pairwise.png"):
        assert page.locator(f".plots img[alt='{png}']").count() == 1
    assert page.errors == []

"""The viewer against hostile and careless input: a run whose every text is a script payload, addresses
the site has no page for, and output folders that are not the site's to replace.

The browser test fails on any script the payloads would run (they set ``window.__pwned`` or open a
dialog), any console error or uncaught exception, and any request outside the site's folder.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

import pytest
from chromium import browser, page  # noqa: F401  (fixtures)
from preloaded import run_python
from script_runs import call_app

from engine.apps.view import run as view_main
from engine.contract.staged import STAGING, check_output_folder
from engine.viewer.folder import MARKER
from engine.viewer.site import SCRIPTS

ROOT = Path(__file__).resolve().parents[1]
PWN = "window.__pwned=1"
HOSTILE = (f"<!--<script></script><script>{PWN}</script>\"><svg onload={PWN}>\u2028\u2029"
           "<img src=x onerror=alert(1)>'&amp;")
"""A text that runs a script wherever it is taken as markup, and breaks inline data that escapes only </."""
RUN_NAME = f'<img src=x onerror="{PWN}">'
MODEL_NAMES = (f'"><svg onload={PWN}>', "<!--<script>", "na\u00efve \u6a21\u578b ?#%41&x=1+")
"""Model names with markup, and with the characters an address gives a meaning to (and unicode)."""
IDS = (HOSTILE + " 1", HOSTILE + " 2")


def _script(name: str, *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """`python scripts/<name>.py ARGS` in cwd: the viewer as a process (its warnings are what its stderr
    shows), the score app in this process (script_runs.call_app)."""
    if name == "view":
        return run_python([str(ROOT / "scripts" / f"{name}.py"), *args], cwd=cwd)
    return call_app(name, *args, cwd=cwd)


def _call(i: int) -> dict:
    return {"name": f"srv{i}/{HOSTILE}", "arguments": {"q": HOSTILE, HOSTILE: [HOSTILE, {"k": HOSTILE}]}}


DIALOGUE = [{"role": "system", "content": HOSTILE},
            {"role": "user", "content": [{"type": "text", "text": HOSTILE},
                                         {"type": "image", "path": f"media/{HOSTILE}"}]},
            {"role": "user", "content": f"## PREPARE {HOSTILE}"},
            {"role": "assistant", "phase": HOSTILE, "content": HOSTILE, "tool_calls": [{HOSTILE: HOSTILE}]},
            {"role": "user", "content": [{"type": "text", "text": f"Results of step 1:\n{HOSTILE}"},
                                         {"type": "image", "path": f"/{HOSTILE}.png"}]},
            {"role": "tool", "name": HOSTILE, "content": HOSTILE}, {"role": HOSTILE, "content": HOSTILE},
            {"role": "user", "content": f"## TURN 2\n{HOSTILE}"}]
"""A prediction's dialogue whose every text, phase, role and image name is hostile (tool results are too)."""


def _write_hostile_inputs(base: Path) -> Path:
    """A reference, two models' predictions and every evaluator file beside each, all their texts hostile;
    the task images named by an absolute path and by one leading outside. Returns the reference."""
    gt = base / "gt.json"
    gt.write_text(json.dumps([{"id": tid, "type": HOSTILE, "question": HOSTILE, "image": image,
                               "steps": [{"calls": [_call(0), _call(1)]}, {"calls": [_call(2)]}]}
                              for tid, image in zip(IDS, ("../../etc/passwd", "/etc/hostname"))]))
    judges = [{"name": HOSTILE, "score": 0.5, "reply": HOSTILE}, {"name": HOSTILE + "b", "score": 0.25,
                                                                  "reply": HOSTILE}]
    rubric = {"description": HOSTILE, "weight": 4, "category": [HOSTILE], "critical_flag": True, "met": False,
              "judges": [{"name": HOSTILE, "verdict": "Not Met", "explanation": HOSTILE}, {"name": HOSTILE,
                                                                                           "error": HOSTILE}]}
    files = {
        "": [{"id": tid, "final_reply": HOSTILE, "dialogue": DIALOGUE,
              "steps": [{"calls": [{**_call(0), "is_error": True, "result": f"{HOSTILE}\nfile=/nowhere/{HOSTILE}.png"},
                                   {**_call(3), "result": {HOSTILE: [HOSTILE]}}]}]}
             for tid in IDS],
        "_taskcompletion": {"per_id": {tid: {"final": 0.5, "judges": judges,
                                             "info_grounding": {"final": 0.4, "judges": judges}} for tid in IDS},
                            "meta": {"judges": [HOSTILE], "agreement": {HOSTILE: {
                                "judges": [HOSTILE, HOSTILE + "b"], "tasks": 2, "krippendorff_alpha": 0.1,
                                "spearman": [{"judges": [HOSTILE, HOSTILE + "b"], "rho": 0.5}],
                                "most_disagreed": [{"id": IDS[0], "spread": 0.25}]}}}},
        "_callanalysis": {"illegal_calling": 1, "unknown_tool": 1, "invalid_arguments": 0, "resource_not_found": 0,
                          "success": 1, "illegal": {IDS[0]: HOSTILE},
                          "calls": [{"id": IDS[0], "step": 0, "call": 0, "label": "success"},
                                    {"id": IDS[0], "step": 0, "call": 1, "label": HOSTILE}]},
        "_rubrics": {"per_id": {tid: {"turns": [{"rubrics": [rubric]}]} for tid in IDS}},
        "_answers": {"per_id": {tid: {"level": "L1", "score": 0, "judges": {HOSTILE: 0}, "replies": {HOSTILE: HOSTILE},
                                      "reason": HOSTILE} for tid in IDS}},
        "_checks": {"per_id": {IDS[0]: {"check": HOSTILE, "checks": [1, 0], "passed": False, "error": None,
                                        "reason": HOSTILE},
                               IDS[1]: {"check": HOSTILE, "checks": None, "passed": None, "error": HOSTILE}}},
    }
    for model in MODEL_NAMES:
        for suffix, content in files.items():
            (base / f"{model}{suffix}.json").write_text(json.dumps(content), encoding="utf-8")
    return gt


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory, embedding_cache: Path) -> tuple[Path, str]:
    """The hostile run scored by the score app (two models, every evaluator file joined) and viewed by
    view.py; one match of the second model points past its task's calls. Returns (run folder, view.py's
    stderr)."""
    base = tmp_path_factory.mktemp("hostile")
    gt = _write_hostile_inputs(base)
    run = base / RUN_NAME
    quoted = ",".join(f"'{base / m}.json'" for m in MODEL_NAMES)
    done = _script("score", f"data.gt={gt}", f"inputs.files=[{quoted}]", f"output_dir='{run}'",
                   f"encoder.cache_dir={embedding_cache}")
    assert done.returncode == 0, done.stderr[-3000:]
    results = next(p for p in run.glob("*/results_eval.json") if p.parent.name == MODEL_NAMES[1])
    doc = json.loads(results.read_text(encoding="utf-8"))
    record = next(r for r in doc["per_id"] if r["id"] == IDS[1])
    record["details"]["matches"].append({"gt_call_index": 99, "pred_call_index": 98, "similarity": 0.9})
    results.write_text(json.dumps(doc), encoding="utf-8")
    done = _script("view", str(run))
    assert done.returncode == 0, done.stderr[-3000:]
    return run, done.stderr


@pytest.mark.slow
def test_hostile_texts_stay_data(hostile_run: tuple[Path, str]) -> None:
    """Each text reaches the site as data: the page holds no markup of it, the inline data no character
    that could end its script element, and no task image from outside the reference's folder."""
    run, stderr = hostile_run
    site = run / "viewer"
    html = (site / "index.html").read_text(encoding="utf-8")
    scripts = 1 + len(SCRIPTS)  # the inline data, then the page's own scripts
    assert html.count("<script") == scripts and html.count("</script>") == scripts and "<!--" not in html
    assert "<img" not in html and "<svg" not in html and "\u2028" not in html
    assert f"<title>M3-Bench run &lt;img src=x onerror=&#34;{PWN}&#34;&gt;</title>" in html
    inline = html.split("var M3V_SITE = ", 1)[1].split(";</script>", 1)[0]
    assert not set(inline) & {"<", ">", "&", "\u2028", "\u2029"}
    assert json.loads(inline)["index"]["tasks"][0]["question"] == HOSTILE
    transcripts = sorted((site / "data" / "x").glob("*/*.js"))
    assert len(transcripts) == len(MODEL_NAMES)  # each model's two in one file
    assert all(text.read_text(encoding="utf-8").count('"items":') == len(IDS) for text in transcripts)
    for data in [site / "data" / "gt.js", *(site / "data" / "m").iterdir(), *transcripts]:
        text = data.read_text(encoding="utf-8")
        assert not set(text) & {"<", ">", "&", "\u2028", "\u2029"}, data.name
    assert "passwd" not in (site / "data" / "gt.js").read_text(encoding="utf-8")
    assert "hostname" not in (site / "data" / "gt.js").read_text(encoding="utf-8")
    assert not (site / "img").exists()
    assert not (site / "media").exists()
    warnings = [line for line in stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 2 and "field 'image' ../../etc/passwd" in warnings[0] and "2 task image(s)" in warnings[0]
    assert warnings[1].startswith("warning: 18 file reference(s) of 6 task(s) not shown in the site (12 outside the "
                                  "task's folders, 6 no rollout workspace of this task)"), warnings[1]


def _watch(page, site: Path) -> dict[str, list]:
    """Record on the page's context dialogs, requests outside the site (refused) and the page's errors."""
    seen: dict[str, list] = {"dialogs": [], "outside": [], "errors": page.errors}
    inside = site.as_uri() + "/"

    def request(route) -> None:
        url = route.request.url
        if url.startswith(inside) or url.startswith("data:"):
            route.continue_()
        else:
            seen["outside"].append(url)
            route.abort()

    page.context.route("**/*", request)
    page.on("request", lambda r: None if r.url.startswith((inside, "data:")) else seen["outside"].append(r.url))
    page.on("dialog", lambda d: (seen["dialogs"].append(d.message), d.dismiss()))
    return seen


def _open(page, url: str, view: str) -> None:
    page.evaluate("document.body.dataset.view = ''")
    page.goto(url)
    page.wait_for_selector(f"body[data-view='{view}']")


@pytest.mark.slow
def test_hostile_site_runs_no_script(page, hostile_run: tuple[Path, str]) -> None:
    run, _ = hostile_run
    site = run / "viewer"
    seen = _watch(page, site)
    index = (site / "index.html").as_uri()
    page.goto(index)
    page.wait_for_selector("#leaderboard tbody tr")
    assert page.locator("header .run b").text_content() == RUN_NAME
    assert sorted(page.locator("#leaderboard a.model").all_text_contents()) == sorted(MODEL_NAMES)
    assert page.locator("#differ td.q").first.text_content().startswith(HOSTILE[:100])
    hrefs = {name: page.get_attribute(f"#leaderboard a.model:text-is('{name}')", "href") for name in MODEL_NAMES}
    for name, href in hrefs.items():  # each named in its address, URL-encoded
        assert href == "#/m/" + urllib.parse.quote(name, safe="!'()*-._~"), href
        _open(page, index + href, "model")
        assert page.locator("h1").first.text_content() == name
    _open(page, index, "board")
    page.click(f"#leaderboard a.model:text-is('{MODEL_NAMES[1]}')")
    page.wait_for_selector("#task-list tbody tr")
    assert page.locator("h1").first.text_content() == MODEL_NAMES[1]
    assert page.locator("#ev-agreement td").first.text_content() == HOSTILE.replace("_", " ")
    page.locator("#task-list tbody a").nth(1).click()
    page.wait_for_selector("#pair path.match", state="attached")
    assert page.locator(".question").text_content() == HOSTILE
    assert page.locator("#pred-0 .tool").text_content() == f"srv0/{HOSTILE}"
    for summary in page.locator("#app summary").all():
        summary.click()
    assert HOSTILE in page.locator("#ev-rubrics table.inner").first.text_content()
    assert HOSTILE in page.locator("#ev-checks .evaluator-error").text_content()
    returned = page.locator("#transcript .x-call pre.result")  # tool results, agent text and image names: text
    assert returned.first.text_content() == f"{HOSTILE}\nfile=/nowhere/{HOSTILE}.png"
    assert json.loads(returned.nth(1).text_content()) == {HOSTILE: [HOSTILE]}
    assert page.locator("#transcript .msg.agent pre.reply").text_content() == HOSTILE
    assert page.locator("#transcript .msg.agent .phase").text_content() == " \u00b7 " + HOSTILE
    assert page.locator("#transcript .msg.tool pre.result").text_content() == HOSTILE
    assert page.locator("#transcript .turn-head").all_text_contents() == ["Turn 1", "Turn 2"]
    assert page.locator("#transcript figure.refused figcaption").all_text_contents() == [
        f"media/{HOSTILE}", "/nowhere/", f"/{HOSTILE}.png"]
    assert page.locator("#transcript img").count() == 0
    assert page.locator("#pair path.match").count() == 1  # the match past the task's calls is not drawn
    page.click("a:text-is('all models on this task')")
    page.wait_for_selector("#task-models tbody tr")
    slug = page.evaluate("SITE.index.models[1]")
    for address, message in (("#/m/%", "the address is not understood"), ("#/m/%E0%A4%A/t/x", "not understood"),
                             ("#/zzz/1/2", "no such page"), ("#/m/nope", "no model nope"),
                             ("#/m/" + slug + "/t/__proto__", "task __proto__ is not in"),
                             ("#/t/constructor", "task constructor is not in this run"),
                             ("#/m/" + slug + "/t/" + urllib.parse.quote(HOSTILE, safe=""), "is not in"),
                             ("#/m/__proto__/t/1", "no model __proto__")):
        _open(page, index + address, "not-found")
        assert message in page.locator("p.error").text_content(), address
    _open(page, index + "#/m/" + slug + "/t/" + urllib.parse.quote(IDS[0], safe=""), "task")
    assert page.evaluate("window.__pwned") is None
    assert seen == {"dialogs": [], "outside": [], "errors": []}


CANARY = "CANARY-5f1c0e-not-for-the-site"


def _png(path: Path, size: tuple[int, int], color: str, text: str | None = None) -> None:
    """An image file; with `text`, the text in a PNG text chunk as well."""
    from PIL import Image, PngImagePlugin

    info = PngImagePlugin.PngInfo()
    if text:
        info.add_text("comment", text)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, color).save(path, "PNG", pnginfo=info)


@pytest.mark.slow
def test_a_transcript_shows_no_file_from_outside_the_task_s_folders(tmp_path: Path, embedding_cache: Path) -> None:
    """A rollout whose predictions name a key in a fake home (~/.ssh/id_rsa, a canary) by an absolute path, by
    one leading outside, through a symbolic link in the workspace (to the file and to its folder), and an image
    outside; a workspace that is itself a link to the home: the site holds the one image of the workspace and
    the task's own picture, the canary nowhere, and names each refused file with the reason."""
    home, data, results = tmp_path / "home", tmp_path / "data", tmp_path / "results"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(f"-----BEGIN OPENSSH PRIVATE KEY-----\n{CANARY}\n")
    _png(home / "photo.png", (13, 7), "red", CANARY)  # an image, outside the task's folders
    _png(data / "task.png", (40, 30), "green")
    ws = results / "rollout" / "scripted" / "workspace"
    media = ws / "t1" / "media"
    _png(media / "ok.png", (24, 16), "blue", CANARY)  # admitted: redrawn, its text chunk not kept
    (media / "notes.png").write_text(CANARY)  # not an image
    (media / "key.png").symlink_to(home / ".ssh" / "id_rsa")
    (media / "photo.png").symlink_to(home / "photo.png")
    (media / "ssh").symlink_to(home / ".ssh")
    (ws / "t2").symlink_to(home)  # a workspace that is a link
    logs = results / "rollout" / "scripted" / "tool_logs"
    logs.mkdir(parents=True)
    (logs / "t1.json").write_text(json.dumps({"id": "t1", "calls": [
        {"step": 1, "index": 1, "files": ["media/ok.png", "media/key.png", "media/ssh/id_rsa.png", "media/photo.png"],
         "duration_s": 0.5}]}))
    key, outside = home / ".ssh" / "id_rsa", home / "photo.png"
    result = (f"wrote file={media / 'ok.png'} and file={key} and file={outside} and file={media / 'ssh' / 'id_rsa'} "
              f"and file={data / 'task.png'}")
    seen = [f"media/{name}" for name in ("ok.png", "notes.png", "key.png", "photo.png", "ssh/id_rsa")]
    seen += [str(key), f"../../../../../{key.relative_to(key.anchor)}", f"media/../../{outside.name}"]
    call = {"name": "images/crop", "arguments": {"input_path": "media/ok.png"}}
    tasks = [{"id": tid, "question": "crop", "image": "task.png", "steps": [{"calls": [call]}]} for tid in ("t1", "t2")]
    (data / "gt.json").write_text(json.dumps(tasks))
    dialogue = [{"role": "user", "content": [{"type": "text", "text": "crop"}] + [{"type": "image", "path": p}
                                                                             for p in seen]},
                {"role": "assistant", "phase": "final", "content": "done"}]
    pred = results / "scripted_test_mcp_fuzzy.json"
    pred.write_text(json.dumps([{**t, "steps": [{"calls": [{**call, "result": result, "is_error": False}]}],
                                 "dialogue": dialogue} for t in tasks]))
    run = tmp_path / "run"
    done = _script("score", f"data.gt={data / 'gt.json'}", f"model.predictions={pred}", f"output_dir={run}",
                   f"encoder.cache_dir={embedding_cache}")
    assert done.returncode == 0, done.stderr[-3000:]
    done = _script("view", str(run), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    site = run / "viewer"
    for path in site.rglob("*"):
        assert not path.is_symlink()
        if path.is_file():
            assert CANARY.encode() not in path.read_bytes(), path
            assert b"BEGIN OPENSSH" not in path.read_bytes(), path
    from PIL import Image

    sizes = sorted(Image.open(p).size for p in (site / "media").iterdir())
    assert sizes == [(24, 16), (40, 30)]  # ok.png and the data set's task.png; never photo.png (13 x 7)
    text = next((site / "data" / "x").glob("*/0.js")).read_text(encoding="utf-8")
    first, second = json.loads("[" + text.strip()[len("M3V.put("):-2] + "]")[2]
    shown = {f["name"]: f.get("refused", "shown") for f in first["items"][0][3]}
    assert shown == {"media/ok.png": "shown", "media/notes.png": "not an image", "media/key.png": "a symbolic link",
                     "media/photo.png": "a symbolic link", "media/ssh/id_rsa": "a folder on its way is a symbolic link",
                     str(key): "outside the task's folders", seen[6]: "leaves the folder",
                     seen[7]: "leaves the folder"}
    files = {f["name"]: f.get("refused", "shown") for f in first["calls"][0][0]["f"]}
    assert files == {"media/ok.png": "shown", "media/key.png": "a symbolic link",
                     "media/ssh/id_rsa.png": "a folder on its way is a symbolic link",
                     "media/photo.png": "a symbolic link", str(media / "ok.png"): "shown",
                     str(key): "outside the task's folders", str(outside): "outside the task's folders",
                     str(media / "ssh" / "id_rsa"): "a folder on its way is a symbolic link",
                     str(data / "task.png"): "shown"}
    assert [f.get("refused") for f in second["items"][0][3]] == ["the task's workspace is a symbolic link"] * 6 + [
        "leaves the folder"] * 2  # the workspace a link: none of its files; paths leading out of it named so
    files = {f["name"]: f.get("refused", "shown") for f in second["calls"][0][0]["f"]}
    assert files[str(data / "task.png")] == "shown" and files[str(key)] == "the task's workspace is a symbolic link"
    assert files[str(media / "ok.png")] == "outside the task's folders"  # t1's workspace is not t2's
    warning = [line for line in done.stderr.splitlines() if "not shown in the site" in line]
    assert len(warning) == 1 and warning[0].startswith("warning: "), done.stderr


def _small_run(base: Path, embedding_cache: Path) -> Path:
    """A one-task run scored by the score app."""
    gt, pred = base / "gt.json", base / "p.json"
    task = {"id": "1", "question": "q", "steps": [{"calls": [{"name": "a/b", "arguments": {"x": 1}}]}]}
    gt.write_text(json.dumps([task]))
    pred.write_text(json.dumps([task]))
    run = base / "run"
    done = _script("score", f"data.gt={gt}", f"inputs.file={pred}", f"output_dir={run}",
                   f"encoder.cache_dir={embedding_cache}")
    assert done.returncode == 0, done.stderr[-3000:]
    return run


def _tree(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


@pytest.fixture(scope="module")
def small_run(tmp_path_factory, embedding_cache: Path) -> Path:
    return _small_run(tmp_path_factory.mktemp("small"), embedding_cache)


@pytest.mark.slow
def test_out_refuses_folders_not_its_own(small_run: Path, tmp_path: Path, capsys) -> None:
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep")
    other_run = tmp_path / "other"
    (other_run / "m").mkdir(parents=True)
    (other_run / "m" / "results_eval.json").write_text("{}")
    (other_run / MARKER).write_text(json.dumps({"site": "m3bench-viewer"}))  # a marker does not make a run a site
    a_file = tmp_path / "file.html"
    a_file.write_text("x")
    link = tmp_path / "link"
    link.symlink_to(foreign)
    before = _tree(small_run.parent)
    for out, message in ((small_run, "holds the run folder"), (small_run.parent, "holds the run folder"),
                         (small_run.parent.parent, "holds the run folder"), (foreign, "the viewer did not write"),
                         (other_run, "holds a scoring run's outputs"), (a_file, "is not a folder"),
                         (link, "is a link")):
        assert view_main([str(small_run), "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: --out {out}: ") and message in err and err.count("\n") == 1, err
    assert _tree(small_run.parent) == before and (small_run / "results_eval.json").is_file()
    assert (foreign / "notes.txt").read_text() == "keep" and (other_run / "m" / "results_eval.json").is_file()
    assert a_file.read_text() == "x"


@pytest.mark.slow
def test_out_replaces_its_own_earlier_site(small_run: Path, tmp_path: Path, capsys) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert view_main([str(small_run), "--out", str(empty)]) == 0
    assert (empty / "index.html").is_file() and (empty / MARKER).is_file()
    listed = json.loads((empty / MARKER).read_text())["files"]
    assert set(listed) == {p.relative_to(empty).as_posix() for p in empty.rglob("*") if p.is_file()} - {MARKER}
    assert view_main([str(small_run), "--out", str(empty)]) == 0  # a site of the viewer's files alone: replaced
    assert sorted(os.listdir(tmp_path)) == ["empty"]  # no staging folder left beside it
    assert view_main([str(small_run)]) == 0 and view_main([str(small_run)]) == 0  # the default RUN/viewer
    assert not (small_run / STAGING).exists()
    (small_run / "viewer" / MARKER).unlink()  # a site from before the marker: the run's manifest lists it
    assert view_main([str(small_run)]) == 0 and (small_run / "viewer" / MARKER).is_file()
    marker = json.loads((empty / MARKER).read_text())
    (empty / MARKER).write_text(json.dumps({"site": marker["site"], "run": marker["run"]}))  # an earlier build's
    assert view_main([str(small_run), "--out", str(empty)]) == 0  # its files all of the site's layout


@pytest.mark.slow
def test_a_rebuild_removes_no_file_the_viewer_did_not_write(small_run: Path, tmp_path: Path, capsys) -> None:
    """A file a user added to a site, or a site file the user edited, makes a rebuild refuse the folder (exit
    status 2, one line naming the file), the folder left as it was; without it the rebuild replaces it."""
    site = tmp_path / "site"
    assert view_main([str(small_run), "--out", str(site)]) == 0
    (site / "data" / "notes.txt").write_text("mine")
    index = (site / "index.html").read_text()
    before = {p: p.read_bytes() for p in site.rglob("*") if p.is_file()}
    assert view_main([str(small_run), "--out", str(site)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: --out {site}: holds 1 entry the viewer did not write "
                                                   "or that changed since (data/notes.txt)"), err
    assert {p: p.read_bytes() for p in site.rglob("*") if p.is_file()} == before
    (site / "data" / "notes.txt").unlink()
    (site / "index.html").write_text(index + "<!-- my edit -->")
    assert view_main([str(small_run), "--out", str(site)]) == 2
    assert "(index.html)" in capsys.readouterr().err and (site / "index.html").read_text().endswith("my edit -->")
    (site / "index.html").write_text(index)
    (site / "mine").mkdir()  # an empty folder of the user's is theirs too
    assert view_main([str(small_run), "--out", str(site)]) == 2 and (site / "mine").is_dir()
    (site / "mine").rmdir()
    assert view_main([str(small_run), "--out", str(site)]) == 0
    assert "M3V_SITE" in (site / "index.html").read_text()


@pytest.mark.slow
def test_a_copied_marker_authorizes_no_removal(small_run: Path, tmp_path: Path, capsys) -> None:
    """A marker copied into a folder of documents (of this build, or an earlier build's without a file list)
    gives the viewer no right to that folder: refused with exit status 2, thesis.txt kept."""
    site = tmp_path / "site"
    assert view_main([str(small_run), "--out", str(site)]) == 0
    documents = tmp_path / "documents"
    documents.mkdir()
    (documents / "thesis.txt").write_text("years of work")
    for copied in ((site / MARKER).read_text(), json.dumps({"site": "m3bench-viewer", "run": str(small_run)})):
        (documents / MARKER).write_text(copied)
        assert view_main([str(small_run), "--out", str(documents)]) == 2
        err = capsys.readouterr().err
        assert "(thesis.txt)" in err and err.count("\n") == 1, err
        assert sorted(os.listdir(documents)) == sorted([MARKER, "thesis.txt"])
        assert (documents / "thesis.txt").read_text() == "years of work"


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def _killed_build(run: Path) -> Path:
    """Start view.py on the run and kill it (SIGKILL) while its staging folder exists; that folder."""
    container = run / STAGING
    for _ in range(20):
        proc = subprocess.Popen([sys.executable, str(ROOT / "scripts" / "view.py"), str(run)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while proc.poll() is None:
            stages = list(container.glob("viewer@*")) if container.is_dir() else []
            if stages:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
                return stages[0]
            time.sleep(0.001)
    pytest.fail("view.py finished each time before its staging folder could be seen")


@pytest.mark.slow
def test_a_killed_build_leaves_nothing_in_the_way(tmp_path: Path, embedding_cache: Path) -> None:
    run = _small_run(tmp_path, embedding_cache)
    stage = _killed_build(run)
    assert stage.is_dir() and stage.name.split("@")[:2] == ["viewer", socket.gethostname()]
    check_output_folder(run)  # scoring into the run is not refused for it
    live = run / STAGING / f"viewer@{socket.gethostname()}@{os.getpid()}@00000000"
    live.mkdir()
    dead = run / STAGING / f"viewer@{socket.gethostname()}@{_dead_pid()}@00000000"
    dead.mkdir()
    with pytest.raises(ValueError, match=STAGING):
        check_output_folder(run)  # a build under way is
    assert view_main([str(run)]) == 0
    assert not stage.exists() and not dead.exists() and live.is_dir()  # the dead ones removed, not the live one
    live.rmdir()
    stage = _killed_build(run)
    done = _script("score", f"data.gt={tmp_path / 'gt.json'}", f"inputs.file={tmp_path / 'p.json'}",
                   f"output_dir={run}", f"encoder.cache_dir={embedding_cache}")
    assert done.returncode == 0, done.stderr[-3000:]
    assert not (run / STAGING).exists() and (run / "results_eval.json").is_file()


def test_an_older_viewers_killed_build_is_recognised_and_removed(small_run: Path) -> None:
    """``.viewer.building-<pid>`` (the staging folder of older viewers) of a dead process: scoring into the run
    is not refused for it and the next build removes it; one of a live process is left alone."""
    dead = small_run / f".viewer.building-{_dead_pid()}"
    (dead / "data").mkdir(parents=True)
    (dead / "index.html").write_text("half a site")
    check_output_folder(small_run)
    live = small_run / f".viewer.building-{os.getpid()}"
    live.mkdir()
    with pytest.raises(ValueError, match=r"\.viewer\.building-"):
        check_output_folder(small_run)
    assert view_main([str(small_run)]) == 0
    assert not dead.exists() and live.is_dir()
    live.rmdir()
    check_output_folder(small_run)

"""Benchmark of the viewer on a full-size sweep: 14 models x 208 tasks on the real reference file.

Builds the sweep once in --work (the four golden prediction files and ten synthetic models perturbed
from the reference by engine.synthetic, each judged by the scripted judges through scripts/judge.py),
scores it with scripts/score.py, builds the site with scripts/view.py, then prints its size on disk
and the load times in headless Chromium (Playwright): a fresh page to the leaderboard rendered, from
the leaderboard to a task view (the model's data and the reference loaded on demand), and a task's
address opened directly.

    python scripts/bench_view.py --gt ../shared/data/m3bench/test_mcp_GT.json \\
        --golden ../shared/golden --work /tmp/m3bench-view-bench --rounds 5

With --rollout-tasks N it measures transcripts instead: a rollout of N tasks (the rollout demo's four,
repeated under new ids) by the scripted model over the shipped MCP servers, built once in
--work/rollout-N and scored; then view.py over --rounds processes, the site's size, and a task's address
opened with its transcript drawn. --viewer ROOT times another checkout's scripts/view.py on the same run
(the version before a change), with ROOT on PYTHONPATH.

    python scripts/bench_view.py --rollout-tasks 300 --rounds 3 [--viewer /tmp/base-checkout]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.sync_api import Page

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.contract import read_json, write_trajectories  # noqa: E402
from engine.synthetic import PROFILES, ErrorProfile, perturb  # noqa: E402

CHROMIUM = os.environ.get("M3BENCH_CHROMIUM", "/usr/bin/chromium")
SYNTHETIC = {  # ten models between the demo's profiles
    "synth_perfect": PROFILES["perfect"], "synth_strong_a": PROFILES["strong"],
    "synth_strong_b": ErrorProfile(drop=0.05, extra=0.05, drift=0.15, strong_drift=0.05, wrong_tool=0.03,
                                   split=0.05, merge=0.05, swap=0.02, missing_task=0.01),
    "synth_medium_a": PROFILES["medium"],
    "synth_medium_b": ErrorProfile(drop=0.12, extra=0.1, drift=0.25, strong_drift=0.1, wrong_tool=0.08,
                                   split=0.1, merge=0.1, swap=0.05, missing_task=0.03),
    "synth_hasty": ErrorProfile(drop=0.12, extra=0.02, drift=0.15, strong_drift=0.05, wrong_tool=0.03,
                                merge=0.6, missing_task=0.02),
    "synth_verbose": ErrorProfile(extra=0.5, drift=0.1, split=0.3),
    "synth_weak_a": PROFILES["weak"],
    "synth_weak_b": ErrorProfile(drop=0.25, extra=0.2, drift=0.3, strong_drift=0.2, wrong_tool=0.15,
                                 split=0.2, merge=0.2, swap=0.1, missing_task=0.06),
    "synth_chaotic": PROFILES["chaotic"],
}


def run(cmd: list[str]) -> None:
    """Run a command from the project root; stop the benchmark when it fails."""
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"failed ({done.returncode}): {' '.join(cmd)}\n{done.stderr[-2000:]}")


def build_sweep(gt: Path, golden: Path, work: Path, judges: bool) -> Path:
    """Write the 14 prediction files (and their judge files), score them; returns the run folder."""
    preds = work / "preds"
    preds.mkdir(parents=True, exist_ok=True)
    files = []
    for case in sorted(golden.glob("m*/pred.json"))[:4]:
        target = preds / f"golden_{case.parent.name}.json"
        target.write_bytes(case.read_bytes())
        files.append(target)
    reference = read_json(gt, "reference file")
    for seed, (name, profile) in enumerate(SYNTHETIC.items()):
        target = preds / f"{name}.json"
        write_trajectories(target, perturb(reference, profile, seed=seed))
        files.append(target)
    if judges:
        for path in files:
            if not path.with_name(f"{path.stem}_taskcompletion.json").is_file():
                run([sys.executable, "scripts/judge.py", "judges=scripted", f"data.gt={gt}", f"predictions={path}",
                     f"results_dir={work}", f"cache_dir={work / 'judge-cache'}"])
    out = work / "run"
    run([sys.executable, "scripts/score.py", f"data.gt={gt}", f"inputs.files=[{','.join(map(str, files))}]",
         f"output_dir={out}"])
    return out


def size_on_disk(folder: Path) -> tuple[int, int, int]:
    """(files, bytes, bytes in allocated blocks) of a folder."""
    files = [p for p in folder.rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files), sum(p.stat().st_blocks * 512 for p in files)


def _watch(page: Page, errors: list[str]) -> None:
    """Record the page's console errors and uncaught exceptions in `errors`."""
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))


def _first_model_middle_task(index: Path) -> tuple[str, str]:
    """The slug of a built site's first leaderboard model and the id of its middle task (read from index.html)."""
    site = json.loads(index.read_text(encoding="utf-8").split("var M3V_SITE = ", 1)[1].split(";</script>", 1)[0])
    return site["board"]["rows"][0]["slug"], site["index"]["tasks"][len(site["index"]["tasks"]) // 2]["id"]


def time_browser(index: Path, rounds: int) -> dict[str, list[float]]:
    """Seconds per round: fresh page to the leaderboard; leaderboard to a task view; a task's address direct."""
    from playwright.sync_api import sync_playwright

    slug, task = _first_model_middle_task(index)
    url = index.resolve().as_uri()
    times: dict[str, list[float]] = {"leaderboard": [], "leaderboard (in page)": [], "to a task view": [],
                                     "task address": []}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM)
        for _ in range(rounds):
            context = browser.new_context(viewport={"width": 1400, "height": 900})
            page = context.new_page()
            errors: list[str] = []
            _watch(page, errors)
            t0 = time.perf_counter()
            page.goto(url, wait_until="commit")
            page.wait_for_selector("#leaderboard tbody tr")
            times["leaderboard"].append(time.perf_counter() - t0)
            times["leaderboard (in page)"].append(page.evaluate("performance.now()") / 1000)
            t0 = time.perf_counter()
            page.evaluate(f"location.hash = '#/m/{slug}/t/{task}'")
            page.wait_for_selector("#pair path.match", state="attached")
            times["to a task view"].append(time.perf_counter() - t0)
            context.close()
            context = browser.new_context(viewport={"width": 1400, "height": 900})
            page = context.new_page()
            t0 = time.perf_counter()
            page.goto(f"{url}#/m/{slug}/t/{task}", wait_until="commit")
            page.wait_for_selector("#pair path.match", state="attached")
            times["task address"].append(time.perf_counter() - t0)
            context.close()
            if errors:
                sys.exit(f"console errors: {errors}")
        browser.close()
    return times


def _model(site: Path, slug: str) -> dict:
    text = (site / "data" / "m" / f"{slug}.js").read_text(encoding="utf-8")
    return json.loads("[" + text.strip()[len("M3V.put("):-2] + "]")[2]


def screenshots(index: Path, out: Path) -> list[Path]:
    """PNGs of the three main views: the leaderboard, a model's tasks, a task with its matches drawn."""
    from playwright.sync_api import sync_playwright

    site = json.loads(index.read_text(encoding="utf-8").split("var M3V_SITE = ", 1)[1].split(";</script>", 1)[0])
    slug = site["board"]["rows"][len(site["board"]["rows"]) // 2]["slug"]
    data = _model(index.parent, slug)

    def showing(tid: str) -> bool:  # strong and weak matches, an unmatched call, an outcome, few calls
        t = data["tasks"][tid]
        kinds = {m[3] for m in t["matches"]}
        labelled = any(p["kind"] == "calls" and p["labels"] for b in t["blocks"] for p in b["parts"])
        return kinds == {0, 1} and bool(t["upred"] or t["ugt"]) and labelled and len(t["matches"]) <= 5

    task = next((tid for tid in data["order"] if showing(tid)), data["order"][0])
    out.mkdir(parents=True, exist_ok=True)
    url = index.resolve().as_uri()
    shots = [(out / "leaderboard.png", url, "#leaderboard tbody tr"),
             (out / "model.png", f"{url}#/m/{slug}", "#task-list tbody tr"),
             (out / "task.png", f"{url}#/m/{slug}/t/{task}", "#pair path.match")]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM)
        page = browser.new_page(viewport={"width": 1280, "height": 860})
        for path, address, selector in shots:
            page.goto(address)
            page.wait_for_selector(selector, state="attached")
            page.screenshot(path=str(path))
        browser.close()
    return [path for path, _, _ in shots]


def build_rollout(work: Path, n: int) -> Path:
    """A rollout of n tasks (the rollout demo's, repeated under new ids) by the scripted model, scored; returns
    the run folder (built once)."""
    out = work / "run"
    if (out / "leaderboard.json").is_file():
        return out
    demo = ROOT / "rollout" / "demo"
    tasks = read_json(demo / "tasks.json", "tasks file")
    reference = {t["id"]: t for t in read_json(demo / "reference.json", "reference file")}
    work.mkdir(parents=True, exist_ok=True)
    shutil.copytree(demo / "images", work / "images", dirs_exist_ok=True)
    copies = [dict(tasks[i % len(tasks)], id=f"{tasks[i % len(tasks)]['id']}-{i:04d}") for i in range(n)]
    (work / "tasks.json").write_text(json.dumps(copies), encoding="utf-8")
    (work / "reference.json").write_text(json.dumps([{**reference[t["id"].rsplit("-", 1)[0]], "id": t["id"]}
                                                     for t in copies]), encoding="utf-8")
    run([sys.executable, "scripts/rollout.py", "model=scripted", f"tasks.file={work / 'tasks.json'}",
         f"tasks.reference={work / 'reference.json'}", f"model.script={work / 'reference.json'}",
         f"results_dir={work / 'results'}", "concurrency=8"])
    run([sys.executable, "scripts/score.py", f"data.gt={work / 'reference.json'}",
         f"inputs.file={work / 'results' / 'scripted_test_mcp_fuzzy.json'}", f"output_dir={out}",
         "index_dir=null"])
    return out


def time_view(run_dir: Path, rounds: int, viewer: Path) -> list[float]:
    """Seconds of each of `rounds` processes of `viewer`/scripts/view.py building the run's site."""
    env = {**os.environ, "PYTHONPATH": str(viewer)}
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, str(viewer / "scripts" / "view.py"), str(run_dir)], cwd=viewer,
                              capture_output=True, text=True, env=env)
        times.append(time.perf_counter() - t0)
        if done.returncode != 0:
            sys.exit(f"view.py failed ({done.returncode}): {done.stderr[-2000:]}")
    return times


def time_transcript(index: Path, rounds: int) -> list[float]:
    """Seconds per round to open a task's address in a fresh page, its transcript drawn."""
    from playwright.sync_api import sync_playwright

    slug, task = _first_model_middle_task(index)
    url = f"{index.resolve().as_uri()}#/m/{slug}/t/{task}"
    times = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM)
        for _ in range(rounds):
            context = browser.new_context(viewport={"width": 1400, "height": 900})
            page = context.new_page()
            errors: list[str] = []
            _watch(page, errors)
            t0 = time.perf_counter()
            page.goto(url, wait_until="commit")
            page.wait_for_selector("#transcript .x-call")
            times.append(time.perf_counter() - t0)
            context.close()
            if errors:
                sys.exit(f"console errors: {errors}")
        browser.close()
    return times


def _site_line(site: Path) -> str:
    n, size, blocks = size_on_disk(site)
    return f"site: {n} files, {size / 1e6:.2f} MB ({blocks / 1e6:.2f} MB in disk blocks)"


def rollout_main(args: argparse.Namespace) -> None:
    """--rollout-tasks: build (once), view with each viewer, measure, print."""
    t0 = time.perf_counter()
    run_dir = build_rollout(args.work / f"rollout-{args.rollout_tasks}", args.rollout_tasks)
    print(f"rollout of {args.rollout_tasks} tasks ready in {time.perf_counter() - t0:.1f} s: {run_dir}")
    times = time_view(run_dir, args.rounds, args.viewer)
    print(f"{args.viewer}/scripts/view.py (whole process): min {min(times):.2f} s, median "
          f"{statistics.median(times):.2f} s over {len(times)} rounds")
    print(_site_line(run_dir / "viewer"))
    if args.viewer == ROOT:
        values = time_transcript(run_dir / "viewer" / "index.html", args.rounds)
        print(f"a task's address with its transcript: min {min(values):.3f} s, median "
              f"{statistics.median(values):.3f} s over {len(values)} rounds")


def main() -> None:
    """Build (once), view, measure, print."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    shared = ROOT.parent / "shared"
    parser.add_argument("--gt", type=Path, default=shared / "data" / "m3bench" / "test_mcp_GT.json")
    parser.add_argument("--golden", type=Path, default=shared / "golden")
    parser.add_argument("--work", type=Path, default=Path("/tmp/m3bench-view-bench"))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--screenshots", type=Path, default=None, help="also write PNGs of the three views here")
    parser.add_argument("--no-judges", action="store_true", help="leave the judge files out")
    parser.add_argument("--rollout-tasks", type=int, default=None,
                        help="measure a rollout of this many tasks with their transcripts instead of the sweep")
    parser.add_argument("--viewer", type=Path, default=ROOT, help="the checkout whose scripts/view.py is timed")
    args = parser.parse_args()
    args.viewer = args.viewer.resolve()
    if args.rollout_tasks:
        rollout_main(args)
        return
    run_dir = args.work / "run"
    if not (run_dir / "leaderboard.json").is_file():
        t0 = time.perf_counter()
        run_dir = build_sweep(args.gt, args.golden, args.work, not args.no_judges)
        print(f"sweep built and scored in {time.perf_counter() - t0:.1f} s: {run_dir}")
    times = time_view(run_dir, max(1, min(args.rounds, 3)), args.viewer)
    print(f"{args.viewer}/scripts/view.py (whole process): min {min(times):.2f} s, median "
          f"{statistics.median(times):.2f} s over {len(times)} rounds")
    if args.viewer != ROOT:
        print(_site_line(run_dir / "viewer"))
        return
    site = run_dir / "viewer"
    n, size, blocks = size_on_disk(site)
    models = sorted((site / "data" / "m").glob("*.js"))
    largest = max(p.stat().st_size for p in models)
    print(f"site: {n} files, {size / 1e6:.2f} MB ({blocks / 1e6:.2f} MB in disk blocks); {len(models)} model files, "
          f"largest {largest / 1e3:.0f} kB; index.html {(site / 'index.html').stat().st_size / 1e3:.0f} kB; "
          f"data/gt.js {(site / 'data' / 'gt.js').stat().st_size / 1e3:.0f} kB")
    for what, values in time_browser(site / "index.html", args.rounds).items():
        print(f"{what}: min {min(values):.3f} s, median {statistics.median(values):.3f} s over {len(values)} rounds")
    if args.screenshots:
        print("screenshots:", ", ".join(str(p) for p in screenshots(site / "index.html", args.screenshots)))


if __name__ == "__main__":
    main()

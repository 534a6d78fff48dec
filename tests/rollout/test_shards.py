"""Shards of a rollout and of a judge run (rollout.shards): the split by task id, the part files, the merge
(byte-identical to one run of every task), through submitit's local executor and joblib, a killed shard
resumed, and parts made with other settings refused."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from preloaded import run_python
from script_runs import call_app

from engine.contract import InputError, shown
from engine.contract.settings import Shard, parse_shard, shard_of
from rollout.cli import compose_config
from rollout.merge import merge_parts, part_settings
from rollout.models.loopback import ScriptedChatServer
from rollout.output import ResultFile
from rollout.plan import run_tasks
from rollout.runner import run as run_rollout
from rollout.scripted import PlanPolicy
from rollout.shard_report import launcher_lines
from rollout.shards import hold_part, part_path, part_running

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "rollout" / "demo"
PREDICTIONS = "scripted_test_mcp_fuzzy.json"
VERDICTS = ("scripted_test_mcp_fuzzy_taskcompletion.json", "scripted_test_mcp_fuzzy_callanalysis.json")
ROLLOUT = ["model=scripted", "tasks=demo"]
JUDGE = ["model=scripted", "judges=scripted", "data=rollout_demo"]


def app(name: str, *args: str, cwd: Path, home: Path, status: int = 0) -> subprocess.CompletedProcess:
    """Run scripts/<name>.py with these settings; its exit status must be `status`."""
    env = {**os.environ, "M3BENCH_HOME": str(home), "PYTHONPATH": str(ROOT)}
    proc = run_python([str(ROOT / "scripts" / f"{name}.py"), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == status, proc.stdout + proc.stderr
    return proc


def test_split_by_id_alone() -> None:
    ids = [f"task-{i}" for i in range(200)]
    parts = {n: [shard_of(i, n) for i in ids] for n in (1, 2, 3, 7)}
    for n, owners in parts.items():
        assert set(owners) <= set(range(n)) and len(set(owners)) == n
        for i, task in enumerate(ids):  # exactly one part owns a task, whatever the other tasks or their order
            assert [k for k in range(n) if Shard(k, n).owns(task)] == [owners[i]]
    assert [shard_of(i, 3) for i in reversed(ids)] == parts[3][::-1]


@pytest.mark.parametrize("value", ["3/3", "1", "-1/2", "a/b", "0/0", "1/2/3"])
def test_bad_shard_is_refused(value: str) -> None:
    with pytest.raises(InputError, match="field 'shard': must be i/n"):
        parse_shard(value)


@pytest.fixture(scope="module")
def lone(tmp_path_factory) -> dict[str, bytes]:
    """The demo rolled out and judged in one run each: the predictions and the verdict files."""
    base = tmp_path_factory.mktemp("lone")
    app("rollout", *ROLLOUT, f"results_dir={base}", cwd=base, home=base / "home")
    app("judge", *JUDGE, f"results_dir={base}", cwd=base, home=base / "home")
    return {name: (base / name).read_bytes() for name in (PREDICTIONS, *VERDICTS)}


def sharded_run(tmp_path: Path, launcher: str, lone: dict[str, bytes]) -> Path:
    """The demo rolled out as 3 shards through `launcher`, compared with the lone run; then judged as 3 shards
    through it, compared with the lone verdicts judged on the same predictions path."""
    results = tmp_path / "results"
    sweep = ["-m", "shard=0/3,1/3,2/3", f"hydra/launcher={launcher}", f"results_dir={results}"]
    launched = app("rollout", *sweep, *ROLLOUT, f"hydra.sweep.dir={tmp_path / 'sweep-rollout'}", cwd=tmp_path,
                   home=tmp_path / "home")
    # the launching process hears the merge (submitit's jobs write into .submitit/), and no advice
    said = launched.stdout + launched.stderr
    assert f"rollout: every part is complete; 3 part(s) merged -> {results / PREDICTIONS}" in said, said
    assert "again" not in said, said
    assert sorted(p.name for p in (results / "rollout" / "scripted" / "parts").glob("*.json")) == [
        f"scripted_test_mcp_fuzzy.shard{i}of3.json" for i in range(3)]
    assert (results / PREDICTIONS).read_bytes() == lone[PREDICTIONS]
    # the lone verdicts of these predictions (the files name their path), then the shards' on a fresh cache
    app("judge", *JUDGE, f"results_dir={results}", cwd=tmp_path, home=tmp_path / "home-lone")
    expected = {name: (results / name).read_bytes() for name in VERDICTS}
    for name in VERDICTS:
        (results / name).unlink()
    launched = app("judge", *sweep, *JUDGE, f"hydra.sweep.dir={tmp_path / 'sweep-judge'}", cwd=tmp_path,
                   home=tmp_path / "home-shards")
    said = launched.stdout + launched.stderr
    for name, judged in zip(VERDICTS, ("m3_judges", "call_outcomes")):
        assert f"{judged}: every part is complete; 3 part(s) merged -> {results / name}" in said, said
    assert "again" not in said, said
    for name in VERDICTS:
        assert (results / name).read_bytes() == expected[name], name
    return results


@pytest.mark.slow
def test_three_shards_through_submitit_merge_to_the_lone_run(tmp_path: Path, lone: dict[str, bytes]) -> None:
    results = sharded_run(tmp_path, "local_submitit", lone)
    # the merge as a command gives the same bytes; with other settings it is refused in one line
    (results / PREDICTIONS).unlink()
    app("rollout", *ROLLOUT, f"results_dir={results}", "merge=3", cwd=tmp_path, home=tmp_path / "home")
    assert (results / PREDICTIONS).read_bytes() == lone[PREDICTIONS]
    refused = app("rollout", *ROLLOUT, f"results_dir={results}", "merge=3", "max_step=4", cwd=tmp_path,
                  home=tmp_path / "home", status=2)
    # (the part file's name, long under pytest's folders, may be shortened in the line)
    assert refused.stderr.count("\n") == 1 and ": field 'part.settings.max_step': part 0/3 was made " \
        "with other settings (settings.max_step 5, this run 4)" in refused.stderr, refused.stderr
    missing = app("rollout", *ROLLOUT, f"results_dir={results}", "merge=4", cwd=tmp_path, home=tmp_path / "home",
                  status=2)
    assert missing.stderr.count("\n") == 1 and "part 0/4 is missing: run shard=0/4" in missing.stderr
    judged = app("judge", *JUDGE, f"results_dir={results}", "merge=3", "attempts=3", cwd=tmp_path,
                 home=tmp_path / "home-shards", status=2)
    assert judged.stderr.count("\n") == 1 and "field 'part.meta.attempts': part 0/3 was made with other " \
        "settings (meta.attempts 5, this run 3)" in judged.stderr, judged.stderr


@pytest.mark.slow
def test_three_shards_through_joblib_merge_to_the_lone_run(tmp_path: Path, lone: dict[str, bytes]) -> None:
    sharded_run(tmp_path, "local_parallel", lone)


def bigger_demo(folder: Path, copies: int) -> tuple[Path, Path]:
    """The demo tasks and references `copies` times over, each copy's ids suffixed (-c<k>)."""
    tasks = json.loads((DEMO / "tasks.json").read_text())
    refs = json.loads((DEMO / "reference.json").read_text())
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for name, records in (("tasks.json", tasks), ("reference.json", refs)):
        path = folder / name
        path.write_text(json.dumps([{**r, "id": f"{r['id']}-c{k}"} for k in range(copies) for r in records]))
        out.append(path)
    return out[0], out[1]


@pytest.mark.slow
def test_killed_shard_rerun_redoes_only_its_missing_tasks(tmp_path: Path) -> None:
    tasks, reference = bigger_demo(tmp_path / "data", 4)
    asked: list[str | None] = []
    plans = PlanPolicy.from_file(reference)

    def policy(request: dict) -> str:
        asked.append(next((m["task"] for m in request["messages"] if isinstance(m.get("task"), str)), None))
        return plans(request)

    results = tmp_path / "results"
    with ScriptedChatServer(policy, delay=0.2) as server:
        settings = [*ROLLOUT, f"tasks.file={tasks}", f"tasks.reference={reference}", f"tasks.images_dir={DEMO}",
                    f"model.base_url={server.base_url}", f"results_dir={results}", "shard=0/2", "concurrency=1"]
        part = results / "rollout" / "scripted" / "parts" / "scripted_test_mcp_fuzzy.shard0of2.json"
        mine = sorted(r["id"] for r in json.loads(tasks.read_text()) if shard_of(r["id"], 2) == 0)
        env = {**os.environ, "M3BENCH_HOME": str(tmp_path / "home"), "PYTHONPATH": str(ROOT)}
        proc = subprocess.Popen([sys.executable, str(ROOT / "scripts" / "rollout.py"), *settings], cwd=tmp_path,
                                env=env, stdout=subprocess.DEVNULL, stderr=(tmp_path / "killed.log").open("w"))
        done: list[str] = []
        deadline = time.monotonic() + 300
        while len(done) < 2 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
            if part.is_file():
                done = [r["id"] for r in json.loads(part.read_text())["records"]]
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        done = [r["id"] for r in json.loads(part.read_text())["records"]]
        assert 2 <= len(done) < len(mine), (done, mine)
        asked.clear()
        app("rollout", *settings, cwd=tmp_path, home=tmp_path / "home")
    assert set(asked) == set(mine) - set(done), "the rerun asked the model about exactly the missing tasks"
    assert sorted(r["id"] for r in json.loads(part.read_text())["records"]) == mine
    assert not (results / PREDICTIONS).exists(), "shard 1/2 has not run: nothing is merged"


def test_a_part_still_running_gets_no_advice_a_stopped_one_does(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                caplog: pytest.LogCaptureFixture) -> None:
    """Shard 0/2 ends while a run of shard 1/2 still writes its part (holds its lock, no task done yet): the
    merge waits for part 1/2, running, and nothing advises running it again; once that run has stopped short
    of its tasks, a rerun of shard 0/2 (nothing left to do) says to run shard 1/2 again."""
    caplog.set_level(logging.INFO)
    cfg = compose_config([*ROLLOUT, f"results_dir={tmp_path}", "shard=0/2"])
    tasks, _ = run_tasks(cfg)
    other = Shard(1, 2)
    theirs = {t.id: t.index for t in tasks if other.owns(t.id)}
    path = part_path(Path(cfg.parts_dir), Path(cfg.predictions), other)
    with ResultFile(path, theirs, part_settings(cfg, other, None), other) as running:
        running.save()  # as a run of shard 1/2 does when it starts
        assert part_running(path)
        assert run_rollout(cfg) == 0
    said = capsys.readouterr()
    assert "rollout: part 0/2 done; the merge waits for part 1/2 (running); the last part to end merges\n" \
        in said.out, said.out
    assert "again" not in said.out + said.err + caplog.text
    assert not part_running(path)
    assert run_rollout(compose_config([*ROLLOUT, f"results_dir={tmp_path}", "shard=0/2"])) == 0
    said = capsys.readouterr()
    assert f"the merge waits for part 1/2 (stopped with {len(theirs)} of its tasks missing: run shard=1/2 again " \
        "to finish it)" in said.out, said.out
    assert not (tmp_path / PREDICTIONS).exists()


def test_the_launcher_says_the_merge_once_and_advises_only_parts_not_running(tmp_path: Path) -> None:
    """The launcher's lines from its shard jobs' records: a merge line its terminal has not seen (a job writing
    elsewhere, as submitit's do), none when it has; with nothing merged, the parts to run again (stopped,
    never run, or ended without merging) and not one still running."""
    parts = [tmp_path / f"p.shard{i}of4.json" for i in range(4)]
    for path in parts[:3]:
        path.write_text("{}")

    def record(shard: str, merged: bool, stream: list[int] | None, when: float, waits: list[dict]) -> dict:
        line = "rollout: every part is complete; 4 part(s) merged -> out.json" if merged else "waiting"
        return {"app": "rollout", "shard": shard, "output": "out.json", "parts": [str(p) for p in parts],
                "merged": merged, "line": line, "waits_for": waits, "stream": stream, "time": when}

    seen = {"stdout": [1, 2], "stderr": [1, 3]}
    elsewhere = [record("0/4", False, [9, 9], 1.0, []), record("1/4", True, [9, 8], 2.0, [])]
    assert launcher_lines(elsewhere, seen) == ["rollout: every part is complete; 4 part(s) merged -> out.json"]
    assert launcher_lines([record("1/4", True, [1, 2], 2.0, [])], seen) == []
    waits = [{"shard": "1/4", "state": "running"}, {"shard": "2/4", "state": "stopped", "lacking": 2},
             {"shard": "3/4", "state": "missing"}]
    with hold_part(parts[1]):  # part 1/4 still written by a run outside this multirun
        lines = launcher_lines([record("0/4", False, [1, 2], 1.0, waits[:1]), record("0/4", False, [1, 2], 3.0, waits)],
                               seen)
    assert lines == ["rollout: not merged -> out.json: the multirun has ended; the merge waits for part 1/4 "
                     "(running), part 2/4 (stopped with 2 of its tasks missing: run shard=2/4 again to finish it), "
                     "part 3/4 (not run: run shard=3/4 with the same settings); the last part to end merges"]
    assert launcher_lines([record("0/4", False, None, 3.0, waits[:1])], seen) == [
        "rollout: not merged -> out.json: the multirun has ended; the merge waits for part 1/4 (ended without "
        "merging: run shard=1/4 again; it runs only its missing tasks)"]


def two_parts(tmp_path: Path) -> tuple[dict, list, list[Path]]:
    """The demo's config, its tasks and the two part files of shard=i/2, each holding its own tasks (as a run of
    every task writes them, which merge to the file of all)."""
    cfg = compose_config([*ROLLOUT, f"results_dir={tmp_path}"])
    tasks, _ = run_tasks(cfg)
    paths = []
    for shard in Shard(0, 2).siblings():
        path = part_path(Path(cfg.parts_dir), Path(cfg.predictions), shard)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"part": part_settings(cfg, shard, None),
                                    "records": [{"id": t.id, "steps": []} for t in tasks if shard.owns(t.id)]}))
        paths.append(path)
    assert len({shard_of(t.id, 2) for t in tasks}) == 2
    merge_parts(cfg, 2, tasks, None)
    return cfg, tasks, paths


def edit_part(path: Path, change) -> None:
    data = json.loads(path.read_text())
    data["records"] = change(data["records"])
    path.write_text(json.dumps(data))


def test_a_part_holding_one_id_twice_is_refused_naming_part_and_id(tmp_path: Path) -> None:
    """Once merged silently, the last record kept (merge=2)."""
    cfg, tasks, paths = two_parts(tmp_path)
    first = json.loads(paths[1].read_text())["records"][0]["id"]
    edit_part(paths[1], lambda records: [*records, {**records[0], "steps": [{"step": 1, "calls": []}]}])
    with pytest.raises(InputError) as caught:
        merge_parts(cfg, 2, tasks, None)
    n = len(json.loads(paths[1].read_text())["records"]) - 1
    assert str(caught.value) == (f"{shown(str(paths[1]))}: id {first}: field 'id': part 1/2 holds this task twice "
                                 f"(records 0 and {n}): a part holds each of its tasks once; remove one, or run "
                                 "shard=1/2 again into a fresh part")
    with pytest.raises(InputError, match=f"part 1/2 holds this task twice \\(records 0 and {n}\\)"):
        ResultFile(paths[1], {}, part_settings(cfg, Shard(1, 2), None), Shard(1, 2)).__enter__()  # nor resumed


def test_a_part_holding_the_other_parts_task_names_that_part(tmp_path: Path) -> None:
    """Once "a task of no part of this split", which it is not."""
    cfg, tasks, paths = two_parts(tmp_path)
    theirs = json.loads(paths[1].read_text())["records"][0]
    edit_part(paths[0], lambda records: [*records, theirs])
    with pytest.raises(InputError) as caught:
        merge_parts(cfg, 2, tasks, None)
    assert str(caught.value) == (f"{shown(str(paths[0]))}: id {theirs['id']}: field 'id': part 0/2 holds a task of "
                                 "part 1/2, not its own (each part holds only the tasks of its shard)")
    edit_part(paths[0], lambda records: [*records[:-1], {"id": "elsewhere", "steps": []}])
    with pytest.raises(InputError, match="id elsewhere: field 'id': part 0/2 holds a task the run's tasks do not have"):
        merge_parts(cfg, 2, tasks, None)


def test_a_judge_part_repeating_an_id_is_refused_naming_part_and_id(tmp_path: Path) -> None:
    """A judge part's entries are an object by id: a repeated id there kept its last entry (JSON's rule)."""
    predictions = tmp_path / "x_test_mcp_fuzzy.json"
    predictions.write_bytes((DEMO / "reference.json").read_bytes())
    judge = [f"predictions={predictions}", "judges=scripted", "data=rollout_demo", f"results_dir={tmp_path}",
             f"cache_dir={tmp_path / 'cache'}", "stage=judge"]
    for shard in ("shard=0/2", "shard=1/2"):
        proc = call_app("judge", *judge, shard, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
    part = tmp_path / "judge" / "x_test_mcp_fuzzy" / "parts" / "x_test_mcp_fuzzy_taskcompletion.shard1of2.json"
    data = json.loads(part.read_text())
    entries = list(data["part"]["entries"].items())
    first, entry = entries[0]
    entries.append((first, {**entry, "final": 0.0}))
    data["part"]["entries"] = "ENTRIES"
    part.write_text(json.dumps(data).replace('"ENTRIES"', "{" + ", ".join(f"{json.dumps(k)}: {json.dumps(v)}"
                                                                          for k, v in entries) + "}"))
    proc = call_app("judge", *judge, "merge=2", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.endswith(f": id {first}: field 'part.entries': part 1/2 holds this task twice (its entries "
                                "repeat the id): a part holds each of its tasks once; remove one, or run shard=1/2 "
                                "again into a fresh part\n"), proc.stderr

"""A multi-turn task (VisualToolBench's turns) as a dialogue: the scripted model and the shipped servers,
each turn's reply recorded, the workspace kept across turns, a resume after a kill, a byte-identical
replay; and the turns read from a task file."""

from __future__ import annotations

import asyncio
import gc
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest
from rollout_helpers import ROOT, compose, kill_when_written, make_image, start_rollout, write_json, written_records

from engine.contract import InputError
from rollout.runner import run_rollout
from rollout.tasks import read_turns

DEMO = ["model=scripted", "tasks=vtb_demo", "model.script=${rollout_path:demo/vtb_reference.json}",
        "tasks.ids=[vtb-01,vtb-01-mt,vtb-02-mt]", "concurrency=1", "mode=record"]


@pytest.mark.slow
def test_a_multi_turn_task_runs_resumes_and_replays(tmp_path: Path) -> None:
    results = tmp_path / "rec"
    out = results / "scripted_test_mcp_fuzzy.json"
    proc = start_rollout([*DEMO, f"results_dir={results}", "model.delay=0.25"], tmp_path)
    before = kill_when_written(proc, out, 1, 120)
    assert 1 <= len(before) < 3, "the run must be killed while tasks remain"

    proc = start_rollout([*DEMO, f"results_dir={results}"], tmp_path)
    log, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0 and "Traceback" not in log, log
    preds = {p["id"]: p for p in written_records(out)}
    assert list(preds) == ["vtb-01", "vtb-01-mt", "vtb-02-mt"]
    assert all(preds[i] == p for i, p in before.items())  # kept as written

    single, multi = preds["vtb-01"], preds["vtb-01-mt"]
    assert "turns" not in single
    replies = [t["final_reply"] for t in multi["turns"]]
    assert len(replies) == 2 and multi["final_reply"] == replies[-1] and "error" not in multi
    assert sum(t["num_step"] for t in multi["turns"]) == multi["num_step"] >= 1
    texts = [m["content"] if isinstance(m["content"], str) else m["content"][0]["text"] for m in multi["dialogue"]]
    first, second = texts.index("Crop the red box out of the picture and tell me how large the crop is.\n\n"
                                "Image in the workspace: media/demo_shapes.png"), \
        texts.index("## TURN 2\nNow say where the result is, in one sentence.")
    finals = [i for i, m in enumerate(multi["dialogue"]) if m.get("phase") == "final"]
    assert first < finals[0] < second < finals[1] == len(texts) - 1  # turn 2 comes after the reply to turn 1
    assert multi["dialogue"][finals[0]]["content"] == replies[0]
    workspace = results / "rollout" / "scripted" / "workspace" / "vtb-01-mt" / "media"
    assert (workspace / "red_box.png").is_file() and (workspace / "demo_shapes.png").is_file()

    # the replay starts no server, asks no model, and gives the same bytes
    replay = tmp_path / "rep"
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "rollout.py"), *DEMO[:-1], "mode=replay",
                           f"results_dir={replay}", f"cache_dir={results / 'rollout' / 'scripted' / 'cache'}",
                           f"servers={write_json(tmp_path / 'none.json', {'servers': {}})}"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert (replay / "scripted_test_mcp_fuzzy.json").read_bytes() == out.read_bytes()


def test_turns_are_read_from_the_task_file(tmp_path: Path) -> None:
    make_image(tmp_path / "a.png")
    tasks = [{"id": "one", "question": "q", "turns": [{"prompt": "q"}]},
             {"id": "two", "question": "q", "turns": [{"prompt": "first", "images": ["a.png"]}, {"prompt": "next"}]}]
    turns = read_turns(write_json(tmp_path / "tasks.json", tasks))
    assert list(turns) == ["two"]  # one turn: a single question
    assert [(t.prompt, t.images) for t in turns["two"]] == [("first", ((tmp_path / "a.png").resolve(),)), ("next", ())]
    tasks[1]["turns"][1] = {"prompt": " "}
    with pytest.raises(InputError, match=r"id two: field 'turns\[1\]\.prompt': missing or empty text"):
        read_turns(write_json(tmp_path / "tasks.json", tasks))
    tasks[1]["turns"][1] = {"prompt": "next", "images": ["missing.png"]}
    with pytest.raises(InputError, match=r"turns\[1\]\.images\[0\]"):
        read_turns(write_json(tmp_path / "tasks.json", tasks))


def _long_dialogue(directory: Path, turns: int, servers: Path) -> list[str]:
    """Overrides of a scripted run of one task of `turns` turns, each turn one step with one math call."""
    notes = " ".join(f"note {i}." for i in range(400))  # about 4 kB a turn, so the dialogue outweighs the run's rest
    prompts = [f"Turn {k}: what is the mean of {k}, {k + 1} and {k + 5}? {notes}" for k in range(1, turns + 1)]
    question = "\n".join(prompts)
    tasks = write_json(directory / "tasks.json", [{"id": "long", "type": "test", "question": question,
                                                  "turns": [{"prompt": p} for p in prompts]}])
    steps = [{"step": k, "calls": [{"name": "math/mean", "arguments": {"numbers": [k, k + 1, k + 5]}}]}
             for k in range(1, turns + 1)]
    reference = write_json(directory / "ref.json", [{"id": "long", "type": "test", "question": question,
                                                     "steps": steps, "final_reply": "Done."}])
    return ["model=scripted", f"tasks.file={tasks}", f"tasks.reference={reference}", f"model.script={reference}",
            "tasks.images_dir=null", f"results_dir={directory / 'out'}", f"servers={servers}", "max_step=1",
            "concurrency=1"]


@pytest.mark.slow
def test_a_dialogue_holds_memory_linear_in_its_turns(tmp_path: Path, servers_config) -> None:
    """Each request of a dialogue carries the whole dialogue so far: nothing may keep them all (that grows as the
    square of the turns). The rollout's peak of traced memory over 60 turns stays within 4 times that over 20
    (about 2.7 when linear; 7.5 when the scripted server kept every request), whatever the machine."""
    servers = servers_config("math")
    asyncio.run(run_rollout(compose(*_long_dialogue(tmp_path / "warm", 2, servers))))  # lazy imports done
    peaks = {}
    tracemalloc.start()
    try:
        for turns in (20, 60):
            cfg = compose(*_long_dialogue(tmp_path / f"t{turns}", turns, servers))
            gc.collect()
            before = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            assert asyncio.run(run_rollout(cfg)) == 0
            peaks[turns] = tracemalloc.get_traced_memory()[1] - before
            record, = written_records(tmp_path / f"t{turns}" / "out" / "scripted_test_mcp_fuzzy.json")
            assert len(record["turns"]) == turns and "error" not in record
    finally:
        tracemalloc.stop()
    assert peaks[60] < 4 * peaks[20], f"peak traced memory: {peaks[20]} bytes over 20 turns, {peaks[60]} over 60"

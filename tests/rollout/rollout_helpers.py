"""Helpers of the rollout tests: the composed Hydra config, small task files with images, servers
configs over the shipped (and a test) MCP server, run overrides for a scripted model, and where a
run's files go."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from engine.apps.config.rollout import RolloutConfig  # noqa: E402
from rollout.cli import compose_config  # noqa: E402
from rollout.judges.cli import compose_config as compose_judge_config  # noqa: E402
from rollout.models.loopback import ScriptedChatServer  # noqa: E402
from rollout.scripted import PlanPolicy  # noqa: E402

HERE = Path(__file__).resolve().parent
FLAKY_SERVER = HERE / "flaky_server.py"
THIRD_PARTY = HERE / "third_party_servers.json"
TEST_MODEL = "test-model"


def compose(*overrides: str) -> RolloutConfig:
    """The typed config scripts/rollout.py would run with (engine.apps.config.rollout.RolloutConfig)."""
    return compose_config(overrides)


def compose_judge(*overrides: str) -> dict[str, Any]:
    """The config scripts/judge.py would run with, as a plain dict."""
    return compose_judge_config(overrides)


def predictions_of(results: Path, model: str = TEST_MODEL) -> Path:
    """The prediction file of a model's run under a results folder."""
    return results / f"{model}_test_mcp_fuzzy.json"


def run_dir_of(results: Path, model: str = TEST_MODEL) -> Path:
    """The run folder of a model's run under a results folder."""
    return results / "rollout" / model


def write_json(path: Path, value: Any) -> Path:
    """Write JSON to a file and return its path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=1), encoding="utf-8")
    return path


def make_image(path: Path, size: tuple[int, int] = (64, 48)) -> None:
    """A small PNG with a rectangle on it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    img = Image.new("RGB", size, "white")
    ImageDraw.Draw(img).rectangle((4, 4, size[0] // 2, size[1] // 2), fill="red")
    img.save(path)


def flaky_entry() -> dict[str, Any]:
    """The servers-config entry of the test server that can crash or hang on request."""
    return {"command": "python", "python": "host", "args": [str(FLAKY_SERVER)], "env": {}, "disabled": False}


def plan_tasks(tmp_path: Path, plans: dict[str, list[list[dict[str, Any]]]], *, image: bool = True,
               final: str = "Done.") -> tuple[Path, Path]:
    """A tasks file (one image per task) and a reference file (GT format) for the given plans."""
    tasks, refs = [], []
    for task_id, steps in plans.items():
        image_rel = f"images/{task_id}.png" if image else None
        if image_rel:
            make_image(tmp_path / "data" / image_rel)
        question = f"Task {task_id}: follow the plan."
        tasks.append({"id": task_id, "image": image_rel, "type": "test", "question": question})
        refs.append({"id": task_id, "image": image_rel, "type": "test", "question": question,
                     "steps": [{"step": i + 1, "calls": calls} for i, calls in enumerate(steps)],
                     "final_reply": f"{final} ({task_id})"})
    return write_json(tmp_path / "data" / "tasks.json", tasks), write_json(tmp_path / "data" / "ref.json", refs)


def plan_policy(reference: Path) -> PlanPolicy:
    """A policy following the reference trajectories (keyed by their questions)."""
    return PlanPolicy.from_file(reference)


def local_overrides(server: ScriptedChatServer | str, tasks_file: Path, results: Path, servers: Path,
                    *extra: str) -> list[str]:
    """Overrides for a run of model=local (named TEST_MODEL) against a scripted server (or a base URL),
    its files under `results` (see predictions_of and run_dir_of)."""
    base_url = server if isinstance(server, str) else server.base_url
    return ["model=local", f"model.base_url={base_url}", f"model.name={TEST_MODEL}",
            "model.backoff.initial=0.01", "model.backoff.max=0.05", f"tasks.file={tasks_file}",
            f"results_dir={results}", f"servers={servers}", *extra]


def third_party_config(path: Path, env_root: Path, entries: dict[str, dict[str, Any] | None],
                       shipped: tuple[str, ...] = ()) -> Path:
    """A servers config at `path` with third-party servers of THIRD_PARTY (their install blocks, hence their
    environments, unchanged; values of `entries` replace keys of each entry, None removes one, and
    ``"like": NAME`` makes a new server from the entry NAME) and shipped servers by name."""
    published = json.loads(THIRD_PARTY.read_text(encoding="utf-8"))["servers"]
    modules = {"images": "rollout.servers.images", "math": "rollout.servers.mathstats",
               "excel": "rollout.servers.spreadsheet"}
    servers: dict[str, Any] = {name: {"command": "python", "python": "host", "args": ["-m", modules[name]]}
                               for name in shipped}
    for name, changes in entries.items():
        changes = dict(changes or {})
        entry = {**published[changes.pop("like", name)], **changes}
        servers[name] = {k: v for k, v in entry.items() if v is not None}
    return write_json(path, {"environments": str(env_root), "servers": servers})


def start_rollout(overrides: list[str], cwd: Path) -> subprocess.Popen:
    """scripts/rollout.py with these overrides, in a session of its own (so a test can kill it whole)."""
    return subprocess.Popen([sys.executable, str(ROOT / "scripts" / "rollout.py"), *overrides], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)


def written_records(path: Path) -> list[dict[str, Any]]:
    """The records of a predictions file as far as it is written ([] while it is absent or half-written)."""
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return []


def kill_when_written(proc: subprocess.Popen, out: Path, count: int, timeout: float) -> dict[str, dict[str, Any]]:
    """SIGKILL the rollout's whole session once `out` holds `count` records; id -> record written by then."""
    deadline = time.monotonic() + timeout
    while len(written_records(out)) < count:
        assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
        assert time.monotonic() < deadline, "no task was written in time"
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    return {p["id"]: p for p in written_records(out)}

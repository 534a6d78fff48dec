"""The benchmark history (scripts/bench_history.py, scripts/bench.py --record / --compare): one line per run,
the change from the last record of the same kind, and the records the repository carries."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("bench_history", ROOT / "scripts" / "bench_history.py")
assert _spec is not None and _spec.loader is not None
history = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(history)


def entry(cpu: str, device: str, seconds: list[float], mode: str = "cold", load: float = 1.0) -> dict:
    return history.record(mode, {"scoring_process_s": seconds, "ratio_process_to_library_min": seconds[0] / 30,
                                 "backend_used": ["onnxruntime"]},
                          device=device, backend="auto", inputs={"gt": "gt.json"}, load_before=[load, load, load],
                          command=["--record"]) | {"cpu": cpu}


def test_a_run_is_appended_as_one_line_with_its_machine_and_figures(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    first = entry("CPU A", "cpu", [30.0, 32.0])
    history.append(first, path)
    history.append(entry("CPU A", "cpu", [20.0]), path)
    lines = path.read_text().splitlines()
    assert len(lines) == 2 and json.loads(lines[0]) == first
    for key in ("date", "commit", "cpu", "cores", "load_average", "versions", "backend", "device", "figures"):
        assert key in first, key
    assert first["versions"]["torch"] and first["load_average"]["before"] == [1.0, 1.0, 1.0]


def test_compare_takes_the_last_record_of_the_same_cpu_device_and_mode(tmp_path: Path) -> None:
    records = [entry("CPU A", "cpu", [30.0, 32.0], load=2.0), entry("CPU B", "cpu", [10.0]),
               entry("CPU A", "cuda NVIDIA H200", [5.0]), entry("CPU A", "cpu", [40.0], mode="warm")]
    now = entry("CPU A", "cpu", [24.0, 25.0], load=3.0)
    previous = history.last_like(now, records)
    assert previous is records[0]
    text = history.compare(now, previous)
    assert "scoring_process_s: 31 -> 24.5 (0.790x)" in text  # medians of the rounds
    assert "load average before [2.0, 2.0, 2.0]; now [3.0, 3.0, 3.0]" in text and "backend_used" not in text
    assert "nothing to compare with" in history.compare(entry("CPU C", "cpu", [1.0]),
                                                        history.last_like(entry("CPU C", "cpu", [1.0]), records))


def test_the_repository_history_carries_the_gpu_figures() -> None:
    """The README's GPU figures are records of the history, labelled with the card, from the same numbers."""
    records = history.read()
    gpu = [r for r in records if r["device"].startswith("cuda")]
    readme = (ROOT / "README.md").read_text()
    assert gpu and all("NVIDIA H200" in r["device"] for r in gpu)
    (first,) = [r for r in gpu if r["commit"].startswith("47f792b")]
    assert first["source"].startswith("README.md")
    assert first["figures"]["cold_process_s"] == [16.4, 16.9] and "16.4 s, 16.9 s" in readme
    assert first["figures"]["warm_process_s"] == [5.5, 6.0, 6.1] and "5.5 s, 6.0 s, 6.1 s" in readme
    second = [r["figures"] for r in gpu if r["commit"].startswith("490a06e")]
    (sweep,) = [f["sweep"] for f in second if "sweep" in f]
    assert round(sweep["cold"]["seconds"], 1) == 23.6 and round(sweep["warm"]["seconds"], 1) == 8.3
    assert "23.6 s (embed stage 13.7 s" in readme and "8.3 s (statistics on" in readme
    (stats,) = [f for f in second if "ratio_median" in f]
    assert f"{stats['ratio_median']:.3f}x" in readme
    assert all(r["cpu"] and r["device"] and r["figures"] for r in records)

"""Time the encoder through torch, ONNX Runtime and OpenVINO on the golden call texts, with parity.

    python scripts/bench_encoder_backends.py [--rounds 5] [--busy 2] [--busy-seconds 600] [--json OUT]

The texts are every distinct call text that scoring the golden cases embeds (the reference GT and
the four golden prediction files, serialized as the scorer serializes them). The bundled model is
exported once, from the local weights, by the engine's own export (engine.encoders.export) into a
temporary folder: the whole sentence-transformers forward pass (transformer, mean pooling,
normalization), fp32. Each runtime runs as the engine runs it (engine.encoders: ONNX Runtime the graph
with its transformer fusions and every graph optimization, OpenVINO at fp32 inference precision), on
the threads the engine gives it (OMP_NUM_THREADS, else the cores; --threads sets both it and torch's).
All encode the same texts tokenized once by the model's own `preprocess`, in the engine's token-budget
batches; each is the engine's own `TextEncoder.encode`.

Parity: the largest difference between each backend's cosine similarities and torch's (all pairs of
texts, and each text with its torch vector: engine.encoders.cosine_gap), and every golden case
scored from the backend's vectors (put in a temporary embedding cache) against the published results,
as tests/test_golden.py checks them. Timing: --rounds rounds, the backends alternating within a round
(--threads N: each on N threads), on the machine
as it is (its load average is printed), then again with --busy processes spinning beside it (each
ends by itself after --busy-seconds and is killed when the measurement ends). Prints the times and the ratios
torch / backend (above 1: the backend is faster).

Beside them, `library` is sentence-transformers' own `encode` (batch_size=32) of the same texts, the
baseline the engine's torch path is held to: `torch / library` above 1 means the engine is slower.

--texts FILE encodes other texts instead (timing only, no golden scoring): a JSON list of strings, or
a tool catalogue (objects with `name` and `description`, alone or under `tools` as in the
`catalogue.json` a record-mode rollout keeps in its cache), each tool as the rollout's retrieval
exposure embeds it, "name: description". For example, a run's tool catalogue under contention:

    python scripts/bench_encoder_backends.py --texts catalogue.json --busy 2 --rounds 5

onnxruntime, openvino, onnx and onnxscript are not dependencies of the project: the backends that are
not installed are left out (the script says how to install them into a scratch virtualenv); torch
and the library always run.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

OPTIONAL = ("onnxruntime", "openvino", "onnx")
"""The runtimes measured when installed (onnx: the export both run)."""
INSTALL = """to measure them too, install them into a scratch virtualenv that sees the project's packages:
    python -m venv /tmp/onnxenv
    SITE="$(python -c 'import site; print(site.getsitepackages()[0])')"
    echo "$SITE" > "$(/tmp/onnxenv/bin/python -c 'import site; print(site.getsitepackages()[0])')/project.pth"
    /tmp/onnxenv/bin/pip install onnxruntime openvino onnx onnxscript
    /tmp/onnxenv/bin/python scripts/bench_encoder_backends.py
(not sentence-transformers[onnx] nor optimum-onnx: they pin transformers back)"""

SPIN = "import time, sys\nend = time.time() + float(sys.argv[1])\nwhile time.time() < end: pass"

Backend = Callable[[list[str]], "np.ndarray"]


def golden_texts(shared: Path) -> list[str]:
    """Every distinct call text scoring the golden cases embeds, in the scorer's order."""
    from engine.contract import read_trajectories
    from engine.serialize import flatten_sweep

    golden = shared / "golden"
    manifest = json.loads((golden / "manifest.json").read_text())
    gt = read_trajectories((golden / manifest["gt"]).resolve())
    preds = [read_trajectories(golden / name / "pred.json", lenient=True) for name in sorted(manifest["cases"])]
    return flatten_sweep(gt, preds, "reference").texts


def backends(encoder, root: Path, installed: set[str]) -> dict[str, Backend]:
    """torch (the engine's encode), the library's own encode, and the engine's own backends of those runtimes
    installed (engine.encoders: ONNX Runtime's fused graph, OpenVINO at fp32), exported under root."""
    from engine.encoders import RUNTIMES, TextEncoder

    runs: dict[str, Backend] = {
        "torch": encoder.encode,
        "library": lambda texts: encoder.model.encode(texts, batch_size=32, convert_to_numpy=True),
    }
    for name, runtime in RUNTIMES.items():
        if all(p in installed for p in runtime.packages):
            runs[name] = TextEncoder(backend=name, export_dir=root).encode
    return runs


def read_texts(path: Path) -> list[str]:
    """The texts of --texts: a JSON list of strings, or of tools (`name: description` each)."""
    from rollout.exposure import tool_text

    data = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(data, dict):
        data = data.get("tools", data)
    if not isinstance(data, list) or not data:
        raise SystemExit(f"{path}: expected a non-empty JSON list of strings or of tools")
    texts = []
    for i, item in enumerate(data):
        if isinstance(item, str):
            texts.append(item)
        elif isinstance(item, dict) and isinstance(item.get("name"), str):
            texts.append(tool_text(item["name"], item.get("description")))
        else:
            raise SystemExit(f"{path}: item {i}: expected a string or an object with a name")
    return list(dict.fromkeys(texts))


def golden_unchanged(shared: Path, encoder, texts: list[str], vectors: np.ndarray) -> str:
    """'yes', or the first difference: the golden cases scored from these vectors against the published results."""
    sys.path.insert(0, str(ROOT / "tests"))
    from golden import agreeing_similarities, assert_matches_golden, score_golden

    from engine.embedding_cache import EmbeddingCache, text_keys

    golden = shared / "golden"
    gt = (golden / json.loads((golden / "manifest.json").read_text())["gt"]).resolve()
    with tempfile.TemporaryDirectory() as tmp:
        EmbeddingCache(f"{tmp}/cache", encoder.identity).store(text_keys(texts), vectors)
        try:
            scored = score_golden(gt, golden, Path(tmp) / "out", "cpu", f"{tmp}/cache")
            assert_matches_golden(scored, golden)
            agreeing_similarities(scored, golden)
        except AssertionError as err:
            return f"no: {err!r}"[:200]
    return "yes"


def time_rounds(runs: dict[str, Backend], texts: list[str], rounds: int) -> dict[str, list[float]]:
    """Seconds of each backend's encode of all texts, the backends alternating within each round."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    for round_ in range(rounds):
        for name, run in runs.items():
            start = time.perf_counter()
            run(texts)
            times[name].append(time.perf_counter() - start)
        print(f"  round {round_ + 1}: " + ", ".join(f"{n} {t[-1]:.3f} s" for n, t in times.items()), flush=True)
    return times


def phase(runs: dict[str, Backend], texts: list[str], rounds: int, busy: int, busy_seconds: float) -> dict:
    """One timing phase with `busy` spinning processes beside it; its times, ratios and load averages."""
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN, str(busy_seconds)]) for _ in range(busy)]
    try:
        if busy:
            time.sleep(2.0)
        load_before = os.getloadavg()
        print(f"{busy} busy processes beside it; load average {load_before[0]:.2f} {load_before[1]:.2f} "
              f"{load_before[2]:.2f}", flush=True)
        times = time_rounds(runs, texts, rounds)
        load_after = os.getloadavg()
    finally:
        for p in spinners:
            p.kill()
            p.wait()
    least = {n: min(t) for n, t in times.items()}
    median = {n: statistics.median(t) for n, t in times.items()}
    torch_over = {n: {"min": least["torch"] / least[n], "median": median["torch"] / median[n]}
                  for n in times if n != "torch"}
    for n, r in torch_over.items():
        print(f"  torch / {n}: {r['min']:.3f} (min), {r['median']:.3f} (median); "
              f"{n} min {least[n]:.3f} s, torch min {least['torch']:.3f} s")
    print(f"  load average after: {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}", flush=True)
    return {"busy": busy, "load_before": load_before, "load_after": load_after, "seconds": times,
            "min": least, "median": median, "torch_over": torch_over}


def main() -> int:
    """Parity, then timing phases (the runtimes not installed left out)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared", help="the shared data folder")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--busy", type=int, default=2, help="spinning processes in the contention phase (0: none)")
    parser.add_argument("--busy-seconds", type=float, default=600.0, help="longest life of a spinning process")
    parser.add_argument("--threads", type=int, help="threads of every backend (default: torch's default)")
    parser.add_argument("--skip-golden", action="store_true", help="skip scoring the golden cases per backend")
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument("--texts", type=Path, help="encode these texts instead of the golden call texts "
                        "(a JSON list of strings or of tools; timing only)")
    args = parser.parse_args()
    installed = {m for m in OPTIONAL if importlib.util.find_spec(m) is not None}
    if len(installed) < len(OPTIONAL):
        print(f"not installed: {', '.join(m for m in OPTIONAL if m not in installed)}; measured without them")
        print(INSTALL)

    if args.threads:
        os.environ["OMP_NUM_THREADS"] = str(args.threads)  # before torch loads: torch's threads, and the runtimes'
    import torch

    from engine.encoders import TextEncoder, cosine_gap

    texts = read_texts(args.texts) if args.texts else golden_texts(args.shared)
    encoder = TextEncoder(device="cpu")
    if args.threads:
        torch.set_num_threads(args.threads)
    threads = torch.get_num_threads()
    lengths = encoder.token_lengths(texts)
    print(f"{len(texts)} distinct texts ({args.texts or 'the golden call texts'}), {len(set(lengths.tolist()))} "
          f"distinct token lengths; {os.cpu_count()} CPUs, {threads} threads per backend")
    with tempfile.TemporaryDirectory() as tmp:
        runs = backends(encoder, Path(tmp), installed)
        vectors = {name: run(texts) for name, run in runs.items()}  # also the warm-up
        report: dict = {"texts": len(texts), "source": str(args.texts or "golden"), "threads": threads,
                        "parity": {}}
        for name in runs:
            if name == "torch":
                continue
            gap = cosine_gap(vectors["torch"], vectors[name])
            golden = ("skipped" if args.skip_golden or args.texts
                      else golden_unchanged(args.shared, encoder, texts, vectors[name]))
            report["parity"][name] = {"similarity_gap": gap, "golden_unchanged": golden}
            print(f"{name}: cosine similarities within {gap:.2e} of torch's; golden cases unchanged: {golden}")
        report["phases"] = [phase(runs, texts, args.rounds, busy, args.busy_seconds)
                            for busy in sorted({0, args.busy})]
    if args.json:
        from engine.contract.atomic import atomic_write_json

        atomic_write_json(args.json, report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Time every stage of scoring a set of prediction files, and the encoder alone on the same texts.

    python scripts/bench.py --gt GT.json P1.json P2.json ... --rounds 3   # cold cache (fresh temp dirs)
    python scripts/bench.py --gt GT.json P*.json --warm --rounds 5        # warm processes: sweep, grid + plots
    python scripts/bench.py --gt GT.json P*.json --replicate 100    # align+metrics throughput (cached texts)
    python scripts/bench.py --synthetic 1000000 --pseudo-embeddings # align+metrics on a generated 1M-call sweep
    python scripts/bench.py --trials 4 --models 14 --rounds 3  # 4 trials of 14 models against one trial each
    python scripts/bench.py --references 3 --models 14 --rounds 3  # 3 references per task against one
    python scripts/bench.py --gpu-report [--gt GT P1 P2 ...]  # on a CUDA machine: tests, parity, timings
    python scripts/bench.py --gt GT P*.json --rounds 3 --record --compare  # into docs/bench_history.jsonl
    python scripts/bench.py --stats [--models 14] [--rounds 5] [--device cuda]  # statistics step / warm pass

Cold mode runs a whole scoring process (scripts/score.py, which prints its stage times:
load, serialize, embed, align, metrics, write) and then a process that only imports the
encoder, loads it and embeds the same distinct texts with sentence-transformers' `encode`, then
with the engine's (token-budget batches), --rounds times alternating, and prints the
ratios of the scoring process to each bare call. The scoring process runs with --backend (default
auto, as the score app): auto's first use on a cache (its measurement and the model's export) is
timed once, apart, and each round's fresh cache starts with that choice and export (its embeddings
cold). Warm mode fills a cache, then times whole
scoring processes that find every text in it: the sweep (reports=false) and a threshold grid
with its reports and plots.

--gpu-report (on a CUDA machine; on CPU it says so and exits 0) runs tests/test_cuda.py (golden
parity with device=cuda among them), then whole scoring processes on CUDA: cold (a fresh
embedding cache and a fresh Triton cache, TRITON_CACHE_DIR) and warm, and in this process the
align and metrics stages timed under torch.cuda.synchronize with the synchronizations they make
(torch's sync debug mode) and the shapes the device solver compiled. It writes gpu_report.json and
gpu_report.md (a table) into --report-dir, with the tests' whole output in cuda_tests.log. Without --gt it
uses the golden cases of ../shared.

--record appends the run to the benchmark history (docs/bench_history.jsonl: date, commit, CPU model,
cores, load average, versions, backend, device and every figure: scripts/bench_history.py); --compare
prints the change of each figure from the last record of the same mode on the same CPU model and device.
--stats times the statistics step (its `stats` stage: 10,000 resamples, every metric, every pair) of a warm scoring
process of --models prediction files perturbed from the reference (default: ../shared's M3-Bench reference; or the
files given) against a warm scoring process of the same sweep without statistics, --rounds times alternating, and
prints the ratio (the target is at most 0.25).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import bench_history  # noqa: E402
import torch  # noqa: E402
from bench_align import bench_align  # noqa: E402
from bench_gpu import gpu_report  # noqa: E402
from bench_process import score_command, spread, timed, timings_line, write_json  # noqa: E402
from bench_stats import bench_stats  # noqa: E402

from engine.contract import read_trajectories  # noqa: E402
from engine.encoders import TextEncoder  # noqa: E402
from engine.pipeline import ScoreSettings  # noqa: E402
from engine.serialize import flatten_sweep  # noqa: E402
from engine.synthetic import demo_models, make_reference, perturb  # noqa: E402
from engine.thresholds import Thresholds  # noqa: E402
from engine.trials import trial_path  # noqa: E402
from kernels.device import resolve_device  # noqa: E402

ENCODER_ALONE = """
import json, sys, time
start = time.perf_counter()
from sentence_transformers import SentenceTransformer
model = SentenceTransformer(sys.argv[1], device=sys.argv[3])
loaded = time.perf_counter()
texts = json.load(open(sys.argv[2]))
model.encode(texts, batch_size=int(sys.argv[4]), convert_to_numpy=True)
library = time.perf_counter()
sys.path.insert(0, sys.argv[5])
from engine.encoders import TextEncoder
engine = TextEncoder(sys.argv[1], device=sys.argv[3], batch_size=int(sys.argv[4]))
engine.model  # loaded before the clock starts
ours = time.perf_counter()
engine.encode(texts)
print(f"{loaded - start:.3f} {library - loaded:.3f} {time.perf_counter() - ours:.3f}")
"""


def chosen_backend(out: Path) -> str:
    """The backend a finished scoring process encoded with: auto's choice from its outputs' meta, else torch."""
    results = sorted(out.rglob("results_eval.json"))
    meta = json.loads(results[0].read_text()).get("meta", {}) if results else {}
    encoder = meta.get("encoder") or {}
    return str(encoder.get("chosen") or encoder.get("backend") or "torch")


def seed_cache(args: argparse.Namespace, settings: ScoreSettings, thresholds: Thresholds,
               tmp: Path) -> tuple[Path, float]:
    """auto's first use: one scoring process on a fresh cache (the backends measured, the model exported);
    the folder whose choice and export each cold round then starts from, and that process's seconds."""
    seed = tmp / "seed"
    seconds, _ = timed(score_command(args, dataclasses.replace(settings, cache_dir=str(seed)), thresholds,
                                     tmp / "seed-out"))
    return seed, seconds


def fresh_cache(folder: Path, seed: Path | None) -> str:
    """A cache folder without embeddings: with seed, auto's choice and the export copied from it."""
    folder.mkdir(parents=True)
    for part in ("backends", "onnx"):
        if seed is not None and (seed / part).is_dir():
            shutil.copytree(seed / part, folder / part)
    return str(folder)


def bench_cold(args: argparse.Namespace, settings: ScoreSettings, thresholds: Thresholds) -> dict:
    """Whole cold scoring processes (a fresh embedding cache each) against processes that only run the encoder.

    The two kinds of process alternate for --rounds rounds, so a busy machine slows both alike;
    the scoring process reports its own stage times, the encoder process its import + load and
    its bare `encode` call. Returns the figures.
    """
    gt = read_trajectories(args.gt)
    texts = flatten_sweep(gt, [read_trajectories(p, lenient=True) for p in args.predictions], settings.profile).texts
    encoder = TextEncoder(settings.encoder_model)
    device = str(resolve_device(settings.device))
    scoring, encode, ours, loads, embeds, backends = [], [], [], [], [], []
    figures: dict = {"texts": len(texts)}
    with tempfile.TemporaryDirectory() as tmp:
        seed = None
        if settings.encoder_backend == "auto":
            seed, first = seed_cache(args, settings, thresholds, Path(tmp))
            figures["first_use_process_s"] = round(first, 3)
            print(f"auto's first use (measurement, export and a cold run): scoring process {first:.3f} s")
        texts_file = Path(tmp) / "texts.json"
        texts_file.write_text(json.dumps(texts))
        for round_ in range(args.rounds):
            cold = dataclasses.replace(settings, cache_dir=fresh_cache(Path(tmp) / f"cache{round_}", seed))
            seconds, out = timed(score_command(args, cold, thresholds, Path(tmp) / f"out{round_}"))
            scoring.append(round(seconds, 3))
            backends.append(chosen_backend(Path(tmp) / f"out{round_}"))
            stages = timings_line(out)
            embeds.append(float(stages.split("embed ")[1].split("s")[0]))
            print(f"round {round_ + 1}: scoring process {seconds:.3f} s ({backends[-1]})   {stages}")
            if args.skip_encoder:
                continue
            _, out = timed([sys.executable, "-c", ENCODER_ALONE, str(encoder.model_path), str(texts_file), device,
                            str(settings.encoder_batch_size), str(ROOT)])
            load, call, engine_call = (float(v) for v in out.split()[-3:])
            loads.append(load)
            encode.append(call)
            ours.append(engine_call)
            print(f"round {round_ + 1}: encoder-alone process on the same {len(texts)} distinct texts: import + load "
                  f"{load:.3f} s, sentence-transformers' encode {call:.3f} s, then the engine's encode (token-budget "
                  f"batches) {engine_call:.3f} s; scoring process / library encode call "
                  f"{scoring[-1] / call:.3f}")
    figures |= {"scoring_process_s": scoring, "embed_stage_s": embeds, "backend_used": backends}
    print(f"scoring process: {spread(scoring)}")
    if encode:
        figures |= {"encoder_import_load_s": loads, "library_encode_s": encode, "engine_torch_encode_s": ours,
                    "ratio_process_to_library_min": round(min(scoring) / min(encode), 4),
                    "ratio_process_to_library_median": round(statistics.median(scoring) / statistics.median(encode), 4),
                    "ratio_process_to_library_paired": [round(a / b, 4) for a, b in zip(scoring, encode)]}
        print(f"sentence-transformers' encode call: {spread(encode)}")
        print(f"the engine's encode call:           {spread(ours)}")
        print(f"ratio scoring process / library encode call: {min(scoring) / min(encode):.3f} (min), "
              f"{statistics.median(scoring) / statistics.median(encode):.3f} (median)")
        print(f"ratio scoring process / engine encode call:  {min(scoring) / min(ours):.3f} (min), "
              f"{statistics.median(scoring) / statistics.median(ours):.3f} (median)")
    return figures


def bench_warm(args: argparse.Namespace, settings: ScoreSettings, thresholds: Thresholds) -> dict:
    """Whole warm scoring processes (every text cached): the sweep without reports, then the
    --grid threshold grid with its reports and plots, --rounds times each, alternating; the figures."""
    grid = f"align.tau_weak_grid=[{args.grid}]"
    with tempfile.TemporaryDirectory() as tmp:
        timed(score_command(args, settings, thresholds, Path(tmp) / "fill"))
        sweep, gridded = [], []
        for round_ in range(args.rounds):
            sweep.append(timed(score_command(args, settings, thresholds, Path(tmp) / f"s{round_}"))[0])
            gridded.append(timed(score_command(args, settings, thresholds, Path(tmp) / f"g{round_}", grid,
                                               "reports=true"))[0])
            print(f"round {round_ + 1}: sweep {sweep[-1]:.3f} s, grid with reports {gridded[-1]:.3f} s")
    print(f"warm sweep, reports=false: {spread(sweep)}")
    print(f"warm {len(args.grid.split(','))}-point tau_weak grid, reports=true: {spread(gridded)}")
    return {"warm_sweep_s": [round(v, 3) for v in sweep], "warm_grid_with_reports_s": [round(v, 3) for v in gridded],
            "grid_points": len(args.grid.split(","))}


def repeat_files(root: Path, tasks: int, models: int, trials: int, references: int) -> tuple[list[Path], list[str]]:
    """Under root: a generated reference (gt.json) and `references` - 1 mild variants of it (gt_alt<r>.json),
    and for each of `models` models (the demo's error profiles in turn) `trials` trial files
    (<model>_test_mcp_fuzzy_trial<i>.json, one seed each) or, with one trial, its plain file."""
    root.mkdir(parents=True, exist_ok=True)
    reference = make_reference(tasks, seed=0)
    gts = [write_json(root / "gt.json", reference)]
    gts += [write_json(root / f"gt_alt{r}.json", perturb(reference, demo_models()["demo_strong"], seed=9000 + r))
            for r in range(1, references)]
    profiles = list(demo_models().values())
    names = [f"model{m:02d}" for m in range(models)]
    for m, name in enumerate(names):
        plain = root / f"{name}_test_mcp_fuzzy.json"
        for t in range(1, trials + 1):
            write_json(trial_path(plain, t) if trials > 1 else plain,
                       perturb(reference, profiles[m % len(profiles)], seed=100 * m + t))
    return gts, names


def repeat_command(root: Path, gts: list[Path], names: list[str], settings: ScoreSettings, out: Path) -> list[str]:
    """The scoring process of a --trials / --references case: the models found by name under root."""
    data = f"data.gt={gts[0]}" if len(gts) == 1 else "data.references=[" + ",".join(map(str, gts)) + "]"
    return [sys.executable, str(ROOT / "scripts" / "score.py"), data, "inputs.models=[" + ",".join(names) + "]",
            f"results_dir={root}", f"output_dir={out}", f"encoder.cache_dir={settings.cache_dir}",
            f"device={settings.device}", "reports=false", "progress=false", "trials.success.key=recall",
            "trials.success.threshold=1.0"]


def bench_repeats(args: argparse.Namespace, settings: ScoreSettings) -> dict:
    """N trials (--trials) or R references (--references) of --models models against one trial and
    one reference: whole scoring processes, cold (a fresh cache) once, then warm (every text cached),
    best of --rounds."""
    n, r = max(args.trials, 1), max(args.references, 1)
    label = f"{n} trials" if n > 1 else f"{r} references"
    with tempfile.TemporaryDirectory() as tmp:
        results = {}
        for case, (trials, references) in (("one", (1, 1)), ("many", (n, r))):
            root = Path(tmp) / case
            gts, names = repeat_files(root, args.tasks_per_model, args.models, trials, references)
            cold = dataclasses.replace(settings, cache_dir=f"{tmp}/cache_{case}")
            seconds, out = timed(repeat_command(root, gts, names, cold, Path(tmp) / f"cold_{case}"))
            stages = timings_line(out)
            embed = float(stages.split("embed ")[1].split("s")[0])
            warm = [timed(repeat_command(root, gts, names, cold, Path(tmp) / f"warm_{case}{k}"))[0]
                    for k in range(args.rounds)]
            results[case] = {"cold": seconds, "embed": embed, "warm": min(warm)}
            print(f"{'1 trial, 1 reference' if case == 'one' else label}: {args.models} models; cold process "
                  f"{seconds:.2f} s   {stages}; warm process {spread(warm)}")
        one, many = results["one"], results["many"]
        print(f"{label} against one: warm {many['warm'] / one['warm']:.2f}x (against {max(n, r)}x), cold process "
              f"{many['cold'] / one['cold']:.2f}x, embed stage {many['embed'] / one['embed']:.2f}x")
    return {f"{case}_{k}_s": round(v, 3) for case, found in results.items() for k, v in found.items()}


def main() -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("predictions", nargs="*", help="prediction files")
    parser.add_argument("--gt", help="reference trajectories")
    parser.add_argument("--cache-dir", default=None, help="embedding cache (default: a fresh temp dir)")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--tau-weak", type=float, default=Thresholds.tau_weak)
    parser.add_argument("--tau-strong", type=float, default=Thresholds.tau_strong)
    parser.add_argument("--profile", default="reference")
    parser.add_argument("--replicate", type=int, default=0,
                        help="benchmark align+metrics on the files replicated N times")
    parser.add_argument("--synthetic", type=int, default=0,
                        help="benchmark align+metrics on a generated sweep of about N predicted calls")
    parser.add_argument("--tasks", type=int, default=2000, help="reference tasks of the synthetic sweep")
    parser.add_argument("--pseudo-embeddings", action="store_true",
                        help="text-seeded random vectors instead of the encoder (for sweeps too big to encode)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-encoder", action="store_true", help="do not time the encoder alone")
    parser.add_argument("--rounds", type=int, default=1, help="whole-process measurements of each kind")
    parser.add_argument("--warm", action="store_true", help="time warm whole processes (sweep, grid + plots)")
    parser.add_argument("--trials", type=int, default=0, help="benchmark N trials of --models models against one")
    parser.add_argument("--references", type=int, default=0, help="benchmark R references per task against one")
    parser.add_argument("--models", type=int, default=14, help="models of the --trials / --references benchmark")
    parser.add_argument("--tasks-per-model", type=int, default=200,
                        help="reference tasks of the --trials / --references benchmark")
    parser.add_argument("--grid", default="0.45,0.5,0.55,0.6,0.65,0.7,0.75,0.8,0.85,0.9",
                        help="tau_weak grid of the warm grid run")
    parser.add_argument("--gpu-report", action="store_true",
                        help="on a CUDA machine: CUDA tests, golden parity, cold and warm sweeps, stage times")
    parser.add_argument("--report-dir", default=".", help="where --gpu-report writes gpu_report.json and .md")
    parser.add_argument("--backend", default="auto", help="encoder.backend of the scoring processes (default auto)")
    parser.add_argument("--record", action="store_true", help="append this run to the benchmark history")
    parser.add_argument("--compare", action="store_true",
                        help="print the change from the history's last record of this mode, CPU model and device")
    parser.add_argument("--history", type=Path, default=bench_history.HISTORY, help="the benchmark history file")
    parser.add_argument("--stats", action="store_true",
                        help="time the statistics step against a warm scoring pass of --models files")
    args = parser.parse_args()
    load_before = bench_history.load_average()
    mode, figures, code = run_mode(args, parser)
    if figures and (args.record or args.compare):
        device = figures.pop("device", None) or str(resolve_device(args.device))
        if args.gpu_report:
            device = f"cuda {device}"
        elif device.startswith("cuda"):
            device = f"cuda {torch.cuda.get_device_name(0)}"
        inputs = {"gt": Path(args.gt).name if args.gt else None, "predictions": [Path(p).parent.name + "/" +
                  Path(p).name for p in args.predictions], "synthetic": args.synthetic,
                  "replicate": args.replicate, "trials": args.trials, "references": args.references}
        entry = bench_history.record(mode, figures, device=device, backend=args.backend, inputs=inputs,
                                     load_before=load_before, command=sys.argv[1:])
        if args.compare:
            print(bench_history.compare(entry, bench_history.last_like(entry, bench_history.read(args.history))))
        if args.record:
            bench_history.append(entry, args.history)
            print(f"recorded in {args.history}")
    sys.exit(code)


def run_mode(args: argparse.Namespace, parser: argparse.ArgumentParser) -> tuple[str, dict, int]:
    """Run the mode the arguments name; its name, its figures and the exit status."""
    if args.gpu_report:
        with tempfile.TemporaryDirectory() as tmp:
            code, report = gpu_report(args, ScoreSettings(profile=args.profile, cache_dir=args.cache_dir or tmp,
                                                          encoder_backend=args.backend),
                                      Thresholds(args.tau_weak, args.tau_strong))
            return "gpu-report", report, code
    if not (args.synthetic or args.trials or args.references or args.stats) and (not args.gt or not args.predictions):
        parser.error("give --gt and prediction files, or --synthetic N")
    with tempfile.TemporaryDirectory() as tmp:
        settings = ScoreSettings(profile=args.profile, device=args.device, cache_dir=args.cache_dir or tmp,
                                 encoder_backend=args.backend)
        thresholds = Thresholds(args.tau_weak, args.tau_strong)
        if args.stats:
            return "stats", bench_stats(args, settings, thresholds), 0
        if args.trials or args.references:
            return "repeats", bench_repeats(args, settings), 0
        if args.replicate or args.synthetic:
            return "align", bench_align(args, settings, thresholds), 0
        if args.warm:
            return "warm", bench_warm(args, settings, thresholds), 0
        return "cold", bench_cold(args, settings, thresholds), 0


if __name__ == "__main__":
    main()

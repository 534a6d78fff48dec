"""The CUDA paths against the CPU paths: encoder, kernels on random and real sweeps, golden parity.

Skipped where torch sees no CUDA device. The assignment solver must take
torch-linear-assignment's Triton path on CUDA: its fallback to SciPy on the host
warns, and that warning fails these tests.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch
from golden import agreeing_similarities, assert_matches_golden, golden_cases, score_golden

from engine.align import Candidates, candidate_pairs, match
from engine.encode import TextEncoder
from engine.pipeline import ScoreSettings, embed_tables, prepare_sweep
from engine.serialize import SweepTables
from kernels.assignment import compiled_shapes, plan_assignment, solve_buckets
from kernels.buckets import Buckets, build_buckets
from kernels.segment import exclusive_cumsum
from kernels.similarity import pair_similarity
from kernels.structure import StepStructure, step_structure

pytestmark = [
    pytest.mark.skipif(not torch.cuda.is_available(), reason="torch sees no CUDA device"),
    pytest.mark.filterwarnings("error:Triton linear-assignment support is unavailable:RuntimeWarning"),
]

CPU = torch.device("cpu")
CUDA = torch.device("cuda")


def both(*arrays: np.ndarray) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """The arrays as tensors on the CPU and on CUDA."""
    host = [torch.as_tensor(a) for a in arrays]
    return host, [t.to(CUDA) for t in host]


def assert_same_buckets(a: Buckets, b: Buckets) -> None:
    """Every field of two bucket layouts is identical (compared on the host)."""
    for field in dataclasses.fields(Buckets):
        x, y = getattr(a, field.name).cpu(), getattr(b, field.name).cpu()
        assert torch.equal(x, y), field.name


def assert_same_structure(a: StepStructure, b: StepStructure) -> None:
    """Integer quantities identical, float64 sums to 1e-12 relative, entropies (float32 masses) to 1e-6."""
    for name in ("inversions", "comparable", "same_gt_step_sq"):
        assert torch.equal(getattr(a, name).cpu(), getattr(b, name).cpu()), name
    torch.testing.assert_close(a.coherent_matches.cpu(), b.coherent_matches.cpu(), rtol=1e-12, atol=0)
    torch.testing.assert_close(a.merge_entropy.cpu(), b.merge_entropy.cpu(), rtol=0, atol=1e-6)


def random_calls(rng: np.random.Generator, tasks: int = 60, samples: int = 200, tools: int = 6
                 ) -> tuple[np.ndarray, ...]:
    """Flat GT and predicted call tables as build_buckets takes them, with tools missing from the GT."""
    gt_task, gt_rank, task_tools = [], [], []
    for t in range(tasks):
        calls = rng.integers(0, tools, size=int(rng.integers(0, 12))).tolist()
        order = list(dict.fromkeys(calls))
        task_tools.append(order)
        gt_task += [t] * len(calls)
        gt_rank += [order.index(c) for c in calls]
    sample_task = rng.integers(0, tasks, size=samples)
    pred_sample, pred_rank = [], []
    for s, t in enumerate(sample_task.tolist()):
        calls = rng.integers(0, tools + 2, size=int(rng.integers(0, 12))).tolist()
        pred_sample += [s] * len(calls)
        pred_rank += [task_tools[t].index(c) if c in task_tools[t] else -1 for c in calls]
    return (np.array(gt_task, dtype=np.int64), np.array(gt_rank, dtype=np.int64),
            np.array(pred_sample, dtype=np.int64), np.array(pred_rank, dtype=np.int64), sample_task)


@pytest.mark.parametrize("seed", range(3))
def test_build_buckets_on_cuda_matches_cpu(seed: int) -> None:
    gt_task, gt_rank, pred_sample, pred_rank, sample_task = random_calls(np.random.default_rng(seed))
    (a, b, c, d, e), (ga, gb, gc, gd, ge) = both(gt_task, gt_rank, pred_sample, pred_rank, sample_task)
    on_cpu = build_buckets(a, b, 60, c, d, e)
    on_cuda = build_buckets(ga, gb, 60, gc, gd, ge)
    assert on_cuda.pair_gt.is_cuda and on_cpu.num_pairs > 500
    assert_same_buckets(on_cpu, on_cuda)


def test_pair_similarity_on_cuda_matches_cpu() -> None:
    rng = np.random.default_rng(0)
    emb = rng.standard_normal((400, 384)).astype(np.float32)
    emb[200:] = emb[:200] * rng.uniform(0.5, 2.0, size=(200, 1)).astype(np.float32)  # parallel rows
    emb[7] = 0.0
    left, right = rng.integers(0, 400, size=30000), rng.integers(0, 400, size=30000)
    (e, i, j), (ge, gi, gj) = both(emb, left, right)
    on_cpu = pair_similarity(e, i, j, chunk=4096)
    on_cuda = pair_similarity(ge, gi, gj, chunk=4096)
    assert on_cuda.is_cuda
    torch.testing.assert_close(on_cuda.cpu(), on_cpu, rtol=0, atol=1e-6)
    # one value per distinct (left, right) pair: repeats of a pair are bit-identical on the device
    keys = torch.as_tensor(right * 400 + left)
    order = torch.argsort(keys, stable=True)
    same = keys[order][1:] == keys[order][:-1]
    assert same.sum() > 1000
    values = on_cuda.cpu()[order]
    assert torch.equal(values[1:][same], values[:-1][same])


def random_problems(rng: np.random.Generator, levels: np.ndarray) -> tuple[Buckets, torch.Tensor]:
    """Buckets of many shapes (vectors, wide, tall, square, repeated and constant blocks), S drawn from levels."""
    shapes = [(int(rng.integers(1, 7)), int(rng.integers(1, 7))) for _ in range(400)]
    shapes += [(12, 5), (5, 12), (16, 16), (3, 30), (30, 3), (1, 20), (20, 1)] * 3
    blocks = [rng.choice(levels, size=r * c).astype(np.float32) for r, c in shapes]
    for k in range(0, 60, 3):  # exact repeats of earlier blocks (solved once as one unique problem)
        shapes.append(shapes[k])
        blocks.append(blocks[k].copy())
    for r, c in [(4, 4), (3, 6), (6, 3), (2, 5), (1, 4), (4, 1)]:  # every pair tied
        for value in (levels.max(), levels.min()):
            shapes.append((r, c))
            blocks.append(np.full(r * c, value, dtype=np.float32))
    rows = torch.tensor([r for r, _ in shapes])
    cols = torch.tensor([c for _, c in shapes])
    sizes = rows * cols
    pairs = torch.arange(int(sizes.sum()))
    buckets = Buckets(sample=torch.arange(len(shapes)), rows=rows, cols=cols, pair_start=exclusive_cumsum(sizes),
                      pair_gt=pairs, pair_pred=pairs)
    return buckets, torch.from_numpy(np.concatenate(blocks))


def buckets_to(buckets: Buckets, device: torch.device) -> Buckets:
    """The same buckets with every tensor on device."""
    return Buckets(**{f.name: getattr(buckets, f.name).to(device) for f in dataclasses.fields(Buckets)})


COARSE = np.array([0.3, 0.55, 0.6, 0.7, 0.8, 0.9, 1.0], dtype=np.float32)
FINE = np.round(np.linspace(0.4, 1.0, 61), 2).astype(np.float32)


@pytest.mark.parametrize("levels", [COARSE, FINE], ids=["coarse", "fine"])
@pytest.mark.parametrize("seed", range(2))
def test_solve_buckets_on_cuda_matches_cpu(levels: np.ndarray, seed: int) -> None:
    buckets, similarity = random_problems(np.random.default_rng(seed), levels)
    starts = buckets.pair_start.tolist()
    tied = sum(len(np.unique(similarity[s:s + n].numpy())) < n
               for s, n in zip(starts, (buckets.rows * buckets.cols).tolist()))
    assert tied > 100  # the problems are full of exact ties
    on_cuda_buckets = buckets_to(buckets, CUDA)
    for tau in (0.6, 0.75):
        on_cpu = solve_buckets(similarity, buckets, tau)
        on_cuda = solve_buckets(similarity.to(CUDA), on_cuda_buckets, tau)
        assert on_cuda.is_cuda and on_cpu.numel() > 500
        assert torch.equal(on_cuda.cpu(), on_cpu), tau


@pytest.mark.parametrize("levels", [COARSE, FINE], ids=["coarse", "fine"])
def test_device_and_host_shape_groups_agree_with_scipy(levels: np.ndarray) -> None:
    """Every general shape group forced to the device solver, or all to SciPy on the host: the
    CPU's pairs either way; each shape sent to the device is counted once."""
    buckets, similarity = random_problems(np.random.default_rng(5), levels)
    on_cuda = buckets_to(buckets, CUDA)
    all_device = plan_assignment(on_cuda, device_min_problems=1)
    all_host = plan_assignment(on_cuda, device_min_problems=1 << 40)
    assert not all_host.device_groups and len(all_device.device_groups) > 20 and not all_device.host_groups
    before = compiled_shapes()
    for tau in (0.6, 0.75):
        on_cpu = solve_buckets(similarity, buckets, tau)
        for plan in (all_device, all_host):
            assert torch.equal(solve_buckets(similarity.to(CUDA), on_cuda, tau, plan).cpu(), on_cpu), tau
    assert compiled_shapes() - before <= len(all_device.device_groups)
    assert compiled_shapes() >= len(all_device.device_groups)


def test_the_default_plan_sends_small_groups_to_the_host(real_sweep: tuple[SweepTables, np.ndarray]) -> None:
    """The golden sweep's buckets are far below DEVICE_MIN_PROBLEMS a shape: nothing is compiled."""
    tables, embeddings = real_sweep
    before = compiled_shapes()
    candidates = candidate_pairs(tables, embeddings, CUDA)
    assert not candidates.plan.device_groups and len(candidates.plan.host_groups) > 20
    match(candidates, 0.6)
    assert compiled_shapes() == before


@pytest.mark.parametrize("spread", [1, 1 << 17], ids=["dense-steps", "sparse-steps"])
def test_step_structure_on_cuda_matches_cpu(spread: int) -> None:
    """Matches sorted by sample; widely spread step indices take the sorting path of the step compression."""
    rng = np.random.default_rng(3)
    samples, m = 300, 5000
    sample = np.sort(rng.integers(0, samples, size=m))
    gt_step = rng.integers(0, 8, size=m) * spread
    pred_step = rng.integers(0, 9, size=m) * spread
    similarity = rng.uniform(0.5, 1.0, size=m).astype(np.float32)
    (s, g, p, w), (gs, gg, gp, gw) = both(sample, gt_step, pred_step, similarity)
    on_cpu = step_structure(s, g, p, w, samples)
    on_cuda = step_structure(gs, gg, gp, gw, samples)
    assert on_cuda.inversions.is_cuda and int(on_cpu.inversions.sum()) > 1000
    assert_same_structure(on_cpu, on_cuda)


@pytest.fixture(scope="module")
def real_sweep(gt_path: Path, golden_dir: Path, embedding_cache: Path) -> tuple[SweepTables, np.ndarray]:
    """The real GT against every golden prediction file: tables and CPU embeddings of their texts (torch's,
    the reference the CUDA paths are held to)."""
    names = [n for group in golden_cases(golden_dir).values() for n in group]
    settings = ScoreSettings(device="cpu", cache_dir=str(embedding_cache), encoder_backend="torch")
    tables = prepare_sweep(gt_path, [golden_dir / n / "pred.json" for n in names], settings).tables
    embeddings, _ = embed_tables(tables, settings, CPU)
    return tables, embeddings


def test_encoder_on_cuda_matches_cpu(real_sweep: tuple[SweepTables, np.ndarray]) -> None:
    tables, _ = real_sweep
    texts = sorted(tables.texts, key=len)
    picked = texts[::len(texts) // 300] + texts[-10:]
    on_cpu = TextEncoder(device="cpu").encode(picked)
    on_cuda = TextEncoder(device="cuda").encode(picked)
    assert on_cuda.shape == on_cpu.shape == (len(picked), 384) and len(picked) > 300
    np.testing.assert_allclose(on_cuda, on_cpu, rtol=0, atol=1e-4)


def test_token_budget_batches_on_cuda_match_the_library_encode(real_sweep: tuple[SweepTables, np.ndarray]) -> None:
    """On the GPU too, the engine's batches give the library's vectors (its kernels vary by shape)."""
    tables, _ = real_sweep
    picked = sorted(tables.texts, key=len)[::7]
    encoder = TextEncoder(device="cuda")
    ours = encoder.encode(picked)
    theirs = encoder.model.encode(picked, batch_size=encoder.batch_size, convert_to_numpy=True,
                                  normalize_embeddings=False)
    assert len(picked) > 300
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-5)


def test_real_sweep_kernels_on_cuda_match_cpu(real_sweep: tuple[SweepTables, np.ndarray]) -> None:
    tables, embeddings = real_sweep
    on_cpu = candidate_pairs(tables, embeddings, CPU)
    on_cuda = candidate_pairs(tables, embeddings, CUDA)
    assert_same_buckets(on_cpu.buckets, on_cuda.buckets)
    torch.testing.assert_close(on_cuda.similarity.cpu(), on_cpu.similarity, rtol=0, atol=1e-6)
    same_input = Candidates(buckets=on_cuda.buckets, similarity=on_cpu.similarity.to(CUDA))
    n = tables.num_samples
    for tau in (0.5, 0.6, 0.8):
        a, b = match(on_cpu, tau), match(same_input, tau)
        assert a.sample.numel() > 1000
        for name in ("sample", "gt", "pred", "similarity"):
            assert torch.equal(getattr(a, name), getattr(b, name).cpu()), (tau, name)
        structures = []
        for m, device in ((a, CPU), (b, CUDA)):
            gt_step = torch.as_tensor(tables.gt_step, device=device)[m.gt]
            pred_step = torch.as_tensor(tables.pred_step, device=device)[m.pred]
            structures.append(step_structure(m.sample, gt_step, pred_step, m.similarity, n))
        assert_same_structure(*structures)


@pytest.fixture(scope="module")
def scored_on_cuda(gt_path: Path, golden_dir: Path, tmp_path_factory) -> dict[str, dict]:
    """Every golden case scored on CUDA with no embedding cache, so the encoder runs on the device too."""
    return score_golden(gt_path, golden_dir, tmp_path_factory.mktemp("golden-cuda"), "cuda", None)


def test_golden_parity_on_cuda(scored_on_cuda: dict[str, dict], golden_dir: Path) -> None:
    assert_matches_golden(scored_on_cuda, golden_dir)
    assert agreeing_similarities(scored_on_cuda, golden_dir) > 3000


def _close(cpu: object, cuda: object, where: str = "") -> None:
    """Two stats documents agree: equal keys, strings, integers and booleans, floats within 1e-12."""
    if isinstance(cpu, dict):
        assert isinstance(cuda, dict) and set(cpu) == set(cuda), where
        for key in cpu:
            _close(cpu[key], cuda[key], f"{where}.{key}")
    elif isinstance(cpu, list):
        assert isinstance(cuda, list) and len(cpu) == len(cuda), where
        for i, (a, b) in enumerate(zip(cpu, cuda)):
            _close(a, b, f"{where}[{i}]")
    elif isinstance(cpu, float):
        assert cuda == pytest.approx(cpu, abs=1e-12, nan_ok=True), where
    else:
        assert cpu == cuda, where


@pytest.mark.parametrize("method", ["logit", "percentile", "bca"])
def test_statistics_on_cuda_match_cpu(method: str) -> None:
    """The statistics step on CUDA gives the CPU's numbers for the same seed (the resample matrix is drawn on
    the CPU generator): intervals, pairs, Holm, win probabilities, rank intervals and ties, power, and the trial
    rates."""
    from engine.stats import StatsSettings, bootstrap_stats, model_units, trial_intervals

    rng = np.random.default_rng(6)
    ids = [f"t{i:03d}" for i in range(90)]
    families = [f"f{i % 17}" for i in range(90)]
    models = []
    for m in range(6):
        n_gt = rng.integers(1, 6, 90).astype(float)
        matched = np.minimum(n_gt, rng.integers(0, 6, 90)).astype(float)
        parts = {"recall": (matched, n_gt), "precision": (matched, matched + rng.integers(0, 3, 90)),
                 "step_coherence_cov": (rng.random(90) * n_gt, n_gt)}
        judged = {i: {"task_completion": float(rng.random()), "information_grounding": float(rng.random()),
                      "tool_use": {"calls": int(rng.integers(0, 4)), "flagged": 0, "valid": 0},
                      "check_success": int(rng.integers(0, 2))} for i in ids}
        published = {k: float(a.sum() / b.sum()) for k, (a, b) in parts.items()}
        published.update({k: float(np.mean([v[k] for v in judged.values()]))
                          for k in ("task_completion", "information_grounding")})
        published["check_accuracy"] = float(np.mean([v["check_success"] for v in judged.values()]))
        models.append(model_units(f"m{m}", ids, families, parts, judged, published, "reference"))
    settings = StatsSettings(resamples=3000, seed=13, method=method)
    on_cpu = bootstrap_stats(models, settings, CPU)
    on_cuda = bootstrap_stats(models, settings, CUDA)
    assert on_cuda["settings"].pop("device") == "cuda" and on_cpu["settings"].pop("device") == "cpu"
    _close(on_cpu, on_cuda)
    counts = [(4, int(c)) for c in rng.integers(0, 5, 40)]
    clusters = [f"f{i % 9}" for i in range(40)]
    _close(trial_intervals(counts, clusters, settings, CPU), trial_intervals(counts, clusters, settings, CUDA))

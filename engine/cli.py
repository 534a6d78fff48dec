"""The `scripts/score.py` job: resolve what to score from the Hydra config, score it, report it."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from omegaconf import DictConfig

from engine.errors import ConfigError, InputError
from engine.pipeline import ScoreSettings, StageTimer, output_dirs, score_sweep, write_sweep
from engine.serialize import PROFILES

log = logging.getLogger("score")


def settings_from(cfg: DictConfig) -> ScoreSettings:
    """The scoring settings of a composed config."""
    profile = str(cfg.metrics.profile)
    if profile not in PROFILES:
        raise ConfigError(f"metrics.profile={profile}: expected one of {', '.join(PROFILES)}")
    return ScoreSettings(tau_weak=float(cfg.align.tau_weak), tau_strong=float(cfg.align.tau_strong),
                         profile=profile, device=str(cfg.device), encoder_model=cfg.encoder.model,
                         encoder_batch_size=int(cfg.encoder.batch_size),
                         cache_dir=None if cfg.encoder.cache_dir in (None, "") else str(cfg.encoder.cache_dir))


def resolve_inputs(cfg: DictConfig) -> tuple[Path, list[Path], bool]:
    """GT path, prediction paths, and whether each file gets its own output subfolder."""
    gt = cfg.data.get("gt")
    demo_preds: list[Path] = []
    if cfg.data.name == "demo" and gt is None:
        from engine.synthetic import write_demo

        gt_path, models = write_demo(Path(cfg.data.demo_dir), n_tasks=int(cfg.data.n_tasks),
                                     seed=int(cfg.data.seed))
        gt = gt_path
        demo_preds = list(models.values())
    if gt is None:
        raise ConfigError("no reference file: set data.gt=PATH or data=m3bench")
    sweep = list(cfg.sweep.get("predictions") or [])
    if sweep:
        return Path(gt), [Path(p) for p in sweep], True
    if cfg.model.get("predictions"):
        return Path(gt), [Path(cfg.model.predictions)], False
    if demo_preds:
        return Path(gt), demo_preds, True
    raise ConfigError("nothing to score: set model=NAME, model.predictions=PATH or 'sweep.predictions=[...]'")


def summary_table(names: list[str], aggregates: list[dict], metric_names: tuple[str, ...]) -> str:
    """A plain-text table of the aggregates, one row per prediction file."""
    cols = ["file", "ids", *metric_names, "avg_Rounds", "avg_tool_calls"]
    rows = [[name, str(a["num_ids"])] + [f"{a[m]:.4f}" for m in metric_names]
            + [f"{a['avg_Rounds']:.2f}", f"{a['avg_tool_calls']:.2f}"] for name, a in zip(names, aggregates)]
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(cols)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(cols, widths))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths)) for r in rows]
    return "\n".join(lines)


def run(cfg: DictConfig) -> int:
    """Score what the config names and write the outputs; returns the process exit code."""
    try:
        settings = settings_from(cfg)
        gt, preds, per_file = resolve_inputs(cfg)
        out = Path(cfg.output_dir)
        dirs = output_dirs(preds, out) if per_file else [out]
        timer = StageTimer()
        result = score_sweep(gt, preds, settings, timer)
        with timer.stage("write"):
            aggregates = write_sweep(result, dirs)
    except (InputError, ConfigError, ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    stats = result.embedding
    print(summary_table([d.name if per_file else p.stem for d, p in zip(dirs, preds)], aggregates,
                        result.scores.names))
    print(f"texts: {stats.distinct_texts} distinct, {stats.cached} cached, {stats.encoded} encoded; "
          f"stages: " + ", ".join(f"{k} {v:.2f}s" for k, v in timer.seconds.items()))
    print(f"outputs: {out}")
    return 0

"""The score app's multirun table: after the last job, the jobs' results side by side (Hydra callback)."""

from __future__ import annotations

import logging
from pathlib import Path

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from engine.contract import InputError
from engine.reports.write import PIVOT, write_comparison

log = logging.getLogger("score")

REPORT_FOLDER = "report"


class CombinedTable(Callback):
    """Hydra callback (hydra.callbacks.combined_table of the score app): at the end of a multirun with
    `reports` on, the reports of every job's results in `<sweep dir>/report/`: one leaderboard when the jobs
    are comparable, else one per group of comparable jobs and comparison.md (engine.reports.write.write_comparison)."""

    def on_multirun_end(self, config: DictConfig, **kwargs: object) -> None:
        """Called once, after every job of the multirun."""
        if not OmegaConf.select(config, "reports", default=True):
            return
        sweep = Path(str(OmegaConf.select(config, "hydra.sweep.dir")))
        out = sweep / REPORT_FOLDER
        try:
            groups, _ = write_comparison(sweep, out)
        except (InputError, OSError, ValueError) as exc:
            log.warning("no combined table of the multirun: %s", exc)
            return
        results = sum(len(g.results) for g in groups)
        if len(groups) == 1:
            print(f"multirun: {results} results, all comparable; combined leaderboard: {out / 'leaderboard.md'}",
                  flush=True)
            return
        print((out / f"{PIVOT}.md").read_text(encoding="utf-8"), flush=True)
        print(f"multirun: {results} results in {len(groups)} groups of comparable settings; the table above: "
              f"{out / f'{PIVOT}.md'}; every row: {out / 'comparison.md'}; each group's reports: {out}/<group>/",
              flush=True)

"""What a score or judge run reads, by name: a model's prediction file under results_dir (PUBLISHED_NAME)
and the files of its trials (trial i of ``<stem>.json`` is ``<stem>_trial<i>.json``, TRIAL_NAME)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from engine.contract import InputError

PUBLISHED_NAME = "{model}_test_mcp_fuzzy.json"
"""A model's prediction file under results_dir (the published files' names, and the rollout's)."""
TRIAL_NAME = "{stem}_trial{index}.json"
"""Trial `index` (1-based) of the prediction file ``<stem>.json``, beside it."""
_TRIAL_RE = re.compile(r"_trial(\d+)\.json$")


def trial_path(predictions: Path, index: int) -> Path:
    """The file of trial `index` (1-based) of a prediction file: <stem>_trial<index>.json beside it."""
    return predictions.with_name(TRIAL_NAME.format(stem=predictions.stem, index=index))


def find_trials(predictions: Path, n: int | None = None) -> list[Path]:
    """The trial files of a prediction file, trials 1..N (<stem>_trial<i>.json beside it), with N = n,
    else the highest trial found; [] when there is no trial file. A trial in 1..N with no file is
    listed too (its slots are lost)."""
    predictions = Path(predictions)
    found = set()
    for path in predictions.parent.glob(f"{predictions.stem}_trial*.json"):
        m = _TRIAL_RE.search(path.name)
        if m and path.name == TRIAL_NAME.format(stem=predictions.stem, index=int(m.group(1))):
            found.add(int(m.group(1)))
    if not found:
        return []
    last = n if n is not None else max(found)
    return [trial_path(predictions, i) for i in range(1, last + 1)]


def check_trial_files(paths: Sequence[Path], setting: str) -> None:
    """Refuse something other than a file in a trial file's place (e.g. a folder): InputError naming it
    and the setting that led to it."""
    for path in paths:
        if path.exists() and not path.is_file():
            raise InputError(path, "not a file: a trial is a prediction file", field=setting)


def model_name(trial: Path) -> str:
    """A model's name from one of its trial files: the stem without its _trial<i> suffix."""
    return re.sub(r"_trial\d+$", "", Path(trial).stem)

"""What a score or judge run reads, by name: a model's prediction file under results_dir (PUBLISHED_NAME)
and the files of its trials (trial i of ``<stem>.json`` is ``<stem>_trial<i>.json``, TRIAL_NAME); and what a
score run scores: the `inputs` node (`InputsNode`: one file, several files, models under results_dir, or one
model's trials), made a `Plan` by `resolve_inputs`, a pure function (it writes nothing: the demo is written by
the run)."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, make_dataclass, replace
from pathlib import Path

from engine.contract import ConfigError, InputError
from engine.contract.errors import NAME_RULE, is_name
from engine.contract.settings import DataSet, ListPrice, SettingError
from engine.evaluators import evaluators
from engine.judge_results import JoinedFiles, joined_files
from engine.synthetic.demo import demo_models

log = logging.getLogger("score")

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


def check_distinct(paths: Sequence[Path]) -> None:
    """A file named twice as a trial is one slot counted twice: an InputError naming it."""
    seen: dict[Path, int] = {}
    for i, path in enumerate(paths, 1):
        key = Path(path).resolve()
        if key in seen:
            raise InputError(path, f"named as trial {seen[key]} and trial {i}: a duplicate trial",
                             field="inputs.trials")
        seen[key] = i


def output_dirs(pred_paths: Sequence[Path], root: Path) -> list[Path]:
    """One output folder per prediction file: its stem, or parent_stem where stems collide."""
    stems = [p.stem for p in pred_paths]
    dirs = []
    for path, stem in zip(pred_paths, stems):
        if stems.count(stem) > 1:
            name = f"{path.parent.name}_{stem}"
            log.warning("prediction files share the stem %r; writing %s to %s/", stem, path, name)
            dirs.append(root / name)
        else:
            dirs.append(root / stem)
    if len(set(dirs)) != len(dirs):
        raise ValueError("prediction files map to the same output folder even with their parent "
                         f"folder names: {', '.join(map(str, pred_paths))}")
    return dirs


def model_name(trial: Path) -> str:
    """A model's name from one of its trial files: the stem without its _trial<i> suffix."""
    return re.sub(r"_trial\d+$", "", Path(trial).stem)


@dataclass
class Demo:
    """The built-in demo (data=demo): a reference and five models generated under `dir` (engine.synthetic)."""

    dir: str = "${home}/demo"
    n_tasks: int = 60
    seed: int = 0

    def files(self) -> tuple[Path, dict[str, Path]]:
        """The demo's reference and {model: prediction file}, where write_demo puts them (nothing is written)."""
        directory = Path(self.dir)
        return directory / "reference.json", {name: directory / f"{name}.json" for name in demo_models()}


Verdicts = make_dataclass("Verdicts", [(e.card.option_name, str | None, field(default=None))
                                       for e in evaluators() if e.card.suffix is not None])
"""Each evaluator's file for `inputs.file`, by its option (judge, calls, rubrics, ...; null: the file beside the
predictions, <stem>_<suffix>.json, when there is one)."""


@dataclass
class InputsNode:
    """What a score run reads: one of `file` (one prediction file, its outputs straight into the run folder),
    `files` (several, one folder each), `models` (names under results_dir, PUBLISHED_NAME; with `discover`, every
    other prediction file there too) and `trials` (one model's trial files in trial order); none: the demo with
    data=demo. `name` is the model's name for `file` or `trials` (default: the file's stem), `verdicts` the
    evaluators' files of `file`, `price` that model's list price for the cost table (none given, all four of
    its keys null, or null: its model config's, conf/score/model/<name>.yaml, if any: `list_price`)."""

    file: str | None = None
    files: list[str] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    discover: bool = False
    trials: list[str] = field(default_factory=list)
    name: str | None = None
    verdicts: Verdicts = field(default_factory=Verdicts)  # type: ignore[valid-type]
    price: ListPrice | None = field(default_factory=ListPrice)  # a node, so inputs.price={...} merges into it

    def __post_init__(self) -> None:
        given = self.sources()
        if len(given) > 1:
            raise SettingError(given[1], getattr(self, given[1]),
                               f"inputs.{given[0]} names the files to score already: give one of "
                               f"{', '.join(f'inputs.{s}' for s in SOURCES)}")
        for key, names in (("name", [self.name] if self.name is not None else []), ("models", self.models)):
            for value in names:
                if not is_name(value):
                    raise SettingError(key, value, NAME_RULE)
        named = {option: path for option, path in vars(self.verdicts).items() if path}
        if named and given != ["file"]:
            option, path = next(iter(named.items()))
            scored = f"inputs.{given[0]}" if given else "the demo"
            raise SettingError(f"verdicts.{option}", path,
                               f"is for the one file of inputs.file, not for {scored}: each of their files' "
                               f"verdicts is read from beside it (<predictions stem>_<suffix>.json); drop it")

    def list_price(self) -> ListPrice | None:
        """The price given (None when none is)."""
        return self.price if self.price is not None and self.price.given() else None

    def sources(self) -> list[str]:
        """The settings of SOURCES this node gives, in that order."""
        return [key for key in SOURCES if getattr(self, key)]

    def named_verdicts(self) -> dict[str, str]:
        """{option: path} of the evaluators' files named for `file`."""
        return {option: path for option, path in vars(self.verdicts).items() if path}


SOURCES = ("file", "files", "models", "trials")
"""The settings of the inputs node that name the files to score, one of them per run."""


@dataclass
class Plan:
    """What one run scores: the reference (None: none, the evaluators' files only), the prediction files with
    their models' names and evaluators' files, whether each file gets a folder of its own, the trials (model ->
    its trial files in trial order, missing ones too), the demo to write first (data=demo, engine.synthetic.demo
    writes it), whether the run is a leaderboard (statistics by default: two or more models, a model's trial
    files counting once, or the leaderboard's list, models with discover), and the list price given for the
    model the inputs name (`price`: its name and price, engine.stats.cost.model_prices)."""

    gt: Path | list[Path] | None
    predictions: list[Path]
    names: list[str]
    verdicts: list[JoinedFiles]
    folders: bool
    trials: dict[str, list[Path]] | None = None
    demo: Demo | None = None
    leaderboard: bool = False
    price: tuple[str | None, ListPrice | None] = (None, None)


def missing_reference(gt: Path) -> str:
    """The one line for a reference file that is not there: the settings that name it, and where the
    published files come from."""
    return (f"{gt}: reference trajectory file not found: set data.gt=PATH, or M3BENCH_DATA to the folder "
            "holding test_mcp_GT.json (the published M3-Bench files: README, \"Where the data come from\"; "
            "data=demo scores the built-in demo)")


def _reference(data: DataSet) -> Path | list[Path] | None:
    """The reference the data set names: its references, else its gt (which must exist); None when it names
    none (MCPVerse, VisualToolBench publish no reference trajectories)."""
    if data.references:
        return [Path(p) for p in data.references]
    if data.gt:
        gt = Path(data.gt)
        if not gt.is_file():
            raise ConfigError(missing_reference(gt))
        return gt
    return None


def _published_files(results: Path, models: list[str], discover: bool) -> list[tuple[str, Path]]:
    """(name, path) of the named models' prediction files, then, with discover, of every other
    <name>_test_mcp_fuzzy.json under results, or <name>_test_mcp_fuzzy_trial<i>.json (in name order)."""
    found = [(m, results / PUBLISHED_NAME.format(model=m)) for m in models]
    if discover:
        suffix = PUBLISHED_NAME.format(model="")
        names = {p.name[:-len(suffix)]: p for p in results.glob(f"*{suffix}")}
        for trial in results.glob(f"*{Path(suffix).stem}_trial*.json"):  # models with trial files only
            name = model_name(trial)[:-len(Path(suffix).stem)]
            if name not in names and find_trials(results / PUBLISHED_NAME.format(model=name)):
                names.setdefault(name, results / PUBLISHED_NAME.format(model=name))
        found += [(name, names[name]) for name in sorted(set(names) - set(models) - {""})]
    return found


Group = tuple[str, list[Path], bool]
"""A model, its files, and whether they are its trials."""


def _groups(inputs: InputsNode, results_dir: Path, n_trials: int | None) -> tuple[list[Group], bool]:
    """Each model the inputs name with its files (its trial files where it has them), and whether each file
    gets an output folder of its own."""
    if inputs.trials:
        files = [Path(p) for p in inputs.trials]
        check_distinct(files)
        return [(inputs.name or model_name(files[0]), files, True)], True
    if inputs.files:
        files = [Path(p) for p in inputs.files]
        names = [d.name for d in output_dirs(files, Path("."))]
        return [(name, [p], False) for name, p in zip(names, files)], True
    if inputs.file:
        pred = Path(inputs.file)
        if trials := find_trials(pred, n_trials):
            return [(inputs.name or pred.stem, trials, True)], True
        return [(inputs.name or pred.stem, [pred], False)], False
    found = _published_files(results_dir, inputs.models, inputs.discover)
    groups = [(m, p, find_trials(p, n_trials)) for m, p in found]
    missing = [m for m, p, t in groups if not p.is_file() and not t]
    if missing:  # expected with the leaderboard's list (discover), a slip in a list of one's own
        log.log(logging.INFO if inputs.discover else logging.WARNING,
                "no prediction file under %s for %d of the %d model(s) listed: %s", results_dir, len(missing),
                len(inputs.models), ", ".join(missing))
    if len(missing) == len(found):
        raise ConfigError(f"none of the sweep's models has a prediction file under {results_dir} "
                          f"(expected {PUBLISHED_NAME.format(model='<model>')})")
    return [(m, t or [p], bool(t)) for m, p, t in groups if m not in missing], True


def resolve_inputs(inputs: InputsNode, data: DataSet, demo: Demo, results_dir: Path,
                   n_trials: int | None = None, reading: Mapping[str, Mapping[str, str | None]] | None = None
                   ) -> Plan:
    """The plan of a run: the files the inputs name (one of file, files, models, trials), else, with data=demo,
    the demo's models; the reference of the data set (data.references or data.gt), or the demo's; each
    evaluator's file read with its settings in `reading` (evaluator name -> keyword settings of its ``read``).
    It reads the file system and writes nothing (the demo is written by the run)."""
    plan = _plan(inputs, data, demo, results_dir, n_trials)
    verdicts = [replace(j, settings=reading) for j in plan.verdicts] if reading else plan.verdicts
    named = plan.names[0] if inputs.file else inputs.name
    trials = plan.trials or {}
    trial_names = {f"{m}_trial{i}" for m, paths in trials.items() for i in range(1, len(paths) + 1)}
    models = len(trials) + sum(1 for n in plan.names if n not in trial_names)
    return replace(plan, verdicts=verdicts, price=(named, inputs.list_price()),
                   leaderboard=models >= 2 or bool(inputs.discover and inputs.models))


def _plan(inputs: InputsNode, data: DataSet, demo: Demo, results_dir: Path, n_trials: int | None) -> Plan:
    setting = f"inputs.{inputs.sources()[0]}" if inputs.sources() else "the demo"
    if data.name == "demo":
        if data.gt or data.references:
            key = "data.references" if data.references else "data.gt"
            raise ConfigError(f"{key} names a reference and data=demo the built-in demo's: drop one")
        if not inputs.sources():
            gt, models = demo.files()
            preds = list(models.values())
            return Plan(gt, preds, list(models), [joined_files(p) for p in preds], True, demo=demo)
        gt_: Path | list[Path] | None = demo.files()[0]
        plan_demo: Demo | None = demo
    elif not inputs.sources():
        raise ConfigError(f"no predictions named (data={data.name}): name them with model=NAME, "
                          "predictions=FILE, predictions=[FILE,...], inputs.trials=[FILE,...], "
                          "inputs.models=[NAME,...] or sweep=leaderboard (data=demo, the default when nothing is "
                          "named, scores the built-in demo)")
    else:
        gt_, plan_demo = _reference(data), None
    groups, folders = _groups(inputs, results_dir, n_trials)
    files: list[Path] = []
    names: list[str] = []
    trials: dict[str, list[Path]] = {}
    for model, paths, are_trials in groups:
        if not are_trials:
            files.append(paths[0])
            names.append(model)
            continue
        trials[model] = paths
        check_trial_files(paths, setting)
        present = [(i, p) for i, p in enumerate(paths, 1) if p.is_file()]
        if not present:
            raise ConfigError(f"{model}: none of its {len(paths)} trial file(s) exists: {', '.join(map(str, paths))}")
        files += [p for _, p in present]
        names += [f"{model}_trial{i}" for i, _ in present]
    explicit = inputs.named_verdicts()
    if explicit and folders:
        option, path = next(iter(explicit.items()))
        raise ConfigError(f"inputs.verdicts.{option}={path} is for the one file of inputs.file, not for its trial "
                          f"files: each trial's verdicts are read from beside it (<predictions stem>_<suffix>.json); "
                          f"drop inputs.verdicts.{option}")
    verdicts = [joined_files(p, explicit if not folders else None) for p in files]
    return Plan(gt_, files, names, verdicts, folders, trials or None, plan_demo)

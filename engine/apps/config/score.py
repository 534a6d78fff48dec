"""The score app's schema (conf/score/config.yaml): `ScoreConfig` and its nodes, and its `SPEC`. Each node
holds its defaults (the YAML files name only what differs) and checks itself: choices are enums, a range is
declared on its field (`bounded`) and checked before any work, a rule across fields is its ``__post_init__``'s."""

from __future__ import annotations

from dataclasses import dataclass, field

from omegaconf import MISSING

from engine.apps.config.fields import COUNT, DEVICE, FOLDER, SIZE, THRESHOLD, Range, bounded, checked
from engine.apps.config.spec import AppSpec
from engine.contract.settings import Choice, DataSet, SettingError
from engine.evaluators.vtb_scoring import DEFAULT_PROFILE as VTB_DEFAULT
from engine.inputs import Demo, InputsNode
from engine.references import check_select
from engine.thresholds import Thresholds
from engine.trials import SuccessRule


class Backend(Choice):
    """The encoder's backend (engine.encoders.select): auto, the fastest here that keeps torch's similarities."""

    auto = "auto"
    torch = "torch"
    onnxruntime = "onnxruntime"
    openvino = "openvino"


@dataclass
class ScoreEncoder:
    """The sentence encoder (model null: the bundled all-MiniLM-L6-v2) and its embedding cache."""

    model: str | None = None
    batch_size: int = bounded(128, COUNT)
    backend: Backend = Backend.auto
    cache_dir: str | None = "${oc.env:M3BENCH_CACHE,${home}/embeddings}"
    save_every: float = bounded(5.0, Range(low=0, integer=False))


@dataclass
class Align:
    """The similarity thresholds of the alignment, their grids, and how a task's best reference is chosen."""

    tau_weak: float = bounded(Thresholds.tau_weak, THRESHOLD)
    tau_strong: float = bounded(Thresholds.tau_strong, THRESHOLD)
    tau_weak_grid: list[float] = bounded([], THRESHOLD)
    tau_strong_grid: list[float] = bounded([], THRESHOLD)
    select: list[str] = field(default_factory=list)


class Profile(Choice):
    """The metrics' formulas (engine.metricspec.PROFILES)."""

    reference = "reference"
    paper = "paper"


@dataclass
class Metrics:
    """The metrics group."""

    profile: Profile = Profile.reference


class StatsMode(Choice):
    """When the statistics step runs: for a leaderboard (auto), always (on), never (off)."""

    auto = "auto"
    on = "on"
    off = "off"


class Cluster(Choice):
    """What the bootstrap draws: task families or task ids."""

    family = "family"
    sample = "sample"


class Method(Choice):
    """The interval's method."""

    logit = "logit"
    percentile = "percentile"
    bca = "bca"


class Correction(Choice):
    """The small-sample correction."""

    expanded = "expanded"
    none = "none"


class Scheme(Choice):
    """How a resample's weights are drawn."""

    multinomial = "multinomial"
    poisson = "poisson"


@dataclass
class Stats:
    """The statistics step (engine.stats): a cluster bootstrap of every leaderboard aggregate, `resamples`
    times from `seed` (engine.stats.StatsSettings, made by the app from these)."""

    enabled: StatsMode = StatsMode.auto
    resamples: int = bounded(10_000, Range(low=2))
    level: float = bounded(0.95, Range(low=0, high=1, integer=False))
    seed: int = bounded(0, SIZE)
    cluster: Cluster = Cluster.family
    method: Method = Method.logit
    correction: Correction = Correction.expanded
    scheme: Scheme = Scheme.multinomial
    power: float = bounded(0.8, Range(low=0, high=1, integer=False))
    min_clusters: int = bounded(5, Range(low=2))

    def __post_init__(self) -> None:
        for key in ("level", "power"):
            if not 0.0 < getattr(self, key) < 1.0:
                raise SettingError(key, getattr(self, key), "must lie strictly between 0 and 1")


class VtbProfile(Choice):
    """How VisualToolBench rubric verdicts are read (engine.evaluators.vtb_scoring.PROFILES)."""

    published = "published"
    strict = "strict"


@dataclass
class Vtb:
    """How the score app reads VisualToolBench rubric verdicts."""

    profile: VtbProfile = VtbProfile(VTB_DEFAULT)


class Rule(Choice):
    """A trial's success rule (engine.trials.RULES)."""

    task_completion = "task_completion"
    critical_rubrics = "critical_rubrics"
    outcome_checks = "outcome_checks"


@dataclass
class Success:
    """When a finished trial counts as a success (engine.trials.SuccessRule)."""

    rule: Rule = Rule(SuccessRule.rule)
    threshold: float = bounded(SuccessRule.threshold, Range(low=0, high=1, integer=False))
    key: str | None = None

    def __post_init__(self) -> None:
        if self.key == "":
            raise SettingError("key", self.key, "must be a per_id key or null")


class Convention(Choice):
    """The peers' conventions written beside the project's in trials.json (engine.trial_conventions)."""

    project = "project"
    tau2 = "tau2"
    mcpmark = "mcpmark"
    all = "all"


@dataclass
class Trials:
    """Repeated runs of one model, scored together (the files: inputs.trials, or those beside inputs.file)."""

    n: int | None = bounded(None, Range(low=1, nullable=True))
    success: Success = field(default_factory=Success)
    convention: Convention = Convention.all


@dataclass
class ScoreDemo(Demo):
    """The built-in demo, its sizes bounded."""

    n_tasks: int = bounded(Demo.n_tasks, COUNT)
    seed: int = bounded(Demo.seed, SIZE)


@dataclass
class ScoreConfig:
    """conf/score/config.yaml."""

    data: DataSet = field(default_factory=DataSet)
    inputs: InputsNode = field(default_factory=InputsNode)
    encoder: ScoreEncoder = field(default_factory=ScoreEncoder)
    align: Align = field(default_factory=Align)
    metrics: Metrics = field(default_factory=Metrics)
    stats: Stats = field(default_factory=Stats)
    device: str = checked("auto", DEVICE)
    home: str = MISSING
    results_dir: str = MISSING
    output_dir: str = checked(MISSING, FOLDER)
    index_dir: str | None = None
    reports: bool = True
    progress: bool = True
    parse_string_arguments: bool = False
    vtb: Vtb = field(default_factory=Vtb)
    trials: Trials = field(default_factory=Trials)
    demo: ScoreDemo = field(default_factory=ScoreDemo)

    def __post_init__(self) -> None:
        check_select(self.align.select, str(self.metrics.profile))


SPEC = AppSpec("score", ScoreConfig, names=("inputs.name", "inputs.models"), typed=True, missing_as_none=True)
"""m3bench-score: it reads no new key; inputs.name and inputs.models become part of file and folder names; a
data set's tasks file, left to the user (``???``) by some data sets, is not read by scoring (None)."""

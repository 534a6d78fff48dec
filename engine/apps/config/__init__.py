"""The apps' settings: each app's schema (`score`, `judge`, `rollout`, `calibrate`, one module each), the
registry of the apps with a config root (`APPS`: `AppSpec`), `typed` (a composed config as its schema's
objects, made once, a refused value named by its dotted key) and `record` (a node's JSON form, as its YAML
gave it: engine.contract.settings). The field checks (`bounded`, `checked`, `check_ranges`) stay until
each node checks itself in ``__post_init__``."""

from engine.apps.config.calibrate import CalibrateConfig
from engine.apps.config.fields import CHECK, RANGE, Check, Device, Folder, Range, TaskIds, folder_problem
from engine.apps.config.judge import JudgeConfig
from engine.apps.config.rollout import RolloutConfig
from engine.apps.config.score import ScoreConfig
from engine.apps.config.spec import AppSpec
from engine.apps.config.store import APPS, CHECKS, FLAGS, RANGES, SCHEMAS, check_ranges, typed
from engine.contract.settings import record

__all__ = [
    "APPS", "CHECK", "CHECKS", "FLAGS", "RANGE", "RANGES", "SCHEMAS", "AppSpec", "CalibrateConfig", "Check",
    "Device", "Folder", "JudgeConfig", "Range", "RolloutConfig", "ScoreConfig", "TaskIds", "check_ranges",
    "folder_problem", "record", "typed",
]

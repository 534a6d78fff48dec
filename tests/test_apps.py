"""The Hydra apps as a new user meets them: their own groups, a description for every setting, and
a run's log and config in the run's own folder, never under the working directory."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf
from preloaded import run_python

from engine.apps.kit import config_groups

ROOT = Path(__file__).resolve().parents[1]
APPS = {"score": "engine.apps.score", "calibrate": "engine.apps.calibrate", "judge": "rollout.judges.cli"}
# Keys of named entries the help describes once, for an entry called <name>: pattern -> replacement.
GENERIC_KEYS = ((re.compile(r"^judges\.pool\.[^.]+\."), "judges.pool.<name>."),
                (re.compile(r"\.params\..*$"), ".params"),
                (re.compile(r"^evaluators\.[^.]+(\..*)?$"), "evaluators.<name>"))


def run_script(name: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return run_python([str(ROOT / "scripts" / f"{name}.py"), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


def documented_settings(help_text: str) -> dict[str, str]:
    """key -> description of the `== Settings ==` section of an app's help."""
    section = help_text.split("== Settings ==", 1)[1].split("==", 1)[0]
    settings = {}
    for line in section.strip().splitlines():
        key, _, description = line.strip().partition(" ")
        settings[key] = description.strip()
    return settings


def leaf_keys(node: object, prefix: str = "") -> set[str]:
    """Dotted keys of the leaves of a config (lists are leaves)."""
    if isinstance(node, dict):
        return set().union(*(leaf_keys(v, f"{prefix}{k}.") for k, v in node.items())) if node else {prefix[:-1]}
    return {prefix[:-1]}


def composed_keys(app: str) -> set[str]:
    """Leaf keys of the app's config composed with every option of every group."""
    __import__(APPS[app])  # registers structured config groups
    keys: set[str] = set()
    with initialize_config_dir(version_base="1.3", config_dir=str(ROOT / "conf" / app)):
        options = [[]] + [[f"{g}={o}"] for g, opts in config_groups(app).items() for o in opts]
        for overrides in options:
            cfg = compose(config_name="config", overrides=overrides)
            keys |= leaf_keys(OmegaConf.to_container(cfg, resolve=False))
    for pattern, replacement in GENERIC_KEYS:
        keys = {pattern.sub(replacement, key) for key in keys}
    return keys


@pytest.mark.parametrize("app", sorted(APPS))
def test_help_describes_every_setting_and_only_its_own_groups(app: str, tmp_path: Path) -> None:
    proc = run_script(app, "--help", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    documented = documented_settings(proc.stdout)
    assert all(documented.values()), [k for k, v in documented.items() if not v]
    described = set(documented)
    for pattern, replacement in GENERIC_KEYS:  # an evaluator's own options may be described one by one
        described = {pattern.sub(replacement, key) for key in described}
    assert described == composed_keys(app)
    _, _, groups = proc.stdout.partition("== Configuration groups ==")  # calibrate has no group
    groups = groups.split("== Config ==")[0]
    assert not re.search(r"^(exposure|tasks):", groups, re.M), "rollout groups leak into the help"
    listed = [line for line in groups.splitlines() if re.match(r"^[\w/]+: ", line)]
    assert listed == [f"{group}: {', '.join(options)}" for group, options in config_groups(app).items()]
    assert ("data" in config_groups(app)) == (app != "calibrate")  # the shared data sets, on its search path
    assert "Traceback" not in proc.stdout + proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_score_run_writes_log_and_config_only_into_its_output_dir(tmp_path: Path, embedding_cache: Path) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    out = tmp_path / "out"
    proc = run_script("score", f"demo.dir={tmp_path / 'demo'}", "demo.n_tasks=3", "reports=false", "device=cpu",
                      f"encoder.cache_dir={embedding_cache}", f"output_dir={out}", cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    assert (out / ".hydra" / "config.yaml").is_file() and (out / "score.log").is_file()
    assert (out / "demo_strong" / "results_eval.json").is_file()
    assert list(cwd.iterdir()) == []
    assert "WARNING" not in proc.stderr, "the demo runs clean"
    header = next(line for line in proc.stdout.splitlines() if line.startswith("Model"))
    assert re.split(r"\s{2,}", header)[:4] == ["Model", "Tasks", "Recall", "Precision"]
    assert header.endswith("Average Score")
    assert "Argument Similarity" in header and "avg_sim_all_cov" not in proc.stdout, "the papers' names, not keys"


def test_failed_run_leaves_nothing_in_the_working_directory(tmp_path: Path) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    proc = run_script("score", "data.gt=missing.json", "inputs.file=missing.json",
                      f"output_dir={tmp_path / 'out'}", cwd=cwd)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("error: missing.json: reference trajectory file not found: "
                                                           "set data.gt=PATH")
    assert list(cwd.iterdir()) == []
    assert not (tmp_path / "out").exists(), "the failed run's folder held only Hydra's files"


def test_missing_reference_says_which_setting_and_where_the_data_come_from(tmp_path: Path) -> None:
    """A fresh clone has no reference file: the line names M3BENCH_DATA, data.gt and the README section."""
    empty = tmp_path / "data"
    empty.mkdir()
    proc = run_python([str(ROOT / "scripts" / "score.py"), "model=gpt5",
                           f"output_dir={tmp_path / 'out'}"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=600, env={**os.environ, "M3BENCH_DATA": str(empty)})
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"error: {empty / 'test_mcp_GT.json'}: reference trajectory file not found: set data.gt=PATH, or M3BENCH_DATA "
        'to the folder holding test_mcp_GT.json (the published M3-Bench files: README, "Where the data come '
        'from"; data=demo scores the built-in demo)']
    assert "### Where the data come from" in (ROOT / "README.md").read_text()
    assert not (tmp_path / "out").exists()


def test_rollout_without_data_names_m3bench_data(tmp_path: Path) -> None:
    """As the score app does: a fresh clone's rollout says where the tasks file comes from."""
    empty = tmp_path / "data"
    empty.mkdir()
    proc = run_python([str(ROOT / "scripts" / "rollout.py"), "model=gpt5",
                           f"results_dir={tmp_path / 'results'}"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=600, env={**os.environ, "M3BENCH_DATA": str(empty)})
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"error: {empty / 'tasks_fuzzy.json'}: tasks file not found: set tasks.file=PATH, or M3BENCH_DATA to the "
        'folder holding tasks_fuzzy.json (the published M3-Bench files: README, "Where the data come from"; '
        "tasks=demo runs the built-in demo)"]


@pytest.mark.parametrize(("script", "argv", "written"), [("rollout", ["--model", "gpt5"], "model=gpt5"),
                                                        ("score", ["--model=gpt5", "device=cpu"], "model=gpt5"),
                                                        ("judge", ["--results-dir"], "results_dir=VALUE")])
def test_a_flag_for_a_setting_is_one_line_saying_how_to_write_it(script: str, argv: list[str], written: str,
                                                                 tmp_path: Path) -> None:
    proc = run_script(script, *argv, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"error: {argv[0]}: settings are written key=value, not as flags: write {written} (--help lists the settings)"]
    assert list(tmp_path.iterdir()) == []


def score_in_process(capsys, *overrides: str) -> tuple[int, str]:
    """The score app's run on the config its command line would compose (the process around it, exit
    status and all, is the command line's tests' above): (status, stderr)."""
    from engine.apps.kit import run_config
    from engine.apps.score import SPEC, run

    with initialize_config_dir(version_base="1.3", config_dir=str(ROOT / "conf" / "score")):
        cfg = compose(config_name="config", overrides=list(overrides))
    code = run_config(SPEC, run, cfg)
    return code, capsys.readouterr().err


def test_bad_threshold_is_one_line(tmp_path: Path, capsys) -> None:
    code, err = score_in_process(capsys, "align.tau_weak=1.5", "data=demo", f"demo.dir={tmp_path / 'demo'}",
                                 f"output_dir={tmp_path / 'out'}")
    assert code == 2
    assert err.strip().splitlines() == ["error: align.tau_weak=1.5: must be a number in [-1, 1]"]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("setting", "message"), [
    ("align.tau_strong=high", "wrong type for align.tau_strong: Value 'high' of type 'str' could not be converted "
                              "to Float"),
    ("align.tau_weak_grid=0.5", "wrong type for align.tau_weak_grid: Invalid value assigned: float is not a "
                                "ListConfig, list or tuple."),
    ("encoder.batch_size=abc", "wrong type for encoder.batch_size: Value 'abc' of type 'str' could not be "
                               "converted to Integer"),
])
def test_a_setting_of_the_wrong_type_is_refused_by_the_schema_in_one_line(tmp_path: Path, setting: str,
                                                                          message: str) -> None:
    """The score app's structured config (engine.apps.config) types every setting: Hydra refuses the value."""
    proc = run_script("score", setting, f"output_dir={tmp_path / 'out'}", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [f"error: {setting}: {message}"]
    assert list(tmp_path.iterdir()) == []


def test_weak_threshold_above_strong_is_scored_with_a_warning(tmp_path: Path, capsys, caplog,
                                                               embedding_cache: Path) -> None:
    """The published scorer takes tau_weak > tau_strong as it is (every match is then strong): scored, with one
    warning saying so."""
    code, _ = score_in_process(capsys, "align.tau_weak=0.9", "align.tau_strong=0.8", "data=demo", "demo.n_tasks=3",
                               f"demo.dir={tmp_path / 'demo'}", f"output_dir={tmp_path / 'out'}", "device=cpu",
                               f"encoder.cache_dir={embedding_cache}", "reports=false")
    assert code == 0
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warned == ["align.tau_weak=0.9 is above align.tau_strong=0.8: every match is strong "
                      "(avg_sim_strong_cov = avg_sim_all_cov); scored as the published scorer does"]
    results = sorted((tmp_path / "out").glob("*/results_eval.json"))
    assert len(results) >= 2
    for result in results:
        aggregate = json.loads(result.read_text())["aggregate"]
        assert aggregate["avg_sim_strong_cov"] == pytest.approx(aggregate["avg_sim_all_cov"])


def test_calibrate_needs_pairs(tmp_path: Path) -> None:
    proc = run_script("calibrate", f"output_dir={tmp_path / 'out'}", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == "error: no labelled pairs file: set pairs=FILE"


@pytest.mark.parametrize(("sweep", "level"), [(["sweep=leaderboard"], "INFO"),
                                              (["inputs.models=[gpt5,scripted]"], "WARNING")])
def test_models_without_a_file_are_said_once(tmp_path: Path, caplog, sweep: list[str], level: str) -> None:
    """The leaderboard's list lacks files in a folder of one's own rollouts: one INFO line, not a warning;
    a model of one's own list without its file is one warning."""
    from engine.apps.config import typed
    from engine.apps.score import plan_of

    (tmp_path / "scripted_test_mcp_fuzzy.json").write_text("[]")
    with initialize_config_dir(version_base="1.3", config_dir=str(ROOT / "conf" / "score")):
        cfg = compose(config_name="config", overrides=[*sweep, "data=rollout_demo", f"results_dir={tmp_path}"])
    with caplog.at_level("INFO", logger="score"):
        assert plan_of(typed("score", cfg)).names == ["scripted"]
    said = [(r.levelname, r.getMessage()) for r in caplog.records if "no prediction file" in r.getMessage()]
    missing, listed = (14, 14) if level == "INFO" else (1, 2)  # the leaderboard's list; scripted found beside it
    assert len(said) == 1 and said[0][0] == level
    assert said[0][1].startswith(f"no prediction file under {tmp_path} for {missing} of the {listed} model(s)")
    assert not [r for r in caplog.records if r.levelname == "WARNING" and level == "INFO"]

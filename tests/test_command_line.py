"""Every Hydra app's command line is checked by the app kit before it runs: a misspelt setting, an
option its group lacks, or a new key no app reads is one line naming the closest, exit status 2; a
multirun names each job's folder by its swept settings; a failed run leaves no run folder of its own."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from preloaded import run_python

from engine.apps.kit import CommandLineError, check_command_line
from engine.apps.score import OPEN_KEYS as SCORE_OPEN_KEYS
from engine.contract import ConfigError
from engine.synthetic import write_demo
from rollout.cli import OPEN_KEYS as ROLLOUT_OPEN_KEYS
from rollout.cli import compose_config as rollout_config
from rollout.judges.cli import OPEN_KEYS as JUDGE_OPEN_KEYS
from rollout.judges.cli import spelt_out as judge_spelt_out

ROOT = Path(__file__).resolve().parents[1]
OPEN = {"score": SCORE_OPEN_KEYS, "calibrate": (), "rollout": ROLLOUT_OPEN_KEYS, "judge": JUDGE_OPEN_KEYS}
HELP = "; --help lists its settings"


@pytest.mark.parametrize(("app", "argv", "message"), [
    ("score", ["align.tau_weka=0.5"],
     f"align.tau_weka=0.5: m3bench-score has no setting align.tau_weka (closest: align.tau_weak){HELP}"),
    ("score", ["data=demo", "+align.tau_weka=0.5"],
     f"+align.tau_weka=0.5: m3bench-score does not read align.tau_weka (closest: align.tau_weak){HELP}"),
    ("score", ["++align.tau_weka=0.5"],
     f"++align.tau_weka=0.5: m3bench-score does not read align.tau_weka (closest: align.tau_weak){HELP}"),
    ("score", ["modle=gpt5"], f"modle=gpt5: m3bench-score has no setting modle (closest: model){HELP}"),
    ("score", ["predictions=a b/p,1.json"], "predictions=a b/p,1.json: several values (a sweep) need -m, one job per "
     "value; a single value holding a comma is quoted: predictions='...'"),
    ("score", ["align.tau_weak=range(0.5,0.7,0.1)"], "align.tau_weak=range(0.5,0.7,0.1): several values (a sweep) "
     "need -m, one job per value; a single value holding a comma is quoted: align.tau_weak='...'"),
    ("rollout", ["model=scripted,scripted_noisy"], "model=scripted,scripted_noisy: several values (a sweep) need -m, "
     "one job per value; a single value holding a comma is quoted: model='...'"),
    ("score", ["predictons=p.json"], f"predictons=p.json: m3bench-score has no setting predictons (closest: "
                                     f"predictions){HELP}"),
    ("rollout", ["taks=demo"], f"taks=demo: m3bench-rollout has no setting taks (closest: tasks){HELP}"),
    ("score", ["predictions.foo=1"], f"predictions.foo=1: m3bench-score has no setting predictions.foo{HELP}"),
    ("score", ["modle.name=x"], f"modle.name=x: m3bench-score has no setting modle.name (closest: data.name){HELP}"),
    ("score", ["model=gpt55"], "model=gpt55: group model has no option 'gpt55'; closest: gpt5"),
    ("score", ["-m", "model=gpt5,grok44"],
     "model=gpt5,grok44: group model has no option 'grok44'; closest: grok4, grok4_fast"),
    ("score", ["metrics=papers"], "metrics=papers: group metrics has no option 'papers'; closest: paper"),
    ("score", ["data=xyz"], "data=xyz: group data has no option 'xyz'; options: demo, m3bench, mcpverse, "
                            "mcpverse_demo, rollout_demo, tobench, tobench_demo, vtb, vtb_demo"),
    ("score", ["~align.tau_wek"], f"~align.tau_wek: m3bench-score has no setting align.tau_wek (closest: "
                                  f"align.tau_weak){HELP}"),
    ("score", ["-m", "hydra/launcher=local_paralel"], "hydra/launcher=local_paralel: group hydra/launcher has no "
                                                      "option 'local_paralel'; closest: local_parallel"),
    ("score", ["+align.tau_weak=0.5"], "+align.tau_weak=0.5: align.tau_weak is a setting already: set it with "
                                       "align.tau_weak=0.5"),
    ("calibrate", ["profle=paper"], f"profle=paper: m3bench-calibrate has no setting profle (closest: profile){HELP}"),
    ("rollout", ["model=gpt55"], "model=gpt55: group model has no option 'gpt55'; closest: gpt5, gpt4o"),
    ("rollout", ["model@curate.model=claud"], "model@curate.model=claud: group model has no option 'claud'; "
                                              "closest: claude"),
    ("rollout", ["model.params.reasoning_effort=low"], "model.params.reasoning_effort=low: "
     "model.params.reasoning_effort is a new key: add it with +model.params.reasoning_effort=low"),
    ("rollout", ["+model.api_nme=gpt-5"], "+model.api_nme=gpt-5: m3bench-rollout does not read "
                                          f"model.api_nme (closest: model.api_name){HELP}"),
    ("judge", ["judges=publshed"], "judges=publshed: group judges has no option 'publshed'; closest: published"),
    ("judge", ["+judges.pool.gpt5_mini.tiemout=1"], "+judges.pool.gpt5_mini.tiemout=1: m3bench-judge does not read "
     f"judges.pool.gpt5_mini.tiemout (closest: judges.pool.gpt5_mini.timeout){HELP}"),
    ("judge", ["evaluators=[m3_judges,call_outcome]"], "evaluators=[m3_judges,call_outcome]: group evaluators has "
                                                        "no option 'call_outcome'; closest: call_outcomes"),
    ("score", ["reports=maybe"], "reports=maybe: wrong type for reports: Value 'maybe' is not a valid bool (type str)"),
    ("score", ["-m", "demo.n_tasks=many,3"], "demo.n_tasks=many,3: wrong type for demo.n_tasks: Value 'many' of type "
                                             "'str' could not be converted to Integer"),
    ("calibrate", ["tau_weak_grid=0.5"], "tau_weak_grid=0.5: wrong type for tau_weak_grid: Invalid value assigned: "
                                         "float is not a ListConfig, list or tuple."),
    ("rollout", ["concurrency=many"], "concurrency=many: wrong type for concurrency: Value 'many' of type 'str' could "
                                      "not be converted to Integer"),
    ("rollout", ["tasks.question_fild=prompt"], "tasks.question_fild=prompt: m3bench-rollout has no setting "
     f"tasks.question_fild (closest: tasks.question_field){HELP}"),
    ("judge", ["attempts=5.5"], "attempts=5.5: wrong type for attempts: Value '5.5' of type 'float' could not be "
                                "converted to Integer"),
    ("judge", ["atempts=5"], f"atempts=5: m3bench-judge has no setting atempts (closest: attempts){HELP}"),
    ("score", ["-m", "align.tau_weak=0.5,0.7,0.5"], "the multirun runs align.tau_weak=0.5 twice (each job's folder "
                                                    "is named by its swept settings): drop the repeated value"),
    ("score", ["hydra.run.dir=/tmp/a", "output_dir=/tmp/b"], "hydra.run.dir and output_dir both name the run "
                                                             "folder, and only hydra.run.dir would be used: give "
                                                             "output_dir alone"),
    ("judge", ["run_dir=/tmp/b", "hydra.run.dir=/tmp/a"], "hydra.run.dir and run_dir both name the run folder, and "
                                                          "only hydra.run.dir would be used: give run_dir alone"),
])
def test_a_bad_command_line_is_one_line_naming_the_closest(app: str, argv: list[str], message: str) -> None:
    with pytest.raises(CommandLineError) as caught:
        check_command_line(app, argv, OPEN[app])
    assert str(caught.value) == message


@pytest.mark.parametrize(("app", "argv"), [
    ("score", ["model=gpt5", "align.tau_weak=0.5", "inputs.verdicts.judge=j.json", "hydra.job.chdir=true", "--cfg",
               "job"]),
    ("score", ["data.gt=g.json", "inputs.files=[a.json,b.json]", "~model", "reports=false"]),
    ("rollout", ["model=scripted", "+model.params.reasoning_effort=low", "model@curate.model=gpt5",
                 "+curate.model.params.seed=1"]),
    ("judge", ["~judges.pool.deepseek_chat", "+judges.pool.qwen={provider: openai, api_name: q}",
               "+judges.pool.gpt5_mini.params.reasoning_effort=low", "+evaluators.probe.scale=2"]),
    ("calibrate", ["pairs=p.json", "hydra/launcher=basic", "hydra.nonsense=1"]),
    ("score", ["hydra/launcher=local_parallel", "hydra.launcher.n_jobs=2", "align.tau_weak=0.5"]),
    ("score", ["--config-name", "other", "nonsense=1"]),  # another config root: Hydra's to check
])
def test_a_good_command_line_runs_as_written(app: str, argv: list[str]) -> None:
    line = judge_spelt_out(argv) if app == "judge" else argv  # a judge added to the pool: merged into it
    assert check_command_line(app, line, OPEN[app]) == line


def test_a_setting_beneath_a_null_node_is_merged_into_its_parent_or_refused_in_one_line() -> None:
    """A key beneath a node the config holds as null (the curator's model of a rollout without one; OmegaConf
    sets nothing beneath a null node, and Hydra's compose once failed on it with a traceback) is merged into the
    node above it; beneath a null node whose parent is a config group's (a pool without a classifier), one line."""
    spelt = check_command_line("rollout", ["model=scripted", "curate.model.timeout=5"], OPEN["rollout"])
    assert spelt == ["model=scripted", "curate={model: {timeout: 5}}"]
    assert check_command_line("rollout", spelt, OPEN["rollout"]) == spelt
    with pytest.raises(ConfigError, match=r"^curate\.model\.provider: must be given \(it is \?\?\? in the config\)$"):
        rollout_config(spelt)  # a model without its provider: named, not a traceback of OmegaConf's
    with pytest.raises(CommandLineError) as caught:
        check_command_line("judge", ["judges=scripted", "judges.classifier.timeout=5"], OPEN["judge"])
    assert str(caught.value) == ("judges.classifier.timeout=5: judges.classifier is null with judges=scripted, and "
                                 "nothing beneath a null node can be set on the command line: give classifier in a "
                                 "judges option's file")


def test_a_multirun_job_folder_names_only_its_swept_settings() -> None:
    argv = ["-m", "align.tau_weak=0.5,0.7", "metrics=reference,paper", "device=cpu", "output_dir=/o", "demo.n_tasks=4"]
    assert check_command_line("score", argv, OPEN["score"]) == [
        *argv, "hydra.job.config.override_dirname.exclude_keys=[output_dir,index_dir,progress,demo.n_tasks,device]"]
    argv = ["-m", "model=gpt5,claude", "concurrency=2", "results_dir=/r"]
    assert check_command_line("rollout", argv, OPEN["rollout"])[-1] == (
        "hydra.job.config.override_dirname.exclude_keys=[results_dir,predictions,run_dir,workspace,cache_dir,"
        "server_logs,curate.verdicts,curate.optimal,parts_dir,concurrency]")


def run(app: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return run_python([str(ROOT / "scripts" / f"{app}.py"), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


def test_the_apps_refuse_before_running(tmp_path: Path) -> None:
    """Hydra's text for a typo suggested `+key`, which then ran with the default: both are one line now."""
    for args in (["align.tau_weka=0.5"], ["+align.tau_weka=0.5"]):
        proc = run("score", *args, f"output_dir={tmp_path / 'out'}", cwd=tmp_path)
        assert proc.returncode == 2 and proc.stdout == ""
        assert proc.stderr.splitlines() == [f"error: {args[0]}: m3bench-score "
                                            + ("has no setting" if args[0][0] != "+" else "does not read")
                                            + f" align.tau_weka (closest: align.tau_weak){HELP}"]
    proc = run("score", "predictions=p1.json,p2.json", cwd=tmp_path)  # Hydra's own text: five lines, status 1
    assert (proc.returncode, proc.stderr) == (2, "error: predictions=p1.json,p2.json: several values (a sweep) need "
                                                 "-m, one job per value; a single value holding a comma is quoted: "
                                                 "predictions='...'\n")
    proc = run("judge", "model=x", "judges=publshed", cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (2, "error: judges=publshed: group judges has no option 'publshed'; "
                                                 "closest: published\n")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
@pytest.mark.parametrize(("app", "setting", "message"), [
    ("score", "progress=sometimes", "wrong type for progress"), ("score", "progres=false", "has no setting progres"),
    ("calibrate", "tau_strong_grid=x", "wrong type for tau_strong_grid"), ("calibrate", "profil=paper", "no setting"),
    ("rollout", "max_step=few", "wrong type for max_step"), ("rollout", "max_steps=5", "has no setting max_steps"),
    ("judge", "concurrency=all", "wrong type for concurrency"), ("judge", "concurency=2", "has no setting concurency"),
])
def test_hydra_refuses_unknown_settings_and_wrong_types(tmp_path: Path, app: str, setting: str, message: str) -> None:
    """Each app's schema (engine.apps.config) makes Hydra refuse a setting it lacks and a value of the wrong
    type; the app says so in one line naming the setting, exit status 2, and makes no folder."""
    proc = run(app, setting, f"{'output_dir' if app in ('score', 'calibrate') else 'results_dir'}={tmp_path / 'o'}",
               cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (2, "") and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith(f"error: {setting}: ") and message in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_failed_judge_and_rollout_runs_leave_no_run_folder(tmp_path: Path) -> None:
    """Bad input before anything is done: the run folder the run created goes; one that was there stays."""
    results = tmp_path / "results"
    proc = run("judge", "model=nomodel", "judges=scripted", "data=rollout_demo", f"results_dir={results}", cwd=tmp_path)
    assert proc.returncode == 2 and "nomodel_test_mcp_fuzzy.json: trajectory file not found" in proc.stderr
    assert not (results / "judge").exists()
    proc = run("rollout", "model=scripted", "tasks=demo", f"results_dir={results}",
               f"servers={tmp_path / 'none.json'}", cwd=tmp_path)
    assert proc.returncode == 2 and "servers config not found" in proc.stderr
    assert not (results / "rollout").exists()
    kept = results / "judge" / "nomodel"
    kept.mkdir(parents=True)
    proc = run("judge", "model=nomodel", "judges=scripted", "data=rollout_demo", f"results_dir={results}", cwd=tmp_path)
    assert proc.returncode == 2 and (kept / ".hydra").is_dir()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results"]


def test_verdict_files_named_for_several_prediction_files_are_refused(tmp_path: Path) -> None:
    """inputs.verdicts.judge=PATH is the verdicts of inputs.file's one file; with inputs.files it would
    be ignored, so it is refused in one line naming the setting."""
    demo = tmp_path / "demo"
    gt, models = write_demo(demo, n_tasks=3, seed=0)
    proc = run("score", f"data.gt={gt}", f"inputs.files=[{models['demo_weak']}]",
               f"inputs.verdicts.judge={tmp_path / 'judge.json'}", f"output_dir={tmp_path / 'out'}", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == (f"error: inputs.verdicts.judge={tmp_path / 'judge.json'}: is for the one file of "
                           "inputs.file, not for inputs.files: each of their files' verdicts is read from beside it "
                           "(<predictions stem>_<suffix>.json); drop it\n")
    assert not (tmp_path / "out").exists()


def test_a_judge_run_sharing_no_id_with_the_reference_is_refused(tmp_path: Path) -> None:
    """Predictions whose ids are none of the reference's: one line and exit 2, not an empty judge file."""
    predictions = tmp_path / "p_test_mcp_fuzzy.json"
    predictions.write_text(json.dumps([{"id": "zzz-1", "steps": [], "final_reply": "x"}]))
    proc = run("judge", f"predictions={predictions}", "judges=scripted", "data=rollout_demo",
               f"results_dir={tmp_path / 'results'}", f"cache_dir={tmp_path / 'cache'}", cwd=tmp_path)
    assert proc.returncode == 2
    assert len(proc.stderr.splitlines()) == 1
    assert "none of its 1 task id(s) is in the GT" in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p_test_mcp_fuzzy.json"]

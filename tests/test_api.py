"""The Python API (engine.api.score): the score app's numbers to the last digit (the demo, the golden files),
trajectories held in memory scored as the same records in a file, their problems named as a file's, and
nothing written unless asked."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from engine.api import Scores, default_cache_dir, in_memory, score
from engine.apps.kit import run_config
from engine.apps.score import SPEC, run  # registers the config's resolvers too
from engine.contract import ConfigError, InputError, dumps_json
from engine.synthetic import demo_records

ROOT = Path(__file__).resolve().parents[1]
REPORTS = ("leaderboard", "families", "leaderboard_intervals", "pairwise")
"""The report files whose content the API gives back (families.json as rows with a Family column)."""


def app_run(*overrides: str) -> None:
    """The score app's run on the config its command line would compose; it must succeed."""
    with initialize_config_dir(version_base="1.3", config_dir=str(ROOT / "conf" / "score")):
        cfg = compose(config_name="config", overrides=["index_dir=null", "progress=false", *overrides])
    assert run_config(SPEC, run, cfg) == 0


def tables_of(run: Path) -> dict[str, list[dict]]:
    """The report tables of a score app's output folder, as the API gives them."""
    found = {}
    for stem in REPORTS:
        data = json.loads((run / f"{stem}.json").read_text(encoding="utf-8"))
        found[stem] = ([{"Family": family, **row} for family, table in data.items() for row in table["rows"]]
                       if stem == "families" else data["rows"])
    return found


def api_tables(scores: Scores) -> dict[str, list[dict]]:
    return {"leaderboard": scores.leaderboard, "families": scores.families,
            "leaderboard_intervals": scores.intervals, "pairwise": scores.pairwise}


def test_the_demo_scores_as_the_score_app_writes_it(tmp_path: Path, embedding_cache: Path) -> None:
    """score(demo=True) gives the app's data=demo leaderboard, family tables, intervals, pairwise table and
    stats.json to the last digit; write_to gets the app's files, the reports byte for byte."""
    app_run("data=demo", f"demo.dir={tmp_path / 'demo'}", f"output_dir={tmp_path / 'app'}",
            f"encoder.cache_dir={embedding_cache}", "encoder.backend=torch")
    scores = score(demo=True, cache_dir=embedding_cache, encoder_backend="torch", write_to=tmp_path / "api")
    assert [row["Model"] for row in scores.leaderboard][:2] == ["demo_strong", "demo_medium"]
    assert api_tables(scores) == tables_of(tmp_path / "app")
    assert scores.stats == json.loads((tmp_path / "app" / "stats.json").read_text(encoding="utf-8"))
    assert scores.written == tmp_path / "api"
    app_files = sorted(p.relative_to(tmp_path / "app") for p in (tmp_path / "app").rglob("*"))
    assert sorted(p.relative_to(tmp_path / "api") for p in (tmp_path / "api").rglob("*")) == app_files
    for name in (p for p in app_files if len(p.parts) == 1 and p.suffix in (".md", ".csv", ".json")):
        assert (tmp_path / "api" / name).read_bytes() == (tmp_path / "app" / name).read_bytes(), name
    written = json.loads((tmp_path / "api" / "demo_weak" / "results_eval.json").read_text(encoding="utf-8"))
    assert written == scores.results["demo_weak"]
    assert written["meta"]["predictions"] == str(in_memory("demo_weak"))


@pytest.mark.slow
def test_the_golden_files_score_as_the_score_app_writes_them(tmp_path: Path, gt_path: Path, golden_dir: Path,
                                                             embedding_cache: Path) -> None:
    """The golden prediction files (tests/test_golden.py) at their thresholds 0.6/0.8: the API's leaderboard and
    statistics are the app's inputs.files run's, to the last digit."""
    preds = [golden_dir / name / "pred.json" for name in ("m1", "m2", "m3")]
    app_run("data=m3bench", f"data.gt={gt_path}", f"inputs.files=[{','.join(map(str, preds))}]",
            f"output_dir={tmp_path / 'app'}", f"encoder.cache_dir={embedding_cache}", "encoder.backend=torch")
    scores = score(preds, gt_path, cache_dir=embedding_cache, encoder_backend="torch")
    assert [row["Model"] for row in scores.leaderboard] != []
    assert {row["Model"] for row in scores.leaderboard} == {"m1_pred", "m2_pred", "m3_pred"}
    assert api_tables(scores) == tables_of(tmp_path / "app")
    assert scores.stats == json.loads((tmp_path / "app" / "stats.json").read_text(encoding="utf-8"))
    assert len(scores.per_task) == 3 * 208


def small_demo(tmp_path: Path) -> tuple[list[dict], dict[str, list[dict]], Path, dict[str, Path]]:
    """Twelve demo tasks and three of its models, in memory and as files."""
    tmp_path.mkdir(exist_ok=True)
    reference, models = demo_records(n_tasks=12, seed=3)
    models = {name: models[name] for name in ("demo_strong", "demo_hasty", "demo_chaotic")}
    ref_path = tmp_path / "reference.json"
    ref_path.write_text(dumps_json(reference), encoding="utf-8")
    paths = {}
    for name, records in models.items():
        paths[name] = tmp_path / f"{name}.json"
        paths[name].write_text(dumps_json(records), encoding="utf-8")
    return reference, models, ref_path, paths


def test_trajectories_in_memory_score_as_the_same_records_in_files(tmp_path: Path, embedding_cache: Path) -> None:
    """A mapping of name -> records against reference records gives the numbers of the same records in files
    (a list of files, named by their stems), statistics included; one model's list of records is one model."""
    reference, models, ref_path, paths = small_demo(tmp_path)
    common = {"cache_dir": embedding_cache, "encoder_backend": "torch", "resamples": 500, "stats": True}
    memory = score(models, reference, **common)
    files = score(list(paths.values()), ref_path, **common)
    assert memory.leaderboard == files.leaderboard
    assert memory.families == files.families
    assert memory.per_task == files.per_task
    assert memory.pairwise == files.pairwise and memory.pairwise
    assert memory.stats == files.stats
    one = score(models["demo_hasty"], ref_path, names="hasty", cache_dir=embedding_cache, encoder_backend="torch")
    assert one.stats is None and [r["Model"] for r in one.leaderboard] == ["hasty"]
    assert {k: v for k, v in one.leaderboard[0].items() if k != "Model"} == \
        {k: v for k, v in files.leaderboard[[r["Model"] for r in files.leaderboard].index("demo_hasty")].items()
         if k != "Model"}
    assert set(one.to_records()) == {"leaderboard", "per_task", "families", "intervals", "pairwise"}
    assert one.to_markdown().startswith("## Leaderboard\n\n| Model |")


def test_a_bad_record_in_memory_is_named_as_a_file_s_would_be(tmp_path: Path) -> None:
    """The same one-line InputError as the file's, naming `<in-memory: NAME>`, the task id and the field."""
    reference, models, ref_path, _ = small_demo(tmp_path)
    broken = [dict(task) for task in models["demo_strong"]]
    broken[2] = {k: v for k, v in broken[2].items() if k != "steps"}
    bad_file = tmp_path / "mine.json"
    bad_file.write_text(dumps_json(broken), encoding="utf-8")
    with pytest.raises(InputError) as from_file:
        score({"mine": bad_file}, reference)
    with pytest.raises(InputError) as from_memory:
        score({"mine": broken}, reference)
    message = str(from_memory.value)
    assert message.startswith(f"<in-memory: mine>: id {broken[2]['id']}: field 'steps': task has no 'steps'")
    assert "\n" not in message
    assert message == str(from_file.value).replace(str(bad_file), "<in-memory: mine>")
    bad_reference = [*reference[:1], {"id": "x", "steps": [{"calls": [{"name": ""}]}]}]
    with pytest.raises(InputError, match=r"^<in-memory: references>: id x: field 'steps\[0\]\.calls\[0\]\.name'"):
        score({"mine": models["demo_strong"]}, bad_reference)


@pytest.mark.parametrize(("call", "error", "says"), [
    (lambda refs, preds: score(preds), ConfigError, "no references given"),
    (lambda refs, preds: score(), ConfigError, r"no predictions given: .*score\(demo=True\)"),
    (lambda refs, preds: score(preds, refs, demo=True), ConfigError, "demo=True scores the built-in demo"),
    (lambda refs, preds: score(42, refs), TypeError, "predictions: expected a file path, .* got int"),
    (lambda refs, preds: score([], refs), TypeError, "got an empty list"),
    (lambda refs, preds: score(preds, 3.5), TypeError, "references: expected .* got float"),
    (lambda refs, preds: score({"a": 1}, refs), TypeError, r"predictions\['a'\]: expected a file path"),
    (lambda refs, preds: score(preds, refs, names=["a", "b"]), ConfigError, r"2 name\(s\) for 1 model"),
    (lambda refs, preds: score({"a": preds, "b": preds}, refs, names=["x", "x"]), ConfigError, "x named twice"),
    (lambda refs, preds: score({"a/b": preds}, refs), InputError, "predictions"),
    (lambda refs, preds: score(preds, refs, stats="yes"), ConfigError, "stats='yes'"),
    (lambda refs, preds: score(preds, refs, resamples=1), InputError, "resamples"),
    (lambda refs, preds: score(preds, refs, tau_weak=2.0), ConfigError, "align.tau_weak=2.0"),
    (lambda refs, preds: score(preds, refs, profile="nope"), ConfigError, "unknown metrics profile 'nope'"),
    (lambda refs, preds: score(preds, refs, judges={"zz": {}}), ConfigError, "judges: no model named 'zz'"),
    (lambda refs, preds: score(preds, refs, judges={"predictions": {"verdicts": "v.json"}}), ConfigError,
     "unknown evaluator option"),
])
def test_a_mistake_is_one_clear_error_before_any_work(tmp_path: Path, call, error: type[Exception], says: str) -> None:
    reference, models, _, _ = small_demo(tmp_path)
    with pytest.raises(error, match=says) as raised:
        call(reference, models["demo_strong"])
    assert "\n" not in str(raised.value)


def test_nothing_is_written_unless_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without write_to and cache_dir nothing lands on disk (the working directory, HOME, the temporary folder
    stay empty); with write_to an existing folder of something else is refused before any work."""
    reference, models, _, _ = small_demo(tmp_path / "data")
    for folder in ("work", "home", "tmp"):
        (tmp_path / folder).mkdir()
    monkeypatch.chdir(tmp_path / "work")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    scores = score({"strong": models["demo_strong"][:4]}, reference, encoder_backend="torch")
    assert scores.written is None and scores.leaderboard[0]["Model"] == "strong"
    assert [list((tmp_path / f).iterdir()) for f in ("work", "home", "tmp")] == [[], [], []]
    (tmp_path / "work" / "mine.txt").write_text("mine")
    with pytest.raises(ConfigError, match="output_dir"):
        score({"strong": models["demo_strong"]}, reference, write_to=tmp_path / "work" / "..")


def test_to_pandas_says_what_it_needs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      embedding_cache: Path) -> None:
    """to_pandas without pandas: an ImportError naming it and the way out; with pandas, a DataFrame per table in
    the tables' column order."""
    reference, models, _, _ = small_demo(tmp_path)
    scores = score({"a": models["demo_strong"], "b": models["demo_chaotic"]}, reference, cache_dir=embedding_cache,
                   encoder_backend="torch", resamples=200)
    with monkeypatch.context() as patched:
        patched.setitem(sys.modules, "pandas", None)
        with pytest.raises(ImportError, match=r"needs pandas, which m3bench does not install: pip install pandas"):
            scores.to_pandas()
    pytest.importorskip("pandas")
    frames = scores.to_pandas()
    assert list(frames["leaderboard"].columns) == scores.tables["leaderboard"].columns
    assert frames["leaderboard"]["Model"].tolist() == [r["Model"] for r in scores.leaderboard]
    assert len(frames["per_task"]) == len(scores.per_task) == 24
    assert list(frames["pairwise"].columns)[:2] == ["A", "B"]


@pytest.mark.parametrize("env", [{"M3BENCH_CACHE": "/c/vectors", "M3BENCH_HOME": "/h"}, {"M3BENCH_HOME": "/h"},
                                 {"HOME": "/home/u"}, {"M3BENCH_CACHE": ""}])
def test_default_cache_dir_is_the_score_app_s(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """default_cache_dir() is the encoder.cache_dir the score app's config resolves to in the same environment."""
    for key in ("M3BENCH_CACHE", "M3BENCH_HOME"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with initialize_config_dir(version_base="1.3", config_dir=str(ROOT / "conf" / "score")):
        cfg = compose(config_name="config")
    app = cfg.encoder.cache_dir
    assert default_cache_dir() == (None if app in (None, "") else Path(app))

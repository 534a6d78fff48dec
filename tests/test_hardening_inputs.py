"""Hostile inputs: each is refused with one line on stderr (file, id, field) and exit status 2, or
scored as its policy says (engine.contract.jsonio): predictions (model output) as the published scorer
scores them, with a warning, the reference strictly; warnings reach stderr; outputs are strict JSON."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from preloaded import run_python

from engine.apps.kit import run_config
from engine.apps.score import SPEC, run
from engine.contract import MAX_DEPTH, read_trajectories, strict_value

ROOT = Path(__file__).resolve().parents[1]
GT = [{"id": f"0004000{i}", "type": "trip", "steps": [
    {"step": 1, "calls": [{"name": "maps/search", "arguments": {"query": f"museum near station {i}"}}]},
    {"step": 2, "calls": [{"name": "weather/now", "arguments": {"city": "Lyon", "days": 3}}]}]} for i in range(2)]


def call_task(arguments_json: str, task_id: str = '"00040000"', name: str = '"maps/search"',
              family: str = '"trip"') -> str:
    """The text of a one-task prediction file whose single call has these (raw JSON) arguments."""
    return (f'[{{"id": {task_id}, "type": {family}, "steps": [{{"step": 1, "calls": '
            f'[{{"name": {name}, "arguments": {arguments_json}}}]}}]}}]')


def nested(depth: int) -> str:
    return '{"a": ' * depth + "1" + "}" * depth


ARGS = "steps[0].calls[0].arguments"
# name -> (file bytes, substrings the error line must hold after the file name)
REFUSED: dict[str, tuple[bytes, tuple[str, ...]]] = {
    "deep file": (call_task("[" * 5000 + "]" * 5000).encode(), ("nested too deeply",)),
    "lone surrogate value": (call_task('{"query": "caf\\ud800"}').encode(),
                             ("id 00040000", f"field '{ARGS}.query'", "lone surrogate \\ud800")),
    "lone surrogate key": (call_task('{"q\\udc00": 1}').encode(), ("id 00040000", "key: a lone surrogate")),
    "lone surrogate name": (call_task("{}", name='"maps/\\ud800"').encode(),
                            ("id 00040000", "field 'steps[0].calls[0].name'", "lone surrogate")),
    "lone surrogate id": (call_task("{}", task_id='"x\\ud800"').encode(), ('id "x\\ud800"', "field 'id'")),
    "lone surrogate type": (call_task("{}", family='"\\udfff"').encode(), ("field 'type'", "lone surrogate")),
    "NaN and a lone surrogate": (call_task('{"limit": NaN, "q": "\\ud800"}').encode(),
                                 (f"field '{ARGS}.q'", "lone surrogate \\ud800")),
    "number ids, no overlap": (json.dumps([{"id": 40000, "steps": []}, {"id": 40001, "steps": []}]).encode(),
                               ("none of its 2 task id(s) is in the GT", "leading zeros", "JSON numbers")),
    "no task": (b"[]", ("nothing to score: the file holds no task",)),
    "every task lost": (json.dumps([{"id": f"0004000{i}", "steps": [], "error": {
        "kind": "model_api", "reason": "HTTP 503 after 3 attempts", "attempts": 3}} for i in range(2)]).encode(),
                        ("nothing to score: every one of its 2 task(s) was lost to the infrastructure",
                         "first: 00040000, model_api: HTTP 503 after 3 attempts", "a rerun of the rollout retries")),
    "root string": (b'"hello"', ("root must be a list",)),
    "empty file": (b"  \n", ("empty trajectory file",)),
    "not UTF-8": (call_task('{"q": "caf\xe9"}').encode("latin-1"), ("not UTF-8 text (byte 0xe9",)),
    "UTF-16": (call_task("{}").encode("utf-16"), ("not UTF-8 text",)),
    "huge integer": (call_task("1" * 5000).encode(), ("an integer longer than",)),
    "raw control character": (call_task('"a\tb"').encode(), ("not valid JSON", "Invalid control character")),
    "trailing data": (call_task("{}").encode() + b" ]", ("not valid JSON", "Extra data")),
    "id with a newline": (call_task("{}", task_id='"a\\nb"', name="3").encode(),
                          ('id "a\\nb"', "a call needs a non-empty string 'name'")),
    "predictions under results": (('{"results": ' + call_task("{}") + "}").encode(),
                                  ("id results: a task must be an object, got list; the file must be a list of task "
                                   "objects (or an object of id -> task), and the list under 'results' looks like "
                                   "one",)),
    "JSON Lines": ((call_task("{}")[1:-1] + "\n" + call_task("{}", task_id='"00040001"')[1:-1] + "\n").encode(),
                   ("one JSON object a line (JSON Lines): a trajectory file is one JSON document, a list of task "
                    "objects (or an object of id -> task)",)),
}


@pytest.fixture(scope="module")
def gt_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("gt") / "gt.json"
    path.write_text(json.dumps(GT))
    return path


def score_in_process(gt: Path, pred: Path, out: Path, cache: Path, capsys, *extra: str) -> tuple[int, str, str]:
    """The scoring app's run() on a composed config, with `extra` overrides: (exit code, stdout, stderr)."""
    overrides = ["data=m3bench", f"data.gt={gt}", f"inputs.file={pred}", f"output_dir={out}",
                 f"encoder.cache_dir={cache}", "device=cpu", "reports=false", "progress=false", *extra]
    with initialize_config_dir(version_base="1.3", config_dir=str(ROOT / "conf" / "score")):
        cfg = compose(config_name="config", overrides=overrides)
    capsys.readouterr()
    code = run_config(SPEC, run, cfg)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_one_line(code: int, err: str, path: Path, expected: tuple[str, ...]) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1, err
    assert lines[0].startswith(f"error: {path}: "), lines[0]
    for part in expected:
        assert part in lines[0], (part, lines[0])
    assert "Traceback" not in err


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refused_with_one_line(case: str, gt_file: Path, tmp_path: Path, embedding_cache: Path, capsys) -> None:
    content, expected = REFUSED[case]
    pred = tmp_path / "pred.json"
    pred.write_bytes(content)
    code, _, err = score_in_process(gt_file, pred, tmp_path / "out", embedding_cache, capsys)
    assert_one_line(code, err, pred, expected)
    assert not (tmp_path / "out").exists()


# Arguments strict JSON cannot hold that the published scorer (json.load, json.dumps) scores:
# name -> (raw JSON arguments, the field and the problem its warning names)
LENIENT: dict[str, tuple[str, tuple[str, ...]]] = {
    "NaN": ('{"limit": NaN}', (f"field '{ARGS}.limit'", "NaN is not a JSON number")),
    "Infinity": ('{"xs": [1, Infinity]}', (f"field '{ARGS}.xs[1]'", "Infinity is not a JSON number")),
    "-Infinity": ('{"a b": -Infinity}', (f'field \'{ARGS}["a b"]\'', "Infinity is not a JSON number")),
    "1e999": ('{"n": 1e999}', (f"field '{ARGS}.n'", "beyond the double range")),
    "deep arguments": (nested(500), (f"field '{ARGS}.a.a", f"nested more than {MAX_DEPTH} levels")),
}


def published_text(arguments_json: str) -> str:
    """A call's text as the published scorer makes it: Python's json.loads, then json.dumps."""
    return json.dumps(json.loads(arguments_json), sort_keys=True, ensure_ascii=False, separators=(",", ":"))


@pytest.mark.parametrize("case", sorted(LENIENT))
def test_model_output_is_scored_as_the_published_scorer_scores_it(case: str, gt_file: Path, tmp_path: Path,
                                                                   embedding_cache: Path, capsys, caplog) -> None:
    arguments, expected = LENIENT[case]
    pred = tmp_path / "pred.json"
    pred.write_text(call_task(arguments))
    call = read_trajectories(pred, lenient=True).tasks["00040000"].calls[0]
    assert call.text == published_text(arguments)
    assert ("NaN" in call.text or "Infinity" in call.text) == (case != "deep arguments")
    caplog.clear()
    code, _, err = score_in_process(gt_file, pred, tmp_path / "out", embedding_cache, capsys)
    assert code == 0, err
    warnings = [r.getMessage() for r in caplog.records if "scored as the published scorer" in r.getMessage()]
    assert len(warnings) == 1 and warnings[0].startswith(f"{pred}: id 00040000: field '"), warnings
    warning = warnings[0]
    assert all(part in warning for part in expected), warning
    result = json.loads((tmp_path / "out" / "results_eval.json").read_text())
    assert result["aggregate"]["num_ids"] == 1
    echoed = [r["pred"]["arguments"] for r in call_records(tmp_path / "out")]
    assert echoed == [strict_value(json.loads(arguments))]  # outputs stay strict JSON


def test_nan_and_infinity_are_echoed_as_strings(tmp_path: Path) -> None:
    assert strict_value(json.loads('{"a": [NaN, Infinity, -Infinity, 1e999, 1.5, "NaN"]}')) == \
        {"a": ["NaN", "Infinity", "-Infinity", "Infinity", 1.5, "NaN"]}


def test_the_reference_keeps_the_strict_policy(tmp_path: Path, embedding_cache: Path, capsys) -> None:
    pred = tmp_path / "pred.json"
    pred.write_text(json.dumps(GT))
    for arguments, expected in LENIENT.values():
        gt = tmp_path / "gt.json"
        gt.write_text(call_task(arguments))
        code, _, err = score_in_process(gt, pred, tmp_path / "out", embedding_cache, capsys)
        assert_one_line(code, err, gt, ("id 00040000", *expected))


def test_warnings_are_counted_past_the_first_ten(gt_file: Path, tmp_path: Path, caplog) -> None:
    pred = tmp_path / "pred.json"
    calls = ", ".join(f'{{"name": "maps/search", "arguments": {{"n": NaN, "i": {i}}}}}' for i in range(13))
    pred.write_text(f'[{{"id": "00040000", "steps": [{{"step": 1, "calls": [{calls}]}}]}}]')
    read_trajectories(pred, lenient=True)
    lines = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(lines) == 11 and lines[9].endswith(f"field '{ARGS[:-len('calls[0].arguments')]}calls[9].arguments.n': "
                                                  "NaN is not a JSON number (strict JSON has no NaN or Infinity); "
                                                  "scored as the published scorer reads and serializes it")
    assert lines[10] == f"{pred}: 3 more call(s) with arguments beyond strict JSON, scored likewise"


def test_string_arguments_are_scored_as_given_with_one_warning_or_parsed(gt_file: Path, tmp_path: Path,
                                                                         embedding_cache: Path, capsys, caplog) -> None:
    """OpenAI-style arguments (a JSON string): scored as strings, as published, with one warning naming the
    count and the setting; parse_string_arguments=true scores them as the objects they hold."""
    as_strings = json.loads(json.dumps(GT))
    for task in as_strings:
        for step in task["steps"]:
            step["calls"][0]["arguments"] = json.dumps(step["calls"][0]["arguments"])
    objects = scored(gt_file, json.dumps(GT).encode(), tmp_path, "objects", embedding_cache, capsys)
    caplog.clear()
    strings = scored(gt_file, json.dumps(as_strings).encode(), tmp_path, "strings", embedding_cache, capsys)
    said = [r.getMessage() for r in caplog.records if "JSON string" in r.getMessage()]
    assert said == [f"{tmp_path / 'strings.json'}: 4 call(s) give their arguments as a JSON string (OpenAI-style); "
                    "they are scored as strings, as the published scorer scores what it is given: set "
                    "parse_string_arguments=true to score them as objects"]
    assert strings["aggregate"]["avg_sim_all_cov"] < objects["aggregate"]["avg_sim_all_cov"] == pytest.approx(1.0)
    pred = tmp_path / "parsed.json"
    pred.write_text(json.dumps(as_strings))
    caplog.clear()
    code, _, err = score_in_process(gt_file, pred, tmp_path / "parsed", embedding_cache, capsys,
                                    "parse_string_arguments=true")
    assert code == 0, err
    assert not [r for r in caplog.records if "JSON string" in r.getMessage()]
    parsed = json.loads((tmp_path / "parsed" / "results_eval.json").read_text(encoding="utf-8"))
    assert parsed["aggregate"] == objects["aggregate"]


def test_unreadable_paths_are_one_line(gt_file: Path, tmp_path: Path, embedding_cache: Path, capsys) -> None:
    for pred, expected in ((tmp_path, ("cannot read trajectory file",)),
                           (tmp_path / "missing.json", ("trajectory file not found",))):
        code, _, err = score_in_process(gt_file, pred, tmp_path / "out", embedding_cache, capsys)
        assert_one_line(code, err, pred, expected)


def test_nesting_at_the_limit_is_scored(gt_file: Path, tmp_path: Path, embedding_cache: Path, capsys) -> None:
    pred = tmp_path / "pred.json"
    pred.write_text(call_task(nested(MAX_DEPTH)))
    code, _, err = score_in_process(gt_file, pred, tmp_path / "out", embedding_cache, capsys)
    assert code == 0, err
    unmatched = json.loads((tmp_path / "out" / "unmatched_predictions.json").read_text())
    depth, value = 0, unmatched[0]["pred"]["arguments"]
    while isinstance(value, dict):
        depth, value = depth + 1, value["a"]
    assert depth == MAX_DEPTH


def scored(gt: Path, text: bytes, tmp_path: Path, name: str, cache: Path, capsys) -> dict:
    pred = tmp_path / f"{name}.json"
    pred.write_bytes(text)
    code, _, err = score_in_process(gt, pred, tmp_path / name, cache, capsys)
    assert code == 0, err
    return json.loads((tmp_path / name / "results_eval.json").read_text(encoding="utf-8"))


def same_scores(a: dict, b: dict) -> bool:
    return a["aggregate"] == b["aggregate"] and a["per_id"] == b["per_id"]


def call_records(folder: Path) -> list[dict]:
    """Every call record of the match and unmatched files, strictly parsed."""
    names = ("strong_matches.json", "weak_matches.json", "unmatched_predictions.json")
    return [record for name in names for record in strict_load(folder / name)]


def test_bom_and_repeated_keys_score_like_their_plain_form(gt_file: Path, tmp_path: Path, embedding_cache: Path,
                                                           capsys) -> None:
    plain = json.dumps(GT).encode()
    reference = scored(gt_file, plain, tmp_path, "plain", embedding_cache, capsys)
    assert reference["aggregate"]["recall"] == 1.0
    with_bom = scored(gt_file, b"\xef\xbb\xbf" + plain, tmp_path, "bom", embedding_cache, capsys)
    # a repeated key keeps its last value, as the published scorer's reader does
    repeated = plain.replace(b'"arguments": {"city"', b'"arguments": {"city": "Paris", "city"')
    assert repeated != plain
    with_repeats = scored(gt_file, repeated, tmp_path, "repeated", embedding_cache, capsys)
    assert same_scores(reference, with_bom) and same_scores(reference, with_repeats)


def test_huge_values_and_surrogate_pairs_are_scored(gt_file: Path, tmp_path: Path, embedding_cache: Path,
                                                    capsys) -> None:
    big = 10 ** 400
    tasks = json.loads(json.dumps(GT))
    tasks[0]["steps"][0]["calls"][0]["arguments"]["query"] = "museum " * 150_000  # about 1 MB
    tasks[1]["steps"][1]["calls"][0]["arguments"].update(days=big, tiny=5e-324, emoji="\U0001F600")
    text = json.dumps(tasks).encode()
    assert b"\\ud83d\\ude00" in text  # the emoji as a valid surrogate pair escape
    result = scored(gt_file, text, tmp_path, "huge", embedding_cache, capsys)
    assert result["aggregate"]["num_ids"] == 2
    echoed = [r["pred"]["arguments"] for r in call_records(tmp_path / "huge")
              if r["id"] == "00040001" and r["pred"]["step_index"] == 1]
    assert echoed == [{"city": "Lyon", "days": big, "tiny": 5e-324, "emoji": "\U0001F600"}]


def strict_load(path: Path) -> object:
    def refuse(token: str) -> None:
        raise ValueError(f"{path}: non-strict token {token}")

    return json.loads(path.read_text(encoding="utf-8"), parse_constant=refuse)


def test_outputs_are_strict_json(gt_file: Path, tmp_path: Path, embedding_cache: Path, capsys) -> None:
    tasks = json.loads(json.dumps(GT))
    tasks[0]["steps"][1]["calls"].append({"name": "weather/now", "arguments": {"edge": [1e308, -0.0, 2.5e-308]}})
    scored(gt_file, json.dumps(tasks).encode(), tmp_path, "edges", embedding_cache, capsys)
    strict_load(tmp_path / "edges" / "results_eval.json")
    unmatched = [r for r in call_records(tmp_path / "edges") if "gt" not in r]
    assert [r["pred"]["arguments"] for r in unmatched] == [{"edge": [1e308, -0.0, 2.5e-308]}]


def cli(*overrides: str, cwd: Path) -> subprocess.CompletedProcess:
    return run_python([str(ROOT / "scripts" / "score.py"), "device=cpu", "reports=false",
                           "progress=false", *overrides], cwd=cwd, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
@pytest.mark.parametrize("case", ["deep file", "lone surrogate value", "NaN and a lone surrogate",
                                  "number ids, no overlap"])
def test_cli_refuses_with_one_line(case: str, gt_file: Path, tmp_path: Path, embedding_cache: Path) -> None:
    content, expected = REFUSED[case]
    pred = tmp_path / "pred.json"
    pred.write_bytes(content)
    proc = cli(f"data.gt={gt_file}", f"inputs.file={pred}", f"output_dir={tmp_path / 'out'}",
               f"encoder.cache_dir={embedding_cache}", cwd=tmp_path)
    assert_one_line(proc.returncode, proc.stderr, pred, expected)


@pytest.mark.slow
def test_cli_scores_model_output_with_a_warning(gt_file: Path, tmp_path: Path, embedding_cache: Path) -> None:
    pred = tmp_path / "pred.json"
    pred.write_text(call_task(LENIENT["NaN"][0]))
    proc = cli(f"data.gt={gt_file}", f"inputs.file={pred}", f"output_dir={tmp_path / 'out'}",
               f"encoder.cache_dir={embedding_cache}", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"WARNING: {pred}: id 00040000: field '{ARGS}.limit': NaN is not a JSON number" in proc.stderr


@pytest.mark.slow
def test_cli_warnings_go_to_stderr(gt_file: Path, tmp_path: Path, embedding_cache: Path) -> None:
    tasks = [GT[0], {"id": "extra", "steps": []}, GT[0]]
    pred = tmp_path / "pred.json"
    pred.write_text(json.dumps(tasks))
    proc = cli(f"data.gt={gt_file}", f"inputs.file={pred}", f"output_dir={tmp_path / 'out'}",
               f"encoder.cache_dir={embedding_cache}", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    warnings = proc.stderr.splitlines()
    assert f"WARNING: {pred}: 1 repeated id(s), keeping the last object of each: 00040000" in warnings
    assert any("1 of 2 id(s) scored; 1 GT id(s) have no prediction (00040001); 1 predicted id(s) are not in "
               "the GT (extra)" in line for line in warnings)
    assert "WARNING" not in proc.stdout and "repeated id(s)" in (tmp_path / "out" / "score.log").read_text()

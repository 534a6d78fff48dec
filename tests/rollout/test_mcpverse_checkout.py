"""A checkout of the MCPVerse repository drops in: its CSV tasks with levels (one without), a check script
run in its own process on the task's workspace, an answer template evaluated at scoring time, judged by
the judge app's answer_equivalence with the published reading, over a real judge provider on loopback."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from rollout_helpers import ROOT, compose_judge, write_json

from engine.contract import InputError
from engine.neighbour_tasks import read_mcpverse, task_dir_tasks
from rollout.judges.cli import judges_of
from rollout.judges.run import run as run_judge

HEADER = "question_id,question,MCP,tool,complexity,answer,eval_method,time-sensitive,get_answer_id\n"


def checkout(root: Path) -> Path:
    """A small checkout in MCPVerse's published shapes."""
    folder = root / "mcpverse"
    (folder / "data").mkdir(parents=True)
    (folder / "eval_scripts").mkdir()
    (folder / "templates").mkdir()
    (folder / "data" / "set_v1.csv").write_text(
        HEADER
        + "Q1,Which city is at (104.07 30.66)?,amap-maps,maps_regeocode,L1,Chengdu,llm_as_a_judge,No,\n"
        + "Q2,What is 2+2?,calculator,add,L2,4,llm_as_a_judge,No,\n"
        + "Q3,Write hi to `./outputs/{OUTPUT_SUB_FOLDER}/task_outputs/a.txt`,filesystem,write_file,L1,"
          "./outputs/{OUTPUT_SUB_FOLDER}/task_outputs/a.txt,eval_script,No,\n"
        + "Q4,Capital of France?,wikipedia,search,,Paris,llm_as_a_judge,No,\n"
        + "Q5,Which train is fastest tomorrow?,12306-mcp+time,get-tickets;get-current-date,L3,stale,"
          "llm_as_a_judge,Yes,tq1\n", encoding="utf-8")
    (folder / "eval_scripts" / "__init__.py").write_text("")
    (folder / "eval_scripts" / "Q3.py").write_text(
        "import os\n\ndef run_test(pred, file_path) -> bool:\n"
        "    return os.path.isfile(file_path) and open(file_path).read().strip() == 'hi'\n")
    (folder / "templates" / "utils.py").write_text("def answer():\n    return 'G1234'\n")
    (folder / "templates" / "tq1.py").write_text("from .utils import answer\n\ndef get_reference():\n"
                                                 "    return answer()\n")
    return root


def test_the_checkout_reads_as_tasks(tmp_path: Path) -> None:
    records = read_mcpverse(checkout(tmp_path))
    assert list(records) == ["Q1", "Q2", "Q3", "Q4", "Q5"]
    assert records["Q3"]["eval_script"] == "mcpverse/eval_scripts/Q3.py" and "./a.txt" in records["Q3"]["question"]
    assert records["Q4"]["level"] is None and records["Q5"]["answer_template"] == "mcpverse/templates/tq1.py"
    assert records["Q5"]["required_mcps"] == ["12306-mcp", "time"] and records["Q5"]["time_sensitive"]
    assert [t.id for t in task_dir_tasks(tmp_path / "mcpverse", ["Q2"])] == ["Q2"]
    bad = tmp_path / "bad"
    (bad / "data").mkdir(parents=True)
    (bad / "data" / "x.csv").write_text(HEADER + "Q9,Q?,m,t,L1,a,regex,No,\n")
    with pytest.raises(InputError, match="id Q9: field 'eval_method'"):
        read_mcpverse(bad)
    (bad / "data" / "x.csv").write_text("question_id,question\nQ9,Q?\n")
    with pytest.raises(InputError, match="field 'complexity'"):
        read_mcpverse(bad)


def _judged(tmp_path: Path, chat_server) -> tuple[Path, Path, object]:
    """The checkout, its predictions and the loopback judge server, after the judge app judged them."""
    root = checkout(tmp_path / "repo")
    preds = tmp_path / "m_test_mcp_fuzzy.json"
    preds.write_text(json.dumps([{"id": i, "steps": [], "final_reply": r} for i, r in
                                 (("Q1", "Chengdu."), ("Q2", "five"), ("Q3", "written"), ("Q4", "Paris"),
                                  ("Q5", "G1234, 3h"))]))
    (tmp_path / "ws" / "Q3").mkdir(parents=True)
    (tmp_path / "ws" / "Q3" / "a.txt").write_text("hi\n")

    def policy(request: dict) -> str:
        text = json.dumps(request)
        # the first fenced block counts; Q2's judge hedges with a half score
        if "five" in text:
            return 'Close.\n```json\n{"score": 0.5}\n```\nor rather ```json\n{"score": 0}\n```'
        agree = "stale" not in text
        return f"Same meaning.\n```json\n{{\"score\": {'true' if agree else 'false'}}}\n```"

    server = chat_server(policy)
    assert run_judge(_config(tmp_path, root, preds, server)) == 0
    return root, preds, server


def _config(tmp_path: Path, root: Path, preds: Path, server) -> dict:
    """The judge app's config judging the checkout `root`'s predictions `preds` with the loopback judge."""
    cfg = compose_judge(f"predictions={preds}", "data=mcpverse", f"data.tasks={root}", "stage=answer_equivalence",
                        "evaluators=[answer_equivalence]", f"cache_dir={tmp_path / 'cache'}",
                        f"run_dir={tmp_path / 'run'}", f"workspace_dir={tmp_path / 'ws'}",
                        f"tool_log_dir={tmp_path / 'logs'}")
    cfg.judges = judges_of({"max_requests": 2, "pool": {"j": {
        "provider": "openai", "api_name": "j", "base_url": server.base_url, "api_key_env": None, "params": {},
        "timeout": 10, "max_retries": 0, "backoff": {"initial": 0.01, "max": 0.05}}}})
    return cfg


def test_an_earlier_release_reads_as_its_runner_read_it(tmp_path: Path, caplog) -> None:
    """MCPVerse's earlier releases (282-283 rows): test_case rows checked by the module their answer names
    under test_cases/, rows of empty fields, get_answer_id "-" or naming no template (its answer kept)."""
    folder = tmp_path / "mcpverse"
    (folder / "data").mkdir(parents=True)
    (folder / "test_cases").mkdir()
    (folder / "test_cases" / "Q101.py").write_text("import os\n\ndef run_test(pred, answer) -> bool:\n"
                                                   "    return os.path.isdir('./hello')\n")
    (folder / "data" / "old.csv").write_text(
        "question_id,question,local file related,MCP,t1,t2,tool,complexity,answer,get_answer_id,eval_method,"
        "time-sensitive,\n"
        "Q1,Capital of France?,,wikipedia,,,search,L1,Paris,-,llm_as_a_judge,No,\n"
        "Q170,Make ./hello,Yes,filesystem,,,write_file,L2,Q101,-,test_case,No,\n"
        ",,,,,,,,,,,,\n"
        "Q7,Fastest train?,,12306-mcp,,,get-tickets,L3,G1,q7,llm_as_a_judge,Yes,\n", encoding="utf-8")
    with caplog.at_level("WARNING", logger="engine.neighbour_tasks"):
        records = read_mcpverse(tmp_path)
    assert list(records) == ["Q1", "Q170", "Q7"]
    assert records["Q170"]["eval_script"] == "mcpverse/test_cases/Q101.py" and records["Q170"]["ground_truth"] is None
    assert "answer_template" not in records["Q1"] and records["Q7"]["ground_truth"] == "G1"
    assert "1 row(s) of empty fields left out" in caplog.text and "Q7 (q7)" in caplog.text


def test_the_judge_app_scores_the_checkout_as_published(tmp_path: Path, chat_server) -> None:
    _, _, server = _judged(tmp_path, chat_server)
    out = json.loads((tmp_path / "m_test_mcp_fuzzy_answers.json").read_text())
    scores = {i: e["score"] for i, e in out["per_id"].items()}
    assert scores == {"Q1": 1, "Q2": 0.5, "Q3": 1, "Q4": 1, "Q5": 1}
    assert out["per_id"]["Q5"]["ground_truth"] == "G1234" and out["per_id"]["Q3"]["judges"] == {}
    # groups L1 (1, 1), L2 (0.5), L3 (1), no level (1): macro (1 + 0.5 + 1 + 1) / 4
    assert out["aggregate"]["answer_sr"] == pytest.approx(3.5 / 4)
    assert out["aggregate"]["levels"]["(no level)"] == 1 and out["meta"]["parser"] == "published"
    assert len(server.requests) == 4  # Q3's check script asks no judge


def test_the_score_app_gives_the_sr_table_from_the_answers_file_alone(tmp_path: Path, chat_server) -> None:
    """MCPVerse publishes no reference trajectories: the score app joins the judge app's answers file and
    prints MCPVerse's table without them, the alignment metrics absent (said once)."""
    root, preds, _ = _judged(tmp_path, chat_server)
    out = tmp_path / "score"
    proc = _app("score", "data=mcpverse", f"data.tasks={root}", f"model.predictions={preds}", f"output_dir={out}",
                "device=cpu", cwd=tmp_path)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.count("no reference trajectories") == 1
    result = json.loads((out / "results_eval.json").read_text())
    assert result["meta"]["gt"] is None and "recall" not in result["aggregate"]
    assert result["aggregate"]["answer_sr"] == pytest.approx(3.5 / 4) and result["aggregate"]["num_ids"] == 5
    table = json.loads((out / "mcpverse.json").read_text())["rows"][0]
    assert table["SR"] == pytest.approx(87.5) and table["L2"] == pytest.approx(50.0)
    board = json.loads((out / "leaderboard.json").read_text())["rows"][0]
    assert board["Recall"] is None and board["Average Score"] is None
    assert "answer_sr 0.8750" in proc.stdout


def _app(script: str, *overrides: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "scripts" / f"{script}.py"), *overrides], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_a_csv_that_is_not_text_or_leaves_a_quote_open_is_refused_in_one_line(tmp_path: Path) -> None:
    root = checkout(tmp_path / "repo")
    data = root / "mcpverse" / "data" / "set_v1.csv"
    good = data.read_bytes()
    data.write_bytes(good.replace(b"What is 2+2?", b"What is 2\xff2?"))
    done = _app("rollout", "model=scripted", f"tasks.root={root}", f"results_dir={tmp_path / 'out'}", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().splitlines() == [f"error: {data}: id Q2: line 3: not UTF-8 text (byte 0xff at offset "
                                                f"{good.index(b'2+2') + 1})"]
    # Q1's question opens a quote that is never closed: Q2 to Q5 would be read as its text
    data.write_bytes(good.replace(b"Which city", b'"Which city'))
    preds = write_json(tmp_path / "m_test_mcp_fuzzy.json", [{"id": "Q1", "steps": [], "final_reply": "x"}])
    done = _app("judge", "judges=scripted", "data=mcpverse", f"data.tasks={root}", f"predictions={preds}",
                "evaluators=[answer_equivalence]", f"cache_dir={tmp_path / 'cache'}", f"run_dir={tmp_path / 'run'}",
                cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith(f"error: {data}: id Q1: line 2: unexpected end of data")
    # the quote closed four rows later: one row spanning lines with too few fields
    data.write_bytes(good.replace(b"Which city", b'"Which city').replace(b"Capital of", b'Capital" of'))
    with pytest.raises(InputError, match=r"set_v1.csv: id Q1: line 2: ',' expected after"):
        read_mcpverse(root)
    data.write_bytes(good.replace(b"Which city", b'"Which city').replace(b"Capital of France?", b'Capital",x'))
    with pytest.raises(InputError, match=r"set_v1.csv: id Q1: lines 2-5: one row of 10 field\(s\) for the header's 9"):
        read_mcpverse(root)


def test_a_field_over_the_csv_modules_limit_is_read_whole(tmp_path: Path) -> None:
    root = checkout(tmp_path / "repo")
    data = root / "mcpverse" / "data" / "set_v1.csv"
    question = "What is 2+2? " + "Think it over. " * 10_000
    data.write_text(data.read_text().replace("What is 2+2?", question))
    assert read_mcpverse(root)["Q2"]["question"] == question and len(question) > 131_072


def test_a_bad_task_field_is_refused_before_any_judge_is_asked(tmp_path: Path) -> None:
    demo = json.loads((ROOT / "rollout" / "demo" / "mcpverse" / "tasks.json").read_text())
    demo[1]["level"] = 5
    tasks = write_json(tmp_path / "tasks.json", demo)
    preds = write_json(tmp_path / "m_test_mcp_fuzzy.json",
                       [{"id": t["id"], "steps": [], "final_reply": str(t["ground_truth"])} for t in demo])
    done = _app("judge", "judges=scripted", "data=mcpverse_demo", f"data.tasks={tasks}", f"predictions={preds}",
                "evaluators=[answer_equivalence]", f"cache_dir={tmp_path / 'cache'}", f"run_dir={tmp_path / 'run'}",
                f"workspace_dir={tmp_path / 'ws'}", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "client has been closed" not in done.stdout + done.stderr and "not judged" not in done.stdout + done.stderr
    assert done.stderr.strip().splitlines() == [
        f"error: {tasks}: id {demo[1]['id']}: field 'level': must be a level label or null, got 5"]
    assert not (tmp_path / "m_test_mcp_fuzzy_answers.json").exists()  # no judge asked, no file begun


def test_an_edited_helper_of_a_script_judges_again_its_task_as_a_fresh_run_would(tmp_path: Path, chat_server,
                                                                              capsys) -> None:
    """The modules a check script and an answer template import from their packages are in their tasks'
    input keys: edited, exactly those tasks are judged again, as a fresh run judges them (the code before
    judged none again)."""
    root, preds, server = _judged(tmp_path, chat_server)
    checkout_dir = root / "mcpverse"
    asked = len(server.requests)
    (checkout_dir / "eval_scripts" / "Q3.py").write_text(
        "from ._files import content\n\ndef run_test(pred, file_path) -> bool:\n"
        "    return content(file_path) == 'hi'\n")
    (checkout_dir / "eval_scripts" / "_files.py").write_text(
        "def content(path):\n    return open(path).read().strip()\n")
    capsys.readouterr()
    assert run_judge(_config(tmp_path, root, preds, server)) == 0
    assert "(1 now," in capsys.readouterr().out  # Q3's script changed; its helper is new
    (checkout_dir / "eval_scripts" / "_files.py").write_text("def content(path):\n    return 'changed'\n")
    (checkout_dir / "templates" / "utils.py").write_text("def answer():\n    return 'G9999'\n")
    assert run_judge(_config(tmp_path, root, preds, server)) == 0
    assert "(2 now," in capsys.readouterr().out and len(server.requests) == asked + 1  # Q5's judge asked again
    rerun = json.loads((tmp_path / "m_test_mcp_fuzzy_answers.json").read_text())
    assert rerun["per_id"]["Q3"]["score"] == 0 and rerun["per_id"]["Q5"]["ground_truth"] == "G9999"
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    shutil.copytree(root, fresh / "repo")
    shutil.copytree(tmp_path / "ws", fresh / "ws")
    fresh_preds = Path(shutil.copy(preds, fresh / preds.name))
    assert run_judge(_config(fresh, fresh / "repo", fresh_preds, server)) == 0
    again = json.loads((fresh / "m_test_mcp_fuzzy_answers.json").read_text())

    def unstamped(doc: dict) -> dict:
        return {i: {k: v for k, v in e.items() if k != "reference_fetched_at"} for i, e in doc["per_id"].items()}

    assert (unstamped(rerun), rerun["aggregate"]) == (unstamped(again), again["aggregate"])

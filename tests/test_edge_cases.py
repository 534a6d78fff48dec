"""Edge cases: empty sides, call-less tasks, odd arguments, unicode, very large tasks, one-sided ids."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from memory import score_memory
from test_oracle import oracle_scores

from engine.pipeline import ScoreSettings, score_sweep, write_sweep
from engine.serialize import call_text
from engine.thresholds import Thresholds


def task(tid: str, steps: list[list[tuple[str, object]]], family: str | None = None) -> dict:
    return {"id": tid, "type": family,
            "steps": [{"step": i + 1, "calls": [{"name": n, "arguments": a} for n, a in s]}
                      for i, s in enumerate(steps)]}


def test_empty_predictions_and_call_less_tasks() -> None:
    gt = [task("a", [[("s/x", {"k": 1})]]), task("b", []), task("c", [[]]), task("d", [])]
    pred = [task("a", []), task("b", []), task("c", [[("s/x", {"k": 1})]]), task("d", [[("s/x", {})]])]
    tables, _, scores = score_memory(gt, [pred])
    by_id = {tables.task_ids[tables.sample_task[s]]: s for s in range(tables.num_samples)}
    a, b, c = by_id["a"], by_id["b"], by_id["c"]
    assert scores.values["recall"][a] == 0 and scores.values["precision"][a] == 0
    assert scores.values["step_coherence_cov"][a] == 0
    # no GT calls and no predicted calls: recall, precision and structure 1, similarities 0
    for name in ("recall", "precision", "step_coherence_cov", "order_consistency_cov", "merge_purity_cov"):
        assert scores.values[name][b] == 1.0
    for name in ("avg_sim_all_cov", "avg_sim_strong_cov"):
        assert scores.values[name][b] == 0.0
    # no GT calls but predicted ones: nothing matched, nothing to cover
    assert scores.values["recall"][c] == 0 and scores.values["precision"][c] == 0
    assert scores.values["merge_purity_cov"][c] == 0


def test_non_dict_and_missing_arguments() -> None:
    gt = [{"id": "t", "steps": [{"calls": [{"name": " s/x "}, {"name": "s/y", "arguments": [1, "two", None]},
                                           {"name": "s/z", "arguments": "plain"}, {"name": "s/w", "arguments": 3.5}]}]}]
    tables, m, scores = score_memory(gt, [json.loads(json.dumps(gt))])
    assert tables.texts[0] == "null"  # missing arguments -> null
    assert tables.gt_tasks[0].calls[0].name == "s/x"  # names are stripped
    assert scores.values["recall"][0] == 1.0 and scores.matched[0] == 4


def test_canonical_text() -> None:
    assert call_text("s/x", {"b": 1, "a": {"é": "日本"}}) == '{"a":{"é":"日本"},"b":1}'
    assert call_text("s/x", {"b": 1}, "paper") == 's/x({"b":1})'


def test_thousand_call_task_matches_oracle() -> None:
    rng = np.random.default_rng(7)
    tools = ["s/a", "s/b", "t/c", "t/d", "u/e"]
    gt = [task("big", [[(tools[int(rng.integers(5))], {"q": int(rng.integers(40))}) for _ in range(10)]
                       for _ in range(100)])]
    pred = [task("big", [[(tools[int(rng.integers(5))], {"q": int(rng.integers(40))}) for _ in range(8)]
                         for _ in range(125)])]
    tables, m, scores = score_memory(gt, [pred], tau_weak=0.5)
    assert tables.task_calls[0] == 1000 and tables.sample_calls[0] == 1000
    expected = oracle_scores(gt[0], pred[0], 0.5, 0.8, "reference")
    assert scores.matched[0] == expected["matched"] > 100
    assert list(zip(tables.gt_index[m["gt"]].tolist(), tables.pred_index[m["pred"]].tolist())) == expected["matches"]
    for name in scores.names:
        assert scores.values[name][0] == pytest.approx(expected[name], abs=1e-6)


def test_ids_on_one_side_only(tmp_path: Path, embedding_cache: Path, caplog) -> None:
    gt = [task("1", [[("s/x", {"city": "Zürich"})]], "trip"), task("2", [[("s/x", {"city": "東京"})]], "trip"),
          task("3", [[("s/y", {"q": "😀 emoji"})]], "fun")]
    pred = [task("2", [[("s/x", {"city": "東京"})]]), task("3", [[("s/y", {"q": "😀 emoji!"})]]),
            task("9", [[("s/x", {})]])]
    (tmp_path / "gt.json").write_text(json.dumps(gt, ensure_ascii=False), encoding="utf-8")
    (tmp_path / "p.json").write_text(json.dumps({t["id"]: t for t in pred}, ensure_ascii=False), encoding="utf-8")
    result = score_sweep(tmp_path / "gt.json", [tmp_path / "p.json"], Thresholds(),
                         ScoreSettings(device="cpu", cache_dir=str(embedding_cache)))
    assert result.tables.task_ids == ["2", "3"]
    assert "1 GT id(s) have no prediction" in caplog.text and "1 predicted id(s) are not in the GT" in caplog.text
    write_sweep(result, [tmp_path / "out"])
    out = json.loads((tmp_path / "out" / "results_eval.json").read_text(encoding="utf-8"))
    assert out["aggregate"]["num_ids"] == 2 and out["aggregate"]["recall"] == 1.0
    assert set(out["by_type"]) == {"trip", "fun"}
    strong = json.loads((tmp_path / "out" / "strong_matches.json").read_text(encoding="utf-8"))
    assert strong[0]["gt"]["arguments"] == {"city": "東京"} and strong[0]["pred"]["step_index"] == 0
    csv_lines = (tmp_path / "out" / "results_eval.csv").read_text().splitlines()
    assert csv_lines[0].startswith("id,total_gt_calls,total_pred_calls,matched,recall") and len(csv_lines) == 3

"""Several references per task: reading them, and the batched pass against scoring each reference alone."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from memory import seeded_vector, trajectory_file
from preloaded import run_python

from engine.align import candidate_pairs, match
from engine.contract import ConfigError, InputError
from engine.metrics import task_scores
from engine.references import check_select, chosen_samples, read_references
from engine.serialize import flatten_sweep

ROOT = Path(__file__).resolve().parents[1]


def task(tid: str, steps: list[list[tuple[str, object]]]) -> dict:
    return {"id": tid, "steps": [{"step": i + 1, "calls": [{"name": n, "arguments": a} for n, a in s]}
                                 for i, s in enumerate(steps)]}


REF_A = [task("1", [[("s/x", {"q": "paris"})], [("s/y", {"n": 1})]]),
         task("2", [[("s/x", {"q": "lyon"}), ("s/x", {"q": "nice"})]]),
         task("3", [[("s/z", {"k": "v"})]])]
REF_B = [task("1", [[("s/y", {"n": 1})], [("s/x", {"q": "paris"})]]),
         task("2", [[("s/x", {"q": "lyon"})]]),
         task("3", [[("s/z", {"k": "v"})], [("s/w", {"k": "w"})]])]
PREDS = [[task("1", [[("s/y", {"n": 1})], [("s/x", {"q": "paris"})]]),
          task("2", [[("s/x", {"q": "lyon"})]]),
          task("3", [[("s/w", {"k": "w"})]])],
         [task("1", [[("s/x", {"q": "paris"})]]), task("2", [[("s/x", {"q": "nice"}), ("s/x", {"q": "lyon"})]])]]


def memory_scores(gt: list[dict], preds: list[list[dict]], alternatives=None):
    tables = flatten_sweep(trajectory_file(gt, "gt"), [trajectory_file(p, f"p{i}") for i, p in enumerate(preds)],
                           "reference", alternatives)
    emb = np.stack([seeded_vector(t) for t in tables.texts])
    matches = match(candidate_pairs(tables, emb, torch.device("cpu")), 0.6)
    return tables, task_scores(tables, matches, 0.8, "reference")


def per_id(tables, scores, samples) -> dict[str, dict[str, float]]:
    return {tables.task_ids[tables.sample_task[s]]: {k: float(v[s]) for k, v in scores.values.items()}
            for s in samples}


def test_best_reference_against_each_reference_alone() -> None:
    alone = [memory_scores(ref, PREDS) for ref in (REF_A, REF_B)]
    alternatives = {t["id"]: tuple(trajectory_file(ref, name).tasks[t["id"]] for ref, name in ((REF_A, "a"), (REF_B,
                                                                                                              "b")))
                    for t in REF_A}
    tables, scores = memory_scores(REF_A, PREDS, alternatives)
    select = check_select(None, "reference")
    assert select == ("recall", "avg_sim_all_cov")
    assert tables.num_samples == 2 * 5 and tables.several_references
    taken = []
    for f in range(len(PREDS)):
        chosen = chosen_samples(tables.task_ids, tables.sample_task, tables.sample_ref, scores.values,
                                tables.samples_of(f), select)
        got = per_id(tables, scores, chosen)
        refs = {tables.task_ids[tables.sample_task[s]]: int(tables.sample_ref[s]) for s in chosen}
        each = [per_id(t, s, t.samples_of(f)) for t, s in alone]
        for tid in got:
            # plain rule: the larger recall, then the larger argument similarity, then the first reference
            best = max(range(2), key=lambda r: (each[r][tid]["recall"], each[r][tid]["avg_sim_all_cov"], -r))
            assert refs[tid] == best
            assert got[tid] == each[best][tid]
        taken.append(refs)
    assert taken[0]["3"] == 1  # only the second reference has the predicted tool
    assert taken[1]["1"] == 0  # one call of two against either reference: a tie, the first reference


def test_one_reference_lays_out_as_before() -> None:
    tables, scores = memory_scores(REF_A, PREDS)
    assert not tables.several_references and tables.num_samples == 5
    samples = tables.samples_of(0)
    chosen = chosen_samples(tables.task_ids, tables.sample_task, tables.sample_ref, scores.values, samples,
                            ("recall",))
    assert np.array_equal(chosen, samples)


def test_reading_references(tmp_path: Path) -> None:
    single = tmp_path / "gt.json"
    single.write_text(json.dumps(REF_A))
    gt, alternatives = read_references(single)
    assert alternatives is None and sorted(gt.tasks) == ["1", "2", "3"]
    listed = tmp_path / "listed.json"
    listed.write_text(json.dumps({"1": [REF_A[0], REF_B[0]], "2": REF_A[1]}))
    gt, alternatives = read_references(listed)
    assert [len(alternatives[t]) for t in ("1", "2")] == [2, 1] and gt.tasks["1"].steps == alternatives["1"][0].steps
    second = tmp_path / "second.json"
    second.write_text(json.dumps(REF_B))
    gt, alternatives = read_references([listed, second])
    assert [len(alternatives[t]) for t in ("1", "2", "3")] == [3, 2, 1]
    assert alternatives["1"][2].steps == alternatives["1"][1].steps  # list order, then file order
    (tmp_path / "empty.json").write_text(json.dumps({"1": []}))
    with pytest.raises(InputError, match="empty.json: id 1: an empty list of references"):
        read_references(tmp_path / "empty.json")
    (tmp_path / "other.json").write_text(json.dumps({"1": [REF_A[0], REF_A[1]]}))
    with pytest.raises(InputError, match="other.json: id 1: field 'id': reference 1 of the list says id '2'"):
        read_references(tmp_path / "other.json")
    (tmp_path / "first.json").write_text(json.dumps({"1": [REF_A[1], REF_A[0]], "2": REF_A[1]}))  # once a KeyError
    with pytest.raises(InputError, match="first.json: id 1: field 'id': reference 0 of the list says id '2'"):
        read_references(tmp_path / "first.json")
    with pytest.raises(ConfigError, match="align.select: unknown metric"):
        check_select(["arg_sim"], "reference")


@pytest.mark.slow
def test_score_against_several_references(tmp_path: Path, embedding_cache: Path) -> None:
    """The command line with data.references: per_id says which reference each task took, and each
    task's numbers are those of scoring that reference alone."""
    paths = {name: tmp_path / f"{name}.json" for name in ("a", "b", "pred")}
    for name, content in (("a", REF_A), ("b", REF_B), ("pred", PREDS[0])):
        paths[name].write_text(json.dumps(content))

    def run(out: str, *overrides: str) -> dict:
        proc = run_python([str(ROOT / "scripts" / "score.py"), f"inputs.file={paths['pred']}",
                               f"output_dir={tmp_path / out}", f"encoder.cache_dir={embedding_cache}", "device=cpu",
                               "reports=false", *overrides], cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr
        return {e["id"]: e for e in json.loads((tmp_path / out / "results_eval.json").read_text())["per_id"]}

    both = run("both", f"data.references=[{paths['a']},{paths['b']}]")
    alone = [run("a", f"data.gt={paths['a']}"), run("b", f"data.gt={paths['b']}")]
    assert all("reference" not in e for e in alone[0].values())
    for tid, entry in both.items():
        r = entry.pop("reference")
        assert entry == alone[r][tid]
        other = alone[1 - r][tid]
        mine, theirs = (entry["recall"], entry["avg_sim_all_cov"]), (other["recall"], other["avg_sim_all_cov"])
        assert mine > theirs or (mine == theirs and r == 0)
    assert both["1"]["recall"] == 1.0

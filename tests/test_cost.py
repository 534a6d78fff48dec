"""Cost beside score (engine/cost.py, engine/stats/cost.py, engine/reports/cost.py): the vectorized per-task means
against a plain per-task loop, the frontier against brute force, the price's checks, the membership rule against
known truth, and the flows: a scripted rollout scored with and without a price, plain files with no usage."""

from __future__ import annotations

import collections
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from engine import cost as ct
from engine.contract import InputError
from engine.contract.settings import ListPrice
from engine.stats.cost import NO_USAGE

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from script_runs import call_app, run_script  # noqa: E402

PRICE = ListPrice(1.25, 10.0, "2025-10-15", "list price")


def _records(rng: np.random.Generator, n: int) -> list[dict]:
    out = []
    for i in range(n):
        record: dict = {"id": f"t{i}", "steps": []}
        if rng.random() < 0.8:
            p, c = int(rng.integers(0, 50_000)), int(rng.integers(0, 5_000))
            record["usage"] = {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c,
                               "requests": int(rng.integers(1, 12))}
        out.append(record)
    return out


@pytest.mark.parametrize("price", [PRICE, None])
def test_vectorized_means_equal_the_per_task_loop(price: ListPrice | None) -> None:
    """Random records (some without usage, a repeated id whose last copy counts, some tasks without a wall time,
    some ids not scored): the numpy path's per-task means equal the plain loop's, USD only with a price."""
    rng = np.random.default_rng(7)
    records = _records(rng, 300)
    records.append({**records[3], "usage": {"prompt_tokens": 9, "completion_tokens": 1, "requests": 1}})
    scored = [f"t{i}" for i in range(0, 300, 1) if i % 17]
    wall = {f"t{i}": float(rng.uniform(1, 90)) for i in range(300) if rng.random() < 0.7}
    usage = ct.read_usage(Path("p.json"), records, scored, wall)
    assert usage is not None
    fast = ct.per_task_means(usage, price)
    slow = ct.per_task_means_reference(records, scored, wall, price)
    assert fast.keys() == slow.keys() and ("usd" in fast) == (price is not None)
    for key in fast:
        assert fast[key] == pytest.approx(slow[key], rel=1e-12), key


def test_no_usage_and_bad_usage() -> None:
    """Records without usage give None (no table of zeros); a count that is not an integer >= 0 is one error naming
    the file, the task and the field."""
    assert ct.read_usage(Path("p.json"), [{"id": "a", "steps": []}], ["a"]) is None
    with pytest.raises(InputError, match=r"p\.json.*task 'a'.*usage\.prompt_tokens|p\.json.*usage\.prompt_tokens"):
        ct.read_usage(Path("p.json"), [{"id": "a", "usage": {"prompt_tokens": -3}}], ["a"])


def test_dominated_matches_brute_force() -> None:
    """The vectorized domination over models x resamples equals a loop over each resample and pair, ties included."""
    rng = np.random.default_rng(3)
    score = rng.integers(0, 4, (6, 200)).astype(float) / 4  # many ties
    spend = rng.integers(0, 4, (6, 200)).astype(float)
    fast = ct.dominated(score, spend)
    for b in range(200):
        for i in range(6):
            slow = any(score[j, b] >= score[i, b] and spend[j, b] <= spend[i, b]
                       and (score[j, b] > score[i, b] or spend[j, b] < spend[i, b]) for j in range(6))
            assert fast[i, b] == slow
    assert ct.frontier([0.9, 0.8, 0.7, 0.85], [10.0, 1.0, 2.0, 10.0]) == [True, True, False, False]


GOOD = {"input_usd_per_mtok": 1, "output_usd_per_mtok": 1, "as_of": "2025-01-01"}


@pytest.mark.parametrize(("value", "field"), [({**GOOD, "input_usd_per_mtok": -1}, "price.input_usd_per_mtok"),
                                               ({**GOOD, "as_of": "May"}, "price.as_of"),
                                               ({**GOOD, "currency": "EUR"}, "price")])
def test_a_bad_price_is_one_line_naming_the_field(value: dict, field: str) -> None:
    with pytest.raises(InputError, match=f"field '{field}'"):
        ct.read_price(value, "price", "gpt5.yaml")


@pytest.mark.parametrize(("given", "said"), [
    ("inputs.price.input_usd_per_mtok=-1", "inputs.price.input_usd_per_mtok=-1.0: must be a number >= 0"),
    ("inputs.price={input_usd_per_mtok: 1, output_usd_per_mtok: 1, as_of: May}", "inputs.price.as_of=May: must be"),
    ("inputs.price={input_usd_per_mtok: 1}", "inputs.price.output_usd_per_mtok=null: must be a number"),
    ("inputs.price={currency: EUR}", "has no setting inputs.price.currency"),
    ("inputs.price=[{a: 1}]", "wrong type for inputs.price")])
def test_a_bad_price_on_the_command_line_is_one_line_naming_the_setting(tmp_path: Path, given: str, said: str) -> None:
    """inputs.price given wrong (a rate < 0, no date, a rate left out, a key of its own, a list) is one line on
    stderr naming the setting, status 2, nothing written."""
    proc = call_app("score", "demo.n_tasks=3", f"demo.dir={tmp_path}/demo", f"output_dir={tmp_path}/out",
                    "index_dir=null", given, cwd=tmp_path)
    lines = proc.stderr.splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and said in lines[0], proc.stderr
    assert not any(tmp_path.iterdir())


def test_every_shipped_price_reads() -> None:
    """Every score model config's price reads (dated), and the published API models have one."""
    folder = ROOT / "conf" / "score" / "model"
    prices = {p.stem: ct.shipped_price(p.stem) for p in folder.glob("*.yaml")}
    assert all(prices[m] is not None for m in ("gpt5", "gpt5_mini", "claude45_sonnet", "gemini25_pro", "grok4"))


@pytest.mark.parametrize("families", [10, 30])
def test_a_truly_dominated_model_is_rarely_called_on(gt_path: Path, families: int) -> None:
    """On a population with the real reference's 30 family sizes, a model dominated by a hair (score 0.011 lower,
    cost 1.3% higher than the best: the least favourable truth) is called "on with confidence" in at most 5% of
    benchmarks of 10 and of 30 families (+ one MC error: 3.9% and 3.8% here; the whole tail for `on` gave 6.5% at
    10), and the truly-on models are never called off."""
    from engine.synthetic.cost import frontier_calls, make_cost_population

    last = {r["id"]: r.get("type") for r in json.loads(gt_path.read_text(encoding="utf-8"))}
    sizes = list(collections.Counter(last.values()).values())
    pop = make_cost_population(sizes, [0.80, 0.79, 0.55], [1.0, 1.02, 0.1], seed=0)
    assert pop.truly_on == [True, False, True]
    draws = 1000
    calls = frontier_calls(pop, families, draws=draws, resamples=400)
    assert calls[ct.ON][1] <= 0.05 + math.sqrt(0.05 * 0.95 / draws), calls
    assert calls[ct.OFF][0] == 0 and calls[ct.OFF][2] == 0 and calls[ct.ON][2] == 1.0, calls


@pytest.mark.slow
def test_a_scripted_rollout_scored_has_cost_columns_and_says_which_model_lacks_a_price(tmp_path: Path,
                                                                                      embedding_cache: Path) -> None:
    """The README's offline rollout (model=scripted, tasks=demo), scored: usage.json and cost.md hold tokens, requests
    and the tool logs' wall time per task, no USD and one line naming the model without a price; with inputs.price
    on the command line, USD per task too; the rollout demo's reference (no usage) scored says so once, no file."""
    results = tmp_path / "results"
    run_script("rollout", "model=scripted", "tasks=demo", f"results_dir={results}", cwd=tmp_path)
    logs = sorted((results / "rollout" / "scripted" / "tool_logs").glob("*.json"))
    assert logs and all(json.loads(p.read_text())["wall_s"] > 0 for p in logs)
    out = tmp_path / "scored"
    cache = f"encoder.cache_dir={embedding_cache}"
    run_script("score", "data=rollout_demo", "model=scripted", f"results_dir={results}", f"output_dir={out}",
               "index_dir=null", cache, cwd=tmp_path)
    cost = json.loads((out / "usage.json").read_text())
    metrics = cost["models"]["scripted"]["metrics"]
    assert {"tokens_in", "tokens_out", "requests", "wall_s"} <= set(metrics) and "usd" not in metrics
    assert all(metrics[k]["value"] > 0 for k in ("tokens_in", "tokens_out", "requests", "wall_s"))
    table = (out / "cost.md").read_text()
    assert "Tokens in/task" in table and "Wall s/task" in table and "USD/task" not in table
    assert "no price for scripted" in table
    said = [line for line in (out / "score.log").read_text().splitlines() if "no price for scripted" in line]
    assert len(said) == 1, said
    assert (out / "cost_frontier.png").is_file()

    priced = tmp_path / "priced"
    run_script("score", "data=rollout_demo", "model=scripted", f"results_dir={results}", f"output_dir={priced}",
               "index_dir=null", cache,
               "inputs.price={input_usd_per_mtok: 2.0, output_usd_per_mtok: 8.0, as_of: '2025-10-15'}", cwd=tmp_path)
    spent = json.loads((priced / "usage.json").read_text())["models"]["scripted"]["metrics"]
    assert spent["usd"]["value"] == pytest.approx((metrics["tokens_in"]["value"] * 2 + metrics["tokens_out"]["value"]
                                                   * 8) / 1e6)

    plain = tmp_path / "plain"
    run_script("score", "data=rollout_demo", f"model.predictions={ROOT / 'rollout' / 'demo' / 'reference.json'}",
               f"output_dir={plain}", "index_dir=null", cache, cwd=tmp_path)
    assert not (plain / "usage.json").exists() and not (plain / "cost.md").exists()
    assert (plain / "score.log").read_text().count(NO_USAGE) == 1


def test_judge_usage_sums_the_evaluator_files(tmp_path: Path) -> None:
    """The judges' usage of a model is the sum over its evaluator files' meta.usage; USD only when every judge that
    sent requests has a cost (the judge app's export: four scripted judges without prices)."""
    export = ROOT / "tests" / "rollout" / "judge_exports" / "taskcompletion.json"
    usage = ct.judge_usage({"m3_judges": export})
    assert usage is not None and usage["requests"] == 32 and usage["prompt_tokens"] == 4 * 3400
    assert usage["usd"] is None
    priced = tmp_path / "calls.json"
    block = {"model": "m", "requests": 2, "cached": 1, "prompt_tokens": 10, "completion_tokens": 5, "cost_usd": 0.25}
    priced.write_text(json.dumps({"meta": {"usage": {"a": block}}}))
    both = ct.judge_usage({"call_outcomes": priced})
    assert both is not None and both["usd"] == 0.25 and both["cached"] == 1
    assert ct.judge_usage({"m3_judges": tmp_path / "missing.json"}) is None

// M3-Bench run viewer: a repeated run, each model over its trials (the leaderboard block and its own page).
"use strict";

const trialsHref = (name) => "#/trials/" + encodeURIComponent(name);
const RATE_HEADS = ["pass@k", "pass^k", "avg@k"];
const STATE = { finished: "finished", agent_failure: "agent failure", infrastructure: "lost" };
const rateText = (cell) => cell[0] === null ? "\u2013" : fmt(cell[0], 4);
const hatAt = (s, k) => s.rates[k - 1].losses_as_failures[1][0];

function trialsBoard() {
  // One row per model run several times: its trials, Average Score mean ± std, pass^1, pass^N, its slots.
  const entries = Object.entries(SITE.trials || {});
  if (!entries.length) return null;
  return h("section", { id: "trials-board" }, h("h2", {}, "Over trials"),
    h("table", { class: "tasks", id: "trials-models" }, h("thead", {}, h("tr", {}, ["Model", "Trials", "Average Score (mean \u00b1 std)",
      "pass^1", "pass^N", "Finished", "Agent failure", "Lost"].map((x) => h("th", {}, x)))),
      h("tbody", {}, entries.map(([name, s]) => {
        const avg = s.aggregate.find((a) => a[0] === "average");
        return h("tr", {}, h("td", {}, h("a", { href: trialsHref(name), class: "model" }, name)), h("td", { class: "num" }, s.trials),
          h("td", { class: "num avg" }, avg ? fmt(avg[2], 4) + " \u00b1 " + fmt(avg[3], 4) : "\u2013"),
          h("td", { class: "num" }, fmt(hatAt(s, 1))), h("td", { class: "num" }, fmt(hatAt(s, s.trials))),
          [s.inventory.finished, s.inventory.agent_failure, s.inventory.infrastructure].map((v) => h("td", { class: "num" }, fmt(v, 0))));
      }))),
    h("p", { class: "note" }, "pass^k with infrastructure losses counted as failures. Each trial is also a row of the leaderboard below."));
}

function slotCell(s, i, id, slot) {
  // One (task, trial) slot: its state and success, linked to the trial's task view when the trial was scored.
  const [state, success, reason] = slot, key = s.slugs[i];
  const text = state === "finished" ? (success === true ? "\u2713 success" : success === false ? "\u2717 failure" : "finished")
    : state ? STATE[state] : "\u2013";
  const cls = "slot " + (state === "finished" ? (success ? "pass" : "fail") : state || "");
  return h("td", { class: cls, title: reason || null }, key && state !== "infrastructure" ? h("a", { href: taskHref(key, id) }, text) : text);
}

function viewTrials(app, name) {
  const s = own(SITE.trials, name);
  if (!s) throw new NotFound(`no model ${name} run over trials in this run`);
  crumbs(["Leaderboard", "#/"], [name + " over trials"]);
  const n = s.trials, inv = s.inventory;
  const trialLink = (i) => s.slugs[i] ? h("a", { href: modelHref(s.slugs[i]) }, `trial ${i + 1}`) : `trial ${i + 1}`;
  fill(app, h("h1", {}, `${name} over ${n} trials`),
    h("p", { class: "note" }, `${s.tasks} tasks; a trial succeeds when ${s.rule}. Trials: `, s.slugs.map((_, i) => [i ? ", " : "", trialLink(i)])),
    h("section", {}, h("h2", {}, "Aggregates (mean \u00b1 sample std over the trials)"),
      h("table", { class: "tasks", id: "trials-aggregate" }, h("thead", {}, h("tr", {}, ["Metric", "Mean \u00b1 std", "Trials"].map((x) => h("th", {}, x)))),
        h("tbody", {}, s.aggregate.map(([key, label, mean, std, count]) => h("tr", { "data-key": key }, h("td", {}, label),
          h("td", { class: "num" + (key === "average" ? " avg" : "") }, fmt(mean, 4) + " \u00b1 " + fmt(std, 4)), h("td", { class: "num" }, fmt(count, 0))))))),
    h("section", {}, h("h2", {}, "pass@k, pass^k and avg@k"),
      h("table", { class: "tasks", id: "trials-rates" }, h("thead", {},
        h("tr", {}, h("th", {}, ""), h("th", { colspan: 4 }, "losses counted as failures"), h("th", { colspan: 4 }, "losses excluded")),
        h("tr", {}, h("th", {}, "k"), [0, 1].map(() => [...RATE_HEADS, "tasks"].map((x) => h("th", {}, x))))),
        h("tbody", {}, s.rates.map((r) => h("tr", { "data-k": r.k }, h("td", { class: "num" }, r.k),
          ["losses_as_failures", "losses_excluded"].map((losses) => [r[losses].map((c) => h("td", { class: "num" }, rateText(c))),
            h("td", { class: "num" }, fmt(r[losses][0][1], 0))]))))),
      h("p", { class: "note" }, "Unbiased estimators over the tasks: pass@k, some of k trials succeed; pass^k, all k succeed; " +
        "avg@k, the success rate. With losses excluded a task counts its slots not lost, and one with fewer than k is left out at k.")),
    s.conventions ? h("section", { id: "trials-conventions" }, h("h2", {}, "By convention"),
      h("table", { class: "tasks" }, h("thead", {}, h("tr", {}, ["Convention", "Figures"].map((x) => h("th", {}, x)))),
        h("tbody", {}, s.conventions.rows.map(([name, figures]) => h("tr", { "data-convention": name }, h("td", {}, name), h("td", {}, figures))))),
      h("p", { class: "note" }, s.conventions.note)) : null,
    h("section", {}, h("h2", {}, "Inventory"),
      h("table", { class: "tasks", id: "trials-inventory" }, h("thead", {}, h("tr", {}, ["Trial", "Finished", "Agent failure", "Lost to infrastructure"].map((x) => h("th", {}, x)))),
        h("tbody", {}, inv.per_trial.map(([t, ...c]) => h("tr", {}, h("td", {}, trialLink(t - 1)), c.map((v) => h("td", { class: "num" }, fmt(v, 0))))),
          h("tr", { class: "total" }, h("th", {}, `all ${fmt(inv.slots, 0)} slots`),
            [inv.finished, inv.agent_failure, inv.infrastructure].map((v) => h("td", { class: "num" }, fmt(v, 0)))))),
      inv.missing.length ? h("p", { class: "note", id: "trials-lost" }, "Lost slots (a rerun of the rollout retries them): ",
        inv.missing.map(([id, t, reason], i) => [i ? "; " : "", `${id} in trial ${t}` + (reason ? ` (${reason})` : "")])) : null),
    h("section", {}, h("h2", {}, "Tasks by trial"),
      h("table", { class: "tasks", id: "trials-tasks" }, h("thead", {}, h("tr", {}, h("th", {}, "Task"), h("th", {}, "Successes"),
        s.slugs.map((_, i) => h("th", {}, trialLink(i))), h("th", {}, "Question"))),
        h("tbody", {}, s.slots.map(([id, row]) => h("tr", { "data-id": id }, h("td", {}, TASKS.has(id) ? h("a", { href: "#/t/" + encodeURIComponent(id) }, id) : id),
          h("td", { class: "num" }, `${row.filter((x) => x[1] === true).length} / ${n}`),
          row.map((slot, i) => slotCell(s, i, id, slot)), h("td", { class: "q" }, clip((TASKS.get(id) || {}).question, 70))))))));
}


// M3-Bench run viewer: the leaderboard, a model's tasks and the routing (the shared part is core.js).
// Data: M3V_SITE (inline in index.html; a repeated run's trials summary in M3V_SITE.trials); data/gt.js and data/m/<slug>.js, loaded on demand with
// <script> tags (they call M3V.put). Routes: #/  #/m/<model>?filters  #/m/<model>/t/<id>  #/t/<id>  #/trials/<model>
// (<model>: its name, or its slug);
// any other address, or one naming what the run does not hold, shows "not found".
// Every text of the run goes into the page as a text node or an attribute value (h), never as markup.
"use strict";
// ---- leaderboard -----------------------------------------------------------------------------
function viewBoard(app) {
  crumbs(["Leaderboard"]);
  const b = SITE.board;
  const heads = ["Model", ...b.columns, ...b.extra.map((c) => c.label), "Tasks"];
  const n = b.columns.length;
  const table = h("table", { class: "board", id: "leaderboard" },
    h("thead", {}, h("tr", {}, heads.map((label, i) => h("th", { "data-col": i === 0 ? "name" : i - 1, "data-text": i === 0 ? "1" : null,
      title: "sort by " + label }, label)))), h("tbody"));
  const rows = b.rows.map((r) => ({ r, key: (c) => c === "name" ? r.model.toLowerCase() : num([...r.cells, ...r.extra, r.tasks][c]) }));
  // with the run's stats.json: each value's interval under it (every column with one), the rank interval and the
  // group tied with the top
  const ci = (r, i) => r.intervals && r.intervals[i] && r.intervals[i][0] !== null
    ? h("span", { class: "ci" }, " [" + fmt(r.intervals[i][0]) + ", " + fmt(r.intervals[i][1]) + "]") : null;
  const rank = (r) => r.rank && r.rank[1] !== null
    ? h("span", { class: "rank", title: "rank and its interval by " + b.average }, " #" + r.rank[0] + " (" + r.rank[1] + "\u2013" + r.rank[2] + ")") : null;
  sortable(table, rows, ({ r }) => h("tr", { class: r.tied ? "tied" : null }, h("td", {}, h("a", { href: modelHref(r.slug), class: "model" }, r.model),
    r.rank || r.tied ? h("div", { class: "standing" }, rank(r), r.tied ? h("span", { class: "badge tied",
      title: "its rank interval reaches 1: no model is separably better (Holm over every pair)" }, "tied with top") : null) : null),
    [...r.cells, ...r.extra].map((v, i) => h("td", { class: i === n - 1 ? "num avg" : "num", title: r.reasons ? r.reasons[i] : null },
      fmtCell(v), ci(r, i))),
    h("td", { class: "num" }, fmt(r.tasks, 0))), [b.columns.indexOf(b.average), -1]);
  const differ = SITE.index.tasks.slice().sort((x, y) => spread(y) - spread(x) || (x.id < y.id ? -1 : 1)).slice(0, 15);
  fill(app,
    h("h1", {}, "Leaderboard"), trialsBoard(), table, h("p", { class: "note" }, b.note, " Click a column to sort, a model to see its tasks."),
    b.stats ? h("p", { class: "note", id: "intervals-note" }, "[low, high]: " + b.stats) : null,
    b.columns.includes("Order Consistency") ? h("p", { class: "note", id: "one-step" }, "Order Consistency (reference profile): a task whose " +
      "reference has its calls in one step scores 0 under the published rule (no pair of steps to compare, hence no " +
      "coverage), so a perfect replay of a set with such tasks averages below 1; its task pages mark them n/a (single step).") : null,
    SITE.index.names.length > 1 ? h("section", {}, h("h2", {}, "Tasks where models differ most"),
      h("p", { class: "note" }, "Spread (best \u2212 worst) of the per-task mean of the alignment metrics in the Average Score."),
      h("table", { class: "tasks", id: "differ" }, h("thead", {}, h("tr", {}, ["Task", "Family", "Spread", "Question"].map((x) => h("th", {}, x)))),
        h("tbody", {}, differ.map((t) => h("tr", {}, h("td", {}, h("a", { href: "#/t/" + encodeURIComponent(t.id) }, t.id)),
          h("td", {}, t.family), h("td", { class: "num" }, fmt(spread(t), 3)), h("td", { class: "q" }, clip(t.question, 140))))))) : null,
    SITE.plots.length ? h("section", {}, h("h2", {}, "Plots"),
      h("div", { class: "plots" }, SITE.plots.map((name) => {
        const src = "plots/" + encodeURIComponent(name);
        return h("a", { href: src, target: "_blank" }, h("img", { src, alt: name, loading: "lazy" }));
      }))) : null);
}

// ---- a model's tasks -------------------------------------------------------------------------
function filtered(m, params) {
  const fam = params.get("fam") || "", tag = params.get("tag") || "", q = (params.get("q") || "").toLowerCase();
  const differ = params.get("differ") === "1";
  let ids = m.order.filter((id) => {
    const t = m.tasks[id], meta = TASKS.get(id) || { family: "", question: "" };
    if (fam && meta.family !== fam) return false;
    if (tag && !tagsOf(t).has(tag)) return false;
    if (q) {
      const hay = [id, meta.question, ...t.steps.flat().map((c) => c[0])].join("\n").toLowerCase();
      if (!hay.includes(q)) return false;
    }
    return true;
  });
  if (differ) {
    ids = ids.filter((id) => TASKS.has(id)).sort((a, b) => spread(TASKS.get(b)) - spread(TASKS.get(a)));
    ids = ids.slice(0, Math.max(10, Math.ceil(ids.length / 10)));
  }
  return ids;
}

async function viewModel(app, slug, params) {
  const m = await model(slug);
  m.slug = slug;
  crumbs(["Leaderboard", "#/"], [m.name]);
  const families = [...new Set(m.order.map((id) => (TASKS.get(id) || {}).family).filter(Boolean))].sort();
  const tags = new Map();  // what the evaluators tag the tasks with
  for (const id of m.order) for (const [k, text] of tagsOf(m.tasks[id])) tags.set(k, text);
  const set = (k, v) => { if (v) params.set(k, v); else params.delete(k); location.replace(modelHref(slug, params.toString())); };
  const select = (key, label, options) => h("label", {}, label + " ", h("select", { id: "f-" + key, onchange: (e) => set(key, e.target.value) },
    h("option", { value: "" }, "all"), options.map(([v, text]) => h("option", { value: v, selected: params.get(key) === v }, text))));
  const search = h("input", { id: "f-q", type: "search", placeholder: "id, question or tool", value: params.get("q") || "" });
  search.addEventListener("change", () => set("q", search.value.trim()));
  const bar = h("div", { class: "filters" },
    select("fam", "Family", families.map((f) => [f, f])),
    tags.size ? select("tag", "Verdict", [...tags].sort((x, y) => x[1] < y[1] ? -1 : x[1] > y[1] ? 1 : 0)) : null,
    SITE.index.names.length > 1 ? h("label", {}, h("input", { id: "f-differ", type: "checkbox", checked: params.get("differ") === "1",
      onchange: (e) => set("differ", e.target.checked ? "1" : "") }), " tasks where models differ most") : null,
    h("label", {}, "Search ", search));
  const ids = filtered(m, params);
  sessionStorage.setItem("m3v:" + slug, JSON.stringify({ ids, query: params.toString() }));
  const heads = ["Task", "Family", ...m.metrics.map((k) => k[1]), "Calls (ref / pred / matched)", "Question"];
  const table = h("table", { class: "tasks", id: "task-list" }, h("thead", {}, h("tr", {}, heads.map((x, i) =>
    h("th", { "data-col": i, "data-text": i < 2 || i === heads.length - 1 ? "1" : null }, x)))), h("tbody"));
  const rows = ids.map((id) => {
    const t = m.tasks[id], meta = TASKS.get(id) || { family: "", question: "" };
    const cells = [id, meta.family, ...t.m, t.n[2], meta.question];
    return { id, t, meta, key: (c) => cells[c] };
  });
  sortable(table, rows, ({ id, t, meta }) => h("tr", {}, h("td", {}, h("a", { href: taskHref(slug, id) }, id)), h("td", {}, meta.family),
    t.m.map((v, i) => metricCell(m, t, i)), h("td", { class: "num" }, t.n.join(" / ")), h("td", { class: "q" }, clip(meta.question, 70))),
    params.get("differ") === "1" ? [null, -1] : [0, 1]);
  const trial = own(SITE.trial_of, slug);
  fill(app, h("h1", {}, m.name), trial ? h("p", { class: "note", id: "trial-of" }, `trial ${trial[1]} of ${SITE.trials[trial[0]].trials} of `,
    h("a", { href: trialsHref(trial[0]) }, trial[0]), ": its summary over the trials") : null, blocksEl(m.blocks, slug), bar,
    h("p", { class: "note", id: "count" }, `${ids.length} of ${m.order.length} tasks`), lostNote(m),
    h("div", { class: "wide" }, table), oneStepNote(m, ids.map((id) => m.tasks[id])));
}

const lostNote = (m) => {
  const lost = Object.entries(m.lost || {});
  return lost.length ? h("p", { class: "note", id: "lost" }, `${lost.length} task(s) lost to the infrastructure, not scored ` +
    "(a rerun of the rollout retries them): " + lost.map(([id, [kind, reason]]) => `${id} (${kind}: ${reason})`).join("; ")) : null;
};

// ---- routing -----------------------------------------------------------------------------------
function parse(hash) {
  // [view, ...its arguments, query] of an address; NotFound for one this viewer has no view for.
  const [path, query] = (hash.replace(/^#/, "") || "/").split("?");
  let parts;
  try {
    parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  } catch (err) {
    throw new NotFound("the address is not understood");
  }
  if (!parts.length) return ["board", query];
  if (parts[0] === "m" && parts.length === 2) return ["model", parts[1], query];
  if (parts[0] === "m" && parts.length === 4 && parts[2] === "t") return ["task", parts[1], parts[3], query];
  if (parts[0] === "t" && parts.length === 2) return ["task-all", parts[1], query];
  if (parts[0] === "trials" && parts.length === 2) return ["trials", parts[1], query];
  throw new NotFound("no such page");
}

async function route() {
  const app = document.getElementById("app");
  window.onresize = null;
  let view = "error", query = "";
  try {
    const [name, ...args] = parse(location.hash);
    query = args.pop() || "";
    if (name === "task") await viewTask(app, slugOf(args[0]), args[1]);
    else if (name === "model") await viewModel(app, slugOf(args[0]), new URLSearchParams(query));
    else if (name === "task-all") await viewTaskAll(app, args[0]);
    else if (name === "trials") viewTrials(app, args[0]);
    else viewBoard(app);
    view = name;
  } catch (err) {
    const missing = err instanceof NotFound;
    crumbs(["Leaderboard", "#/"], [missing ? "not found" : "error"]);
    fill(app, h("h1", {}, missing ? "Not found" : "Error"), h("p", { class: "error" }, String(err.message || err)),
      h("p", {}, h("a", { href: "#/" }, "back to the leaderboard")));
    if (!missing) throw err;  // a fault of the site itself: reported as well
    view = "not-found";
  }
  document.body.dataset.view = view;
  if (!query) window.scrollTo(0, 0);
}
window.addEventListener("hashchange", route);
route();

// M3-Bench run viewer: leaderboard, per-model task lists, task views with the alignment drawn.
// Data: M3V_SITE (inline in index.html; a repeated run's trials summary in M3V_SITE.trials); data/gt.js and data/m/<slug>.js, loaded on demand with
// <script> tags (they call M3V.put). Routes: #/  #/m/<slug>?filters  #/m/<slug>/t/<id>  #/t/<id>  #/trials/<model>;
// any other address, or one naming what the run does not hold, shows "not found".
// Every text of the run goes into the page as a text node or an attribute value (h), never as markup.
"use strict";

const SITE = window.M3V_SITE;
const M3V = window.M3V = { store: { gt: {}, model: {} }, pending: {},
  put(kind, key, value) { this.store[kind][key] = value; } };
const CLASSES = { unknown_tool: "unknown tool", invalid_arguments: "invalid arguments",
  resource_not_found: "resource not found", success: "success", undecided: "undecided" };
const SHORT = 160;  // characters of an argument value shown before "show all"
const KEY = 60;  // characters of an argument's path shown (the whole path as its title)

class NotFound extends Error {}
// obj[key] when obj has it as its own key ("__proto__", "constructor" ... are no task ids of a run)
const own = (obj, key) => obj && typeof key === "string" && Object.prototype.hasOwnProperty.call(obj, key) ? obj[key] : undefined;

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

function fill(el, ...children) {
  el.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));
}

function need(kind, key, src) {
  if (M3V.store[kind][key]) return Promise.resolve(M3V.store[kind][key]);
  const id = kind + ":" + key;
  if (!M3V.pending[id]) {
    M3V.pending[id] = new Promise((resolve, reject) => {
      const s = h("script", { src });
      s.onload = () => M3V.store[kind][key] ? resolve(M3V.store[kind][key]) : reject(new Error(src + " holds no data"));
      s.onerror = () => { delete M3V.pending[id]; reject(new Error("cannot load " + src)); };
      document.head.append(s);
    });
  }
  return M3V.pending[id];
}
const model = (slug) => own(SITE.models, slug) === undefined ? Promise.reject(new NotFound(`no model ${slug} in this run`))
  : need("model", slug, "data/m/" + encodeURIComponent(slug) + ".js");
const reference = () => need("gt", "", "data/gt.js");

const fmt = (v, d = 4) => v === null || v === undefined ? "\u2013" : (typeof v === "number" ? v.toFixed(d) : String(v));
const fmtCell = (v) => Array.isArray(v) ? (v[0] === null ? "\u2013" : fmt(v[0]) + " \u00b1 " + fmt(v[1])) : fmt(v);
const num = (v) => Array.isArray(v) ? v[0] : v;
const modelHref = (slug, query) => "#/m/" + encodeURIComponent(slug) + (query ? "?" + query : "");
const taskHref = (slug, id) => "#/m/" + encodeURIComponent(slug) + "/t/" + encodeURIComponent(id);
const spread = (t) => { const s = t.scores.filter((x) => x !== null); return s.length > 1 ? Math.max(...s) - Math.min(...s) : 0; };
const TASKS = new Map(SITE.index.tasks.map((t) => [t.id, t]));
const ONE_STEP = "Order Consistency as scored (kept in every average): the reference has its calls in one step, so the " +
  "published rule has no pair of steps to compare, hence no coverage and 0";

function metricCell(m, t, i) {
  // A task's metric; the published Order Consistency of a one-step reference (0, no step pairs) says why.
  const v = t.m[i], na = m.metrics[i][0] === "order_consistency_cov" && t.one_step && v === 0;
  return h("td", { class: "num" + (na ? " na" : ""), title: na ? ONE_STEP : null }, fmt(v, 3),
    na ? h("span", { class: "note" }, " n/a (single step)") : null);
}

const oneStepNote = (m, tasks) => m.metrics.some((k) => k[0] === "order_consistency_cov") && tasks.some((t) => t.one_step)
  ? h("p", { class: "note", id: "one-step" }, "n/a (single step): " + ONE_STEP + ".") : null;

function crumbs(...parts) {
  const nav = document.getElementById("crumbs");
  nav.replaceChildren(...parts.map((p) => p[1] ? h("a", { href: p[1] }, p[0]) : h("span", {}, p[0])));
}

function sortable(table, rows, render, initial) {
  // Click a header to sort by it (best first; click again for the reverse).
  let state = initial;
  const tbody = table.tBodies[0];
  const draw = () => {
    const [col, dir] = state;
    const sorted = rows.slice().sort((a, b) => {
      const x = a.key(col), y = b.key(col);
      if (x === y) return 0;
      if (x === null || x === undefined) return 1;
      if (y === null || y === undefined) return -1;
      return (x < y ? -1 : 1) * dir;
    });
    tbody.replaceChildren(...sorted.map(render));
    for (const th of table.tHead.rows[0].cells) th.dataset.sorted = th.dataset.col === String(col) ? (dir < 0 ? "desc" : "asc") : "";
  };
  for (const th of table.tHead.rows[0].cells) {
    th.addEventListener("click", () => {
      const col = isNaN(+th.dataset.col) ? th.dataset.col : +th.dataset.col;
      state = [col, state[0] === col ? -state[1] : (th.dataset.text ? 1 : -1)];
      draw();
    });
  }
  draw();
}

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
  sortable(table, rows, ({ r }) => h("tr", {}, h("td", {}, h("a", { href: modelHref(r.slug), class: "model" }, r.model)),
    [...r.cells, ...r.extra].map((v, i) => h("td", { class: i === n - 1 ? "num avg" : "num" }, fmtCell(v))),
    h("td", { class: "num" }, fmt(r.tasks, 0))), [b.columns.indexOf(b.average), -1]);
  const differ = SITE.index.tasks.slice().sort((x, y) => spread(y) - spread(x) || (x.id < y.id ? -1 : 1)).slice(0, 15);
  fill(app,
    h("h1", {}, "Leaderboard"), trialsBoard(), table, h("p", { class: "note" }, b.note, " Click a column to sort, a model to see its tasks."),
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

const clip = (s, n) => s && s.length > n ? s.slice(0, n) + "\u2026" : (s || "");

// ---- a model's tasks -------------------------------------------------------------------------
function classesOf(task) {
  const out = new Set();
  for (const step of task.outcomes || []) for (const c of step) if (c) out.add(c);
  for (const [k, v] of Object.entries(task.counts || {})) if (v > 0 && k !== "illegal_calling") out.add(k);
  if (task.illegal || (task.counts && task.counts.illegal_calling > 0)) out.add("illegal_calling");
  return out;
}

const criticalFailed = (t) => !!t.rubrics && t.rubrics.turns.some((turn) => turn.rubrics.some((r) => r.k && r.m === false));

function filtered(m, params) {
  const fam = params.get("fam") || "", cls = params.get("cls") || "", q = (params.get("q") || "").toLowerCase();
  const differ = params.get("differ") === "1", crit = params.get("crit") === "1";
  let ids = m.order.filter((id) => {
    const t = m.tasks[id], meta = TASKS.get(id) || { family: "", question: "" };
    if (fam && meta.family !== fam) return false;
    if (cls && !classesOf(t).has(cls)) return false;
    if (crit && !criticalFailed(t)) return false;
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
  const classes = new Set();
  for (const id of m.order) for (const c of classesOf(m.tasks[id])) classes.add(c);
  const set = (k, v) => { if (v) params.set(k, v); else params.delete(k); location.replace(modelHref(slug, params.toString())); };
  const select = (key, label, options) => h("label", {}, label + " ", h("select", { id: "f-" + key, onchange: (e) => set(key, e.target.value) },
    h("option", { value: "" }, "all"), options.map(([v, text]) => h("option", { value: v, selected: params.get(key) === v }, text))));
  const search = h("input", { id: "f-q", type: "search", placeholder: "id, question or tool", value: params.get("q") || "" });
  search.addEventListener("change", () => set("q", search.value.trim()));
  const bar = h("div", { class: "filters" },
    select("fam", "Family", families.map((f) => [f, f])),
    classes.size ? select("cls", "Call outcome", [...classes].sort().map((c) => [c, c === "illegal_calling" ? "illegal calling format" : CLASSES[c] || c])) : null,
    SITE.index.names.length > 1 ? h("label", {}, h("input", { id: "f-differ", type: "checkbox", checked: params.get("differ") === "1",
      onchange: (e) => set("differ", e.target.checked ? "1" : "") }), " tasks where models differ most") : null,
    m.has_rubrics ? h("label", {}, h("input", { id: "f-crit", type: "checkbox", checked: params.get("crit") === "1",
      onchange: (e) => set("crit", e.target.checked ? "1" : "") }), " failed a critical rubric") : null,
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
    h("a", { href: trialsHref(trial[0]) }, trial[0]), ": its summary over the trials") : null, judgeSummary(m), bar,
    h("p", { class: "note", id: "count" }, `${ids.length} of ${m.order.length} tasks`), lostNote(m),
    h("div", { class: "wide" }, table), oneStepNote(m, ids.map((id) => m.tasks[id])));
}

const lostNote = (m) => {
  const lost = Object.entries(m.lost || {});
  return lost.length ? h("p", { class: "note", id: "lost" }, `${lost.length} task(s) lost to the infrastructure, not scored ` +
    "(a rerun of the rollout retries them): " + lost.map(([id, [kind, reason]]) => `${id} (${kind}: ${reason})`).join("; ")) : null;
};

function judgeSummary(m) {
  const a = (m.judge_meta || {}).agreement;
  if (!a) return null;
  return h("section", { class: "agreement" }, h("h2", {}, "Judge agreement"),
    h("table", {}, h("thead", {}, h("tr", {}, ["Metric", "Judges", "Tasks", "Krippendorff's \u03b1", "Spearman's \u03c1 (pairs)",
      "Most disagreed (spread)"].map((x) => h("th", {}, x)))),
      h("tbody", {}, Object.entries(a).map(([metric, v]) => h("tr", {}, h("td", {}, metric.replace(/_/g, " ")),
        h("td", {}, (v.judges || []).join(", ")), h("td", { class: "num" }, fmt(v.tasks, 0)), h("td", { class: "num" }, fmt(v.krippendorff_alpha, 3)),
        h("td", {}, (v.spearman || []).map((p) => p.judges.join("~") + " " + fmt(p.rho, 2)).join("; ")),
        h("td", {}, (v.most_disagreed || []).slice(0, 5).map((d) => [h("a", { href: taskHref(m.slug, d.id) }, d.id),
          ` (${fmt(d.spread, 2)}) `])))))));
}

// ---- a task --------------------------------------------------------------------------------
function leaves(value, path, out) {
  if (value && typeof value === "object") {
    const entries = Array.isArray(value) ? value.map((v, i) => ["[" + i + "]", v]) : Object.entries(value).map(([k, v]) => [(path ? "." : "") + k, v]);
    if (!entries.length) out.push([path, JSON.stringify(value)]);
    for (const [k, v] of entries) leaves(v, path + k, out);
  } else out.push([path, JSON.stringify(value)]);
  return out;
}

function valueEl(text) {
  if (text.length <= SHORT) return h("code", {}, text);
  const code = h("code", { class: "long" }, text.slice(0, SHORT) + "\u2026");
  const button = h("button", { class: "expand", type: "button" }, `show all (${text.length.toLocaleString()} characters)`);
  button.addEventListener("click", () => {
    const open = button.dataset.open === "1";
    code.textContent = open ? text.slice(0, SHORT) + "\u2026" : text;
    button.textContent = open ? `show all (${text.length.toLocaleString()} characters)` : "show less";
    button.dataset.open = open ? "0" : "1";
    window.dispatchEvent(new Event("resize"));
  });
  return h("span", {}, code, " ", button);
}

function argsEl(args, other) {
  const mine = leaves(args, "", []);
  const theirs = other === undefined ? null : new Map(leaves(other, "", []));
  return h("table", { class: "args" }, h("tbody", {}, mine.map(([path, text]) => {
    const diff = theirs && theirs.get(path) !== text;
    return h("tr", { class: diff ? "diff" : null, title: diff ? (theirs.has(path) ? "differs from the matched call: " + clip(theirs.get(path), 200) : "not in the matched call") : null },
      h("th", { title: path.length > KEY ? path : null }, clip(path, KEY) || "(value)"), h("td", {}, valueEl(text)));
  })));
}

function callsColumn(side, steps, matchOf, otherCall, outcomes, errors) {
  let flat = 0;
  return h("div", { class: "col " + side }, h("h3", {}, side === "gt" ? "Reference steps" : "Predicted steps"),
    steps.length ? steps.map((calls, si) => h("div", { class: "step" }, h("div", { class: "step-no" }, "step " + (si + 1)),
      calls.map(([tool, args], ci) => {
        const i = flat++, m = matchOf && matchOf.get(i), cls = outcomes && outcomes[si] ? outcomes[si][ci] : null;
        const state = !matchOf ? "" : m ? " matched " + (m[3] ? "strong" : "weak") : " unmatched";
        return h("div", { class: "call" + state, id: side + "-" + i, "data-call": side + i },
          h("div", { class: "call-head" }, h("span", { class: "idx" }, "#" + i), h("span", { class: "tool" }, tool),
            m ? h("span", { class: "badge " + (m[3] ? "strong" : "weak") }, (m[3] ? "strong " : "weak ") + m[2].toFixed(3))
              : matchOf ? h("span", { class: "badge unmatched" }, "unmatched") : null,
            cls ? h("span", { class: "badge outcome o-" + cls }, CLASSES[cls] || clip(cls, 40)) : null,
            errorBadge(errors && errors[si] ? errors[si][ci] : null)),
          argsEl(args, m ? otherCall(m) : undefined));
      }))) : h("p", { class: "note" }, "no calls"));
}

function errorBadge(flag) {
  // The call's is_error as the prediction file records it: what the tool-use Success Rate counts.
  if (flag === null || flag === undefined) return null;
  return h("span", { class: "badge " + (flag ? "is-error" : "no-error"), title: "is_error " + flag + " in the prediction file" },
    flag ? "is_error" : "no error");
}

function drawLines(pair, matches) {
  const svg = pair.querySelector("svg");
  const box = svg.getBoundingClientRect(), top = pair.getBoundingClientRect().top;
  const height = pair.getBoundingClientRect().height, width = box.width;
  svg.setAttribute("height", height);
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  const ns = "http://www.w3.org/2000/svg";
  svg.setAttribute("width", width);
  svg.replaceChildren();
  for (const [g, p, sim, strong] of matches) {
    const a = pair.querySelector("#gt-" + g), b = pair.querySelector("#pred-" + p);
    if (!a || !b) continue;
    const ra = a.getBoundingClientRect(), rb = b.getBoundingClientRect();
    const y1 = Math.min(ra.top + 18, ra.top + ra.height / 2) - top, y2 = Math.min(rb.top + 18, rb.top + rb.height / 2) - top;
    const path = document.createElementNS(ns, "path");
    path.setAttribute("d", `M0 ${y1} C ${width / 2} ${y1}, ${width / 2} ${y2}, ${width} ${y2}`);
    path.setAttribute("class", "match " + (strong ? "strong" : "weak"));
    path.setAttribute("data-gt", g);
    path.setAttribute("data-pred", p);
    path.setAttribute("data-kind", strong ? "strong" : "weak");
    const title = document.createElementNS(ns, "title");
    title.textContent = `reference #${g} \u2194 predicted #${p}: ${strong ? "strong" : "weak"}, similarity ${sim.toFixed(4)}`;
    path.append(title);
    const label = document.createElementNS(ns, "text");
    label.setAttribute("x", width / 2);
    label.setAttribute("y", (y1 + y2) / 2 - 3);
    label.setAttribute("class", "sim");
    label.textContent = sim.toFixed(2);
    svg.append(path, label);
  }
}

function judgeBlock(label, block) {
  if (!block) return null;
  const scores = block.judges.map((j) => j.score).filter((x) => typeof x === "number");
  const spreadText = scores.length > 1 ? fmt(Math.max(...scores) - Math.min(...scores), 3) : "\u2013";
  return h("div", { class: "judge" }, h("h3", {}, `${label}: ${fmt(block.final, 3)}`, h("span", { class: "note" }, ` spread ${spreadText}`)),
    block.judges.length ? h("table", {}, h("tbody", {}, block.judges.map((j) => h("tr", {}, h("th", {}, j.name || "?"),
      h("td", { class: "num" }, fmt(j.score, 3)), h("td", {}, j.reply ? h("details", {}, h("summary", {}, "reply"), h("pre", {}, j.reply)) : null))))) : null);
}

function taskNav(slug, id, m) {
  // Previous / next in the model's filtered list, the same task for another model or for all.
  const list = JSON.parse(sessionStorage.getItem("m3v:" + slug) || "null");
  const ids = list && list.ids.includes(id) ? list.ids : m.order, at = ids.indexOf(id);
  const others = SITE.index.models.filter((s) => s !== slug);
  const go = (e) => { if (e.target.value) location.hash = taskHref(e.target.value, id); };
  return h("div", { class: "task-nav" },
    at > 0 ? h("a", { href: taskHref(slug, ids[at - 1]), id: "prev" }, "\u2190 " + ids[at - 1]) : h("span"),
    h("span", {}, `${at + 1} of ${ids.length}`),
    at < ids.length - 1 ? h("a", { href: taskHref(slug, ids[at + 1]), id: "next" }, ids[at + 1] + " \u2192") : h("span"),
    others.length ? h("label", {}, "same task, other model ", h("select", { id: "other-model", onchange: go },
      h("option", { value: "" }, "\u2026"), others.map((s) => h("option", { value: s }, SITE.models[s])))) : null,
    h("a", { href: "#/t/" + encodeURIComponent(id) }, "all models on this task"));
}

// The task's tool-use counts: its calls, those whose outcome the prediction file records, those recorded as valid.
const TOOL_COUNTS = [["Tool calls", "the task's predicted calls"],
  ["outcome recorded", "calls that carry is_error (true or false) in the prediction file"],
  ["valid", "calls whose is_error is false: recorded without an error"]];

function taskHead(m, t, ref) {
  // The image, the question, the task's metrics and the legend.
  const values = m.metrics.map((k, i) => [k[1], i]);
  return h("div", { class: "task-head" },
    ref.image_file ? h("img", { class: "task-image", src: ref.image_file, alt: ref.image }) : null,
    h("div", {}, h("p", { class: "question" }, ref.question),
      ref.image && !ref.image_file ? h("p", { class: "note" }, `image ${ref.image} (not found when the site was built)`) : null,
      h("table", { class: "metrics" }, h("tbody", {}, h("tr", {}, values.map(([k]) => h("th", {}, k)),
        t.tool_use ? TOOL_COUNTS.map(([k, title]) => h("th", { title }, k)) : null),
        h("tr", {}, values.map(([, i]) => metricCell(m, t, i)),
          t.tool_use ? ["calls", "flagged", "valid"].map((k) => h("td", { class: "num tool-use" }, fmt(t.tool_use[k], 0))) : null))),
      oneStepNote(m, [t]),
      t.reference ? h("p", { class: "note", id: "reference" }, `aligned against reference ${t.reference.index + 1} of ${t.reference.of}`,
        t.reference.index && !t.reference.steps ? " (not in the run's reference file: its steps are not shown)" : "") : null,
      h("p", { class: "legend" }, h("span", { class: "badge strong" }, `strong \u2265 ${m.tau_strong}`), " ",
        h("span", { class: "badge weak" }, `weak \u2265 ${m.tau_weak}`), " ", h("span", { class: "badge unmatched" }, "unmatched"),
        " highlighted arguments differ from the matched call's ",
        t.illegal ? h("span", { class: "badge o-illegal" }, "illegal calling format: " + t.illegal) : null,
        t.error ? h("span", { class: "badge o-illegal", id: "task-error" }, `failed (${t.error[0]}): ${t.error[1]}`) : null)));
}

const verdict = (m) => m === true ? h("span", { class: "badge v-met" }, "Met") : m === false
  ? h("span", { class: "badge v-not" }, "Not Met") : h("span", { class: "badge v-none" }, "no verdict");
const passText = (p) => p === true ? "pass" : p === false ? "fail" : "not scored";

function rubricsSection(r) {
  // Per turn each rubric and its verdict, the judges' verdicts and explanations; the task's score and pass.
  if (!r) return null;
  return h("section", { id: "rubrics" }, h("h2", {}, "Rubrics"),
    h("p", { class: "rubric-total" }, `weighted score ${fmt(r.score, 3)} · `, h("b", { class: r.pass ? "pass" : "fail" }, passText(r.pass)),
      r.no_critical ? " (no critical rubric)" : "",
      r.unanswered ? ` · ${r.unanswered} judge answer(s) missing` : ""),
    r.turns.map((turn, k) => h("div", { class: "turn" }, r.turns.length > 1 ? h("h3", {}, `Turn ${k + 1}: ${fmt(turn.score, 3)}, ${passText(turn.pass)}`) : null,
      h("table", { class: "rubrics" }, h("thead", {}, h("tr", {}, ["Rubric", "Weight", "Category", "Critical", "Verdict", "Judges"].map((x) => h("th", {}, x)))),
        h("tbody", {}, turn.rubrics.map((x) => h("tr", { class: x.k && x.m === false ? "critical-failed" : null },
          h("td", {}, x.d || "–"), h("td", { class: "num" }, x.w), h("td", {}, x.c.join(", ")),
          h("td", {}, x.k ? h("span", { class: "badge critical" }, "critical") : ""), h("td", {}, verdict(x.m)),
          h("td", {}, x.j.length ? h("details", {}, h("summary", {}, x.j.map((j) => j[1] === "Met" ? "✓" : j[1] ? "✗" : "?").join(" ")),
            h("table", { class: "judges" }, h("tbody", {}, x.j.map(([name, v, text]) => h("tr", {}, h("th", {}, name), h("td", {}, v || "no answer"),
              h("td", {}, text || "")))))) : null))))))));
}

function outcomesSection(answer, checks) {
  // The answer equivalence verdict and the verifier's checks (an evaluator error apart from a failure).
  if (!answer && !checks) return null;
  return h("section", { id: "outcomes" }, h("h2", {}, "Outcome checks"),
    answer ? h("div", { id: "answer" }, h("h3", {}, "Answer equivalence",
      h("span", { class: "note" }, ` level ${answer.level || "–"}`)),
      h("p", {}, "E = ", answer.score === null ? h("b", {}, "skipped") : h("b", { class: answer.score ? "pass" : "fail" }, String(answer.score)),
        answer.reason ? h("span", { class: "note" }, " · " + answer.reason) : null),
      answer.judges.length ? h("table", { class: "judges" }, h("tbody", {}, answer.judges.map(([name, v, reply]) => h("tr", {}, h("th", {}, name),
        h("td", { class: "num" }, fmt(v, 0)), h("td", {}, reply ? h("details", {}, h("summary", {}, "reply"), h("pre", {}, reply)) : null))))) : null) : null,
    checks ? h("div", { id: "checks" }, h("h3", {}, "Verifier", checks.check ? h("span", { class: "note" }, " " + checks.check) : null),
      checks.error !== null && checks.error !== undefined
        ? h("p", { class: "evaluator-error" }, h("b", {}, "evaluator error"), " (not counted as the agent's failure): ", h("code", {}, checks.error))
        : checks.passed === null ? h("p", { class: "note" }, checks.reason || "not checked")
          : h("p", {}, h("span", { class: "checks" }, (checks.checks || []).map((c, i) => h("span", { class: "badge " + (c ? "v-met" : "v-not"), title: "check " + (i + 1) }, String(c)))),
            " ", h("b", { class: checks.passed ? "pass" : "fail" }, checks.passed ? "passed" : "failed"),
            checks.reason ? h("span", { class: "note" }, " · " + checks.reason) : null)) : null);
}

function otherValues(extra) {
  // Per-task values of other evaluators (rubric verdicts and the like), as they are.
  const entries = Object.entries(extra || {});
  return entries.length ? h("section", { id: "extra" }, h("h2", {}, "Other evaluations"),
    entries.map(([k, v]) => h("div", {}, h("h3", {}, k), h("pre", {}, JSON.stringify(v, null, 1))))) : null;
}

async function viewTask(app, slug, id) {
  const [m, gt] = await Promise.all([model(slug), reference()]);
  const t = own(m.tasks, id), ref = own(gt, id);
  if (!t || !ref) throw new NotFound(`task ${id} is not in ${m.name}'s results`);
  crumbs(["Leaderboard", "#/"], [m.name, modelHref(slug, (JSON.parse(sessionStorage.getItem("m3v:" + slug) || "{}").query) || "")], [id]);
  const gMatch = new Map(t.matches.map((x) => [x[0], x])), pMatch = new Map(t.matches.map((x) => [x[1], x]));
  const other = t.reference && t.reference.index > 0;  // aligned against a later reference of the task
  const gSteps = other ? t.reference.steps || [] : ref.steps, gFlat = gSteps.flat(), pFlat = t.steps.flat();
  const pair = h("div", { class: "pair", id: "pair" },
    callsColumn("gt", gSteps, gMatch, (x) => pFlat[x[1]] ? pFlat[x[1]][1] : undefined, null),
    h("div", { class: "lines" }, document.createElementNS("http://www.w3.org/2000/svg", "svg")),
    callsColumn("pred", t.steps, pMatch, (x) => gFlat[x[0]] ? gFlat[x[0]][1] : undefined, t.outcomes, t.errors));
  fill(app, taskNav(slug, id, m), h("h1", {}, `${m.name} \u00b7 task ${id}`, h("span", { class: "family" }, ref.family)),
    taskHead(m, t, ref), pair,
    t.judge ? h("section", { class: "judges", id: "judges" }, h("h2", {}, "Judges"),
      judgeBlock("Task Completion", t.judge.tc), judgeBlock("Information Grounding", t.judge.ig)) : null,
    rubricsSection(t.rubrics), outcomesSection(t.answer, t.checks), otherValues(t.extra),
    t.final_reply ? h("section", {}, h("h2", {}, "Final reply"), h("pre", { class: "reply" }, t.final_reply)) : null);
  const redraw = () => drawLines(pair, t.matches);
  redraw();
  window.onresize = redraw;
  for (const img of app.querySelectorAll("img")) img.addEventListener("load", redraw);
}

async function viewTaskAll(app, id) {
  const gt = await reference();
  const ref = own(gt, id), meta = TASKS.get(id);
  if (!ref || !meta) throw new NotFound(`task ${id} is not in this run`);
  crumbs(["Leaderboard", "#/"], ["task " + id]);
  const rows = SITE.index.models.map((s, i) => [s, SITE.index.names[i], meta.scores[i]]).sort((a, b) => (b[2] ?? -1) - (a[2] ?? -1));
  // each scored model's predicted steps beside the reference's
  const runs = await Promise.all(rows.map(([s, , v]) => v === null ? null : model(s).then((m) => own(m.tasks, id))));
  const count = (t) => t ? `${t.steps.length} step(s), ${t.steps.flat().length} call(s)` : "not scored";
  fill(app, h("h1", {}, `Task ${id}`, h("span", { class: "family" }, ref.family)), h("p", { class: "question" }, ref.question),
    h("table", { class: "tasks", id: "task-models" }, h("thead", {}, h("tr", {}, ["Model", "Alignment mean", "Predicted"].map((x) => h("th", {}, x)))),
      h("tbody", {}, rows.map(([s, name, v], i) => h("tr", {}, h("td", {}, v === null ? name : h("a", { href: taskHref(s, id) }, name)),
        h("td", { class: "num" }, fmt(v, 3)), h("td", { class: "num" }, count(runs[i])))))),
    ref.image_file ? h("img", { class: "task-image", src: ref.image_file, alt: ref.image }) : null,
    h("div", { class: "all-steps", id: "all-steps" }, callsColumn("gt", ref.steps, null, () => undefined, null, null),
      rows.map(([s, name], i) => runs[i] ? h("div", { class: "model-steps", "data-model": s }, h("h3", {}, h("a", { href: taskHref(s, id) }, name)),
        callsColumn("pred", runs[i].steps, null, () => undefined, runs[i].outcomes, runs[i].errors)) : null)));
}

// ---- a repeated run: each model over its trials ------------------------------------------------
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
    if (name === "task") await viewTask(app, args[0], args[1]);
    else if (name === "model") await viewModel(app, args[0], new URLSearchParams(query));
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

// M3-Bench run viewer, shared part: the site's data, building elements, loading data files, formatting.
// Data: M3V_SITE (inline in index.html; a repeated run's trials summary in M3V_SITE.trials); data/gt.js, data/m/<slug>.js and the
// transcripts data/x/<slug>/<n>.js (a list; a task's x: [n, its place]), loaded on demand with <script> tags (they call M3V.put). The page's scripts, in order:
// dom.js (the element helper h), core.js (this), blocks.js (what the evaluators show), transcript.js (a task's transcript), task.js (a task's views),
// trials.js (a repeated run), viewer.js (the leaderboard, a model's tasks, routing).
// Every text of the run goes into the page as a text node or an attribute value (dom.js's h), never as markup.
"use strict";

const SITE = window.M3V_SITE;
const M3V = window.M3V = { store: { gt: {}, model: {}, x: {} }, pending: {},
  put(kind, key, value) { this.store[kind][key] = value; } };
const SHORT = 160;  // characters of an argument value shown before "show all"
const KEY = 60;  // characters of an argument's path shown (the whole path as its title)

class NotFound extends Error {}
// obj[key] when obj has it as its own key ("__proto__", "constructor" ... are no task ids of a run)
const own = (obj, key) => obj && typeof key === "string" && Object.prototype.hasOwnProperty.call(obj, key) ? obj[key] : undefined;

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
// A model's address names it as the user did (its name, URL-encoded); its slug (the key of its data file) is an
// address too, of the model whose name it is not. A name that cannot be URL-encoded (a lone surrogate) is
// written as the slug.
const SLUG_OF = new Map(Object.entries(SITE.models).map(([slug, name]) => [name, slug]));
const slugOf = (key) => SLUG_OF.has(key) ? SLUG_OF.get(key) : key;
function modelKey(slug) {
  const name = own(SITE.models, slug);
  try {
    return name === undefined ? encodeURIComponent(slug) : encodeURIComponent(name);
  } catch (err) {
    return encodeURIComponent(slug);
  }
}
const modelHref = (slug, query) => "#/m/" + modelKey(slug) + (query ? "?" + query : "");
const taskHref = (slug, id) => "#/m/" + modelKey(slug) + "/t/" + encodeURIComponent(id);
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

const clip = (s, n) => s && s.length > n ? s.slice(0, n) + "\u2026" : (s || "");

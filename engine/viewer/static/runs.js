// M3-Bench runs page (engine/viewer/runs.py): every run of a run index, one row per run with its models folded;
// sortable, filterable, two runs side by side when comparable (the same settings digest, as report.py groups
// results). Data: M3R_DATA (inline); dom.js's h is inlined before it; served, the page asks runs.json for new runs every few seconds.
// The state (sort, filters, the two runs picked) is kept in the address after #. Every text of the index goes
// into the page as a text node or an attribute value, never as markup.
"use strict";

let DATA = window.M3R_DATA;
const seenKeys = new Set(DATA.runs.map((r) => r.key));
const freshKeys = new Set();

const fmt = (v, d = 4) => v === null || v === undefined ? "\u2013" : typeof v === "number" ? v.toFixed(d) : String(v);
const when = (t) => t ? String(t).slice(0, 16).replace("T", " ") : "\u2013";
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

// ---- state, kept in the address ----------------------------------------------------------------------
const state = { sort: "time", dir: -1, q: "", set: "", site: false, pick: [] };
function readState() {
  const p = new URLSearchParams(location.hash.replace(/^#/, ""));
  state.sort = p.get("sort") || "time";
  state.dir = p.get("dir") === "1" ? 1 : -1;
  state.q = p.get("q") || "";
  state.set = p.get("set") || "";
  state.site = p.get("site") === "1";
  state.pick = (p.get("pick") || "").split(",").filter(Boolean).slice(0, 2);
}
function writeState() {
  const p = new URLSearchParams();
  if (state.sort !== "time") p.set("sort", state.sort);
  if (state.dir === 1) p.set("dir", "1");
  for (const k of ["q", "set"]) if (state[k]) p.set(k, state[k]);
  if (state.site) p.set("site", "1");
  if (state.pick.length) p.set("pick", state.pick.join(","));
  history.replaceState(null, "", "#" + p.toString());
}

// ---- the table -----------------------------------------------------------------------------------------
const COLUMNS = [
  ["run", "Run", (r) => r.run.toLowerCase()],
  ["time", "Time", (r) => r.time || ""],
  ["models", "Models", (r) => r.models.length],
  ["best", "Best model", (r) => (r.best[0] || "").toLowerCase()],
  ["score", "Average Score", (r) => r.best[1]],
  ["set", "Set", (r) => r.set],
];
const shown = (v) => v === null || v === undefined ? "\u2013" : String(v);
const differing = () => DATA.compared.filter((k) => new Set(DATA.runs.map((r) => JSON.stringify(r.settings[k] ?? null))).size > 1);
// A compared setting is a column only where runs differ in it; those every run shares are named once above the table.
const settingColumns = () => differing().map((k) => [k, k, (r) => r.settings[k] === null || r.settings[k] === undefined ? null : String(r.settings[k])]);
const allColumns = () => [...COLUMNS, ...settingColumns(), ["site", "Site", (r) => r.site ? 1 : 0]];

function haystack(r) {
  return [r.run, r.path, r.time, r.set, ...r.models.map((m) => m[0]), ...Object.values(r.settings).map(String)].join("\n").toLowerCase();
}

function shownRuns() {
  const q = state.q.toLowerCase();
  const rows = DATA.runs.filter((r) => (!q || haystack(r).includes(q)) && (!state.set || r.set === state.set) && (!state.site || r.site));
  const col = allColumns().find((c) => c[0] === state.sort) || COLUMNS[1];
  return rows.slice().sort((a, b) => {
    const x = col[2](a), y = col[2](b);
    if (x === y) return 0;
    if (x === null || x === undefined) return 1;
    if (y === null || y === undefined) return -1;
    return (x < y ? -1 : 1) * state.dir;
  });
}

function modelsCell(r) {
  if (!r.models.length) return "\u2013";
  return h("details", { class: "models" }, h("summary", {}, `${r.models.length} model${r.models.length === 1 ? "" : "s"}`),
    h("table", { class: "inner" }, h("tbody", {}, r.models.slice().sort((a, b) => (b[1] ?? -1) - (a[1] ?? -1))
      .map(([m, v]) => h("tr", {}, h("td", {}, m), h("td", { class: "num" }, fmt(v)))))));
}

function pick(key) {
  const at = state.pick.indexOf(key);
  if (at >= 0) state.pick.splice(at, 1);
  else { state.pick.push(key); if (state.pick.length > 2) state.pick.shift(); }
  render();
}

function tableEl(rows) {
  const head = h("tr", {}, h("th", { class: "pick", title: "pick two runs to compare" }, "compare"),
    allColumns().map(([key, label]) => h("th", { "data-col": key, "data-sorted": state.sort === key ? (state.dir < 0 ? "desc" : "asc") : "",
      title: "sort by " + label, onclick: () => { state.dir = state.sort === key ? -state.dir : (key === "run" || key === "best" || key === "set" ? 1 : -1); state.sort = key; render(); } }, label)));
  return h("table", { id: "runs", class: "runs" }, h("thead", {}, head), h("tbody", {}, rows.map((r) =>
    h("tr", { "data-key": r.key, class: [state.pick.includes(r.key) ? "picked" : "", freshKeys.has(r.key) ? "fresh" : ""].join(" ").trim() || null },
      h("td", { class: "pick" }, h("input", { type: "checkbox", checked: state.pick.includes(r.key), title: "compare this run", onchange: () => pick(r.key) })),
      h("td", { class: "run", title: r.path }, r.run),
      h("td", { class: "time" }, when(r.time)),
      h("td", {}, modelsCell(r)),
      h("td", {}, r.best[0] ?? "\u2013"),
      h("td", { class: "num" }, fmt(r.best[1])),
      h("td", { class: "set" }, h("a", { href: "#", title: "only the runs comparable with this one", onclick: (e) => { e.preventDefault(); state.set = state.set === r.set ? "" : r.set; render(); } }, r.set)),
      differing().map((k) => h("td", { class: "setting", title: shown(r.settings[k]) }, shown(r.settings[k]))),
      h("td", { class: "site" }, r.site ? h("a", { href: r.site, class: "site" }, "site") : h("span", { class: "note" }, "not built"))))));
}

function filtersEl(shown) {
  const sets = new Map();
  for (const r of DATA.runs) sets.set(r.set, (sets.get(r.set) || 0) + 1);
  const search = h("input", { id: "q", type: "search", placeholder: "run, model or setting", value: state.q });
  search.addEventListener("input", () => { state.q = search.value; render(true); });
  return h("div", { class: "filters" },
    h("label", {}, "Filter ", search),
    h("label", {}, "Set ", h("select", { id: "set", onchange: (e) => { state.set = e.target.value; render(); } },
      h("option", { value: "" }, "all"), [...sets].map(([s, n]) => h("option", { value: s, selected: state.set === s }, `${s} (${n} run${n === 1 ? "" : "s"})`)))),
    h("label", {}, h("input", { id: "site-only", type: "checkbox", checked: state.site, onchange: (e) => { state.site = e.target.checked; render(); } }), " with a site"),
    h("span", { class: "note", id: "count" }, `${shown.length} of ${DATA.runs.length} runs`));
}

// ---- two runs side by side --------------------------------------------------------------------------------
function boardOf(r) {
  // columns and model -> cells: the run's leaderboard.json, else the index's Average Scores
  return r.board || { columns: ["Average Score"], rows: Object.fromEntries(r.models.map(([m, v]) => [m, [v]])) };
}

function compareEl() {
  const runs = state.pick.map((k) => DATA.runs.find((r) => r.key === k)).filter(Boolean);
  if (runs.length < 2) return h("section", { id: "compare" }, h("h2", {}, "Compare"),
    h("p", { class: "note" }, runs.length ? "Pick one more run to compare." : "Pick two runs (the compare column) to see them side by side."));
  const [a, b] = runs;
  const heads = h("div", { class: "pair-heads" }, [a, b].map((r, i) => h("div", { class: "run-head" },
    h("b", {}, i ? "B " : "A "), h("span", { class: "run", title: r.path }, r.run), h("span", { class: "note" }, " \u00b7 " + when(r.time) + " \u00b7 set " + r.set),
    r.site ? [" \u00b7 ", h("a", { href: r.site }, "site")] : null)));
  if (a.set !== b.set) {
    const differ = DATA.compared.filter((k) => !same(a.settings[k], b.settings[k]));
    const one = (r, i) => h("table", { class: "rows" }, h("caption", {}, i ? "B" : "A"), h("thead", {}, h("tr", {}, h("th", {}, "Model"), h("th", {}, "Average Score"))),
      h("tbody", {}, r.models.map(([m, v]) => h("tr", {}, h("td", {}, m), h("td", { class: "num" }, fmt(v))))));
    return h("section", { id: "compare" }, h("h2", {}, "Compare"), heads,
      h("p", { class: "why", id: "not-comparable" }, "Not comparable, as report.py decides (one leaderboard per set of settings): ",
        differ.map((k) => `${k} differs (${String(a.settings[k])}, ${String(b.settings[k])})`).join("; "), "."),
      h("div", { class: "apart" }, one(a, 0), one(b, 1)));
  }
  const ba = boardOf(a), bb = boardOf(b);
  const common = ba.columns.filter((c) => bb.columns.includes(c));
  const columns = [...common.filter((c) => c === "Average Score"), ...common.filter((c) => c !== "Average Score")];  // the headline first
  const models = [...new Set([...Object.keys(ba.rows), ...Object.keys(bb.rows)])];
  const cell = (board, m, c) => { const row = Object.prototype.hasOwnProperty.call(board.rows, m) ? board.rows[m] : null; return row ? row[board.columns.indexOf(c)] : null; };
  const table = h("table", { class: "rows", id: "compare-table" },
    h("thead", {}, h("tr", {}, h("th", { rowspan: 2 }, "Model"), columns.map((c) => h("th", { colspan: 3, class: "group" }, c))),
      h("tr", {}, columns.map(() => [h("th", {}, "A"), h("th", {}, "B"), h("th", {}, "B \u2212 A")]))),
    h("tbody", {}, models.map((m) => h("tr", {}, h("td", {}, m), columns.map((c) => {
      const x = cell(ba, m, c), y = cell(bb, m, c), d = x !== null && y !== null ? y - x : null;
      return [h("td", { class: "num" }, fmt(x)), h("td", { class: "num" }, fmt(y)),
        h("td", { class: "num delta" + (d > 0 ? " up" : d < 0 ? " down" : "") }, d === null ? "\u2013" : (d > 0 ? "+" : "") + d.toFixed(4))];
    })))));
  return h("section", { id: "compare" }, h("h2", {}, "Compare"), heads,
    h("p", { class: "note", id: "comparable" }, `Comparable: the same ${DATA.compared.join(", ")} (set ${a.set}). `,
      a.board && b.board ? "Each column of their leaderboards." : "Their Average Scores from the index (a run without leaderboard.json: reports=false)."),
    h("div", { class: "wide" }, table));
}

function sharedEl() {
  // The compared settings every run shares (no column of their own).
  const differ = new Set(differing());
  const common = DATA.compared.filter((k) => !differ.has(k));
  return common.length && DATA.runs.length ? h("p", { class: "note", id: "shared" }, "Every run: ",
    common.map((k, i) => [i ? ", " : "", k, " ", h("code", {}, shown(DATA.runs[0].settings[k]))]), ".") : null;
}

// ---- the page ------------------------------------------------------------------------------------------------
function render(keepFocus) {
  writeState();
  const app = document.getElementById("app");
  const rows = shownRuns();
  const table = tableEl(rows);
  if (keepFocus && document.getElementById("runs")) {
    document.getElementById("runs").replaceWith(table);
    document.getElementById("count").textContent = `${rows.length} of ${DATA.runs.length} runs`;
    return;
  }
  app.replaceChildren(h("h1", {}, `Scoring runs (${DATA.runs.length})`),
    h("p", { class: "note" }, "Paths under ", h("code", {}, DATA.base), ". Runs of one set (the digest of their " + DATA.compared.join(", ") +
      ") are comparable. Click a column to sort, a set to see the runs comparable with it."),
    sharedEl(),
    filtersEl(rows), h("div", { class: "wide" }, table), compareEl());
}

async function poll() {
  // Served: the runs again when the index changed; new rows marked.
  try {
    const response = await fetch("runs.json", { cache: "no-store" });
    const next = await response.json();
    if (next.version !== DATA.version) {
      for (const r of next.runs) if (!seenKeys.has(r.key)) { freshKeys.add(r.key); seenKeys.add(r.key); }
      DATA = next;
      document.title = `M3-Bench scoring runs (${DATA.runs.length})`;
      render();
    }
    document.body.dataset.version = DATA.version;
  } catch (err) {
    const live = document.getElementById("live");
    if (live) live.textContent = "served: the server does not answer";
  }
}

readState();
render();
if (DATA.live) { document.body.dataset.version = DATA.version; setInterval(poll, 1000 * DATA.poll); }

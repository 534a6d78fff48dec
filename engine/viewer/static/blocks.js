// M3-Bench run viewer: what the evaluators show, drawn from the blocks their displays give
// (engine.evaluators.protocol.Evaluator.display): a block is {title, id, evaluator, parts}; a part is a heading, a
// labelled verdict, rows (a table), a reply, an evaluator error, a note, badges, per-call labels or tags.
// The viewer knows no evaluator: a new one's blocks show as they come.
"use strict";

const passClass = (pass) => pass === true ? "pass" : pass === false ? "fail" : "none";
const numText = (v) => Number.isInteger(v) ? String(v) : v.toFixed(3);

function replyEl(text, label) {
  if (text === null || text === undefined || text === "") return null;
  return h("details", {}, h("summary", {}, label || "reply"), h("pre", {}, String(text)));
}

function cellEl(c, slug, inline) {
  // A cell: text, a number, a badge, a reply (shown as it is in rows already behind a summary), a link to
  // the model's task, or rows behind a summary.
  if (c === null || c === undefined) return "\u2013";
  if (Array.isArray(c)) return c.map((x, i) => [i ? " " : "", cellEl(x, slug, inline)]);
  if (typeof c === "number") return numText(c);
  if (typeof c !== "object") return String(c);
  if (own(c, "badge") !== undefined) return h("span", { class: "badge " + passClass(c.pass) }, String(c.badge));
  if (own(c, "reply") !== undefined) return inline ? String(c.reply ?? "") : replyEl(c.reply);
  if (own(c, "task") !== undefined) return h("a", { href: taskHref(slug, String(c.task)) }, String(c.text ?? c.task));
  if (own(c, "rows") !== undefined) return h("details", {}, h("summary", {}, String(c.details ?? "")), rowsEl({ rows: c.rows }, slug, "inner"));
  return JSON.stringify(c);
}

function rowsEl(part, slug, cls) {
  // A table; without a head its first column names each row.
  const marked = new Set(part.marked || []), head = part.head;
  return h("table", { class: cls || "rows" }, head ? h("thead", {}, h("tr", {}, head.map((x) => h("th", {}, String(x))))) : null,
    h("tbody", {}, (part.rows || []).map((row, i) => h("tr", { class: marked.has(i) ? "marked" : null },
      row.map((c, j) => h(!head && j === 0 ? "th" : "td", { class: typeof c === "number" ? "num" : null },
        cellEl(c, slug, cls === "inner")))))));
}

function partEl(p, slug) {
  switch (p.kind) {
    case "heading": return h("h3", {}, String(p.text ?? ""), p.note ? h("span", { class: "note" }, " " + p.note) : null);
    case "verdict": return h("p", { class: "verdict" }, p.label ? String(p.label) + " " : "", h("b", { class: passClass(p.pass) }, String(p.text ?? "")),
      p.note ? h("span", { class: "note" }, " \u00b7 " + p.note) : null);
    case "rows": return rowsEl(p, slug);
    case "reply": return replyEl(p.text, p.label);
    case "error": return h("p", { class: "evaluator-error" }, h("b", {}, "evaluator error"), " (not counted as the agent's failure): ",
      h("code", {}, String(p.text ?? "")));
    case "note": return h("p", { class: "note" }, String(p.text ?? ""));
    case "badges": return h("p", { class: "badges" }, (p.items || []).map(([text, pass], i) =>
      h("span", { class: "badge " + passClass(pass), title: "#" + (i + 1) }, String(text))));
    default: return null;  // calls and tags: shown beside the calls and in the task list's filter
  }
}

function blockEl(b, slug) {
  // A block as a section; a heading opens a group of the parts after it.
  const groups = [[]];
  for (const p of b.parts) {
    if (p.kind === "heading") groups.push([]);
    groups[groups.length - 1].push(partEl(p, slug));
  }
  return h("section", { class: "block", id: "ev-" + b.id, "data-evaluator": b.evaluator }, h("h2", {}, b.title),
    groups.map((g, i) => i === 0 ? g : h("div", { class: "group" }, g)));
}

// a block shows when it has a part of its own to show (labels beside calls and tags show elsewhere)
const blocksEl = (blocks, slug) => (blocks || []).filter((b) => b.parts.some((p) => p.kind !== "calls" && p.kind !== "tags"))
  .map((b) => blockEl(b, slug));

function partsOf(blocks, kind) {
  const out = [];
  for (const b of blocks || []) for (const p of b.parts) if (p.kind === kind) out.push(p);
  return out;
}

function callLabels(task) {
  // "step,call" -> [[key, text], ...]: the labels the evaluators put beside a predicted call.
  const out = new Map();
  for (const p of partsOf(task.blocks, "calls")) {
    for (const [si, ci, key, text] of p.labels || []) {
      const at = si + "," + ci;
      if (!out.has(at)) out.set(at, []);
      out.get(at).push([String(key), String(text)]);
    }
  }
  return out;
}

function tagsOf(task) {
  // key -> text of what the task list filters this task by.
  const out = new Map();
  for (const p of partsOf(task.blocks, "tags")) for (const [key, text] of p.tags || []) out.set(String(key), String(text));
  return out;
}

// M3-Bench run viewer: a task's whole transcript (in data/x/<model>/<n>.js, loaded with its page): the dialogue in
// order, each step's calls with their arguments, what each tool returned (long results folded) and the files it
// produced, the images the agent was shown, the turns of a multi-turn task. engine/viewer/transcript.py says
// what its items are. An image is a file of the site's media/ folder; one the build did not take is named with why.
"use strict";

const FOLD_LINES = 14;  // lines of a long text shown before "show all"
const FOLD_CHARS = 1500;  // characters of a long text shown before "show all"
const PHASES = { prepare: "chooses the step's tools", process: "calls", decision: "decides whether it is done", final: "final reply" };

const transcriptOf = (slug, t) => !Array.isArray(t.x) ? Promise.resolve(null)
  : need("x", slug + "/" + t.x[0], "data/x/" + encodeURIComponent(slug) + "/" + t.x[0] + ".js").then((chunk) => chunk[t.x[1]] || null);

function foldedText(text, cls) {
  // A text in a <pre>; a long one cut to its first lines with a button for the rest.
  text = String(text ?? "");
  const lines = text.split("\n");
  const long = lines.length > FOLD_LINES || text.length > FOLD_CHARS;
  const head = long ? lines.slice(0, FOLD_LINES).join("\n").slice(0, FOLD_CHARS) + "\u2026" : text;
  const pre = h("pre", { class: cls || null }, head);
  if (!long) return pre;
  const more = `show all (${lines.length.toLocaleString()} lines, ${text.length.toLocaleString()} characters)`;
  const button = h("button", { class: "expand", type: "button" }, more);
  button.addEventListener("click", () => {
    const open = button.dataset.open === "1";
    pre.textContent = open ? head : text;
    button.textContent = open ? more : "show less";
    button.dataset.open = open ? "0" : "1";
    window.dispatchEvent(new Event("resize"));
  });
  return h("div", { class: "folded" }, pre, button);
}

function mediaEl(f, seen) {
  // An image of the site (its thumbnail opens the picture; one `seen` above in the transcript just named), a file
  // that is no image, or a file not shown and why.
  if (f.src && seen && seen.has(f.src)) return h("figure", { class: "shot again" }, h("a", { href: f.src, target: "_blank", rel: "noopener" }, f.name),
    h("span", { class: "note" }, " (shown above)"));
  if (f.src && seen) seen.add(f.src);
  if (f.src) return h("figure", { class: "shot" }, h("a", { href: f.src, target: "_blank", rel: "noopener" },
    h("img", { src: f.src, alt: f.name, loading: "lazy" })), h("figcaption", {}, f.name));
  if (f.refused) return h("figure", { class: "shot refused", title: "not in the site: " + f.refused },
    h("div", { class: "placeholder" }, "not shown: " + f.refused), h("figcaption", {}, f.name));
  return h("figure", { class: "shot file" }, h("div", { class: "placeholder" }, "file"), h("figcaption", {}, f.name));
}

const mediaList = (files, label, seen) => files && files.length ? h("div", { class: "media" },
  label ? h("div", { class: "note" }, label) : null, files.map((f) => mediaEl(f, seen))) : null;

function returnedEl(c, seen) {
  // What a call returned: is_error, its duration, the text (long ones folded) and the files it produced.
  if (!c) return null;
  return h("div", { class: "returned" + (c.e ? " error" : "") },
    h("div", { class: "returned-head" }, "returned", c.e ? h("span", { class: "badge is-error" }, "is_error") : null,
      c.d !== undefined ? h("span", { class: "note" }, ` ${c.d < 1 ? (c.d * 1000).toFixed(0) + " ms" : c.d.toFixed(2) + " s"}`) : null),
    c.r === null || c.r === undefined ? h("p", { class: "note" }, "no result recorded") : foldedText(c.r, "result"),
    mediaList(c.f, null, seen));
}

function returnedFold(c) {
  // Under a predicted call of the alignment: what it returned, folded to its first line.
  if (!c || (c.r === null || c.r === undefined) && !c.f) return null;
  const first = String(c.r ?? "").slice(0, 400).replace(/\s+/g, " ").trim();
  const d = h("details", { class: "returned-fold" + (c.e ? " error" : "") },
    h("summary", {}, h("span", { class: "note" }, "returned "), clip(first, 90), c.f ? h("span", { class: "note" }, ` \u00b7 ${c.f.length} file(s)`) : null),
    returnedEl(c));
  d.addEventListener("toggle", () => window.dispatchEvent(new Event("resize")));
  return d;
}

function goTo(id) {
  // Scroll to an element of the page (addresses after # are the viewer's routes, so no in-page anchors).
  return (e) => { e.preventDefault(); const el = document.getElementById(id); if (el) { el.scrollIntoView({ block: "center" }); el.classList.add("flash"); setTimeout(() => el.classList.remove("flash"), 1200); } };
}

function transcriptEl(x, t, slug) {
  // The items in order (module doc of engine/viewer/transcript.py); the step items draw the model's calls.
  const starts = [];
  let n = 0;
  for (const calls of t.steps) { starts.push(n); n += calls.length; }
  const pMatch = new Map(t.matches.map((m) => [m[1], m]));
  const labels = callLabels(t);
  const turns = x.items.some((it) => it[0] === "prompt" && it[1]);
  let prompts = 0;
  const seen = new Set();  // the images drawn so far: a later one of the same file is named
  const step = (si) => h("section", { class: "x-step", id: "x-step-" + si },
    h("div", { class: "step-no" }, `step ${si + 1} \u00b7 ${t.steps[si].length} call${t.steps[si].length === 1 ? "" : "s"}` +
      (t.steps[si].length > 1 ? " (run in parallel)" : "")),
    t.steps[si].map(([tool, args], ci) => {
      const i = starts[si] + ci, m = pMatch.get(i), never = (t.unmade || []).includes(i);
      const marks = (labels.get(si + "," + ci) || []).filter(([key]) => !(never && key === "illegal_calling"));
      return h("div", { class: "x-call", id: "x-call-" + i },
        h("div", { class: "call-head" }, h("span", { class: "idx" }, "#" + i), h("span", { class: "tool" }, tool),
          never ? h("span", { class: "badge o-illegal" }, "not made (illegal format)")
            : m ? h("span", { class: "badge " + (m[3] ? "strong" : "weak") }, (m[3] ? "strong " : "weak ") + m[2].toFixed(3))
            : h("span", { class: "badge unmatched" }, "unmatched"),
          marks.map(([key, text]) => h("span", { class: "badge outcome o-" + key }, clip(text, 40))),
          h("a", { href: "#", class: "to-pair", onclick: goTo("pred-" + i), title: "this call in the alignment above" }, "\u2191 alignment")),
        argsEl(args), returnedEl((x.calls[si] || [])[ci], seen));
    }));
  const out = x.items.map((it) => {
    switch (it[0]) {
      case "system": return h("details", { class: "msg system" }, h("summary", {}, h("span", { class: "who" }, "system"),
        h("span", { class: "note" }, ` ${it[1].length.toLocaleString()} characters`)), h("pre", {}, it[1]));
      case "prompt": prompts += 1; return h("div", { class: "msg user" + (turns ? " turn" : "") },
        turns ? h("h3", { class: "turn-head" }, "Turn " + (it[1] || prompts)) : null,
        h("div", { class: "who" }, "user"), foldedText(it[2]), mediaList(it[3], "images given with it", seen));
      case "harness": return h("div", { class: "msg harness" }, h("details", {}, h("summary", {}, h("span", { class: "who" }, "prompt"), " ",
        clip(it[1], 120), h("span", { class: "note" }, ` ${it[2].length.toLocaleString()} characters`)), h("pre", {}, it[2])),
        mediaList(it[3], "images shown to the agent with this prompt", seen));
      case "agent": return h("div", { class: "msg agent" + (it[1] === "final" ? " final" : "") },
        h("div", { class: "who" }, "agent", it[1] ? h("span", { class: "phase" }, " \u00b7 " + it[1]) : null,
          it[1] && PHASES[it[1]] ? h("span", { class: "note" }, " (" + PHASES[it[1]] + ")") : null),
        foldedText(it[2], "reply"), it[3] ? foldedText(JSON.stringify(it[3], null, 1)) : null);
      case "tool": return h("div", { class: "msg tool" }, h("div", { class: "who" }, "tool", it[1] ? " \u00b7 " + it[1] : ""), foldedText(it[2], "result"));
      case "step": return step(it[1]);
      default: return h("div", { class: "msg other" }, h("div", { class: "who" }, String(it[1])), foldedText(it[2]));
    }
  });
  const u = x.usage;
  return h("section", { id: "transcript" }, h("h2", {}, "Transcript"),
    u ? h("p", { class: "note", id: "usage" }, ["prompt_tokens", "completion_tokens", "total_tokens", "requests"].filter((k) => u[k] !== undefined)
      .map((k) => `${k.replace("_", " ")} ${u[k].toLocaleString()}`).join(" \u00b7 ")) : null, out);
}

const noTranscript = () => h("section", { id: "transcript" }, h("h2", {}, "Transcript"), h("p", { class: "note" },
  "The prediction file records neither a dialogue nor what the tools returned for this task (the published format holds the calls only)."));

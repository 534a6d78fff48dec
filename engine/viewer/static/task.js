// M3-Bench run viewer: a task (its alignment drawn, what the evaluators show of it) and a task over all models.
"use strict";

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

function callsColumn(side, steps, matchOf, otherCall, labels, errors, unmade, returned) {
  // unmade: the flat indices of predicted calls never made (illegal format), shown so and never as matched;
  // returned: per step and call what the tool returned (the task's transcript), folded under the call
  let flat = 0;
  const never = new Set(unmade || []);
  return h("div", { class: "col " + side }, h("h3", {}, side === "gt" ? "Reference steps" : "Predicted steps"),
    steps.length ? steps.map((calls, si) => h("div", { class: "step" }, h("div", { class: "step-no" }, "step " + (si + 1)),
      calls.map(([tool, args], ci) => {
        const i = flat++, gone = never.has(i), m = !gone && matchOf && matchOf.get(i);
        const marks = labels ? (labels.get(si + "," + ci) || []).filter(([key]) => !(gone && key === "illegal_calling")) : [];
        const state = gone ? " not-made" : !matchOf ? "" : m ? " matched " + (m[3] ? "strong" : "weak") : " unmatched";
        return h("div", { class: "call" + state, id: side + "-" + i, "data-call": side + i },
          h("div", { class: "call-head" }, h("span", { class: "idx" }, "#" + i), h("span", { class: "tool" }, tool),
            gone ? h("span", { class: "badge o-illegal not-made", title: "its arguments were not a JSON object: recorded as written, never run; a predicted call that never matches" }, "not made (illegal format)")
              : m ? h("span", { class: "badge " + (m[3] ? "strong" : "weak") }, (m[3] ? "strong " : "weak ") + m[2].toFixed(3))
              : matchOf ? h("span", { class: "badge unmatched" }, "unmatched") : null,
            marks.map(([key, text]) => h("span", { class: "badge outcome o-" + key }, clip(text, 40))),
            errorBadge(errors && errors[si] ? errors[si][ci] : null)),
          argsEl(args, m ? otherCall(m) : undefined), returned ? returnedFold((returned[si] || [])[ci]) : null);
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
  svg.setAttribute("height", 0);  // the columns alone give the height (a fold closed since shrinks it)
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

function taskHead(m, t, ref) {
  // The image, the question, the task's metrics and the legend.
  return h("div", { class: "task-head" },
    ref.image_file ? h("img", { class: "task-image", src: ref.image_file, alt: ref.image }) : null,
    h("div", {}, h("p", { class: "question" }, ref.question),
      ref.image && !ref.image_file ? h("p", { class: "note" }, `image ${ref.image} (not found when the site was built)`) : null,
      h("table", { class: "metrics" }, h("tbody", {}, h("tr", {}, m.metrics.map((k) => h("th", {}, k[1]))),
        h("tr", {}, m.metrics.map((k, i) => metricCell(m, t, i))))),
      oneStepNote(m, [t]),
      t.reference ? h("p", { class: "note", id: "reference" }, `aligned against reference ${t.reference.index + 1} of ${t.reference.of}`,
        t.reference.index && !t.reference.steps ? " (not in the run's reference file: its steps are not shown)" : "") : null,
      h("p", { class: "legend" }, h("span", { class: "badge strong" }, `strong \u2265 ${m.tau_strong}`), " ",
        h("span", { class: "badge weak" }, `weak \u2265 ${m.tau_weak}`), " ", h("span", { class: "badge unmatched" }, "unmatched"),
        " highlighted arguments differ from the matched call's ",
        t.error ? h("span", { class: "badge o-illegal", id: "task-error" }, `failed (${t.error[0]}): ${t.error[1]}`) : null)));
}

function otherValues(extra) {
  // Per-task values of the results no evaluator shows, as they are.
  const entries = Object.entries(extra || {});
  return entries.length ? h("section", { id: "extra" }, h("h2", {}, "Other evaluations"),
    entries.map(([k, v]) => h("div", {}, h("h3", {}, k), h("pre", {}, JSON.stringify(v, null, 1))))) : null;
}

async function viewTask(app, slug, id) {
  const [m, gt] = await Promise.all([model(slug), reference()]);
  const t = own(m.tasks, id), ref = own(gt, id);
  if (!t || !ref) throw new NotFound(`task ${id} is not in ${m.name}'s results`);
  const x = await transcriptOf(slug, t);
  crumbs(["Leaderboard", "#/"], [m.name, modelHref(slug, (JSON.parse(sessionStorage.getItem("m3v:" + slug) || "{}").query) || "")], [id]);
  const gMatch = new Map(t.matches.map((x) => [x[0], x])), pMatch = new Map(t.matches.map((x) => [x[1], x]));
  const other = t.reference && t.reference.index > 0;  // aligned against a later reference of the task
  const gSteps = other ? t.reference.steps || [] : ref.steps, gFlat = gSteps.flat(), pFlat = t.steps.flat();
  const pair = h("div", { class: "pair", id: "pair" },
    callsColumn("gt", gSteps, gMatch, (x) => pFlat[x[1]] ? pFlat[x[1]][1] : undefined, null),
    h("div", { class: "lines" }, document.createElementNS("http://www.w3.org/2000/svg", "svg")),
    callsColumn("pred", t.steps, pMatch, (c) => gFlat[c[0]] ? gFlat[c[0]][1] : undefined, callLabels(t), t.errors, t.unmade,
      x ? x.calls : null));
  fill(app, taskNav(slug, id, m), h("h1", {}, `${m.name} \u00b7 task ${id}`, h("span", { class: "family" }, ref.family)),
    taskHead(m, t, ref), pair, x ? transcriptEl(x, t, slug) : noTranscript(), blocksEl(t.blocks, slug), otherValues(t.extra),
    t.final_reply && !x ? h("section", {}, h("h2", {}, "Final reply"), h("pre", { class: "reply" }, t.final_reply)) : null);
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
        callsColumn("pred", runs[i].steps, null, () => undefined, callLabels(runs[i]), runs[i].errors, runs[i].unmade)) : null)));
}

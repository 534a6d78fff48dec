// M3-Bench pages' DOM helper, loaded before the site's scripts (core.js first) and the runs page's (runs.js).
// h(tag, attrs, ...children): an element; attributes "on<event>" become listeners, "class" the class name,
// true an empty attribute (null, undefined and false are left out); children are nodes or text, nested lists
// flattened. Every text goes in as a text node or an attribute value, never as markup.
"use strict";

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

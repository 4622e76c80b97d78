// thund ui: the pipeline graph, its runs and each dataset's state, polled from the server's
// JSON API (`/api/pipeline`, `/api/state`, `/api/runs/ID`, `/api/datasets/NAME`). No
// dependencies: everything is drawn with the DOM and SVG.
"use strict";

const POLL_MS = 500;
const NODE_W = 200, NODE_H = 56, GAP_X = 90, GAP_Y = 22, PAD = 20;
const SVG_NS = "http://www.w3.org/2000/svg";

let pipeline = null;  // /api/pipeline
let status = null;    // /api/state
let selected = null;  // {kind: "dataset" | "run", id}
let seenEvents = -1;

/// An element with attributes and children (strings become text nodes, so nothing is parsed as
/// HTML).
function el(tag, attrs = {}, ...children) {
  const e = tag.startsWith("svg:") ? document.createElementNS(SVG_NS, tag.slice(4)) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined) continue;
    if (k === "onclick") e.addEventListener("click", v);
    // Through the CSSOM: the page's Content-Security-Policy refuses inline style attributes.
    else if (k === "style") e.style.cssText = v;
    else e.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    e.append(typeof c === "string" || typeof c === "number" ? String(c) : c);
  }
  return e;
}

async function getJson(path) {
  const r = await fetch(path, {cache: "no-store"});
  const body = await r.json();
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}

function problem(message) {
  const p = document.getElementById("problem");
  p.hidden = !message;
  p.textContent = message || "";
}

const fmtMs = ms => ms === null || ms === undefined ? "—" : ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(2)} s`;
const fmtTime = t => t ? t.replace("T", " ").replace(/\.\d+Z$/, "Z") : "—";
const stateOf = name => (status && status.datasets[name] && status.datasets[name].state) || null;
const stateSpan = s => el("span", {class: `state s-${s || "none"}`}, s || "never run");

// ---- the graph ------------------------------------------------------------------------------

/// Layers left to right as the server computed them; within a layer, datasets sorted by the
/// mean position of their inputs (one pass, left to right), which keeps most edges straight.
function layout(p) {
  const layers = [];
  for (const d of p.datasets) (layers[d.layer] = layers[d.layer] || []).push(d);
  const row = {};
  layers.forEach((layer, x) => {
    if (!layer) return;
    const key = d => {
      const ys = d.inputs.filter(i => i in row).map(i => row[i]);
      return ys.length ? ys.reduce((a, b) => a + b, 0) / ys.length : Infinity;
    };
    layer.sort((a, b) => key(a) - key(b));
    layer.forEach((d, y) => { row[d.name] = y; });
  });
  const pos = {};
  let width = 0, height = 0;
  layers.forEach((layer, x) => (layer || []).forEach((d, y) => {
    pos[d.name] = {x: PAD + x * (NODE_W + GAP_X), y: PAD + y * (NODE_H + GAP_Y)};
    width = Math.max(width, pos[d.name].x + NODE_W + PAD);
    height = Math.max(height, pos[d.name].y + NODE_H + PAD);
  }));
  return {pos, width, height};
}

function drawGraph() {
  const svg = document.getElementById("graph");
  svg.replaceChildren();
  const {pos, width, height} = layout(pipeline);
  svg.setAttribute("width", width);
  svg.setAttribute("height", height);
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  const defs = el("svg:defs", {}, el("svg:marker", {id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5,
    markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse"}, el("svg:path", {d: "M0,0 L10,5 L0,10 z", fill: "#9aa3b1"})));
  svg.append(defs);
  for (const e of pipeline.edges) {
    const a = pos[e.from], b = pos[e.to];
    if (!a || !b) continue;
    const x1 = a.x + NODE_W, y1 = a.y + NODE_H / 2, x2 = b.x - 2, y2 = b.y + NODE_H / 2, mid = (x1 + x2) / 2;
    svg.append(el("svg:path", {class: "edge", d: `M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2},${y2}`,
      "marker-end": "url(#arrow)", "data-from": e.from, "data-to": e.to}));
  }
  for (const d of pipeline.datasets) {
    const {x, y} = pos[d.name];
    const short = d.short.length > 26 ? d.short.slice(0, 25) + "…" : d.short;
    const g = el("svg:g", {class: "node", transform: `translate(${x},${y})`, "data-name": d.name, tabindex: 0,
        role: "button", onclick: () => select("dataset", d.name)},
      el("svg:title", {}, `${d.name} (${d.kind})`),
      el("svg:rect", {width: NODE_W, height: NODE_H}),
      el("svg:text", {x: 10, y: 20}, short),
      el("svg:text", {x: 10, y: 40, class: "kind"}, d.kind),
      el("svg:text", {x: NODE_W - 10, y: 40, "text-anchor": "end", class: "badge"}, ""));
    g.addEventListener("keydown", ev => { if (ev.key === "Enter") select("dataset", d.name); });
    svg.append(g);
  }
  paintStates();
}

/// Each node's last state: a `data-state` attribute (which the style colours) and its badge.
function paintStates() {
  for (const g of document.querySelectorAll("#graph .node")) {
    const s = stateOf(g.dataset.name);
    g.setAttribute("data-state", s || "none");
    g.classList.toggle("selected", !!selected && selected.kind === "dataset" && selected.id === g.dataset.name);
    const badge = g.querySelector(".badge");
    badge.textContent = s || "never run";
    badge.setAttribute("class", `badge s-${s || "none"}`);
  }
}

// ---- runs -----------------------------------------------------------------------------------

function drawRuns() {
  const body = document.querySelector("#runs tbody");
  const runs = [...status.runs].reverse();
  body.replaceChildren(...runs.map(r => el("tr", {"data-run": r.id, class: selected && selected.id === r.id ? "selected" : null,
      onclick: () => select("run", r.id)},
    el("td", {}, r.id), el("td", {}, r.backend), el("td", {}, fmtTime(r.started)),
    el("td", {class: "num"}, fmtMs(r.duration_ms)), el("td", {}, stateSpan(r.state)))));
  document.getElementById("no-runs").hidden = runs.length > 0;
  // The server lists the latest runs; older ones stay in the event log (`thund events --all`).
  const more = document.getElementById("more-runs");
  more.hidden = status.run_count <= runs.length;
  more.textContent = `The last ${runs.length} of ${status.run_count} runs; \`thund events --all\` shows every one.`;
  const last = runs[0];
  const live = !!last && last.state === "RUNNING";
  document.getElementById("live").hidden = !live;
  document.getElementById("latest").replaceChildren(...(last
    ? ["last run ", el("code", {}, last.id), " ", stateSpan(last.state)] : []));
}

// ---- the details panel ----------------------------------------------------------------------

function select(kind, id) {
  selected = {kind, id};
  paintStates();
  if (status) drawRuns();
  showDetails();
}

async function showDetails() {
  if (!selected) return;
  const panel = document.getElementById("details");
  try {
    const view = selected.kind === "dataset" ? await datasetView(selected.id) : await runView(selected.id);
    if (view) panel.replaceChildren(...view);
  } catch (e) {
    panel.replaceChildren(el("p", {class: "problem"}, String(e.message || e)));
  }
}

async function datasetView(name) {
  const d = pipeline.datasets.find(x => x.name === name);
  if (!d) return null;
  const s = (status && status.datasets[name]) || {};
  const stored = await getJson(`/api/datasets/${encodeURIComponent(name)}`);
  const out = [el("h2", {id: "details-title"}, d.short), el("div", {class: "where"}, d.name)];
  if (d.comment) out.push(el("p", {}, d.comment));
  out.push(el("dl", {},
    el("dt", {}, "kind"), el("dd", {id: "d-kind"}, d.kind),
    el("dt", {}, "state"), el("dd", {id: "d-state"}, stateSpan(s.state)),
    el("dt", {}, "row count"), el("dd", {id: "d-rows"}, stored.row_count === null || stored.row_count === undefined
      ? (s.rows !== undefined && s.rows !== null ? `${s.rows} (written by the last refresh)` : "—") : String(stored.row_count)),
    el("dt", {}, "last refresh"), el("dd", {id: "d-refresh"}, fmtTime(s.last_refresh)),
    el("dt", {}, "refreshed by"), el("dd", {id: "d-technique"}, s.refresh_technique || "—"),
    el("dt", {}, "duration"), el("dd", {id: "d-duration"}, fmtMs(s.duration_ms)),
    el("dt", {}, "defined at"), el("dd", {class: "where"}, d.location)));
  const columns = stored.schema || (d.columns.length ? d.columns.map(c => ({name: c.name, type: c.type})) : null);
  out.push(el("h3", {}, "schema"));
  out.push(columns
    ? el("table", {id: "d-schema"}, el("tr", {}, el("th", {}, "column"), el("th", {}, "type")),
        columns.map(c => el("tr", {}, el("td", {}, c.name), el("td", {}, c.type))))
    : el("p", {class: "hint"}, stored.why || "not stored yet"));
  if (d.expectations.length) {
    out.push(el("h3", {}, "expectations"));
    const measured = Object.fromEntries((s.expectations || []).map(x => [x.name, x]));
    out.push(el("table", {id: "d-expectations"},
      el("tr", {}, el("th", {}, "name"), el("th", {}, "on violation"), el("th", {}, "passed")),
      d.expectations.map(x => {
        const m = measured[x.name];
        // As the run summary writes it (never 100.0% with a failed row).
        const rate = m ? m.rate : "not run yet";
        return el("tr", {"data-expectation": x.name},
          el("td", {}, x.name, el("div", {class: "where"}, x.predicate)), el("td", {}, x.action),
          el("td", {class: "rate"}, m ? el("span", {class: "bar"}, el("span", {style: `width:${100 * m.pass_rate}%`})) : null,
            rate, m ? ` (${m.passed_records}/${m.passed_records + m.failed_records})` : ""));
      })));
  }
  if (s.error) {
    out.push(el("h3", {}, "last error"));
    out.push(el("pre", {class: "error", id: "d-error"}, s.error_snippet || s.error));
  }
  out.push(el("h3", {}, "definition"));
  for (const st of d.statements) {
    out.push(el("div", {class: "where"}, st.location));
    out.push(el("pre", {class: "sql"}, st.sql));
  }
  return out;
}

async function runView(id) {
  const r = await getJson(`/api/runs/${encodeURIComponent(id)}`);
  const out = [el("h2", {id: "details-title"}, `run ${r.id}`), el("dl", {},
    el("dt", {}, "backend"), el("dd", {}, r.backend),
    el("dt", {}, "state"), el("dd", {}, stateSpan(r.state)),
    el("dt", {}, "started"), el("dd", {}, fmtTime(r.started)),
    el("dt", {}, "duration"), el("dd", {}, fmtMs(r.duration_ms)))];
  if (r.error) out.push(el("pre", {class: "error"}, r.error));
  out.push(el("h3", {}, "flows"));
  out.push(el("table", {id: "r-flows"},
    el("tr", {}, el("th", {}, "dataset"), el("th", {}, "state"), el("th", {}, "rows"), el("th", {}, "time"),
      el("th", {}, "refresh")),
    r.flows.map(f => el("tr", {"data-flow": f.flow},
      el("td", {}, (f.dataset || f.flow).split(".").pop()), el("td", {}, stateSpan(f.state)),
      el("td", {class: "num"}, f.rows === null || f.rows === undefined ? "—" : String(f.rows)),
      el("td", {class: "num"}, fmtMs(f.duration_ms)),
      el("td", {class: "technique"}, f.refresh || "")))));
  for (const f of r.flows.filter(f => f.error)) {
    out.push(el("div", {class: "where"}, f.flow));
    out.push(el("pre", {class: "error"}, f.error_snippet || f.error));
  }
  return out;
}

// ---- polling --------------------------------------------------------------------------------

async function refresh() {
  try {
    const next = await getJson("/api/state");
    problem(null);
    if (next.events !== seenEvents) {
      // New events may come with edited SQL: reread the graph too.
      const first = pipeline === null;
      const p = await getJson("/api/pipeline");
      const shape = JSON.stringify([p.datasets.map(d => [d.name, d.layer, d.inputs]), p.edges]);
      const changed = first || shape !== JSON.stringify([pipeline.datasets.map(d => [d.name, d.layer, d.inputs]), pipeline.edges]);
      pipeline = p;
      status = next;
      seenEvents = next.events;
      document.getElementById("title").textContent = pipeline.name;
      document.title = `thund · ${pipeline.name}`;
      if (changed) drawGraph(); else paintStates();
      drawRuns();
      if (selected) showDetails();
    }
  } catch (e) {
    problem(`cannot reach thund ui: ${e.message || e}`);
  } finally {
    setTimeout(refresh, POLL_MS);
  }
}

refresh();

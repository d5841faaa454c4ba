// The weft inspector's page: plain JavaScript over the inspector's JSON API, live through
// the server-sent events of /api/feed. Every stored value is shown as text (textContent),
// never as HTML: what a model wrote cannot run here.
"use strict";

const view = { thread: null, tab: "runs", at: null, prefix: "", info: null, steps: {} };
const shown = { memory: new Map() };  // key -> updated step, to mark fresh rows

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "class") node.className = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (name === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function fill(node, ...children) {
  node.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined));
}

function json(value) {
  return typeof value === "string" ? value : JSON.stringify(value, null, 2);
}

function when(seconds) {
  if (!seconds) return "";
  return new Date(seconds * 1000).toLocaleTimeString();
}

function ms(value) {
  if (value === null || value === undefined) return "";
  if (value < 1) return `${value.toFixed(3)} ms`;
  return value < 1000 ? `${value.toFixed(1)} ms` : `${(value / 1000).toFixed(2)} s`;
}

function bytes(n) {
  return n < 1024 ? `${n} B` : `${(n / 1024).toFixed(1)} KiB`;
}

function showError(message) {
  const box = document.getElementById("error");
  box.textContent = message || "";
  box.hidden = !message;
}

async function api(path, options) {
  const response = await fetch(path, Object.assign({ credentials: "same-origin" }, options));
  let body = null;
  try { body = await response.json(); } catch (_) { body = null; }
  if (!response.ok) {
    const message = body && body.error ? body.error : `${response.status} ${response.statusText}`;
    const error = new Error(message);
    error.status = response.status;
    throw error;
  }
  return body;
}

function post(path, body) {
  return api(path, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
}

function enc(thread) { return encodeURIComponent(thread); }

// ------------------------------------------------------------------ the URL's hash

function readHash() {
  const params = new URLSearchParams(location.hash.slice(1));
  view.thread = params.get("thread");
  view.tab = params.get("tab") || "runs";
  const at = params.get("at");
  view.at = at === null || at === "" ? null : Number(at);
  view.prefix = params.get("prefix") || "";
}

function writeHash() {
  const params = new URLSearchParams();
  if (view.thread) params.set("thread", view.thread);
  params.set("tab", view.tab);
  if (view.at !== null) params.set("at", String(view.at));
  if (view.prefix) params.set("prefix", view.prefix);
  history.replaceState(null, "", "#" + params.toString());
}

// ------------------------------------------------------------------------- threads

let threadRows = [];

async function loadThreads() {
  const data = await api("/api/threads");
  threadRows = data.threads;
  for (const t of threadRows) view.steps[t.thread_id] = t.last_step;
  renderThreads();
  if (!view.thread && threadRows.length) select(threadRows[0].thread_id);
}

function renderThreads() {
  const list = document.getElementById("threads");
  list.replaceChildren(...threadRows.map((t) => el("li", {
    class: t.thread_id === view.thread ? "selected" : "",
    dataset: { thread: t.thread_id, step: String(t.last_step) },
    onclick: () => select(t.thread_id),
  },
    el("div", { class: "tid" }, t.thread_id),
    el("div", { class: "sub" },
      `${t.last_step} steps · ${when(t.updated_at)}`,
      t.parent_thread ? ` · fork of ${t.parent_thread}@${t.parent_step}` : "",
      t.forks.length ? ` · ${t.forks.length} fork(s)` : ""),
  )));
}

function select(thread) {
  if (thread !== view.thread) {
    view.thread = thread;
    view.at = null;
    shown.memory = new Map();
  }
  writeHash();
  renderThreads();
  refresh();
}

function currentThread() {
  return threadRows.find((t) => t.thread_id === view.thread) || null;
}

// ------------------------------------------------------------------------ the tabs

function setTab(tab) {
  showTab(tab);
  refresh();
}

function showTab(tab) {
  view.tab = tab;
  for (const button of document.querySelectorAll("#tabs button")) {
    button.classList.toggle("active", button.dataset.tab === tab);
  }
  for (const panel of document.querySelectorAll(".panel")) {
    panel.classList.toggle("active", panel.id === `panel-${tab}`);
  }
  writeHash();
}

let refreshing = null;
let again = false;

async function refresh() {
  if (refreshing) { again = true; return refreshing; }
  refreshing = (async () => {
    do {
      again = false;
      try {
        await render();
        showError("");
      } catch (error) {
        showError(error.message);
      }
    } while (again);
  })();
  try { await refreshing; } finally { refreshing = null; }
}

async function render() {
  const t = currentThread();
  document.getElementById("thread-title").textContent = view.thread || "Pick a thread";
  document.getElementById("thread-meta").textContent = t
    ? `${t.last_step} steps` + (t.first_step ? ` (kept from step ${t.first_step})` : "") +
      (t.parent_thread ? ` · forked from ${t.parent_thread} at step ${t.parent_step}` : "")
    : "";
  if (!view.thread) return;
  await renderPauseCount();
  const renderers = {
    runs: renderRuns, timeline: renderTimeline, state: renderState,
    memory: renderMemory, pauses: renderPauses, forks: renderForks,
  };
  await renderers[view.tab]();
}

// ------------------------------------------------------------------------ runs

async function renderRuns() {
  const data = await api(`/api/threads/${enc(view.thread)}/runs`);
  const panel = document.getElementById("panel-runs");
  if (!data.runs.length) {
    fill(panel, el("p", { class: "note" }, "No runs recorded in this thread."));
    return;
  }
  fill(panel, ...data.runs.map((run) => el("div", {
    class: "run", dataset: { run: run.run_id, status: run.status },
  },
    el("h3", {},
      el("span", { class: "mono" }, run.run_id), " ",
      el("span", { class: `status ${run.status}` }, run.status), " ",
      el("span", { class: "muted" },
        `${run.kind} · started ${when(run.started_at)}`,
        run.duration_ms !== null ? ` · ${ms(run.duration_ms)}` : "",
        run.step !== null ? ` · recorded at step ${run.step}` : "")),
    el("div", { class: "graph" }, run.nodes.map((node) => el("div", {
      class: `node ${node.status}`,
      dataset: { unit: node.unit, status: node.status },
      title: node.result ? `result: ${node.result}` : node.status,
      style: `--depth: ${node.depth}`,
      onclick: node.status === "waiting" ? () => setTab("pauses") : null,
    },
      el("div", { class: "name", title: node.unit }, node.label,
        node.unit.split("/").pop().replace(/#\d+$/, "") !== node.label
          ? el("span", { class: "unit" }, ` ${node.unit}`) : null),
      el("div", { class: "meta" }, node.status === "waiting" ? "waiting for an answer" : node.status,
        node.duration_ms !== null ? ` · ${ms(node.duration_ms)}` : ""),
      el("div", { class: "track" }, bar(run, node)),
    ))),
    run.output ? el("div", { class: "note" }, "output: ", el("span", { class: "mono" }, run.output)) : null,
  )));
}

// Where a unit ran within its run, as a bar over the run's span of time: units that ran
// side by side overlap; a unit not reached yet has none.
function bar(run, node) {
  if (!node.started_at) return null;
  const starts = run.nodes.filter((n) => n.started_at).map((n) => n.started_at);
  const ends = run.nodes.filter((n) => n.started_at)
    .map((n) => n.started_at + (n.duration_ms || 0) / 1000);
  const t0 = Math.min(...starts, run.started_at || Infinity);
  const t1 = Math.max(...ends, t0 + 1e-6);
  const left = ((node.started_at - t0) / (t1 - t0)) * 100;
  const width = Math.max((((node.duration_ms || 0) / 1000) / (t1 - t0)) * 100, 0.8);
  return el("div", {
    class: "bar", style: `left: ${Math.min(left, 99.2).toFixed(2)}%; width: ${Math.min(width, 100 - Math.min(left, 99.2)).toFixed(2)}%`,
    title: `started ${when(node.started_at)}, ${ms(node.duration_ms)}`,
  });
}

// -------------------------------------------------------------------- timeline

// The events shown, per thread: the newest WINDOW at first, then each new one as the feed
// says the thread moved (only those are fetched), and older ones on request.
const WINDOW = 1000;
const loaded = { thread: null, events: [], last: 0 };

async function fetchEvents(since, limit) {
  const q = `since=${since}&limit=${Math.max(limit, 1)}`;
  return (await api(`/api/threads/${enc(view.thread)}/timeline?${q}`)).events;
}

async function renderTimeline() {
  const t = currentThread();
  const first = t ? t.first_step : 0;
  const last = t ? t.last_step : 0;
  if (loaded.thread !== view.thread || last < loaded.last) {
    const since = Math.max(first, last - WINDOW);
    loaded.thread = view.thread;
    loaded.events = await fetchEvents(since, last - since);
  } else if (last > loaded.last) {
    loaded.events = loaded.events.concat(await fetchEvents(loaded.last, last - loaded.last));
  }
  loaded.last = last;
  const oldest = loaded.events.length ? loaded.events[0].step : last + 1;
  const panel = document.getElementById("panel-timeline");
  const rows = loaded.events.slice().reverse().map((e) => el("tr", {
    class: "clickable", dataset: { step: String(e.step) },
    title: "show the state at this step",
    onclick: () => { view.at = e.step; setTab("state"); },
  },
    el("td", { class: "mono" }, e.step),
    el("td", {}, when(e.time)),
    el("td", { class: "mono" }, e.run_id),
    el("td", {}, e.op),
    el("td", { class: "mono" }, e.key),
    el("td", {}, e.source || ""),
    el("td", { class: "mono value" }, e.record ? `${e.record} ` : "", e.preview),
  ));
  const older = oldest - 1 > first ? el("button", {
    id: "timeline-older", type: "button",
    onclick: async () => {
      const since = Math.max(first, oldest - 1 - WINDOW);
      loaded.events = (await fetchEvents(since, oldest - 1 - since)).concat(loaded.events);
      refresh();
    },
  }, `Load steps ${Math.max(first, oldest - 1 - WINDOW) + 1}–${oldest - 1}`) : null;
  fill(panel, el("table", { id: "timeline-table" },
    el("thead", {}, el("tr", {}, ["step", "time", "run", "op", "key", "source", "value"].map(
      (h) => el("th", {}, h)))),
    el("tbody", {}, rows)), older);
}

// ----------------------------------------------------------------------- state

async function renderState() {
  const t = currentThread();
  const last = t ? t.last_step : 0;
  const first = t ? t.first_step : 0;
  const at = view.at === null ? last : Math.min(view.at, last);
  const stepInput = document.getElementById("state-step");
  const range = document.getElementById("state-range");
  stepInput.min = range.min = String(first);
  stepInput.max = range.max = String(last);
  // what the user is typing in stays as it is
  if (document.activeElement !== stepInput) stepInput.value = String(at);
  if (document.activeElement !== range) range.value = String(at);
  const prefixInput = document.getElementById("state-prefix");
  if (document.activeElement !== prefixInput) prefixInput.value = view.prefix;
  const q = `at=${at}&prefix=${encodeURIComponent(view.prefix)}`;
  const [state, diff] = await Promise.all([
    api(`/api/threads/${enc(view.thread)}/state?${q}`),
    at > first ? api(`/api/threads/${enc(view.thread)}/diff?at=${at}`) : Promise.resolve(null),
  ]);
  const diffBox = document.getElementById("state-diff");
  if (!diff) {
    diffBox.replaceChildren(el("p", { class: "note" }, "The first step: nothing to compare with."));
  } else {
    diffBox.replaceChildren(
      el("p", { class: "note" }, diff.events.map((e) =>
        `step ${e.step}: ${e.op} ${e.key} by ${e.source || "?"} (run ${e.run_id})`).join("; ")),
      el("table", { id: "diff-table" },
        el("thead", {}, el("tr", {}, ["key", "change", "before", "after"].map((h) => el("th", {}, h)))),
        el("tbody", {}, diff.changes.map((c) => el("tr", { dataset: { key: c.key, change: c.change } },
          el("td", { class: "mono" }, c.key),
          el("td", { class: `change-${c.change}` }, c.change),
          el("td", { class: "mono value" }, c.before === null ? "" : json(c.before)),
          el("td", { class: "mono value" }, c.after === null ? "" : json(c.after)),
        )))));
  }
  document.getElementById("state-entries").replaceChildren(el("table", { id: "state-table" },
    el("thead", {}, el("tr", {}, ["key", "value", "source", "step"].map((h) => el("th", {}, h)))),
    el("tbody", {}, state.entries.map((e) => el("tr", { dataset: { key: e.key } },
      el("td", { class: "mono" }, e.key),
      el("td", { class: "mono value" }, json(e.value)),
      el("td", {}, e.source || ""),
      el("td", { class: "mono" }, e.step),
    )))));
}

function stateAt(step) {
  view.at = Number.isFinite(step) ? step : null;
  writeHash();
  refresh();
}

// ---------------------------------------------------------------------- memory

async function renderMemory() {
  const data = await api(`/api/threads/${enc(view.thread)}/memory`);
  const panel = document.getElementById("panel-memory");
  const before = shown.memory;
  const seen = new Map();
  const groups = Object.entries(data.kinds).map(([kind, entries]) => el("div", {
    class: "kind-group", dataset: { kind },
  },
    el("h3", {}, `${kind} (${entries.length})`),
    entries.length ? el("table", {},
      el("thead", {}, el("tr", {}, ["key", "title", "description", "source", "size", "updated", "value"]
        .map((h) => el("th", {}, h)))),
      el("tbody", {}, entries.map((e) => {
        seen.set(e.key, e.updated_at);
        const fresh = before.size && before.get(e.key) !== e.updated_at;
        return el("tr", { class: fresh ? "fresh" : "", dataset: { key: e.key } },
          el("td", { class: "mono" }, e.key),
          el("td", { class: "title" }, e.title || ""),
          el("td", { class: "description" }, e.description || ""),
          el("td", { class: "source" }, e.source || ""),
          el("td", { class: "size" }, bytes(e.value_bytes)),
          el("td", {}, when(e.updated_at)),
          el("td", { class: "mono value" }, json(e.value)));
      }))) : el("p", { class: "note" }, "No entries."),
  ));
  shown.memory = seen.size ? seen : new Map([["", 0]]);
  fill(panel, el("p", { class: "note" }, `as of step ${data.step}`), ...groups);
}

// ---------------------------------------------------------------------- pauses

async function renderPauseCount() {
  const data = await api(`/api/threads/${enc(view.thread)}/pauses`);
  const waiting = data.pauses.filter((p) => !p.answered).length;
  document.getElementById("pause-count").textContent = waiting ? `(${waiting})` : "";
  return data;
}

async function renderPauses() {
  const data = await renderPauseCount();
  const panel = document.getElementById("panel-pauses");
  const writes = view.info && view.info.allow_writes;
  if (!data.pauses.length) {
    fill(panel, el("p", { class: "note" }, "No run of this thread asked a question."));
    return;
  }
  fill(panel, 
    writes ? null : el("p", { class: "note", id: "read-only-note" },
      "Read-only: start the inspector with --allow-writes to answer here."),
    ...data.pauses.map((p) => {
      const box = el("div", { class: `pause ${p.answered ? "answered" : ""}`, dataset: { pause: p.id } },
        el("div", {}, el("strong", {}, p.label || p.unit), " in run ",
          el("span", { class: "mono" }, p.run_id), ` · asked ${when(p.asked_at)}`),
        el("pre", { class: "question" }, json(p.question)));
      if (p.answered) {
        box.append(el("div", { class: "ok" }, `answered ${when(p.answered_at)}: `,
          el("span", { class: "mono answer" }, json(p.answer))));
        return box;
      }
      const input = el("textarea", {
        name: "answer", placeholder: "the answer: JSON, or plain text", disabled: !writes,
      });
      const status = el("span", { class: "note status-line" });
      const form = el("form", {
        class: "answer-form",
        onsubmit: async (event) => {
          event.preventDefault();
          let answer = input.value;
          try { answer = JSON.parse(input.value); } catch (_) { answer = input.value; }
          status.textContent = "sending…";
          try {
            await post(`/api/threads/${enc(view.thread)}/answer`, { id: p.id, answer });
            status.textContent = "answered: the run goes on when its process runs it again";
            refresh();
          } catch (error) {
            status.textContent = `refused: ${error.message}`;
          }
        },
      }, input, el("div", { class: "row" },
        el("button", { type: "submit", disabled: !writes }, "Answer"), status));
      box.append(form);
      return box;
    }));
}

// ----------------------------------------------------------------------- forks

async function renderForks() {
  const t = currentThread();
  const panel = document.getElementById("panel-forks");
  if (!t) { fill(panel, ); return; }
  const writes = view.info && view.info.allow_writes;
  const children = threadRows.filter((r) => r.parent_thread === t.thread_id);
  const step = el("input", { type: "number", name: "step", min: String(t.first_step),
    max: String(t.last_step), value: String(view.at === null ? t.last_step : view.at) });
  const status = el("span", { class: "note" });
  fill(panel, 
    t.parent_thread ? el("p", {}, "Forked from ",
      el("a", { href: "#", onclick: (e) => { e.preventDefault(); select(t.parent_thread); } },
        t.parent_thread), ` at step ${t.parent_step}.`) : null,
    el("h3", {}, `Forks of this thread (${children.length})`),
    children.length ? el("ul", { id: "fork-list" }, children.map((c) => el("li", { dataset: { thread: c.thread_id } },
      el("a", { href: "#", onclick: (e) => { e.preventDefault(); select(c.thread_id); } }, c.thread_id),
      ` at step ${c.parent_step} · ${c.last_step} steps`))) : el("p", { class: "note" }, "None."),
    el("h3", {}, "Fork at a step"),
    writes ? null : el("p", { class: "note" }, "Read-only: start the inspector with --allow-writes to fork here."),
    el("form", {
      id: "fork-form",
      onsubmit: async (event) => {
        event.preventDefault();
        try {
          const made = await post(`/api/threads/${enc(view.thread)}/fork`,
            { step: Number(step.value) });
          status.textContent = `forked: ${made.thread_id}`;
          await loadThreads();
        } catch (error) {
          status.textContent = `refused: ${error.message}`;
        }
      },
    },
      el("div", { class: "row" }, el("label", {}, "Step ", step)),
      el("div", { class: "row" }, el("button", { type: "submit", disabled: !writes }, "Fork"), status)));
}

// ------------------------------------------------------------------------ live

function follow() {
  const live = document.getElementById("live");
  const badge = (text, on) => { live.textContent = text; live.className = `badge ${on ? "on" : "off"}`; };
  const source = new EventSource("/api/feed");
  source.addEventListener("open", () => badge("live", true));
  source.addEventListener("error", () => badge("reconnecting…", false));
  source.addEventListener("problem", (event) => {
    badge("database unreadable", false);
    showError(JSON.parse(event.data).error);
  });
  source.addEventListener("threads", async (event) => {
    badge("live", true);
    const steps = JSON.parse(event.data);
    const known = Object.keys(view.steps);
    const moved = Object.keys(steps).length !== known.length ||
      Object.entries(steps).some(([id, step]) => view.steps[id] !== step);
    const mine = view.thread && steps[view.thread] !== view.steps[view.thread];
    if (!moved) return;
    live.dataset.updated = String(Date.now());
    try { await loadThreads(); } catch (error) { showError(error.message); return; }
    if (mine) refresh();
  });
}

// ------------------------------------------------------------------------ start

async function start() {
  readHash();
  for (const button of document.querySelectorAll("#tabs button")) {
    button.addEventListener("click", () => setTab(button.dataset.tab));
  }
  const stepInput = document.getElementById("state-step");
  stepInput.addEventListener("change", () => stateAt(parseInt(stepInput.value, 10)));
  const range = document.getElementById("state-range");
  range.addEventListener("input", () => stateAt(parseInt(range.value, 10)));
  document.getElementById("state-latest").addEventListener("click", () => stateAt(NaN));
  const prefix = document.getElementById("state-prefix");
  prefix.addEventListener("change", () => { view.prefix = prefix.value; writeHash(); refresh(); });
  document.getElementById("state-form").addEventListener("submit", (e) => {
    e.preventDefault();
    view.prefix = prefix.value;
    stateAt(parseInt(stepInput.value, 10));
  });
  try {
    view.info = await api("/api/info");
  } catch (error) {
    showError(error.message);
    return;
  }
  document.getElementById("location").textContent = view.info.location;
  const mode = document.getElementById("mode");
  mode.textContent = view.info.allow_writes ? "writes allowed" : "read-only";
  showTab(view.tab);
  const chosen = view.thread;  // from the URL; else loadThreads picks the newest thread
  await loadThreads().catch((error) => showError(error.message));
  if (chosen) refresh();
  follow();
}

start();

// temco's trace viewer: a page Jaeger serves as its UI assets on the local stack
// (internal/dev/devstack/traceview.go). It reads Jaeger's query API v3 on the same
// origin: the services, a service's recent traces and one trace's spans, as OTLP JSON.
// No build step and no dependencies; everything shown is set as text, never as HTML.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const form = $("search"), serviceSel = $("service"), rangeSel = $("range"), statusEl = $("status");
  const tracesBody = $("traces").querySelector("tbody");
  const traceSection = $("trace"), spansBody = $("spans").querySelector("tbody");
  const defaultService = "temco-api";
  const maxTraces = 50;

  function el(tag, props, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (k === "class") e.className = v;
      else if (k === "text") e.textContent = v;
      else if (k.startsWith("data-") || k.startsWith("aria-") || k === "scope" || k === "colspan") e.setAttribute(k, v);
      else e[k] = v;
    }
    for (const c of children) e.append(c);
    return e;
  }

  function say(text) { statusEl.textContent = text; }

  // getJSON fetches a path of the API (relative to the page's base); a 404 is "nothing".
  async function getJSON(path) {
    const resp = await fetch(path, { headers: { Accept: "application/json" } });
    if (resp.status === 404) return null;
    if (!resp.ok) throw new Error("GET " + path + ": " + resp.status + " " + resp.statusText);
    return resp.json();
  }

  // Nanoseconds since the epoch arrive as decimal strings, beyond a double's precision:
  // they are kept as BigInt and only differences become numbers.
  const nanos = (s) => BigInt(s || "0");

  function anyValue(v) {
    if (!v) return "";
    if ("stringValue" in v) return v.stringValue;
    if ("intValue" in v) return String(v.intValue);
    if ("doubleValue" in v) return String(v.doubleValue);
    if ("boolValue" in v) return String(v.boolValue);
    if ("bytesValue" in v) return v.bytesValue;
    if ("arrayValue" in v) return "[" + (v.arrayValue.values || []).map(anyValue).join(", ") + "]";
    if ("kvlistValue" in v) return "{" + (v.kvlistValue.values || []).map((kv) => kv.key + "=" + anyValue(kv.value)).join(", ") + "}";
    return "";
  }

  // OTLP's enums arrive as numbers (or, from other encoders, as their names).
  const kinds = ["unspecified", "internal", "server", "client", "producer", "consumer"];
  const codes = ["unset", "ok", "error"];
  function enumName(v, names, prefix) {
    if (typeof v === "number") return names[v] || String(v);
    return String(v || names[0]).replace(prefix, "").toLowerCase();
  }

  function attrList(list) { return (list || []).map((a) => [a.key, anyValue(a.value)]); }

  // spansOf flattens an API v3 answer into spans, each with its process's service.
  function spansOf(answer) {
    const out = [];
    const rss = (answer && answer.result && answer.result.resourceSpans) || [];
    for (const rs of rss) {
      const resource = attrList(rs.resource && rs.resource.attributes);
      const svc = (resource.find(([k]) => k === "service.name") || ["", "?"])[1];
      for (const ss of rs.scopeSpans || []) {
        for (const s of ss.spans || []) {
          out.push({
            traceId: s.traceId, spanId: s.spanId, parentSpanId: s.parentSpanId || "",
            name: s.name, kind: enumName(s.kind, kinds, "SPAN_KIND_"), service: svc,
            start: nanos(s.startTimeUnixNano), end: nanos(s.endTimeUnixNano),
            attributes: attrList(s.attributes), resource: resource,
            status: { code: enumName((s.status || {}).code, codes, "STATUS_CODE_"), message: (s.status || {}).message || "" }, events: s.events || [],
            scope: (ss.scope && ss.scope.name) || "",
          });
        }
      }
    }
    return out;
  }

  function formatDuration(ns) {
    const ms = Number(ns) / 1e6;
    if (ms < 1) return (Number(ns) / 1e3).toFixed(1) + " µs";
    if (ms < 1000) return ms.toFixed(ms < 10 ? 2 : 1) + " ms";
    return (ms / 1000).toFixed(2) + " s";
  }

  function formatTime(ns) {
    const d = new Date(Number(ns / 1000000n));
    return d.toLocaleString(undefined, { hour12: false });
  }

  // summarize makes a trace's row: its root (the earliest span without a parent in it).
  function summarize(spans) {
    const ids = new Set(spans.map((s) => s.spanId));
    const roots = spans.filter((s) => !s.parentSpanId || !ids.has(s.parentSpanId));
    roots.sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0));
    let start = spans[0].start, end = spans[0].end;
    for (const s of spans) {
      if (s.start < start) start = s.start;
      if (s.end > end) end = s.end;
    }
    return {
      traceId: spans[0].traceId, root: roots[0] || spans[0], start, duration: end - start,
      count: spans.length, services: [...new Set(spans.map((s) => s.service))].sort(),
    };
  }

  function byTrace(spans) {
    const m = new Map();
    for (const s of spans) {
      if (!m.has(s.traceId)) m.set(s.traceId, []);
      m.get(s.traceId).push(s);
    }
    return m;
  }

  async function loadServices() {
    const answer = await getJSON("api/v3/services");
    const services = ((answer && answer.services) || []).slice().sort();
    serviceSel.replaceChildren(...services.map((s) => el("option", { value: s, text: s })));
    if (services.includes(defaultService)) serviceSel.value = defaultService;
    return services.length;
  }

  let searchSeq = 0;
  async function search() {
    const seq = ++searchSeq;
    const service = serviceSel.value;
    if (!service) { say("No services have sent spans yet."); return; }
    const now = Date.now();
    const from = new Date(now - Number(rangeSel.value) * 60000);
    const q = new URLSearchParams({
      "query.service_name": service,
      "query.start_time_min": from.toISOString(),
      "query.start_time_max": new Date(now + 1000).toISOString(),
      "query.num_traces": String(maxTraces),
    });
    say("Finding the traces of " + service + "…");
    const answer = await getJSON("api/v3/traces?" + q.toString());
    if (seq !== searchSeq) return; // a newer search has started
    const rows = [...byTrace(spansOf(answer)).values()].map(summarize);
    rows.sort((a, b) => (a.start > b.start ? -1 : a.start < b.start ? 1 : 0));
    tracesBody.replaceChildren(...rows.map((r) => el("tr", { "data-trace-id": r.traceId },
      el("th", { scope: "row" }, el("a", { href: "#trace=" + r.traceId, text: r.root.name, title: "trace " + r.traceId })),
      el("td", { text: formatTime(r.start) }),
      el("td", { class: "num", text: formatDuration(r.duration) }),
      el("td", { class: "num", text: String(r.count) }),
      el("td", { text: r.services.join(", ") }))));
    if (rows.length === 0) {
      tracesBody.replaceChildren(el("tr", {}, el("td", { colspan: "5", text: "No traces of " + service + " in that time." })));
    }
    say(rows.length + " trace" + (rows.length === 1 ? "" : "s") + " of " + service + ".");
  }

  // order puts each span after its parent, children by start time, with its depth.
  function order(spans) {
    const ids = new Set(spans.map((s) => s.spanId));
    const children = new Map();
    const roots = [];
    for (const s of spans) {
      if (s.parentSpanId && ids.has(s.parentSpanId)) {
        if (!children.has(s.parentSpanId)) children.set(s.parentSpanId, []);
        children.get(s.parentSpanId).push(s);
      } else {
        roots.push(s);
      }
    }
    const byStart = (a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0);
    const out = [];
    const visit = (s, depth) => {
      out.push({ span: s, depth });
      for (const c of (children.get(s.spanId) || []).sort(byStart)) visit(c, depth + 1);
    };
    for (const r of roots.sort(byStart)) visit(r, 0);
    return out;
  }

  function detailsRow(s, id) {
    const rows = [
      ["span id", s.spanId], ["parent span id", s.parentSpanId || "(none: a root)"],
      ["kind", s.kind], ["status", [s.status.code, s.status.message].filter(Boolean).join(": ")],
      ["scope", s.scope],
    ].concat(s.attributes, s.resource.map(([k, v]) => ["resource " + k, v]));
    const table = el("table", { class: "attrs" },
      el("caption", { text: "Attributes of " + s.name }),
      el("tbody", {}, ...rows.map(([k, v]) => el("tr", {},
        el("th", { scope: "row", text: k }), el("td", { "data-attr": k, text: v })))));
    if (s.events.length) {
      table.append(el("tbody", {}, ...s.events.map((e) => el("tr", {},
        el("th", { scope: "row", text: "event" }),
        el("td", { text: e.name + " " + attrList(e.attributes).map(([k, v]) => k + "=" + v).join(" ") })))));
    }
    return el("tr", { id, class: "details", hidden: true }, el("td", { colspan: "4" }, table));
  }

  async function showTrace(traceId) {
    traceSection.hidden = false;
    $("trace-title").textContent = "Trace " + traceId;
    spansBody.replaceChildren();
    $("trace-summary").textContent = "Loading…";
    const answer = await getJSON("api/v3/traces/" + encodeURIComponent(traceId));
    const spans = spansOf(answer);
    if (spans.length === 0) {
      $("trace-summary").textContent = "Jaeger holds no trace " + traceId + ".";
      return;
    }
    const sum = summarize(spans);
    const total = sum.duration > 0n ? sum.duration : 1n;
    $("trace-summary").textContent = sum.root.name + " — started " + formatTime(sum.start) + ", " +
      formatDuration(sum.duration) + ", " + sum.count + " spans, services " + sum.services.join(", ") + ".";
    const rows = [];
    order(spans).forEach(({ span: s, depth }, i) => {
      const detailsId = "span-details-" + i;
      const toggle = el("button", { type: "button", class: "span-name", text: s.name,
        "aria-expanded": "false", "aria-controls": detailsId });
      const details = detailsRow(s, detailsId);
      toggle.addEventListener("click", () => {
        const open = toggle.getAttribute("aria-expanded") !== "true";
        toggle.setAttribute("aria-expanded", String(open));
        details.hidden = !open;
      });
      const left = Number(((s.start - sum.start) * 10000n) / total) / 100;
      const width = Math.max(Number(((s.end - s.start) * 10000n) / total) / 100, 0.2);
      const bar = el("div", { class: "bar", title: formatDuration(s.end - s.start) + " from +" + formatDuration(s.start - sum.start) });
      bar.style.marginLeft = Math.min(left, 99.8) + "%";
      bar.style.width = Math.min(width, 100 - Math.min(left, 99.8)) + "%";
      const nameCell = el("th", { scope: "row" }, toggle);
      nameCell.style.paddingLeft = (0.4 + depth * 1.1) + "em";
      rows.push(el("tr", { class: s.status.code === "error" ? "span error" : "span", "data-span-name": s.name, "data-depth": String(depth) },
        nameCell,
        el("td", { text: s.service }),
        el("td", { class: "num", text: formatDuration(s.end - s.start) + (s.status.code === "error" ? " (error)" : "") }),
        el("td", { class: "timeline" }, el("div", { class: "track" }, bar))), details);
    });
    spansBody.replaceChildren(...rows);
    traceSection.scrollIntoView({ block: "start" });
  }

  function traceFromHash() {
    const m = /^#trace=([0-9a-fA-F]+)$/.exec(location.hash);
    return m ? m[1] : "";
  }

  function fail(err) { say("Error: " + err.message); }

  async function route() {
    const id = traceFromHash();
    if (id) await showTrace(id);
    else traceSection.hidden = true;
  }

  form.addEventListener("submit", (ev) => { ev.preventDefault(); search().catch(fail); });
  serviceSel.addEventListener("change", () => search().catch(fail));
  rangeSel.addEventListener("change", () => search().catch(fail));
  window.addEventListener("hashchange", () => route().catch(fail));

  (async () => {
    await loadServices();
    await search();
    await route();
  })().catch(fail);
})();

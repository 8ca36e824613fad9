// Small DOM helpers. Every text that comes from the API goes into text nodes or attribute
// values through these: the page never parses HTML built from data.

// h creates an element: h('a', {href: '#/', class: 'x', onclick: fn}, 'text', child, [more]).
// Attributes that are null, undefined or false are left out; true sets an empty attribute.
export function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v == null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, kids);
  return el;
}

// append adds children: nodes as they are, other values as text; null, false and '' are skipped.
export function append(el, kids) {
  for (const k of [kids].flat(Infinity)) {
    if (k == null || k === false || k === '') continue;
    el.append(k instanceof Node ? k : String(k));
  }
  return el;
}

// replace renders new content into a stable container. Polling re-renders the data parts
// every few seconds, so it keeps what the user is doing there: the element with focus
// (found again by its data-key) and which <details data-key> are open.
export function replace(box, ...kids) {
  const active = document.activeElement;
  const focused = active && box.contains(active) ? active.closest('[data-key]') : null;
  const focusKey = focused && box.contains(focused) ? focused.dataset.key : null;
  const open = new Set([...box.querySelectorAll('details[data-key][open]')].map((d) => d.dataset.key));
  box.replaceChildren();
  append(box, kids);
  for (const d of box.querySelectorAll('details[data-key]')) if (open.has(d.dataset.key)) d.open = true;
  if (focusKey != null) {
    const el = [...box.querySelectorAll('[data-key]')].find((e) => e.dataset.key === focusKey);
    (el?.tagName === 'DETAILS' ? el.querySelector('summary') : el)?.focus();
  }
}

// href builds a hash route from raw path segments: href('p', 'my project') → '#/p/my%20project'.
export const href = (...segs) => '#/' + segs.map(encodeURIComponent).join('/');

// list tolerates a missing or malformed list in an answer.
export const list = (v) => (Array.isArray(v) ? v : []);

// nameOf reads a resource's name from {metadata: {name}} (or a bare {name}).
export const nameOf = (item) => String(item?.metadata?.name ?? item?.name ?? '');

// dash shows a missing value as a dash.
export const dash = (v) => (v == null || v === '' ? '—' : v);

// when parses an API time; Go's zero time and unparsable values are "no time".
export function when(s) {
  if (!s) return null;
  const d = new Date(s);
  return Number.isNaN(d.getTime()) || d.getUTCFullYear() < 1971 ? null : d;
}

const pad = (n) => String(n).padStart(2, '0');
export const clock = (d) => `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
const stamp = (d) => `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${clock(d)}`;

// time renders an API time as a <time> in local time (or fallback when there is none).
export function time(s, fallback = '—') {
  const d = when(s);
  return d ? h('time', { datetime: d.toISOString() }, stamp(d)) : fallback;
}

// counts renders {"Applied": 20, "Retrying": 3} as "Applied 20, Retrying 3".
export function counts(m) {
  const e = Object.entries(m && typeof m === 'object' ? m : {}).sort(([a], [b]) => a.localeCompare(b));
  return e.length ? e.map(([k, n]) => `${k} ${n}`).join(', ') : '—';
}

// kv renders label/value pairs as a definition list, leaving out pairs whose value is
// null or undefined (an empty string shows as a dash).
export function kv(pairs, attrs) {
  return h('dl', { class: 'kv', ...attrs },
    pairs.filter(([, v]) => v !== undefined && v !== null).map(([k, v, dd]) => [h('dt', null, k), h('dd', dd, dash(v))]));
}

// table builds a captioned table in its own horizontally scrolling box. head: column
// titles; rows: <tr> elements (see row); empty: the text of the single row of an empty table.
export function table({ caption, testid, head, rows, empty = 'None.', box }) {
  const body = h('tbody', null, rows);
  if (!rows.length) body.append(h('tr', null, h('td', { colspan: head.length, class: 'empty' }, empty)));
  const t = h('table', { 'data-testid': testid },
    h('caption', null, caption),
    h('thead', null, h('tr', null, head.map((c) => h('th', { scope: 'col' }, c)))), body);
  return box === false ? t : h('div', { class: 'scroll' }, t);
}

// row builds a <tr>; a cell that is already a <td>/<th> is used as it is.
export function row(attrs, cells) {
  return h('tr', attrs, cells.map((c) => (c instanceof HTMLTableCellElement ? c : h('td', null, c))));
}

// section is a titled part of a view.
export function section(title, ...kids) {
  return h('section', null, h('h2', null, title), kids);
}

// json renders any value as indented JSON text in a <pre>.
export const json = (v) => h('pre', { class: 'json' }, JSON.stringify(v, null, 2));

// value renders data of unknown shape tolerantly: scalars as text, lists of objects as a
// table, objects as a definition list, anything deeper than a few levels as JSON.
export function value(v, label = 'Details', depth = 0) {
  if (v == null || v === '') return '—';
  if (typeof v !== 'object') return String(v);
  if (depth > 3) return json(v);
  if (Array.isArray(v)) {
    if (!v.length) return '—';
    if (v.every((x) => x && typeof x === 'object' && !Array.isArray(x))) {
      const keys = [...new Set(v.flatMap((x) => Object.keys(x)))];
      return table({ caption: label, head: keys, rows: v.map((x) => row(null, keys.map((k) => value(x[k], k, depth + 1)))) });
    }
    return v.map((x) => (typeof x === 'object' ? JSON.stringify(x) : String(x))).join(', ');
  }
  const e = Object.entries(v);
  return e.length ? kv(e.map(([k, x]) => [k, value(x, k, depth + 1)])) : '—';
}

// The text-only markers of cluster and cell states (the state's name is always shown next
// to one; the marker and the cell's tint only help scanning a large matrix).
const MARKS = { Ready: '✓', Applied: '●', Pending: '…', NotReady: '◐', NotPresent: '○', Retrying: '↻', Failed: '✗', Deleted: '−' };

// mark is a state's marker (hidden from screen readers: the state's name follows it);
// states without one (a rollout stage's) get none.
export const mark = (state) => (MARKS[state] ? h('span', { class: 'mark', 'aria-hidden': 'true' }, MARKS[state]) : null);

// stateClass is the class that tints a state (letters only, whatever the API sends).
export const stateClass = (state) => `st-${String(state || 'Unknown').replace(/[^A-Za-z]/g, '')}`;

// stateText renders a state as a marker and its name, with its tint.
export function stateText(state) {
  const s = String(state || 'Unknown');
  return h('span', { class: `state ${stateClass(s)}` }, mark(s), ' ', s);
}

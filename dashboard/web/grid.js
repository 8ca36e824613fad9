// The fleet's clusters as a grid (GET /v2/fleet/clusters): one cell per registered
// cluster, drawn on a single <canvas> (10,000 cells redraw in a few milliseconds; the
// time of the last drawing is in data-draw-ms). Each state has a colour AND a pattern
// (Failed a cross, Retrying a diagonal, Pending a hollow centre, Applied solid, none an
// outline), the legend names them with their counts, and the text beside says the same
// in words: colour is never the only signal.
//
// Keyboard: the grid is one tab stop (role=grid with aria-activedescendant would need an
// element per cell); arrow keys move the cursor, Home/End go to a row's ends, Ctrl+Home
// and Ctrl+End to the first and last cell, PageUp/PageDown ten rows; the cursor's cluster
// is written below the grid (a polite live region) and Enter opens its view, as a click
// on a cell does. A legend state (a toggle button) filters the grid to its clusters and
// lists them as links.

import { get } from './api.js';
import { h, href, replace } from './dom.js';
import { trail } from './views.js';

// The answer's states, worst first, with their words, text markers, colours and patterns.
export const GRID_STATES = ['Failed', 'Retrying', 'Pending', 'Applied', 'none'];
const WORDS = { Failed: 'failed', Retrying: 'retrying', Pending: 'pending', Applied: 'applied', none: 'with nothing of yours' };
const MARKS = { Failed: '✗', Retrying: '↻', Pending: '…', Applied: '●', none: '○' };
const FILL = { Failed: '#b3261e', Retrying: '#c76a00', Pending: '#6f6f6f', Applied: '#2f7d46', none: '#ffffff' };
const LISTED = 500; // links listed of one state's clusters (the rest are counted)

const fmt = (n) => Number(n || 0).toLocaleString('en-US');

// drawCell draws one cell of size s at (x, y): its fill and its state's pattern.
function drawCell(g, x, y, s, state) {
  g.fillStyle = FILL[state] || '#ffffff';
  g.fillRect(x, y, s, s);
  const w = Math.max(1, Math.round(s / 6));
  g.lineWidth = w;
  g.strokeStyle = '#ffffff';
  g.fillStyle = '#ffffff';
  const m = Math.max(1, Math.round(s / 5)); // the pattern's margin
  switch (state) {
    case 'Failed': // a cross
      g.beginPath();
      g.moveTo(x + m, y + m); g.lineTo(x + s - m, y + s - m);
      g.moveTo(x + s - m, y + m); g.lineTo(x + m, y + s - m);
      g.stroke();
      break;
    case 'Retrying': // one diagonal
      g.beginPath();
      g.moveTo(x + m, y + s - m); g.lineTo(x + s - m, y + m);
      g.stroke();
      break;
    case 'Pending': { // a hollow centre
      const c = Math.max(1, Math.round(s / 2.5));
      g.fillRect(x + (s - c) / 2, y + (s - c) / 2, c, c);
      break;
    }
    case 'Applied': // solid
      break;
    default: // none: an outline
      g.strokeStyle = '#8a8a8a';
      g.lineWidth = 1;
      g.strokeRect(x + 0.5, y + 0.5, s - 1, s - 1);
  }
}

// swatch is a legend's sample of a state, drawn as the grid draws it.
function swatch(state) {
  const c = h('canvas', { class: 'swatch', width: '14', height: '14', 'aria-hidden': 'true' });
  const g = c.getContext('2d');
  if (g) drawCell(g, 0, 0, 14, state);
  return c;
}

// summaryText is the grid in words: "10,000 clusters: 10 failed, 40 retrying, 9,950 applied".
export function summaryText(counts, total) {
  const parts = GRID_STATES.filter((s) => counts[s] > 0).map((s) => `${fmt(counts[s])} ${WORDS[s]}`);
  return `${fmt(total)} ${total === 1 ? 'cluster' : 'clusters'}${parts.length ? ': ' + parts.join(', ') : ''}`;
}

// clusterGrid builds the grid once; update(answer) redraws it from an answer (each poll),
// keeping the cursor on the same cluster and the focus where it is.
export function clusterGrid() {
  let cells = []; // {p, c, state, digs} of the cells shown, in order
  let all = []; // every cluster of the answer
  let counts = {};
  let total = 0;
  let filter = ''; // a state, or '' for all
  let cursor = 0;
  let cols = 1;
  let size = 12;
  const gap = 1;

  const canvas = h('canvas', { 'aria-hidden': 'true' });
  const current = h('p', { id: 'grid-cell', 'data-testid': 'grid-cell', class: 'sub', 'aria-live': 'polite' });
  const text = h('p', { id: 'grid-summary', 'data-testid': 'grid-summary' });
  const grid = h('div', {
    class: 'cluster-grid', 'data-testid': 'cluster-grid', tabindex: '0', role: 'application',
    'aria-roledescription': 'grid of clusters', 'aria-describedby': 'grid-summary grid-help',
    'aria-label': 'Clusters by state: arrow keys move, Enter opens the cluster',
  }, canvas);
  const help = h('p', { id: 'grid-help', class: 'sub' },
    'Each cell is a cluster, worst state of your deployments there; colour and pattern both tell it. ',
    'Arrow keys move (Home, End, Page Up, Page Down too), Enter opens the cluster.');
  const legend = h('ul', { class: 'legend', 'data-testid': 'grid-legend', 'aria-label': 'Legend: show one state\u2019s clusters' });
  const listed = h('div', { 'data-testid': 'grid-list' });

  const label = (x) => `${x.p}+${x.c}`;
  const describe = (x, i) => `Cluster ${label(x)}: ${x.state === 'none' ? 'nothing of yours runs there' :
    `${x.state}, ${x.digs} ${x.digs === 1 ? 'deployment' : 'deployments'}`} (cell ${fmt(i + 1)} of ${fmt(cells.length)})`;
  const open = (x) => { location.hash = href('cp', x.p, 'c', x.c); };

  function layout() {
    const width = Math.max(200, (grid.clientWidth || grid.parentElement?.clientWidth || 960) - 4);
    const n = Math.max(1, cells.length);
    // As large as fits in about 480 px of height, from 8 px (10,000 cells) to 28 px.
    size = Math.max(8, Math.min(28, Math.floor(Math.sqrt((width * 480) / n)) - gap));
    cols = Math.max(1, Math.floor(width / (size + gap)));
  }

  function draw() {
    const t0 = performance.now();
    layout();
    const rows = Math.ceil(cells.length / cols);
    const ratio = window.devicePixelRatio || 1;
    const w = cols * (size + gap) + gap;
    const ht = Math.max(1, rows) * (size + gap) + gap;
    canvas.width = Math.round(w * ratio);
    canvas.height = Math.round(ht * ratio);
    canvas.style.width = `${w}px`;
    canvas.style.height = `${ht}px`;
    const g = canvas.getContext('2d');
    if (!g) return;
    g.setTransform(ratio, 0, 0, ratio, 0, 0);
    g.clearRect(0, 0, w, ht);
    // By state: one fill colour and one pattern at a time.
    for (const st of GRID_STATES) {
      for (let i = 0; i < cells.length; i++) {
        if (cells[i].state !== st) continue;
        drawCell(g, gap + (i % cols) * (size + gap), gap + Math.floor(i / cols) * (size + gap), size, st);
      }
    }
    if (cells.length && document.activeElement === grid) {
      const i = cursor;
      g.strokeStyle = '#000000';
      g.lineWidth = 2;
      g.strokeRect(gap + (i % cols) * (size + gap) - 1, gap + Math.floor(i / cols) * (size + gap) - 1, size + 2, size + 2);
    }
    grid.dataset.cells = String(cells.length);
    grid.dataset.cols = String(cols);
    grid.dataset.drawMs = (performance.now() - t0).toFixed(1);
  }

  function say() {
    const x = cells[cursor];
    grid.dataset.cursor = String(cursor);
    if (!x) {
      current.textContent = filter ? `No cluster is ${WORDS[filter]}.` : 'No cluster is registered.';
      delete current.dataset.cluster;
      return;
    }
    current.textContent = describe(x, cursor);
    current.dataset.cluster = label(x);
    current.dataset.state = x.state;
  }

  function move(to) {
    if (!cells.length) return;
    cursor = Math.max(0, Math.min(cells.length - 1, to));
    draw();
    say();
  }

  grid.addEventListener('keydown', (e) => {
    const row = Math.floor(cursor / cols) * cols;
    const to = {
      ArrowRight: cursor + 1, ArrowLeft: cursor - 1, ArrowDown: cursor + cols, ArrowUp: cursor - cols,
      Home: e.ctrlKey ? 0 : row, End: e.ctrlKey ? cells.length - 1 : row + cols - 1,
      PageDown: cursor + 10 * cols, PageUp: cursor - 10 * cols,
    }[e.key];
    if (to !== undefined) {
      e.preventDefault();
      // Up or down past the grid's edge stays in the column.
      if ((e.key === 'ArrowDown' || e.key === 'PageDown') && to >= cells.length) return;
      if ((e.key === 'ArrowUp' || e.key === 'PageUp') && to < 0) return;
      move(to);
    } else if (e.key === 'Enter' || e.key === ' ') {
      e.preventDefault();
      if (cells[cursor]) open(cells[cursor]);
    }
  });
  grid.addEventListener('focus', () => { draw(); say(); });
  grid.addEventListener('blur', () => draw());
  const at = (e) => {
    const r = canvas.getBoundingClientRect();
    const col = Math.floor((e.clientX - r.left - gap) / (size + gap));
    const i = Math.floor((e.clientY - r.top - gap) / (size + gap)) * cols + col;
    return col >= 0 && col < cols && i >= 0 && i < cells.length ? i : -1;
  };
  canvas.addEventListener('click', (e) => {
    const i = at(e);
    if (i < 0) return;
    cursor = i;
    open(cells[i]);
  });
  canvas.addEventListener('mousemove', (e) => {
    const i = at(e);
    grid.title = i < 0 ? '' : describe(cells[i], i);
  });

  function choose(state) {
    filter = filter === state ? '' : state;
    const keep = cells[cursor];
    show(keep);
  }

  // show picks the cells of the filter, keeps the cursor on cluster keep if still shown,
  // and renders the legend, the words and the list.
  function show(keep) {
    cells = filter ? all.filter((x) => x.state === filter) : all;
    const i = keep ? cells.findIndex((x) => x.p === keep.p && x.c === keep.c) : -1;
    cursor = i >= 0 ? i : Math.min(cursor, Math.max(0, cells.length - 1));
    replace(legend, GRID_STATES.map((st) => h('li', { 'data-state': st, 'data-count': String(counts[st] || 0) },
      h('button', {
        type: 'button', class: 'small', 'aria-pressed': String(filter === st), 'data-key': `grid-legend:${st}`,
        onclick: () => choose(st),
      }, swatch(st), h('span', { class: 'mark', 'aria-hidden': 'true' }, MARKS[st]), ` ${st === 'none' ? 'nothing of yours' : st} `,
      h('strong', null, fmt(counts[st])))),
    filter ? h('li', null, h('button', { type: 'button', class: 'small', 'data-key': 'grid-legend:all', onclick: () => choose(filter) }, 'Show all')) : null));
    text.textContent = summaryText(counts, total) + (filter ? `. Showing the ${fmt(cells.length)} ${WORDS[filter]}.` : '.');
    if (filter) {
      replace(listed, h('h3', null, `Clusters ${WORDS[filter]}`),
        h('ul', { class: 'links', 'data-state': filter }, cells.slice(0, LISTED).map((x) =>
          h('li', null, h('a', { href: href('cp', x.p, 'c', x.c), 'data-cluster': label(x) }, label(x)),
            x.digs ? ` (${x.digs} ${x.digs === 1 ? 'deployment' : 'deployments'})` : null))),
        cells.length > LISTED ? h('p', { class: 'sub' }, `The first ${LISTED} of ${fmt(cells.length)}.`) : null);
    } else {
      replace(listed);
    }
    draw();
    say();
  }

  // update takes an answer of GET /v2/fleet/clusters.
  function update(a) {
    const keep = cells[cursor];
    const col = a?.clusters || {};
    const names = Array.isArray(col.name) ? col.name : [];
    const ps = Array.isArray(a?.providers) ? a.providers : [];
    const states = Array.isArray(a?.states) ? a.states : GRID_STATES;
    all = names.map((c, i) => ({ p: String(ps[col.provider?.[i]] ?? ''), c: String(c), state: String(states[col.state?.[i]] ?? 'none'), digs: Number(col.digs?.[i]) || 0 }));
    counts = a?.counts && typeof a.counts === 'object' ? a.counts : {};
    total = Number(a?.total) || all.length;
    show(keep);
  }

  const body = h('div', { class: 'grid-box' }, text, legend, help, grid, current, listed);
  let width = 0; // redrawn when the page's width changes, not its height (the grid's own)
  new ResizeObserver(() => {
    if (grid.clientWidth === width) return;
    width = grid.clientWidth;
    if (cells.length) draw();
  }).observe(grid);
  return { body, update };
}

// clustersView is the grid's own page (#/clusters), linked from the home's summary: its
// answer reads every registered cluster, which the home's own polls need not wait for.
export function clustersView() {
  const grid = clusterGrid();
  return {
    title: 'Clusters',
    crumbs: [...trail.home(), ['Clusters']],
    body: [grid.body],
    async load(signal) {
      grid.update(await get('/v2/fleet/clusters', { signal }));
    },
  };
}

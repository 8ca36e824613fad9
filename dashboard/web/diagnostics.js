// The diagnostics view: every declared resource — created over REST or by temco hub —
// whether temco accepted it, and its errors (GET /v2/diagnostics). "Refused only" asks for
// accepted=false. The filter and the pager are built once; only the summary and the table
// are re-rendered on each poll.

import { getPage } from './api.js';
import { h, href, kv, list, mark, replace, row, section, table } from './dom.js';
import { trail } from './views.js';

const LIMIT = 100;

// routeOf is the page's view of a stored resource's API path ('' when there is none: a
// cluster provider's is the home view).
export function routeOf(path) {
  const segs = String(path || '').split('/').slice(2); // '', 'v2', then the resource's segments
  const [a, p, b, x, y, c, d] = segs;
  const n = segs.length;
  if (a === 'projects' && n === 2) return href('p', p);
  if (a === 'projects' && b === 'logical-clouds' && n === 4) return href('p', p, 'lc', x);
  if (a === 'projects' && b === 'composite-apps' && n === 5) return href('p', p, 'ca', x, y);
  if (a === 'projects' && b === 'composite-apps' && c === 'deployment-intent-groups' && n === 7) return href('p', p, 'ca', x, y, 'dig', d);
  if (a === 'cluster-providers' && b === 'clusters' && n === 4) return href('cp', p, 'c', x);
  return '';
}

// verdict writes whether temco accepted the resource, in words (the tint only helps).
function verdict(accepted) {
  const [state, text] = accepted ? ['Ready', 'Accepted'] : ['Failed', 'Refused'];
  return h('span', { class: `state st-${state}` }, mark(state), ' ', text);
}

// source says where the resource was declared: over REST, or by which object of temco hub.
function source(e) {
  if (e?.source !== 'hub') return 'REST';
  const detail = e?.object
    ? `object ${e.object}${e.generation ? `, generation ${e.generation}` : ''}`
    : e?.owner ? `owner ${e.owner}` : '';
  return ['temco hub', detail ? h('span', { class: 'sub' }, detail) : null];
}

function entryRow(e) {
  const accepted = e?.accepted === true;
  const to = accepted ? routeOf(e?.path) : '';
  const name = e?.version ? `${e?.name ?? ''} ${e.version}` : String(e?.name ?? '');
  const errors = list(e?.errors);
  return row({
    'data-path': e?.path ?? '', 'data-object': e?.object || null, 'data-project': e?.project ?? '', 'data-accepted': String(accepted),
  }, [
    String(e?.kind ?? '—'),
    h('th', { scope: 'row' },
      to ? h('a', { href: to, 'data-key': `diagnostics:${e.path}` }, name) : name,
      e?.namespace ? h('span', { class: 'sub' }, `namespace ${e.namespace}`) : null,
      h('span', { class: 'sub' }, e?.path ? h('code', null, e.path) : 'no path: refused before it was named')),
    e?.project || '—',
    h('td', { 'data-testid': 'source' }, source(e)),
    h('td', { 'data-testid': 'accepted' }, verdict(accepted)),
    h('td', { 'data-testid': 'errors', class: 'wrap' },
      errors.length ? h('ul', { class: 'errors' }, errors.map((x) => h('li', { class: 'error' }, String(x)))) : 'none'),
  ]);
}

// ctx (from app.js): setQuery(URLSearchParams) rewrites the hash's query, refreshNow()
// loads at once.
export function diagnosticsView(r, ctx) {
  let refused = r.query.get('refused') === 'true';
  let tokens = ['']; // the continue= of each page up to the one shown ('' the first)
  let next = ''; // the next page's token, '' on the last
  let gen = 0; // bumped when the filter or the page changes: an older answer is dropped

  const summary = h('div');
  const box = h('div');

  const fRefused = h('input', { id: 'filter-refused', type: 'checkbox', checked: refused });
  fRefused.addEventListener('change', () => setRefused(fRefused.checked));
  const filters = h('form', {
    class: 'filters', role: 'search', 'aria-label': 'Filter declared resources', onsubmit: (e) => e.preventDefault(),
  }, h('div', { class: 'check' }, fRefused, h('label', { for: 'filter-refused' }, 'Refused only')));

  const prev = h('button', { id: 'diagnostics-prev', type: 'button', onclick: () => turn(-1) }, 'Previous page');
  const nextButton = h('button', { id: 'diagnostics-next', type: 'button', onclick: () => turn(1) }, 'Next page');
  const pageText = h('span', { 'data-testid': 'diagnostics-page' });
  const pager = h('nav', { class: 'pager', 'aria-label': 'Pages of declared resources' }, prev, ' ', pageText, ' ', nextButton);

  function reload() {
    gen++;
    ctx.refreshNow();
  }

  function turn(step) {
    if (step > 0 && next) tokens.push(next);
    else if (step < 0 && tokens.length > 1) tokens.pop();
    else return;
    reload();
  }

  function setRefused(v) {
    fRefused.checked = v;
    if (v === refused) return;
    refused = v;
    tokens = [''];
    const p = new URLSearchParams();
    if (refused) p.set('refused', 'true');
    ctx.setQuery(p);
    reload();
  }

  async function load(signal) {
    const g = gen;
    const q = new URLSearchParams({ limit: String(LIMIT) });
    if (refused) q.set('accepted', 'false');
    const token = tokens[tokens.length - 1];
    if (token) q.set('continue', token);
    const res = await getPage(`/v2/diagnostics?${q}`, { signal });
    if (g !== gen) return; // answers the filter or page before: the load asked since shows the new one
    next = res.next;
    render(res.data || {});
  }

  function render(d) {
    const s = d.summary || {};
    replace(summary, kv([
      ['Declared resources', s.total ?? 0, { 'data-testid': 'summary-total' }],
      ['Refused', s.refused ?? 0, { 'data-testid': 'summary-refused' }],
      ['Declared by temco hub', s.hub ?? 0, { 'data-testid': 'summary-hub' }],
      ['Declared over REST', s.rest ?? 0, { 'data-testid': 'summary-rest' }],
    ], { 'data-testid': 'diagnostics-summary' }));
    const entries = list(d.resources);
    replace(box, table({
      caption: refused ? 'Refused declarations, by path' : 'Declared resources, by path',
      testid: 'diagnostics',
      head: ['Kind', 'Resource', 'Project', 'Source', 'Accepted', 'Errors'],
      rows: entries.map(entryRow),
      empty: refused ? 'No refused declaration.' : 'No declared resource.',
    }));
    pageText.textContent = `Page ${tokens.length}`;
    prev.disabled = tokens.length === 1;
    nextButton.disabled = !next;
  }

  return {
    title: 'Diagnostics',
    crumbs: [...trail.home(), ['Diagnostics']],
    body: [
      h('p', null, 'Every resource declared over REST or by temco hub, whether temco accepted it, and what is wrong with it. ',
        'An object temco hub could not write is refused: it has no resource in temco, and temco hub tries it again every 30 s.'),
      section('Summary', summary),
      section('Declared resources', filters, box, pager),
    ],
    load,
    // query: the hash's query changed under the view (back/forward, an edited address).
    query(params) {
      setRefused(params.get('refused') === 'true');
    },
  };
}

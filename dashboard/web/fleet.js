// The home: the fleet at a glance (GET /v2/fleet). A summary whose every count is a link
// to the DIGs it counts (and to the clusters' grid, grid.js), then every DIG the caller
// may see with its state, clusters by state and by readiness, running operation, rollout,
// drift and what needs an operator; filters, sorting and pages. The controls are built once; the
// summary and the table are re-rendered on
// each poll (app.js), so the page follows the fleet without a reload.

import { apiPath, digPath, get, post } from './api.js';
import { counts, h, href, list, mark, replace, row, section, stateText, table, time } from './dom.js';

const LIMIT = 100;
const CLUSTERS_SHOWN = 100; // of each cluster provider, below the fleet
const SORTS = [['name', 'Name'], ['attention', 'Needs attention first'], ['updated', 'Last changed first'], ['state', 'State']];
const STATES = ['Created', 'Approved', 'Instantiated', 'InstantiateStopped', 'Terminated', 'TerminateStopped', 'Updated', 'Migrated'];
// Cluster states, worst first: the order the clusters cell lists them in.
const CLUSTER_STATES = ['Failed', 'Retrying', 'Pending', 'Applied', 'Deleted'];
// Readiness, worst first (EMCO's values).
const READY_STATES = ['NotPresent', 'NotReady', 'Ready'];

const digRoute = (d) => href('p', d.project, 'ca', d.compositeApp, d.compositeAppVersion, 'dig', d.name);
const digKey = (d) => `${d.project}/${d.compositeApp}/${d.compositeAppVersion}/${d.name}`;

// clustersCell lists a DIG's clusters by state, worst first, each with its marker.
function clustersCell(d) {
  const states = d.states || {};
  const parts = CLUSTER_STATES.filter((s) => states[s] > 0).map((s) =>
    h('li', { class: `state st-${s}`, 'data-state': s }, mark(s), ` ${states[s]} ${s}`));
  return h('td', { 'data-testid': 'fleet-clusters', 'data-total': String(d.clusters ?? 0) },
    d.clusters === 1 ? '1 cluster' : `${d.clusters ?? 0} clusters`, parts.length ? h('ul', { class: 'states' }, parts) : null);
}

// operationCell shows the running operation and how far it is.
function operationCell(d) {
  const o = d.operation;
  if (!o) return h('td', { 'data-testid': 'fleet-operation' }, '—');
  const total = o.clustersTotal || 0;
  return h('td', { 'data-testid': 'fleet-operation', 'data-op': o.op },
    `${o.op} running`,
    total ? [h('br'), h('progress', { max: String(total), value: String(o.clustersDone || 0), 'aria-label': `${o.op} progress` }),
      ` ${o.clustersDone || 0} / ${total} clusters`] : null,
    o.progressError ? h('span', { class: 'sub' }, o.progressError) : null);
}

// rolloutCell shows where the rollout is; approve is the action of a stage waiting for an
// approval (null: the caller may not operate the DIG).
function rolloutCell(d, approve) {
  const r = d.rollout;
  if (!r) return h('td', { 'data-testid': 'fleet-rollout' }, '—');
  const waiting = { approval: 'waits for an approval', window: 'waits for its window', decision: 'awaits a decision' }[r.waiting];
  return h('td', { 'data-testid': 'fleet-rollout', 'data-waiting': r.waiting || null },
    `${r.state}, ${r.done} of ${r.stages} stages done`,
    r.stage ? h('span', { class: 'sub' }, `stage ${r.stage}: ${waiting || r.stageState}`, r.until ? [' until ', time(r.until)] : null) : null,
    r.waiting === 'approval' && approve ? h('button', {
      type: 'button', class: 'small', 'data-action': 'approve-stage', 'data-key': `approve:${digKey(d)}`,
      onclick: (e) => approve(e.currentTarget, d, r.stage),
    }, `Approve stage ${r.stage}`) : null);
}

// driftCell shows the last drift check; correct is the action of a DIG that drifted (null:
// the caller may not operate the DIG).
function driftCell(d, correct) {
  const x = d.drift;
  if (!x) return h('td', { 'data-testid': 'fleet-drift' }, 'not checked');
  const left = (x.drifted || 0) - (x.corrected || 0);
  return h('td', { 'data-testid': 'fleet-drift', 'data-drifted': String(left) },
    left > 0 ? `${left} objects drifted (${x.missing} deleted)` : x.corrected ? `${x.corrected} drifted objects corrected` : 'in sync',
    h('span', { class: 'sub' }, 'checked ', time(x.checked)),
    left > 0 && correct ? h('button', {
      type: 'button', class: 'small', 'data-action': 'correct-drift', 'data-key': `correct:${digKey(d)}`,
      onclick: (e) => correct(e.currentTarget, d),
    }, 'Correct drift') : null);
}

// readyCell shows what the last live read of all the DIG's clusters found; read asks for
// one now (null: the DIG has nothing deployed to read).
function readyCell(d, read) {
  const x = d.ready;
  const button = read && d.revision ? h('button', {
    type: 'button', class: 'small', 'data-action': 'read-readiness', 'data-key': `read:${digKey(d)}`,
    onclick: (e) => read(e.currentTarget, d),
  }, x ? 'Read again' : 'Read now') : null;
  if (!x) return h('td', { 'data-testid': 'fleet-ready' }, d.revision ? 'not read' : '—', button);
  const byState = x.clusters || {};
  const total = Object.values(byState).reduce((a, n) => a + n, 0);
  const parts = READY_STATES.filter((s) => byState[s] > 0 && s !== 'Ready').map((s) =>
    h('li', { class: `state st-${s}`, 'data-state': s }, mark(s), ` ${byState[s]} ${s}`));
  return h('td', { 'data-testid': 'fleet-ready', 'data-ready': String(byState.Ready || 0), 'data-total': String(total) },
    `${byState.Ready || 0} of ${total} clusters ready`, parts.length ? h('ul', { class: 'states' }, parts) : null,
    h('span', { class: 'sub' }, 'read ', time(x.read)), button);
}

function attentionCell(d) {
  const a = list(d.attention);
  return h('td', { 'data-testid': 'fleet-attention', class: 'wrap' },
    a.length ? h('ul', { class: 'errors' }, a.map((x) => h('li', { class: 'error' }, String(x)))) : 'none');
}

function digRow(d, approve, correct, read) {
  return row({ 'data-dig': digKey(d), 'data-state': d.state, 'data-attention': String(list(d.attention).length > 0) }, [
    h('th', { scope: 'row' }, h('a', { href: digRoute(d), 'data-key': `fleet:${digKey(d)}` }, d.name),
      h('span', { class: 'sub' }, 'project ', h('a', { href: href('p', d.project) }, d.project), ', ',
        h('a', { href: href('p', d.project, 'ca', d.compositeApp, d.compositeAppVersion) }, `${d.compositeApp} ${d.compositeAppVersion}`)),
      d.owner ? h('span', { class: 'sub' }, `declared by temco hub: ${d.owner}`) : null),
    h('td', { 'data-testid': 'fleet-state' }, stateText(d.state),
      d.revision ? h('span', { class: 'sub' }, `revision ${d.revision}`) : null,
      d.contextStatus && d.contextStatus !== d.state ? h('span', { class: 'sub' }, d.contextStatus) : null),
    clustersCell(d), readyCell(d, read), operationCell(d), rolloutCell(d, approve), driftCell(d, correct), attentionCell(d),
    h('td', null, time(d.updated)),
  ]);
}

// ctx (from app.js): setQuery(URLSearchParams) rewrites the hash's query, refreshNow()
// loads at once.
export function fleetView(r, ctx) {
  // fromQuery reads the filters from the address's query.
  const fromQuery = (q) => ({
    q: q.get('q') || '', project: q.get('project') || '', state: q.get('state') || '',
    attention: q.get('attention') === 'true', sort: q.get('sort') || 'name', offset: Math.max(0, Number(q.get('offset')) || 0),
  });
  const state = fromQuery(r.query);
  let gen = 0; // bumped when a filter changes: an older answer is dropped

  const summary = h('div', { 'data-testid': 'fleet-summary' }, 'Loading…');
  const box = h('div', null, 'Loading…');
  const projects = h('div', null, 'Loading…');
  const providers = h('div', null, 'Loading…');

  const fq = h('input', { id: 'fleet-q', type: 'search', value: state.q, maxlength: '200', 'aria-describedby': 'fleet-q-help' });
  const fProject = h('select', { id: 'fleet-project' }, h('option', { value: '' }, 'All projects'));
  const fState = h('select', { id: 'fleet-state' }, h('option', { value: '' }, 'Any state'),
    STATES.map((s) => h('option', { value: s, selected: s === state.state }, s)));
  const fAttention = h('input', { id: 'fleet-attention', type: 'checkbox', checked: state.attention });
  const fSort = h('select', { id: 'fleet-sort' }, SORTS.map(([v, label]) => h('option', { value: v, selected: v === state.sort }, label)));
  const filters = h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter deployment intent groups', onsubmit: (e) => e.preventDefault() },
    h('div', null, h('label', { for: 'fleet-q' }, 'Name contains'), fq,
      h('span', { id: 'fleet-q-help', class: 'sub' }, 'project, composite app, version or DIG')),
    h('div', null, h('label', { for: 'fleet-project' }, 'Project'), fProject),
    h('div', null, h('label', { for: 'fleet-state' }, 'State'), fState),
    h('div', null, h('label', { for: 'fleet-sort' }, 'Sort'), fSort),
    h('div', { class: 'check' }, fAttention, h('label', { for: 'fleet-attention' }, 'Needs attention only')));

  const prev = h('button', { id: 'fleet-prev', type: 'button', onclick: () => turn(-1) }, 'Previous page');
  const next = h('button', { id: 'fleet-next', type: 'button', onclick: () => turn(1) }, 'Next page');
  const pageText = h('span', { 'data-testid': 'fleet-page' });
  const pager = h('nav', { class: 'pager', 'aria-label': 'Pages of deployment intent groups' }, prev, ' ', pageText, ' ', next);

  // set applies filters (an object of the state's fields), back to the first page.
  function set(changes) {
    Object.assign(state, changes, { offset: changes.offset ?? 0 });
    fq.value = state.q;
    fProject.value = state.project;
    fState.value = state.state;
    fAttention.checked = state.attention;
    fSort.value = state.sort;
    const p = new URLSearchParams();
    for (const k of ['q', 'project', 'state', 'sort']) if (state[k] && !(k === 'sort' && state[k] === 'name')) p.set(k, state[k]);
    if (state.attention) p.set('attention', 'true');
    if (state.offset) p.set('offset', String(state.offset));
    ctx.setQuery(p);
    gen++;
    ctx.refreshNow();
  }
  let typing = 0;
  fq.addEventListener('input', () => {
    clearTimeout(typing);
    typing = setTimeout(() => set({ q: fq.value.trim() }), 300);
  });
  fProject.addEventListener('change', () => set({ project: fProject.value }));
  fState.addEventListener('change', () => set({ state: fState.value }));
  fAttention.addEventListener('change', () => set({ attention: fAttention.checked }));
  fSort.addEventListener('change', () => set({ sort: fSort.value }));

  function turn(step) {
    const offset = state.offset + step * LIMIT;
    if (offset < 0) return;
    set({ offset });
  }

  // approveStage lets a rollout go on with its stage, once confirmed; the API's refusal
  // shows in the page's message, as every action's.
  async function approveStage(button, d, stage) {
    const ok = await ctx.confirm({
      title: `Approve stage ${stage}?`,
      text: `Let the rollout of “${d.name}” (project ${d.project}, ${d.compositeApp} ${d.compositeAppVersion}) go on with its stage “${stage}”.`,
      yes: 'Approve stage',
    });
    if (!ok || button.getAttribute('aria-busy') === 'true') return;
    button.setAttribute('aria-busy', 'true');
    try {
      await post(`${digPath({ p: d.project, ca: d.compositeApp, v: d.compositeAppVersion, dig: d.name })}/rollout/approve`, { stage });
      ctx.say(`Stage ${stage} of ${d.name} approved.`, 'ok');
    } catch (e) {
      ctx.fail(e);
    } finally {
      button.removeAttribute('aria-busy');
      ctx.refreshNow();
    }
  }

  // correctDrift applies again, once confirmed, what the DIG's clusters no longer have as
  // applied (a drift check that corrects, now); its outcome is the next drift cell.
  async function correctDrift(button, d) {
    const ok = await ctx.confirm({
      title: `Correct the drift of ${d.name}?`,
      text: `Check the clusters of “${d.name}” (project ${d.project}, ${d.compositeApp} ${d.compositeAppVersion}) now and apply again every object that drifted (${d.drift?.drifted ?? 0} at the last check).`,
      yes: 'Correct drift',
    });
    if (!ok || button.getAttribute('aria-busy') === 'true') return;
    button.setAttribute('aria-busy', 'true');
    try {
      await post(`${digPath({ p: d.project, ca: d.compositeApp, v: d.compositeAppVersion, dig: d.name })}/drift-check`, { correct: true });
      ctx.say(`Drift correction of ${d.name} started.`, 'ok');
    } catch (e) {
      ctx.fail(e);
    } finally {
      button.removeAttribute('aria-busy');
      ctx.refreshNow();
    }
  }

  // readReadiness reads every cluster of the DIG live (status=ready): a read, not an
  // operation, so it asks no confirmation; its counts are the next ready cell.
  async function readReadiness(button, d) {
    if (button.getAttribute('aria-busy') === 'true') return;
    button.setAttribute('aria-busy', 'true');
    try {
      await get(`${digPath({ p: d.project, ca: d.compositeApp, v: d.compositeAppVersion, dig: d.name })}/status?status=ready&output=summary`);
      ctx.say(`The clusters of ${d.name} were read.`, 'ok');
    } catch (e) {
      ctx.fail(e);
    } finally {
      button.removeAttribute('aria-busy');
      ctx.refreshNow();
    }
  }

  // A count of the summary, a link to the DIGs it counts: the address of those filters
  // (the same view takes them, see query below).
  const filterLink = (id, n, label, query) => h('li', { 'data-testid': id, 'data-count': String(n) },
    h('a', { href: `#/?${new URLSearchParams(query)}`, 'data-key': `summary:${id}` }, h('strong', null, String(n)), ` ${label}`));

  function renderSummary(s) {
    const states = s.states || {};
    replace(summary, h('ul', { class: 'summary' },
      filterLink('summary-digs', s.digs ?? 0, s.digs === 1 ? 'deployment intent group' : 'deployment intent groups', {}),
      filterLink('summary-attention', s.attention ?? 0, 'need attention', { sort: 'attention', attention: 'true' }),
      filterLink('summary-running', s.running ?? 0, s.running === 1 ? 'operation running' : 'operations running', { sort: 'updated' }),
      filterLink('summary-failed', s.failedLastDay ?? 0, 'failed in the last 24 h', { sort: 'updated', attention: 'true' }),
      filterLink('summary-approvals', s.approvalsWaiting ?? 0, 'approvals waiting', { sort: 'attention', attention: 'true' }),
      filterLink('summary-drifted', s.drifted ?? 0, 'drifted', { sort: 'attention', attention: 'true' }),
      filterLink('summary-retrying', s.retrying ?? 0, 'with clusters retrying', { sort: 'attention', attention: 'true' })),
    h('p', { 'data-testid': 'summary-states' }, 'By state: ', Object.keys(states).sort().map((st, i) =>
      [i ? ', ' : '', h('a', { href: `#/?state=${encodeURIComponent(st)}` }, `${st} ${states[st]}`)])),
    h('p', { 'data-testid': 'summary-placements' }, 'Placements on clusters by state: ', counts(s.placements)),
    h('p', { 'data-testid': 'summary-ready' }, 'Placements by readiness (the last live read of each DIG): ', counts(s.readyPlacements)),
    h('p', { 'data-testid': 'summary-reachability' }, 'Clusters by reachability (the last probe of each API server): ', counts(s.clusters),
      ' — ', h('a', { href: '#/clusters', 'data-key': 'summary:grid' }, 'every cluster as a grid, by state')));
  }

  async function load(signal) {
    const g = gen;
    const p = new URLSearchParams({ limit: String(LIMIT), sort: state.sort });
    for (const k of ['q', 'project', 'state']) if (state[k]) p.set(k, state[k]);
    if (state.attention) p.set('attention', 'true');
    if (state.offset) p.set('offset', String(state.offset));
    const [f, ps, cps] = await Promise.all([get(`/v2/fleet?${p}`, { signal }), get('/v2/projects', { signal }),
      get('/v2/cluster-providers', { signal }).catch(() => [])]);
    if (g !== gen) return; // answers a filter since changed: the load asked since shows the new one
    const names = list(ps).map((x) => String(x?.metadata?.name ?? '')).sort();
    if (fProject.options.length !== names.length + 1) {
      fProject.replaceChildren(h('option', { value: '' }, 'All projects'), ...names.map((n) => h('option', { value: n }, n)));
      fProject.value = state.project;
    }
    renderSummary(f.summary || {});
    const digs = list(f.digs);
    const matched = f.matched ?? digs.length;
    replace(box, table({ caption: 'Deployment intent groups', testid: 'fleet',
      rows: digs.map((d) => (ctx.mayOperate(d.project) ? digRow(d, approveStage, correctDrift, readReadiness) : digRow(d, null, null, readReadiness))),
      head: ['DIG', 'State', 'Clusters', 'Ready', 'Operation', 'Rollout', 'Drift', 'Needs attention', 'Last change'],
      empty: state.q || state.state || state.attention || state.project ? 'No deployment intent group matches the filters.' : 'No deployment intent group.' }));
    pageText.textContent = matched ? `${state.offset + 1}–${state.offset + digs.length} of ${matched}` : '0 of 0';
    prev.disabled = state.offset === 0;
    next.disabled = state.offset + digs.length >= matched;
    await renderLists(ps, cps, signal);
  }

  // The projects and cluster providers, as links, below the fleet.
  async function renderLists(ps, cps, signal) {
    const byName = (a, b) => String(a?.metadata?.name).localeCompare(String(b?.metadata?.name));
    const mine = list(ps).slice().sort(byName);
    replace(projects, mine.length ? h('ul', { class: 'links', 'data-testid': 'projects' }, mine.map((x) =>
      h('li', null, h('a', { href: href('p', x.metadata.name), 'data-key': `p:${x.metadata.name}` }, x.metadata.name))))
      : h('p', { class: 'empty' }, 'No project.'));
    const cpNames = list(cps).map((x) => String(x?.metadata?.name ?? '')).sort();
    // A page of each provider's clusters: the home of a fleet of 10,000 must not list them all.
    const clusters = await Promise.all(cpNames.map((cp) =>
      get(`${apiPath('cluster-providers', cp, 'clusters')}?limit=${CLUSTERS_SHOWN}`, { signal }).catch(() => [])));
    replace(providers, cpNames.length ? cpNames.map((cp, i) => h('section', { class: 'provider' }, h('h3', null, `Cluster provider ${cp}`),
      h('ul', { class: 'links' }, list(clusters[i]).slice().sort(byName).map((c) =>
        h('li', null, h('a', { href: href('cp', cp, 'c', c.metadata.name) }, c.metadata.name)))),
      list(clusters[i]).length === CLUSTERS_SHOWN ? h('p', { class: 'sub' }, `The first ${CLUSTERS_SHOWN} clusters.`) : null))
      : h('p', { class: 'empty' }, 'No cluster provider.'));
  }

  return {
    title: 'Fleet',
    crumbs: [['Home']],
    body: [
      h('p', null, h('a', { href: '#/diagnostics' }, 'Diagnostics'), ': every declared resource, whether temco accepted it, and its errors.'),
      h('p', null, h('a', { href: '#/notifications' }, 'Notifications'), ': the notification receivers, their deliveries and the feed of events.'),
      section('Summary', summary), section('Deployment intent groups', filters, box, pager),
      section('Projects', projects), section('Cluster providers', providers)],
    load,
    query: (q) => set(fromQuery(q)), // the address changed its filters (a link, back, forward)
  };
}

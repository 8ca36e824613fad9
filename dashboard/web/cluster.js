// The view of one cluster: what runs there (GET cluster/dashboard) — each DIG placed on it
// with a cell per app, linking to the app's objects there, and what its capacity placement
// read of the cluster — its labels, reachability and the newest error an object met
// there; then its network intents' status (views.js).

import { apiPath, get } from './api.js';
import { h, href, kv, list, mark, replace, row, section, stateText, table, time } from './dom.js';
import { clusterNetwork, trail } from './views.js';

function digRow(r, d) {
  const dig = href('p', d.project, 'ca', d.compositeApp, d.compositeAppVersion, 'dig', d.name);
  const apps = Object.keys(d.apps || {}).sort();
  return row({ 'data-dig': `${d.project}/${d.compositeApp}/${d.compositeAppVersion}/${d.name}`, 'data-state': d.state }, [
    h('th', { scope: 'row' }, h('a', { href: dig }, d.name),
      h('span', { class: 'sub' }, `project ${d.project}, ${d.compositeApp} ${d.compositeAppVersion}`)),
    h('td', null, d.digState, d.contextStatus && d.contextStatus !== d.digState ? h('span', { class: 'sub' }, d.contextStatus) : null),
    h('td', { 'data-testid': 'cluster-state' }, stateText(d.state)),
    h('td', null, h('ul', { class: 'states' }, apps.map((app) => {
      const cell = d.apps[app] || {};
      return h('li', { class: `state st-${cell.state}`, 'data-app': app, 'data-state': cell.state },
        h('a', { href: `${dig}/c/${encodeURIComponent(r.cp)}/${encodeURIComponent(r.c)}/app/${encodeURIComponent(app)}` },
          mark(cell.state), ` ${app}: ${cell.state} (${cell.objects} objects)`));
    }))),
    h('td', { class: 'wrap' }, d.retry ? `retrying: attempt ${d.retry.attempts}, ${d.retry.error}` : '—'),
    capacityCell(d.capacity),
  ]);
}

// capacityCell says what the DIG's capacity placement last read of the cluster (its
// signals) and made of it (the cluster's member state).
function capacityCell(c) {
  if (!c) return h('td', { 'data-testid': 'cluster-capacity' }, '—');
  const s = c.signals;
  const read = !s ? 'not read yet' : !s.reachable ? `unreachable: ${s.error || 'no answer'}`
    : [s.unschedulable ? `${s.unschedulable} pods unschedulable` : 'pods scheduled', s.atMaxReplicas ? 'an HPA at its maximum' : null,
      s.wantsFewer ? 'HPAs want fewer' : null, s.atFloor ? 'at its floor' : null].filter(Boolean).join(', ');
  return h('td', { 'data-testid': 'cluster-capacity', 'data-state': c.state || '', class: 'wrap' },
    `${c.placement}: ${c.state || 'not a member'}`, c.reason ? h('span', { class: 'sub' }, c.reason) : null,
    h('span', { class: 'sub' }, read, c.read ? [', read ', time(c.read)] : null));
}

// reachability says what the last probe of the cluster's API server found, and since when.
function reachability(x) {
  switch (x?.state) {
    case 'Reachable': return [mark('Ready'), ' reachable since ', time(x.since), x.checked ? ['; checked since ', time(x.checked)] : null];
    case 'Unreachable': return [mark('Failed'), ' unreachable since ', time(x.since), x.error ? `: ${x.error}` : null];
    case 'GitOps': return 'reached through git (temco does not probe it)';
    default: return 'not probed yet';
  }
}

export function clusterView(r) {
  const summary = h('div', null, 'Loading…');
  const box = h('div');
  const network = clusterNetwork(r);
  return {
    title: `Cluster ${r.cp}+${r.c}`,
    crumbs: [...trail.home(), [`Cluster ${r.cp}+${r.c}`]],
    body: [summary, section('Deployments here', box), section('Network intents', network.body)],
    async load(signal) {
      const [v] = await Promise.all([get(`${apiPath('cluster-providers', r.cp, 'clusters', r.c)}/dashboard`, { signal }), network.load(signal)]);
      const e = v?.lastError;
      replace(summary, kv([['Provider', v?.clusterProvider], ['Labels', list(v?.labels).join(', ') || 'none'],
        ['Deployments by state', Object.entries(v?.states || {}).map(([s, n]) => `${s} ${n}`).join(', ') || 'none'],
        ['Last error', e ? [`${e.status} ${e.object} (app ${e.app}, ${e.project}): ${e.error}, `, time(e.time)] : 'none', e ? { class: 'error' } : undefined],
        ['Reachability', reachability(v?.reachability), { 'data-testid': 'cluster-reachability', 'data-state': v?.reachability?.state || 'Unknown',
          class: v?.reachability?.state === 'Unreachable' ? 'error' : undefined }],
      ], { 'data-testid': 'cluster-summary' }));
      replace(box, table({ caption: 'Deployment intent groups placed on this cluster', testid: 'cluster-digs',
        head: ['DIG', 'DIG state', 'State here', 'Apps here', 'Retrying', 'Capacity placement'], rows: list(v?.digs).map((d) => digRow(r, d)),
        empty: 'Nothing of yours is placed here.' }));
    },
  };
}

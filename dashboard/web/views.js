// The list and status views. A view is {title, crumbs, body, load(signal)}: app.js puts
// the breadcrumbs, the h1 and body (stable containers) on the page once, then calls load
// on every poll; load fetches and renders the data into those containers.

import { ApiError, apiPath, digPath, get } from './api.js';
import {
  counts, dash, h, href, json, kv, list, nameOf, replace, row, section, table, time, value,
} from './dom.js';

// Breadcrumb trails: [label, href] pairs, the current page last (without a link).
export const trail = {
  home: () => [['Home', '#/']],
  project: (r) => [...trail.home(), [`Project ${r.p}`, href('p', r.p)]],
  app: (r) => [...trail.project(r), [`${r.ca} ${r.v}`, href('p', r.p, 'ca', r.ca, r.v)]],
  dig: (r) => [...trail.app(r), [`DIG ${r.dig}`, href('p', r.p, 'ca', r.ca, r.v, 'dig', r.dig)]],
};

// soft turns a failed secondary call into a value shown in place of its list, so one
// forbidden or missing list does not blank the whole view; 401s and aborts still fail it.
const soft = (e) => {
  if (e instanceof ApiError && e.status !== 401) return e;
  throw e;
};

// links renders [label, href, note] items as a list of links.
function links(items, empty) {
  if (items instanceof ApiError) return h('p', { class: 'error' }, items.message);
  if (!items.length) return h('p', { class: 'empty' }, empty);
  return h('ul', { class: 'links' }, items.map(([label, to, note]) =>
    h('li', null, h('a', { href: to, 'data-key': to }, label), note ? [' — ', note] : null)));
}

const byName = (a, b) => nameOf(a).localeCompare(nameOf(b));
const sorted = (v) => list(v).slice().sort(byName);
const description = (item) => item?.metadata?.description || '';

// versionOf reads a composite app's version from a list item; EMCO puts it in the spec,
// but be tolerant of other places.
const versionOf = (item) => String(item?.spec?.compositeAppVersion ?? item?.metadata?.compositeAppVersion
  ?? item?.spec?.version ?? item?.compositeAppVersion ?? '');

export function project(r) {
  const apps = h('div', null, 'Loading…');
  const clouds = h('div', null, 'Loading…');
  return {
    title: `Project ${r.p}`,
    crumbs: [...trail.home(), [`Project ${r.p}`]],
    body: [
      h('p', null, h('a', { href: href('p', r.p, 'notifications'), 'data-testid': 'project-notifications' }, 'Notifications'),
        ': the project\'s notification receivers, their deliveries and its events.'),
      section('Composite apps', apps), section('Logical clouds', clouds)],
    async load(signal) {
      const [cas, lcs] = await Promise.all([
        get(apiPath('projects', r.p, 'composite-apps'), { signal }),
        get(apiPath('projects', r.p, 'logical-clouds'), { signal }).catch(soft),
      ]);
      const versions = sorted(cas).sort((a, b) => byName(a, b) || versionOf(a).localeCompare(versionOf(b)));
      replace(apps, links(versions.map((ca) => {
        const v = versionOf(ca);
        return [`${nameOf(ca)} ${v || '(no version)'}`, href('p', r.p, 'ca', nameOf(ca), v), description(ca)];
      }), 'No composite app.'));
      replace(clouds, links(lcs instanceof ApiError ? lcs : sorted(lcs).map((lc) =>
        [nameOf(lc), href('p', r.p, 'lc', nameOf(lc)), description(lc)]), 'No logical cloud.'));
    },
  };
}

export function compositeApp(r) {
  const digs = h('div', null, 'Loading…');
  return {
    title: `Composite app ${r.ca} ${r.v}`,
    crumbs: [...trail.project(r), [`${r.ca} ${r.v}`]],
    body: [section('Deployment intent groups', digs)],
    async load(signal) {
      const ds = await get(apiPath('projects', r.p, 'composite-apps', r.ca, r.v, 'deployment-intent-groups'), { signal });
      replace(digs, links(sorted(ds).map((d) => {
        const note = [description(d), d?.spec?.logicalCloud ? `logical cloud ${d.spec.logicalCloud}` : ''].filter(Boolean).join('; ');
        return [nameOf(d), href('p', r.p, 'ca', r.ca, r.v, 'dig', nameOf(d)), note];
      }), 'No deployment intent group.'));
    },
  };
}

// The status answer's fields statusView shows itself; any other field is shown as data.
const STATUS_FIELDS = new Set(['name', 'project', 'clusterProvider', 'compositeApp', 'compositeAppVersion', 'compositeProfile',
  'states', 'status', 'deployedStatus', 'readyStatus', 'rsyncStatus', 'clusterStatus', 'deployedCounts', 'readyCounts',
  'apps', 'clusters', 'cluster', 'instance', 'revision', 'error']);

// The per-resource status fields; an answer sets the ones of its mode.
const RESOURCE_STATUS = [['rsyncStatus', 'Rsync status'], ['clusterStatus', 'Cluster status'],
  ['deployedStatus', 'Deployed'], ['readyStatus', 'Ready']];

// statusView renders an EMCO status answer (a logical cloud's, or a cluster's network
// intents'): summary, history, and per cluster its resources.
function statusView({ title, crumbs, path }) {
  const summary = h('div');
  const history = h('div');
  const clusters = h('div');
  const more = h('div');
  return {
    title,
    crumbs,
    body: [summary, section('History', history), section('Clusters', clusters), more],
    async load(signal) {
      const s = (await get(`${path}?status=ready`, { signal })) || {};
      replace(summary, kv([
        ['Status', s.status], ['Deployed status', s.deployedStatus ?? ''], ['Ready status', s.readyStatus ?? ''],
        ['Instance', s.instance ?? s.states?.statusctxid ?? ''], ['Revision', s.revision],
        ['Rsync status counts', s.rsyncStatus && counts(s.rsyncStatus)],
        ['Cluster status counts', s.clusterStatus && counts(s.clusterStatus)],
        ['Deployed counts', s.deployedCounts && counts(s.deployedCounts)],
        ['Ready counts', s.readyCounts && counts(s.readyCounts)],
        ['Error', s.error || undefined, { class: 'error' }],
      ], { 'data-testid': 'summary' }));
      replace(history, table({
        caption: 'Lifecycle actions, oldest first', testid: 'history', head: ['State', 'Revision', 'Instance', 'Time'],
        rows: list(s.states?.actions).map((a) => row(null, [dash(a?.state), dash(a?.revision), dash(a?.instance), time(a?.time)])),
        empty: 'No action yet.',
      }));
      // A logical cloud lists its clusters, a cluster's network status is about itself, and
      // a DIG-like answer groups clusters by app: show them all the same way.
      const all = [...list(s.clusters), ...(s.cluster ? [s.cluster] : []),
        ...list(s.apps).flatMap((a) => list(a?.clusters).map((c) => ({ ...c, app: a?.name })))];
      replace(clusters, all.length ? all.map(clusterStatus) : h('p', { class: 'empty' }, 'No cluster: not instantiated yet.'));
      const rest = Object.entries(s).filter(([k]) => !STATUS_FIELDS.has(k));
      replace(more, rest.length ? section('More', kv(rest.map(([k, v]) => [k, value(v, k)]))) : null);
    },
  };
}

function clusterStatus(c) {
  const key = `${c?.clusterProvider ?? ''}+${c?.cluster ?? ''}`;
  const resources = list(c?.resources);
  const fields = RESOURCE_STATUS.filter(([f]) => resources.some((r) => r?.[f]));
  return h('section', { class: 'cluster', 'data-cluster': key },
    h('h3', null, c?.app ? `App ${c.app} on ${key}` : `Cluster ${key}`),
    kv([['Connectivity', c?.connectivity], ['Ready status', c?.readyStatus]]),
    table({
      caption: `Resources on ${key}`,
      head: ['Kind', 'Namespace', 'Name', ...fields.map(([, t]) => t), 'Attempts', 'Error', 'Detail'],
      rows: resources.map((r) => row(null, [
        dash(r?.GVK?.Kind), dash(r?.namespace), dash(r?.name), ...fields.map(([f]) => dash(r?.[f])),
        dash(r?.attempts), dash(r?.error),
        r?.detail ? h('details', { 'data-key': `${key}/${r?.GVK?.Kind}/${r?.namespace}/${r?.name}` },
          h('summary', null, 'JSON'), json(r.detail)) : '—',
      ])),
      empty: 'No resource.',
    }));
}

export function cloudStatus(r) {
  return statusView({
    title: `Logical cloud ${r.lc}`,
    crumbs: [...trail.project(r), [`Logical cloud ${r.lc}`]],
    path: apiPath('projects', r.p, 'logical-clouds', r.lc, 'status'),
  });
}

export function clusterNetwork(r) {
  return statusView({
    title: `Cluster ${r.cp}+${r.c}: network intents`,
    crumbs: [...trail.home(), [`Cluster ${r.cp}+${r.c}`]],
    path: apiPath('cluster-providers', r.cp, 'clusters', r.c, 'status'),
  });
}

// readyOf is an object's readiness as the objects table shows it.
function readyOf(o) {
  if (o?.state === 'Present') return o.ready ? 'Ready' : 'NotReady';
  return o?.state === 'NotPresent' ? 'NotPresent' : 'Unknown';
}

// objects is one app's objects on one cluster; the API reads them live on every call.
export function objects(r) {
  const summary = h('div', null, 'Reading the cluster…');
  const box = h('div');
  return {
    title: `App ${r.app} on ${r.cp}+${r.c}`,
    crumbs: [...trail.dig(r), [`${r.app} on ${r.cp}+${r.c}`]],
    body: [summary, section('Objects', box)],
    async load(signal) {
      const path = `${digPath(r)}/dashboard/clusters/${encodeURIComponent(r.cp)}/${encodeURIComponent(r.c)}/apps/${encodeURIComponent(r.app)}`;
      const d = (await get(path, { signal })) || {};
      replace(summary, kv([
        ['Cluster', d.cluster ?? `${r.cp}+${r.c}`], ['App', d.app ?? r.app], ['Live state read', time(d.readAt, 'never')],
        ['Live read', d.liveError || undefined, { class: 'warn' }],
      ]));
      replace(box, table({
        caption: `Objects of ${r.app} on ${r.cp}+${r.c}`, testid: 'objects',
        head: ['Kind', 'Namespace', 'Name', 'Deployed', 'Attempts', 'Error', 'Live state', 'Ready', 'Detail'],
        rows: list(d.objects).map((o) => {
          const id = `${o?.kind ?? ''}/${o?.namespace ?? ''}/${o?.name ?? ''}`;
          const gv = [o?.group, o?.version].filter(Boolean).join('/');
          return row({ 'data-object': id }, [
            [dash(o?.kind), gv ? h('span', { class: 'sub' }, gv) : null],
            dash(o?.namespace), dash(o?.name), dash(o?.deployed), dash(o?.attempts),
            [dash(o?.error), o?.warning ? h('span', { class: 'sub warn', 'data-testid': 'warning' }, o.warning) : null],
            [o?.state || 'not read', o?.liveError ? h('span', { class: 'sub error' }, o.liveError) : null],
            h('td', { 'data-testid': 'ready' }, readyOf(o)),
            o?.detail ? h('details', { 'data-key': id }, h('summary', null, 'JSON'), json(o.detail)) : '—',
          ]);
        }),
        empty: 'No object.',
      }));
    },
  };
}

export function notFound() {
  return {
    title: 'Not found',
    crumbs: [...trail.home(), ['Not found']],
    body: [h('p', null, 'This page does not exist. ', h('a', { href: '#/' }, 'Go to the projects.'))],
    async load() {},
  };
}

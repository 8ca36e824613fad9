// The notifications view: the notification receivers of a project (#/p/{p}/notifications)
// or, for an admin, the fleet's (#/notifications), each with the state of its deliveries,
// then the feed of events, newest first, filtered by type and paged back in time
// (before= the oldest event shown). Read-only: receivers are managed over the API or with
// emcoctl files. A tenant's #/notifications only links to its projects' pages: the admin
// receivers and the whole feed are for admins, and the page does not ask for them.

import { apiPath, get } from './api.js';
import {
  dash, h, href, json, list, nameOf, replace, row, section, stateText, table, time, when,
} from './dom.js';
import { routeOf } from './diagnostics.js';
import { trail } from './views.js';

// The event types (internal/core/events.Types, in its order; dashboard_test.go checks).
export const EVENT_TYPES = ['operation.started', 'operation.succeeded', 'operation.failed', 'rollout.stage.waiting',
  'rollout.rolledback', 'drift.found', 'drift.corrected', 'cluster.unreachable', 'cluster.reachable',
  'autoscaler.decision', 'policy.action', 'artifact.verification.failed'];

const EVENTS_LIMIT = 50;
// RECEIVERS_SHOWN bounds the receivers listed, each with its status read (a call each).
const RECEIVERS_SHOWN = 100;

// filterText says which events a receiver takes, in words.
function filterText(f) {
  const parts = [
    list(f?.events).length ? `events ${list(f.events).join(', ')}` : '',
    list(f?.projects).length ? `projects ${list(f.projects).join(', ')}` : '',
    list(f?.deploymentIntentGroups).length ? `DIGs ${list(f.deploymentIntentGroups).join(', ')}` : '',
    list(f?.clusterLabels).length ? `cluster labels ${list(f.clusterLabels).join(', ')}` : '',
  ].filter(Boolean);
  return parts.length ? parts.join('; ') : 'every event';
}

// hostOf is the host of a receiver's URL as answers mask it ("https://host/********").
function hostOf(u) {
  try {
    return new URL(u).host;
  } catch {
    return '';
  }
}

// attempt is one delivery attempt: when, the event's type and id (shortened; whole in its
// title), and which attempt it was.
const attempt = (a) => [time(a?.time), ` ${a?.type ?? ''}`, a?.attempt > 1 ? ` (attempt ${a.attempt})` : '',
  h('span', { class: 'sub', title: a?.event ?? '' }, `event ${String(a?.event ?? '').slice(0, 12)}`)];

// count is one of a receiver's delivery counts, its number in its own element.
const count = (testid, n, what) => h('span', { class: 'count' }, h('span', { 'data-testid': testid }, dash(n)), ` ${what}`);

// receiverRow is one receiver with its deliveries (st: the status answer, or the error
// reading it).
function receiverRow(rcv, st) {
  const name = nameOf(rcv);
  const spec = rcv?.spec || {};
  const failedRead = st instanceof Error;
  const s = failedRead ? {} : st || {};
  const errors = list(s.lastErrors).slice().reverse(); // newest first
  return row({ 'data-receiver': name, 'data-state': s.state || 'Unknown' }, [
    h('th', { scope: 'row' }, name, h('span', { class: 'sub', 'data-testid': 'receiver-format' }, spec.format || 'cloudevents'),
      rcv?.metadata?.description ? h('span', { class: 'sub' }, rcv.metadata.description) : null),
    h('td', { 'data-testid': 'receiver-host' }, hostOf(spec.url) || '—', h('span', { class: 'sub' }, h('code', null, spec.url || ''))),
    h('td', { 'data-testid': 'receiver-filter', class: 'wrap' }, filterText(spec.filter)),
    h('td', { 'data-testid': 'receiver-state' }, failedRead ? h('span', { class: 'error' }, st.message) : stateText(s.state),
      when(s.updated) ? h('span', { class: 'sub' }, 'updated ', time(s.updated)) : null),
    h('td', { 'data-testid': 'receiver-counts' }, count('receiver-delivered', s.delivered, 'delivered'),
      count('receiver-failed', s.failed, 'given up'), count('receiver-queued', s.queued, 'queued')),
    h('td', { 'data-testid': 'receiver-last-delivered' }, s.lastDelivered ? attempt(s.lastDelivered) : 'none yet'),
    h('td', { 'data-testid': 'receiver-errors', class: 'wrap' }, errors.length
      ? h('ul', { class: 'errors' }, errors.map((a) => h('li', { class: 'error' }, attempt(a), h('span', { class: 'sub error' }, a?.error ?? ''))))
      : 'none'),
  ]);
}

// aboutCell names what the event is about, as a link to its view when the page has one.
function aboutCell(e) {
  let text = e?.resource || '—';
  let to = '';
  if (e?.deploymentIntentGroup) {
    text = `${e.project}/${e.compositeApp}/${e.compositeAppVersion}/${e.deploymentIntentGroup}`;
    to = href('p', e.project, 'ca', e.compositeApp, e.compositeAppVersion, 'dig', e.deploymentIntentGroup);
  } else if (e?.cluster) {
    text = e.cluster;
    const [cp, c] = String(e.cluster).split('+');
    to = c ? href('cp', cp, 'c', c) : '';
  } else if (e?.resource) {
    to = routeOf(`/v2${e.resource}`);
    if (e.project && e.resource === `/projects/${e.project}`) text = `project ${e.project}`;
  }
  return h('td', { 'data-testid': 'event-about', class: 'wrap' }, to ? h('a', { href: to }, text) : text,
    list(e?.clusterLabels).length ? h('span', { class: 'sub' }, `labels ${e.clusterLabels.join(', ')}`) : null);
}

function eventRow(e, all) {
  const details = e?.details && Object.keys(e.details).length ? e.details : null;
  return row({ 'data-event': e?.id ?? '', 'data-type': e?.type ?? '', 'data-project': e?.project ?? '' }, [
    h('td', { 'data-testid': 'event-time' }, time(e?.time)),
    h('td', { 'data-testid': 'event-type' }, h('code', null, e?.type ?? '')),
    all ? h('td', { 'data-testid': 'event-project' }, e?.project ? h('a', { href: href('p', e.project) }, e.project) : 'the fleet') : null,
    aboutCell(e),
    h('td', { 'data-testid': 'event-summary', class: 'wrap' }, e?.summary || '—'),
    h('td', null, details ? h('details', { 'data-key': `event:${e.id}` }, h('summary', null, 'Details'), json(details)) : '—'),
  ].filter(Boolean));
}

// ctx (from app.js): session, setQuery(URLSearchParams) and refreshNow().
export function notificationsView(r, ctx) {
  const fleet = r.p === undefined;
  const admin = Boolean(ctx.session?.admin);
  if (fleet && !admin) return tenantIndex(ctx);

  let type = EVENT_TYPES.includes(r.query.get('type')) ? r.query.get('type') : '';
  let befores = ['']; // the before= of each page up to the one shown ('' the newest)
  let oldest = ''; // the time of the oldest event shown, '' when the page is not full
  let gen = 0; // bumped when the filter or the page changes: an older answer is dropped

  const receivers = h('div', null, 'Loading…');
  const feed = h('div', null, 'Loading…');
  const fType = h('select', { id: 'events-type' }, h('option', { value: '' }, 'All types'),
    EVENT_TYPES.map((t) => h('option', { value: t, selected: t === type }, t)));
  fType.addEventListener('change', () => setType(fType.value));
  const filters = h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter events', onsubmit: (e) => e.preventDefault() },
    h('div', null, h('label', { for: 'events-type' }, 'Type'), fType));
  const newer = h('button', { id: 'events-newer', type: 'button', onclick: () => turn(-1) }, 'Newer');
  const older = h('button', { id: 'events-older', type: 'button', onclick: () => turn(1) }, 'Older');
  const pageText = h('span', { 'data-testid': 'events-page' });
  const pager = h('nav', { class: 'pager', 'aria-label': 'Pages of events' }, newer, ' ', pageText, ' ', older);

  const receiversPath = fleet ? '/v2/notification-receivers' : apiPath('projects', r.p, 'notification-receivers');
  const eventsPath = fleet ? '/v2/events' : apiPath('projects', r.p, 'events');

  function reload() {
    gen++;
    ctx.refreshNow();
  }

  function turn(step) {
    if (step > 0 && oldest) befores.push(oldest);
    else if (step < 0 && befores.length > 1) befores.pop();
    else return;
    reload();
  }

  function setType(t) {
    fType.value = t;
    if (t === type) return;
    type = t;
    befores = [''];
    const p = new URLSearchParams();
    if (type) p.set('type', type);
    ctx.setQuery(p);
    reload();
  }

  async function load(signal) {
    const g = gen;
    const q = new URLSearchParams({ limit: String(EVENTS_LIMIT) });
    if (type) q.set('type', type);
    const before = befores[befores.length - 1];
    if (before) q.set('before', before);
    const [rcvs, evs] = await Promise.all([get(`${receiversPath}?limit=${RECEIVERS_SHOWN}`, { signal }), get(`${eventsPath}?${q}`, { signal })]);
    const shown = list(rcvs);
    // A status that cannot be read shows its error in its row; the others still show.
    const statuses = await Promise.all(shown.map((x) =>
      get(`${receiversPath}/${encodeURIComponent(nameOf(x))}/status`, { signal }).catch((e) => {
        if (e?.name === 'AbortError' || e?.status === 401) throw e;
        return e;
      })));
    if (g !== gen) return; // answers the filter or page before: the load asked since shows the new one
    replace(receivers, table({
      caption: fleet ? 'Admin receivers: the fleet\'s events' : `Receivers of project ${r.p}`, testid: 'receivers',
      head: ['Receiver', 'Posts to', 'Filter', 'State', 'Deliveries', 'Last delivered', 'Last errors, newest first'],
      rows: shown.map((x, i) => receiverRow(x, statuses[i])),
      empty: 'No notification receiver.',
    }), shown.length === RECEIVERS_SHOWN ? h('p', { class: 'sub' }, `The first ${RECEIVERS_SHOWN} receivers.`) : null);
    const events = list(evs);
    oldest = events.length === EVENTS_LIMIT ? String(events[events.length - 1]?.time ?? '') : '';
    replace(feed, table({
      caption: `${fleet ? 'Every project\'s events and the fleet\'s' : `Events of project ${r.p}`}${type ? ` of type ${type}` : ''}, newest first`,
      testid: 'events',
      head: ['Time', 'Type', ...(fleet ? ['Project'] : []), 'About', 'Summary', 'Details'],
      rows: events.map((e) => eventRow(e, fleet)),
      empty: befores.length > 1 ? 'No older event.' : type ? `No event of type ${type}.` : 'No event yet.',
    }));
    pageText.textContent = befores.length === 1 ? 'Newest events' : `Events before ${new Date(befores[befores.length - 1]).toLocaleString()}`;
    newer.disabled = befores.length === 1;
    older.disabled = !oldest;
  }

  const scope = fleet
    ? 'The admin receivers take events of every project and of the fleet itself (a cluster\'s reachability); the feed below is every one of them. A project\'s own receivers are on its page (Project, then Notifications).'
    : `A project's receivers take its own events only.`;
  return {
    title: fleet ? 'Notifications' : `Notifications of project ${r.p}`,
    crumbs: fleet ? [...trail.home(), ['Notifications']] : [...trail.project(r), ['Notifications']],
    body: [
      h('p', null, scope, ' This page only reads them: receivers are created, changed and deleted over the API ',
        h('code', null, fleet ? '/v2/notification-receivers' : `/v2/projects/${r.p}/notification-receivers`),
        ' or with emcoctl files. URLs and secrets are never shown: only the host a receiver posts to.'),
      section('Receivers', receivers),
      section('Events', filters, feed, pager),
    ],
    load,
    query(params) {
      const t = params.get('type');
      setType(EVENT_TYPES.includes(t) ? t : '');
    },
  };
}

// tenantIndex is a tenant's #/notifications: a link to each of its projects' pages.
function tenantIndex(ctx) {
  const projects = list(ctx.session?.projects).slice().sort();
  return {
    title: 'Notifications',
    crumbs: [...trail.home(), ['Notifications']],
    body: [
      h('p', null, 'The admin receivers and the whole fleet\'s events are for admins. Your projects\' receivers and events:'),
      projects.length
        ? h('ul', { class: 'links', 'data-testid': 'notification-projects' }, projects.map((p) =>
          h('li', null, h('a', { href: href('p', p, 'notifications') }, `Project ${p}`))))
        : h('p', { class: 'empty' }, 'No project is granted to you.'),
    ],
    async load() {},
  };
}

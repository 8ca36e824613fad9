// temco's operator dashboard: session and sign-in, hash routing, polling, the
// confirmation dialog and the status message. The views are in fleet.js (the home),
// views.js, dig.js, diagnostics.js and notifications.js.

import { get, onUnauthorized, token } from './api.js';
import { clock, h } from './dom.js';
import { diagnosticsView } from './diagnostics.js';
import { digView } from './dig.js';
import { clusterView } from './cluster.js';
import { fleetView } from './fleet.js';
import { clustersView } from './grid.js';
import { notificationsView } from './notifications.js';
import {
  cloudStatus, compositeApp, notFound, objects, project,
} from './views.js';

const POLL_MS = 3000;

const viewBox = document.getElementById('view');
const bar = document.getElementById('session-bar');
const message = document.getElementById('message');
const updated = document.querySelector('[data-testid=updated]');

let session = null; // the GET /v2/session answer; null until signed in
let current = null; // the view on the page: {path, el, load, query?, ctrl}
let busy = null; // the load in flight: polls never overlap
let timer = 0;

// --- The status message -----------------------------------------------------------

// say shows text in #message. kind: 'ok' | 'info' | 'error'; source 'poll' marks a failed poll,
// which the next successful one clears (an action's outcome stays until the next one).
function say(text, kind = 'ok', source = 'action') {
  message.textContent = text;
  message.className = kind;
  message.dataset.source = source;
}

function clearMessage() {
  message.textContent = '';
  message.className = '';
  delete message.dataset.source;
}

// fail shows a failed call's message; aborted calls (the view changed) and 401s (the
// sign-in form is up) say nothing more.
function fail(e, source = 'action') {
  if (e?.name === 'AbortError' || e?.status === 401) return;
  say(e?.message || String(e), 'error', source);
}

// --- Polling ------------------------------------------------------------------------

// refresh loads the current view once; while a load is in flight it returns that one.
function refresh() {
  if (busy) return busy;
  const v = current;
  if (!v || v.settled) return Promise.resolve();
  busy = (async () => {
    try {
      await v.load(v.ctrl.signal);
      if (v !== current) return;
      updated.dateTime = new Date().toISOString();
      updated.textContent = clock(new Date());
      if (message.dataset.source === 'poll') clearMessage();
    } catch (e) {
      if (v === current) fail(e, 'poll');
      // Refused or missing: asking again every 3 s changes nothing; a navigation retries.
      if (e?.status === 403 || e?.status === 404) v.settled = true;
    } finally {
      busy = null;
    }
  })();
  return busy;
}

// refreshNow loads at once (after the load in flight, if any) and restarts the timer.
async function refreshNow() {
  await busy;
  await refresh();
  schedule();
}

function schedule() {
  clearTimeout(timer);
  if (current && !current.settled) timer = setTimeout(tick, POLL_MS);
}

// tick polls only while the page is visible; a hidden tab costs the API nothing.
async function tick() {
  if (document.visibilityState === 'visible') await refresh();
  schedule();
}

document.addEventListener('visibilitychange', () => {
  if (document.visibilityState === 'visible' && current) tick();
});

// --- Routing ------------------------------------------------------------------------

// parseHash splits '#/p/x/ca/y/v1/dig/d?state=Retrying' into its path, decoded path
// segments and query.
function parseHash() {
  const raw = location.hash.replace(/^#\/?/, '');
  const i = raw.indexOf('?');
  const path = i < 0 ? raw : raw.slice(0, i);
  const query = new URLSearchParams(i < 0 ? '' : raw.slice(i + 1));
  let segs;
  try {
    segs = path.split('/').filter(Boolean).map(decodeURIComponent);
  } catch {
    segs = null; // a malformed escape: not found
  }
  return { path, segs, query };
}

function makeView(segs, query, ctx) {
  if (!segs) return notFound();
  const [a, p, b, x, y, d, dig, c, cp, cl, e, app] = segs;
  const n = segs.length;
  if (n === 0) return fleetView({ query }, ctx);
  if (a === 'diagnostics' && n === 1) return diagnosticsView({ query }, ctx);
  if (a === 'clusters' && n === 1) return clustersView();
  if (a === 'notifications' && n === 1) return notificationsView({ query }, ctx);
  if (a === 'p' && n === 2) return project({ p });
  if (a === 'p' && b === 'notifications' && n === 3) return notificationsView({ p, query }, ctx);
  if (a === 'p' && b === 'lc' && n === 4) return cloudStatus({ p, lc: x });
  if (a === 'p' && b === 'ca' && n === 5) return compositeApp({ p, ca: x, v: y });
  if (a === 'p' && b === 'ca' && d === 'dig' && n === 7) return digView({ p, ca: x, v: y, dig, query }, ctx);
  if (a === 'p' && b === 'ca' && d === 'dig' && c === 'c' && e === 'app' && n === 12) {
    return objects({ p, ca: x, v: y, dig, cp, c: cl, app });
  }
  if (a === 'cp' && b === 'c' && n === 4) return clusterView({ cp: p, c: x });
  return notFound();
}

// What the views may use of the app.
const ctx = {
  get session() { return session; },
  mayOperate: (p) => Boolean(session && (session.admin || (session.projects || []).includes(p))),
  confirm,
  say,
  fail,
  refreshNow,
  // setQuery rewrites the hash's query without a hashchange (the view stays as it is).
  setQuery(params) {
    const qs = params.toString();
    history.replaceState(history.state, '', `#/${current.path}${qs ? `?${qs}` : ''}`);
    routed();
  },
};

function leave() {
  current?.ctrl.abort();
  current = null;
  clearTimeout(timer);
}

// route shows the view of the hash. moveFocus: after a navigation, focus goes to the new
// h1 so that keyboard and screen reader users start at the top of the new view.
function route(moveFocus) {
  if (!session) return;
  const { path, segs, query } = parseHash();
  if (current && current.path === path) {
    current.query?.(query); // same view, other filters or page
    routed();
    return;
  }
  leave();
  const v = makeView(segs, query, ctx);
  const heading = h('h1', { tabindex: '-1' }, v.title);
  const crumbs = h('nav', { 'aria-label': 'Breadcrumb', class: 'crumbs' }, h('ol', null, v.crumbs.map(([label, to], i) =>
    h('li', null, i === v.crumbs.length - 1 || !to ? h('span', { 'aria-current': 'page' }, label) : h('a', { href: to }, label)))));
  v.el = h('div', { class: 'view' }, crumbs, heading, v.body);
  v.path = path;
  v.ctrl = new AbortController();
  current = v;
  viewBox.replaceChildren(v.el);
  document.title = `${v.title} · temco`;
  updated.textContent = '';
  updated.removeAttribute('datetime');
  clearMessage();
  if (moveFocus) heading.focus();
  refreshNow();
  routed();
}

// routed marks the hash the page shows: the hashchange event comes a task after the
// address changed, so a test (or a tool) waits for this, not for the address.
function routed() { document.body.dataset.route = location.hash; }

window.addEventListener('hashchange', () => route(true));

// --- Session and sign-in ------------------------------------------------------------

function renderBar() {
  if (!session) {
    bar.replaceChildren();
    return;
  }
  if (!session.authentication) {
    bar.replaceChildren(h('span', null, 'Authentication is off'));
    return;
  }
  const role = session.admin ? 'admin' : `projects: ${(session.projects || []).join(', ') || 'none'}`;
  bar.replaceChildren(
    h('span', null, 'Signed in as ', h('strong', null, session.subject || 'unknown'), ` (${role})`), ' ',
    h('button', { id: 'sign-out', type: 'button', onclick: signOut }, 'Sign out'));
}

function signOut() {
  token.clear();
  showSignIn('Signed out.', 'ok');
}

// showSignIn asks for a token (after a 401, or signing out); any view and poll stop.
function showSignIn(text, kind = 'error') {
  leave();
  session = null;
  renderBar();
  say(text, kind);
  updated.textContent = '';
  const shown = document.getElementById('token');
  if (shown) { // a token just tried was refused, or several calls failed at once
    shown.value = '';
    shown.focus();
    return;
  }
  const input = h('input', { id: 'token', name: 'token', type: 'password', autocomplete: 'off', required: true, spellcheck: 'false' });
  const form = h('form', { id: 'token-form', class: 'sign-in', 'aria-describedby': 'token-help' },
    h('h1', null, 'Sign in'),
    h('p', { id: 'token-help' }, 'This temco asks for an API token. It is kept in this browser tab only, until you sign out or close the tab.'),
    h('p', null, h('label', { for: 'token' }, 'API token'), input),
    h('p', null, h('button', { type: 'submit' }, 'Sign in')));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const t = input.value.trim();
    if (!t) return;
    token.set(t);
    start();
  });
  viewBox.replaceChildren(form);
  document.title = 'Sign in · temco';
  input.focus();
}

// Without a token yet the 401 is the expected first answer, not an error.
onUnauthorized((msg, hadToken) => showSignIn(msg, hadToken ? 'error' : 'info'));

// start reads the session (401: the sign-in form is up) and shows the hash's view.
async function start() {
  try {
    session = (await get('/v2/session')) || {};
  } catch (e) {
    if (e?.status === 401) return;
    viewBox.replaceChildren(h('div', { class: 'view' },
      h('h1', null, 'The API did not answer'),
      h('p', null, h('button', { type: 'button', onclick: start }, 'Try again'))));
    fail(e);
    return;
  }
  const signedIn = document.getElementById('token-form') !== null;
  clearMessage();
  renderBar();
  route(signedIn);
}

// --- The confirmation dialog --------------------------------------------------------

const dialog = document.getElementById('confirm');
const dTitle = document.getElementById('confirm-title');
const dText = document.getElementById('confirm-text');
const dField = document.getElementById('confirm-revision-field');
const dRevision = document.getElementById('confirm-revision');
const dError = document.getElementById('confirm-error');
const yes = document.getElementById('confirm-yes');
const no = document.getElementById('confirm-no');
let settle = null; // resolves the pending confirm

// confirm asks in the modal dialog; it resolves {revision} (when opts.revision is set,
// a string, possibly empty: the dialog then asks for a revision number) or null when
// cancelled (Cancel, Escape). Focus returns to what had it, the button clicked.
function confirm(opts) {
  const opener = document.activeElement;
  dTitle.textContent = opts.title;
  dText.textContent = opts.text;
  yes.textContent = opts.yes || 'Confirm';
  dError.textContent = '';
  const asksRevision = opts.revision !== undefined;
  dField.hidden = !asksRevision;
  dRevision.value = asksRevision ? opts.revision : '';
  dialog.returnValue = '';
  dialog.showModal();
  (asksRevision ? dRevision : no).focus();
  return new Promise((resolve) => {
    settle = (result) => {
      settle = null;
      // A poll may have re-rendered the button meanwhile: find its successor by data-key.
      const key = opener?.dataset?.key;
      const back = opener?.isConnected ? opener
        : key && [...document.querySelectorAll('[data-key]')].find((el) => el.dataset.key === key);
      if (back instanceof HTMLElement) back.focus();
      resolve(result);
    };
  });
}

yes.addEventListener('click', () => {
  if (!dField.hidden && !/^[1-9][0-9]*$/.test(dRevision.value.trim())) {
    dError.textContent = 'Enter a revision number: 1, 2, …';
    dRevision.focus();
    return;
  }
  dialog.close('yes');
});
no.addEventListener('click', () => dialog.close(''));
dRevision.addEventListener('keydown', (e) => {
  if (e.key === 'Enter') {
    e.preventDefault();
    yes.click();
  }
});
// Every way of closing ends here, Escape included (the browser closes the dialog on it).
dialog.addEventListener('close', () => {
  const ok = dialog.returnValue === 'yes';
  settle?.(ok ? { revision: dField.hidden ? undefined : dRevision.value.trim() } : null);
});

start();

// Pictures of the DIG view (issue 46): the staged rollout as a timeline of its stages, and
// the revisions as a vertical history where each one says what it changed (from the
// configuration snapshots, a diff fetched only when its entry is opened). Plain DOM and
// CSS: every state is written in words next to its marker and tint, the bars are
// decorations of numbers that are written too.

import { get } from './api.js';
import { clock, dash, h, list, stateClass, stateText, time, when } from './dom.js';

// The words and markers of a rollout stage's states (internal/core/lifecycle/rollout.go).
const STAGE_WORDS = {
  Pending: 'Pending',
  WaitingForWindow: 'Waiting for its window',
  WaitingForApproval: 'Waiting for an approval',
  Waiting: 'Waiting (a timed wait)',
  Applying: 'Applying',
  Verifying: 'Verifying health',
  Baking: 'Baking',
  Succeeded: 'Succeeded',
  Failed: 'Failed',
  RolledBack: 'Rolled back',
  Skipped: 'Skipped: no cluster',
};
const STAGE_MARKS = {
  Pending: '○', WaitingForWindow: '◷', WaitingForApproval: '!', Waiting: '◷', Applying: '▶', Verifying: '◐',
  Baking: '◔', Succeeded: '✓', Failed: '✗', RolledBack: '↺', Skipped: '−',
};
// The states a stage no longer changes from.
const FINISHED = new Set(['Succeeded', 'Failed', 'RolledBack', 'Skipped']);
// What a stage's until is, by its state (the workflow sets it: workflows/deploy/rollout.go).
const UNTIL = {
  Applying: ['Deadline', 'left', 'passed'],
  Verifying: ['Deadline', 'left', 'passed'],
  Baking: ['Bake', 'left', 'done'],
  Waiting: ['Wait', 'left', 'over'],
  WaitingForWindow: ['Window opens', 'from now', 'now'],
};
// How many changes of a diff an opened revision lists (the rest are counted).
const CHANGES_SHOWN = 40;

// duration renders milliseconds as "2h 05m", "4m 09s" or "12s".
export function duration(ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  const p = (n) => String(n).padStart(2, '0');
  if (s >= 3600) return `${Math.floor(s / 3600)}h ${p(Math.floor((s % 3600) / 60))}m`;
  if (s >= 60) return `${Math.floor(s / 60)}m ${p(s % 60)}s`;
  return `${s}s`;
}

// clockOf renders an API time as a <time> with its clock (the date in its title).
function clockOf(at) {
  return h('time', { datetime: at.toISOString(), title: at.toString() }, clock(at));
}

// stageIndexNow is the stage the rollout is at: the first one not finished (-1: all are).
function stageIndexNow(stages) {
  return stages.findIndex((st) => !FINISHED.has(st?.state));
}

// rolloutTimeline draws the stages left to right: each a card with its name, its state
// (marker, words, tint), its clusters done and failed of its total (a bar and the numbers),
// its timer (a bake's or a wait's end, a deadline, a window) as time left from now, and
// what it waits for. opts: {now (ms), may (the caller may approve)}.
export function rolloutTimeline(ro, { now = Date.now(), may = false } = {}) {
  const stages = list(ro?.stages);
  if (!stages.length) return null;
  const at = stageIndexNow(stages);
  const title = `Rollout timeline: ${stages.length} stage${stages.length === 1 ? '' : 's'}, ${ro.state || 'state unknown'}`;
  return h('div', {
    class: 'timeline-box', role: 'region', tabindex: '0', 'aria-label': `${title}, scrollable`, 'data-key': 'timeline',
  },
  h('ol', { class: 'timeline', 'data-testid': 'rollout-timeline', 'data-state': ro.state ?? '' },
    stages.map((st, i) => stageCard(st, i, stages.length, i === at, now, may))));
}

function stageCard(st, i, n, current, now, may) {
  const state = String(st?.state || 'Pending');
  const name = String(st?.name ?? '');
  const total = Math.max(0, Number(st?.clusters) || 0);
  const changed = Math.min(total, Math.max(0, Number(st?.changed) || 0));
  const failed = Math.min(changed, Math.max(0, Number(st?.failed) || 0));
  const ready = Math.max(0, Number(st?.ready) || 0);
  const notReady = Math.max(0, Number(st?.notReady) || 0);
  const words = STAGE_WORDS[state] || state;
  const pct = (x) => (total ? `${(100 * x) / total}%` : '0%');
  const approved = list(st?.approved);
  return h('li', {
    class: `stage ${stateClass(state)}${current ? ' current' : ''}${FINISHED.has(state) ? ' finished' : ''}`,
    'data-testid': 'timeline-stage', 'data-stage': name, 'data-state': state, 'aria-current': current ? 'step' : null,
  },
  h('h3', null, h('span', { class: 'sr-only' }, `Stage ${i + 1} of ${n}: `), name || '(unnamed)',
    current ? h('span', { class: 'now' }, ' ', h('span', { 'aria-hidden': 'true' }, '◆ '), 'current') : null),
  h('p', { class: 'stage-state', 'data-testid': 'stage-state' },
    h('span', { class: 'mark', 'aria-hidden': 'true' }, STAGE_MARKS[state] || '?'), ' ', words),
  h('p', { class: 'stage-clusters', 'data-testid': 'stage-clusters' },
    total ? `${changed} of ${total} cluster${total === 1 ? '' : 's'} done, ${failed} failed` : 'No cluster',
    total ? h('span', { class: 'sub' }, changed ? `Ready ${ready}, not ready ${notReady}; ` : '', `failure budget ${st?.budget ?? 0}`) : null),
  total ? h('div', { class: 'bar', 'aria-hidden': 'true' }, segment('done', pct(changed - failed)), segment('failed', pct(failed))) : null,
  timer(st, state, now),
  waits(state, st, may),
  approved.length ? h('p', { class: 'sub' }, `Approved: ${approved.map((x) => (x === 'before' ? 'before its clusters' : 'after its clusters')).join(', ')}`) : null,
  st?.message ? h('p', { class: 'sub error' }, st.message) : null,
  span(st));
}

// segment is a part of a stage's bar; its width is set through the CSSOM (the page's
// Content-Security-Policy refuses style attributes).
function segment(kind, width) {
  const el = h('span', { class: kind });
  el.style.width = width;
  return el;
}

// timer: the stage's until as time left (or passed) from now, with its clock time.
function timer(st, state, now) {
  const until = when(st?.until);
  if (!until) return null;
  const [label, ahead, past] = UNTIL[state] || ['Until', 'left', 'passed'];
  const left = until.getTime() - now;
  return h('p', { class: 'timer', 'data-testid': 'stage-timer' },
    h('span', { class: 'mark', 'aria-hidden': 'true' }, '◷'), ' ',
    `${label}: `, h('strong', null, left > 0 ? `${duration(left)} ${ahead}` : past), ' (', clockOf(until), ')');
}

// waits says what a waiting stage waits for, in words.
function waits(state, st, may) {
  if (state === 'WaitingForApproval') {
    const where = when(st?.started) ? 'after its clusters were changed' : 'before it changes its clusters';
    return h('p', { class: 'waits', 'data-testid': 'stage-waits' },
      h('strong', null, 'Waits for an approval'), ` ${where}. `,
      may ? 'Approve it with “Approve stage” in the stages table below.' : 'An operator of the project may approve it.');
  }
  if (state === 'WaitingForWindow') {
    return h('p', { class: 'waits', 'data-testid': 'stage-waits' }, h('strong', null, 'Waits for its maintenance window'), ' to open.');
  }
  if (state === 'Waiting') {
    return h('p', { class: 'waits', 'data-testid': 'stage-waits' }, h('strong', null, 'Waits'), ' for its timed wait to end.');
  }
  return null;
}

// span: when the stage started and ended.
function span(st) {
  const started = when(st?.started);
  const ended = when(st?.ended);
  if (!started && !ended) return null;
  return h('p', { class: 'sub' },
    started ? ['Started ', clockOf(started)] : null,
    started && ended ? ', ended ' : ended ? 'Ended ' : null,
    ended ? clockOf(ended) : null,
    started && ended ? ` (${duration(ended - started)})` : null);
}

// revisionHistory keeps what the revision history knows of the DIG's snapshots and diffs:
// the snapshots' list, asked again only when the revisions change (or one has none yet),
// and each diff, asked once when its revision is opened. base: the DIG's API path;
// signal(): the view's abort signal; changed(): draws the history again.
export function revisionHistory(base, signal, changed) {
  let snaps = null; // contextId → {id, operation, time}; null until the list is read
  let snapsError = '';
  let asked = ''; // the revisions the list was asked for
  let askedAt = 0;
  let inFlight = false;
  const diffs = new Map(); // "a/b" → {loading} | {changes} | {error}

  async function readSnapshots(sig) {
    inFlight = true;
    asked = sig;
    askedAt = Date.now();
    try {
      const all = await get(`${base}/snapshots?limit=1000`, { signal: signal() });
      const m = new Map();
      for (const s of list(all)) {
        for (const r of list(s?.revisions)) {
          if (r?.contextId) m.set(String(r.contextId), { id: String(s.id ?? ''), operation: r.operation || s.operation || '', time: r.time });
        }
      }
      snaps = m;
      snapsError = '';
    } catch (e) {
      if (e?.name === 'AbortError') return;
      snapsError = e?.message || String(e);
    } finally {
      inFlight = false;
    }
    changed();
  }

  async function readDiff(a, b) {
    const key = `${a}/${b}`;
    if (diffs.has(key)) return;
    diffs.set(key, { loading: true });
    changed();
    try {
      const d = await get(`${base}/snapshots/${encodeURIComponent(a)}/diff/${encodeURIComponent(b)}`, { signal: signal() });
      diffs.set(key, { changes: list(d?.changes) });
    } catch (e) {
      if (e?.name === 'AbortError') return;
      diffs.set(key, { error: e?.message || String(e) });
    }
    changed();
  }

  // view renders the revisions of a dashboard answer, newest first.
  function view(d) {
    const revs = list(d?.revisions);
    if (!revs.length) return h('p', { class: 'empty' }, 'No revision yet.');
    const sig = revs.map((x) => `${x?.revision}:${x?.instance}`).join(',');
    const missing = snaps && revs.some((x) => x?.instance && !snaps.has(String(x.instance)));
    // The list again when the revisions changed; when one has no snapshot yet (its begin
    // records it) or the list failed, at most every 10 s.
    if (!inFlight && (sig !== asked || ((missing || snapsError) && Date.now() - askedAt > 10000))) readSnapshots(sig);
    return [
      snapsError ? h('p', { class: 'warn', 'data-testid': 'snapshots-error' }, `What each revision changed is unavailable: ${snapsError}`) : null,
      h('ol', { class: 'revision-history', 'data-testid': 'revisions' },
        revs.map((x, i) => entry(d, x, revs[i + 1]))),
    ];
  }

  function entry(d, x, prev) {
    const rev = String(x?.revision ?? '');
    const inst = String(x?.instance ?? '');
    const current = String(d?.revision ?? '') === rev && (!d?.instance || d.instance === inst);
    const snap = snaps?.get(inst);
    return h('li', { class: `revision${current ? ' current' : ''}`, 'data-revision': rev, 'data-instance': inst },
      h('span', { class: 'dot', 'aria-hidden': 'true' }),
      h('h3', null, `Revision ${dash(x?.revision)}`,
        current ? h('span', { class: 'now' }, ' ', h('span', { 'aria-hidden': 'true' }, '◆ '), 'current') : null),
      h('p', { class: 'revision-line' }, stateText(x?.state),
        snap?.operation ? [' by ', h('strong', null, snap.operation)] : null, ', ', time(x?.time),
        h('span', { class: 'sub' }, 'Instance ', h('code', null, inst || '—'),
          snap?.id ? [', configuration snapshot ', h('code', { 'data-testid': 'snapshot-id' }, snap.id)] : null)),
      changes(x, prev, snap));
  }

  // changes says what a revision changed from the one before it: the diff of their
  // snapshots in a <details> that asks for it when opened, or why there is nothing to show.
  function changes(x, prev, snap) {
    const note = (text) => h('p', { class: 'changes-note', 'data-testid': 'revision-changes' }, text);
    if (!snaps) return snapsError ? null : note('Reading the configuration snapshots…');
    if (!snap) return note('No configuration snapshot was recorded for this revision.');
    if (!prev) return note('The first revision: nothing before it to compare with.');
    const before = snaps.get(String(prev.instance ?? ''));
    if (!before) return note(`Revision ${prev.revision} has no configuration snapshot: nothing to compare with.`);
    if (before.id === snap.id) return note(`The same configuration as revision ${prev.revision} (nothing changed).`);
    const key = `${before.id}/${snap.id}`;
    const got = diffs.get(key);
    const details = h('details', {
      class: 'changes', 'data-key': `diff:${key}`, 'data-testid': 'revision-changes',
      ontoggle: (e) => { if (e.currentTarget.open) readDiff(before.id, snap.id); },
    },
    h('summary', null, `What changed since revision ${prev.revision}`,
      got?.changes ? ` (${got.changes.length} change${got.changes.length === 1 ? '' : 's'})` : ''),
    diffBody(got, before.id, snap.id));
    return details;
  }

  return { view };
}

// diffBody lists a diff's changes: each its operation in words (a sign beside it), the
// resource and the field, and the values.
function diffBody(got, a, b) {
  if (!got || got.loading) return h('p', { class: 'empty' }, `Reading the changes from snapshot ${a} to ${b}…`);
  if (got.error) return h('p', { class: 'error' }, `The changes could not be read: ${got.error}`);
  if (!got.changes.length) return h('p', { class: 'empty' }, 'No change between the two snapshots.');
  const shown = got.changes.slice(0, CHANGES_SHOWN);
  const more = got.changes.length - shown.length;
  return [
    h('ul', { class: 'diff', 'data-testid': 'diff' }, shown.map((c) => {
      const op = String(c?.op || 'changed');
      const sign = { added: '+', removed: '−', changed: '~' }[op] || '~';
      return h('li', { class: `op-${op.replace(/[^a-z]/g, '')}`, 'data-op': op },
        h('span', { class: 'sign', 'aria-hidden': 'true' }, sign), ' ',
        h('strong', null, op), ' ',
        h('code', { class: 'field' }, c?.path ? c.path : '(the whole resource)'), ' of ',
        h('code', { class: 'resource', title: String(c?.resource ?? '') }, shortResource(c?.resource)),
        values(c));
    })),
    more > 0 ? h('p', { class: 'sub' }, `and ${more} more change${more === 1 ? '' : 's'} (GET …/snapshots/${a}/diff/${b} lists them all).`) : null,
  ];
}

// shortResource drops the project and composite app from a resource's id (its title has it whole).
function shortResource(id) {
  const s = String(id ?? '');
  const m = /^\/projects\/[^/]+\/composite-apps\/[^/]+\/[^/]+\/(.+)$/.exec(s);
  return m ? m[1] : s;
}

// values shows a change's old and new values, JSON shortened.
function values(c) {
  const show = (v) => {
    const s = typeof v === 'string' ? JSON.stringify(v) : JSON.stringify(v ?? null);
    return s.length > 160 ? `${s.slice(0, 160)}…` : s;
  };
  const parts = [];
  if (c?.op !== 'added' && c?.from !== undefined) parts.push(h('span', { class: 'from' }, h('span', { class: 'sr-only' }, 'from '), show(c.from)));
  if (c?.op !== 'removed' && c?.to !== undefined) {
    if (parts.length) parts.push(h('span', { 'aria-hidden': 'true' }, ' → '));
    parts.push(h('span', { class: 'to' }, h('span', { class: 'sr-only' }, ' to '), show(c.to)));
  }
  return parts.length ? h('span', { class: 'values' }, ': ', parts) : null;
}

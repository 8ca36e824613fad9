// The DIG view: one GET DIG/dashboard answer per poll renders the DIG's state, operation,
// rollout (a timeline of its stages, then their table), autoscaler, the charts that came by
// reference, the apps × clusters matrix of one page of clusters, its history and its
// revisions (what each changed: pictures.js). The filter form and the action buttons are
// built once; only the data parts are re-rendered.

import { digPath, get, post } from './api.js';
import {
  clock, counts, dash, h, href, kv, list, mark, replace, row, section, stateClass, stateText, table, time, when,
} from './dom.js';
import { trail } from './views.js';
import { revisionHistory, rolloutTimeline } from './pictures.js';

const LIMIT = 50;
// The commands of a running rollout: [action, label, the rollout states that take it, what it does].
const ROLLOUT_COMMANDS = [
  ['pause', 'Pause rollout', ['Running'], 'Pause the rollout before its next stage'],
  ['resume', 'Resume rollout', ['Paused', 'AwaitingDecision'], 'Resume the rollout, or go on past its failed stage'],
  ['rollback', 'Roll back rollout', ['Running', 'Paused', 'AwaitingDecision'], 'Return every cluster the rollout changed and end it failed'],
];
// The states a cluster can be filtered by (the API's cell states).
const STATES = ['Ready', 'NotReady', 'Applied', 'Pending', 'Retrying', 'Failed', 'Deleted'];
const ACTIONS = [
  ['approve', 'Approve'], ['instantiate', 'Instantiate'], ['update', 'Update'],
  ['rollback', 'Roll back'], ['stop', 'Stop'], ['terminate', 'Terminate'],
];
// How many of a rollout stage's clusters its row names.
const STAGE_NAMES = 5;
// An artifact's transports, as the page names them (the API's artifact.Transport*).
const TRANSPORTS = { oci: 'OCI registry', helmRepo: 'Helm repository', url: 'URL' };
// How many hex digits of a digest the artifacts table shows (the whole one is its title).
const DIGEST_SHOWN = 12;

// shortDigest is "sha256:0123456789ab…" for a long digest, the digest itself otherwise.
function shortDigest(d) {
  const s = String(d || '');
  const i = s.indexOf(':') + 1;
  return s.length - i > DIGEST_SHOWN ? `${s.slice(0, i + DIGEST_SHOWN)}…` : s;
}

// bytes renders a size: "512 B", "2.0 KiB", "3.4 MiB".
function bytes(n) {
  const v = Number(n) || 0;
  if (v < 1024) return `${v} B`;
  const units = ['KiB', 'MiB', 'GiB'];
  let x = v / 1024;
  let u = 0;
  while (x >= 1024 && u < units.length - 1) { x /= 1024; u++; }
  return `${x.toFixed(1)} ${units[u]}`;
}

// copyText puts text on the clipboard: the Clipboard API where the page may use it, else
// the older copy command on a selected, off-screen text area. Resolves to whether it worked.
async function copyText(text) {
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch {
    // refused (no focus, no permission): try the copy command
  }
  const area = h('textarea', { readonly: true, class: 'sr-only', 'aria-hidden': 'true', tabindex: '-1' });
  area.value = text;
  document.body.append(area);
  area.select();
  let ok = false;
  try {
    ok = document.execCommand('copy');
  } catch {
    ok = false;
  }
  area.remove();
  return ok;
}

// readQuery reads the filters and the page from the hash query.
function readQuery(params) {
  const offset = Number.parseInt(params.get('offset') || '0', 10);
  const state = params.get('state') || '';
  return {
    cluster: params.get('cluster') || '',
    label: params.get('label') || '',
    state: STATES.includes(state) ? state : '',
    offset: Number.isFinite(offset) && offset > 0 ? offset : 0,
  };
}

// ctx (from app.js): session, mayOperate(project), confirm(opts), say(text, kind),
// fail(error), refreshNow(), setQuery(URLSearchParams) (rewrites the hash's query).
export function digView(r, ctx) {
  const base = digPath(r);
  let q = readQuery(r.query);
  let live = false; // the first answer is the stored state; later polls read the clusters live
  let liveAfter = 0; // the caller's live reads are spent until then (a 429's Retry-After)
  let gen = 0; // bumped when the filters change, so an answer to older filters is dropped
  let last = null; // the last answer (the rollback dialog proposes the previous revision)
  let viewSignal; // the view's abort signal (from load): the revision history's calls use it

  // Stable containers, filled by render.
  const summary = h('div');
  const operationBox = h('div');
  const rolloutBox = h('div');
  const autoscalerBox = h('div');
  const artifactsBox = h('div');
  const countsBox = h('div');
  const matrixBox = h('div', { class: 'scroll matrix', tabindex: '0', role: 'region', 'aria-label': 'Apps by cluster, scrollable' });
  const retryBox = h('div');
  const historyBox = h('div');
  const revisionsBox = h('div');
  // The revisions' history: what each changed, read from the snapshots when it is opened.
  const revisions = revisionHistory(base, () => viewSignal, () => { if (last) replace(revisionsBox, revisions.view(last)); });

  // The filter form: built once, so what the user types survives the polls.
  const fCluster = h('input', { id: 'filter-cluster', type: 'search', value: q.cluster, autocomplete: 'off', spellcheck: 'false' });
  const fLabel = h('input', { id: 'filter-label', type: 'search', value: q.label, autocomplete: 'off', spellcheck: 'false' });
  const fState = h('select', { id: 'filter-state' },
    h('option', { value: '' }, 'any'), STATES.map((s) => h('option', { value: s }, s)));
  fState.value = q.state;
  const apply = () => setQuery({
    cluster: fCluster.value.trim(), label: fLabel.value.trim(), state: fState.value, offset: 0,
  });
  const filters = h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter clusters', onsubmit: (e) => { e.preventDefault(); apply(); } },
    h('div', null, h('label', { for: 'filter-cluster' }, 'Cluster name contains'), fCluster),
    h('div', null, h('label', { for: 'filter-label' }, 'Cluster label'), fLabel),
    h('div', null, h('label', { for: 'filter-state' }, 'State'), fState),
    h('div', null, h('button', { type: 'submit' }, 'Apply'),
      h('button', { type: 'button', onclick: () => { fCluster.value = ''; fLabel.value = ''; fState.value = ''; apply(); } }, 'Clear')));
  fCluster.addEventListener('change', apply);
  fLabel.addEventListener('change', apply);
  fState.addEventListener('change', apply);

  // The pager: also stable (its buttons keep focus across polls).
  const prev = h('button', { id: 'page-prev', type: 'button', onclick: () => setQuery({ ...q, offset: Math.max(0, q.offset - LIMIT) }) }, 'Previous page');
  const next = h('button', { id: 'page-next', type: 'button', onclick: () => setQuery({ ...q, offset: q.offset + LIMIT }) }, 'Next page');
  const pageText = h('span', { 'data-testid': 'page' });
  const pager = h('nav', { class: 'pager', 'aria-label': 'Cluster pages' }, prev, ' ', pageText, ' ', next);

  // setQuery applies new filters or a new page: the hash keeps them, and the next answer
  // (asked at once) is the stored state again, then live polls resume.
  function setQuery(nq) {
    if (nq.cluster === q.cluster && nq.label === q.label && nq.state === q.state && nq.offset === q.offset) return;
    q = nq;
    gen++;
    live = false;
    const p = new URLSearchParams();
    for (const k of ['cluster', 'label', 'state']) if (q[k]) p.set(k, q[k]);
    if (q.offset) p.set('offset', String(q.offset));
    ctx.setQuery(p);
    ctx.refreshNow();
  }

  const may = ctx.mayOperate(r.p);
  const actions = may ? h('div', { class: 'actions', role: 'group', 'aria-label': 'Operations' },
    ACTIONS.map(([action, label]) => h('button', { type: 'button', 'data-action': action, onclick: (e) => act(e.currentTarget, action, label) }, label))) : null;

  // act confirms an action in the dialog, calls the API, says how it went and refreshes.
  async function act(button, action, label) {
    const opts = {
      title: `${label} ${r.dig}?`,
      text: `${label} the deployment intent group “${r.dig}” of composite app ${r.ca} ${r.v}, project ${r.p}.`,
      yes: label,
    };
    if (action === 'rollback') {
      const rev = Number(last?.revision) || 0;
      opts.revision = rev > 1 ? String(rev - 1) : '';
      const known = list(last?.revisions).map((x) => x?.revision).filter(Boolean);
      if (known.length) opts.text += ` Stored revisions: ${known.join(', ')}.`;
    }
    const ok = await ctx.confirm(opts);
    if (!ok) return;
    await run(button, async () => {
      const body = action === 'rollback' ? { spec: { revision: ok.revision } } : undefined;
      const res = await post(`${base}/${action}`, body);
      const rev = res?.revision ? ` (revision ${res.revision})` : '';
      ctx.say(`${label} of ${r.dig} accepted${rev}.`, 'ok');
    });
  }

  async function approveStage(button, stage) {
    const ok = await ctx.confirm({
      title: `Approve stage ${stage}?`,
      text: `Let the rollout of “${r.dig}” go on with its stage “${stage}”.`,
      yes: 'Approve stage',
    });
    if (!ok) return;
    await run(button, async () => {
      await post(`${base}/rollout/approve`, { stage });
      ctx.say(`Stage ${stage} of ${r.dig} approved.`, 'ok');
    });
  }

  // rolloutActions are the commands the rollout takes in its state (the API refuses the
  // others): pause a running one, resume a paused one or go on past a failed stage, roll
  // back what it changed.
  function rolloutActions(state) {
    const cmds = ROLLOUT_COMMANDS.filter(([, , states]) => states.includes(state));
    if (!cmds.length) return null;
    return h('div', { class: 'actions', role: 'group', 'aria-label': 'Rollout commands', 'data-testid': 'rollout-actions' },
      cmds.map(([action, label, , text]) => h('button', { type: 'button', 'data-action': `rollout-${action}`, 'data-key': `rollout:${action}`,
        onclick: (e) => rolloutCommand(e.currentTarget, action, label, text) }, label)));
  }

  async function rolloutCommand(button, action, label, text) {
    const ok = await ctx.confirm({ title: `${label} of ${r.dig}?`, text: `${text} (deployment intent group “${r.dig}”, project ${r.p}).`, yes: label });
    if (!ok) return;
    await run(button, async () => {
      const st = await post(`${base}/rollout/${action}`);
      ctx.say(`${label}: the rollout of ${r.dig} is ${st?.state ?? 'changed'}.`, 'ok');
    });
  }

  // run calls the API once per click (aria-busy rather than disabled: the button keeps
  // the focus the dialog gave back to it), then refreshes at once.
  async function run(button, fn) {
    if (button.getAttribute('aria-busy') === 'true') return;
    button.setAttribute('aria-busy', 'true');
    try {
      await fn();
    } catch (e) {
      ctx.fail(e);
    } finally {
      button.removeAttribute('aria-busy');
    }
    ctx.refreshNow();
  }

  async function load(signal) {
    viewSignal = signal;
    const mine = gen;
    const p = new URLSearchParams({ offset: String(q.offset), limit: String(LIMIT) });
    for (const k of ['cluster', 'label', 'state']) if (q[k]) p.set(k, q[k]);
    const reading = live && Date.now() >= liveAfter;
    if (reading) p.set('live', 'true');
    let d;
    try {
      d = await get(`${base}/dashboard?${p}`, { signal });
    } catch (e) {
      if (!reading || e?.status !== 429) throw e;
      // Live reads spent (this caller's, across its tabs): the stored state until the API
      // says, with why in the summary, rather than an error on every poll.
      liveAfter = Date.now() + 1000 * (e.retryAfter || 10);
      p.delete('live');
      d = { ...(await get(`${base}/dashboard?${p}`, { signal })), liveError: e.message };
    }
    if (mine !== gen) return; // the filters changed meanwhile: the next load renders
    live = true;
    last = d || {};
    render(last);
  }

  function render(d) {
    replace(summary, kv([
      ['State', d.state ?? '', { 'data-testid': 'dig-state' }],
      ['Revision', d.revision ?? '', { 'data-testid': 'dig-revision' }],
      ['Context status', d.contextStatus ?? ''],
      ['Instance', d.instance ?? ''],
      ['Error', d.error || undefined, { class: 'error', 'data-testid': 'dig-error' }],
      ['Live read', d.liveError || undefined, { class: 'warn', 'data-testid': 'live-error' }],
    ], { class: 'kv summary' }));
    replace(operationBox, operation(d.operation));
    replace(rolloutBox, rollout(d.rollout));
    replace(autoscalerBox, autoscaler(d.autoscaler));
    replace(artifactsBox, artifacts(list(d.artifacts)));
    replace(countsBox, kv([
      ['Clusters', `${d.total ?? 0} in the deployment`],
      ['Matching the filters', d.matched ?? 0],
      ['Matching, by state', d.states ? counts(d.states) : undefined],
      ['Objects by deployment status', counts(d.objects)],
    ], { 'data-testid': 'counts' }));
    replace(matrixBox, matrix(d));
    const matched = Number(d.matched) || 0;
    const from = Math.min(q.offset + 1, matched);
    const to = Math.min(q.offset + list(d.clusters).length, matched);
    pageText.textContent = matched ? `Clusters ${from}–${to} of ${matched}` : 'No cluster';
    prev.disabled = q.offset <= 0;
    next.disabled = q.offset + LIMIT >= matched;
    replace(retryBox, retrying(list(d.clusters)));
    replace(historyBox, table({
      caption: 'Lifecycle actions, oldest first', testid: 'history', head: ['State', 'Revision', 'Instance', 'Time'],
      rows: list(d.history).map((a) => row(null, [dash(a?.state), dash(a?.revision), dash(a?.instance), time(a?.time)])),
      empty: 'No action yet.',
    }));
    replace(revisionsBox, revisions.view(d));
  }

  // operation is the running operation's box (nothing when none runs).
  function operation(op) {
    if (!op) return null;
    const done = Number(op.clustersDone) || 0;
    const total = Number(op.clustersTotal) || 0;
    return h('section', { class: 'operation', 'data-testid': 'operation', 'aria-labelledby': 'operation-title' },
      h('h2', { id: 'operation-title' }, op.op ? `Running operation: ${op.op}` : 'Running operation'),
      h('p', { class: 'progress-text', 'data-testid': 'progress' }, `${done} / ${total} clusters`),
      total > 0 ? h('progress', { max: String(total), value: String(done), 'aria-label': 'Clusters done' }) : null,
      kv([
        ['Phase', op.phase ?? ''],
        ['Batches', op.batchesTotal ? `${op.batchesDone ?? 0} / ${op.batchesTotal}` : undefined],
        ['Stop', op.stopped ? 'requested' : undefined],
        ['Workflow', op.workflowId ?? ''],
        ['Progress', op.progressError || undefined, { class: 'warn' }],
      ]),
      temporalLink(op),
      list(op.waiting).length ? table({
        caption: 'Steps it waits on', testid: 'waiting', head: ['Activity', 'Controller', 'State', 'Attempt', 'Last error'],
        rows: list(op.waiting).map((w) => row(null, [dash(w?.activity), dash(w?.controller), dash(w?.state), dash(w?.attempt), dash(w?.lastError)])),
      }) : null,
      list(op.hooks).length ? table({
        caption: 'Controller hooks', head: ['Hook', 'Details'],
        rows: list(op.hooks).map((k, i) => row(null, [String(i + 1), JSON.stringify(k)])),
      }) : null);
  }

  function temporalLink(op) {
    const ui = String(ctx.session?.temporalUI || '').replace(/\/+$/, '');
    // Only an http(s) address becomes a link (never a javascript: URL from a config).
    if (!/^https?:\/\//i.test(ui) || !op.workflowId) return null;
    const ns = encodeURIComponent(ctx.session.namespace || 'default');
    const url = `${ui}/namespaces/${ns}/workflows/${encodeURIComponent(op.workflowId)}/${encodeURIComponent(op.runId || '')}/history`;
    return h('p', null, h('a', { href: url, target: '_blank', rel: 'noopener', 'data-testid': 'temporal-link', 'data-key': 'temporal-link' },
      'Open the workflow in the Temporal Web UI'), ' (opens a new tab)');
  }

  // rollout is the staged rollout's box (nothing without one).
  function rollout(ro) {
    if (!ro) return null;
    const stages = list(ro.stages);
    return section('Rollout',
      kv([['Strategy', ro.strategy ?? ''], ['State', ro.state ?? ''], ['Rollback', ro.rollback], ['Cause', ro.cause || undefined, { class: 'error' }]]),
      may ? rolloutActions(ro.state) : null,
      rolloutTimeline(ro, { now: Date.now(), may }),
      table({
        caption: 'Stages, in order', testid: 'stages',
        head: ['Stage', 'State', 'Clusters', 'Changed', 'Ready', 'Not ready', 'Failed / budget', 'Until', 'First clusters', ...(may ? ['Action'] : [])],
        rows: stages.map((st) => {
          const names = list(st?.clusterNames);
          const more = Math.max(Number(st?.clusters) || 0, names.length) - Math.min(names.length, STAGE_NAMES);
          const cells = [
            dash(st?.name),
            [stateText(st?.state), st?.message ? h('span', { class: 'sub' }, st.message) : null,
              list(st?.approved).length ? h('span', { class: 'sub' }, `approved: ${list(st.approved).join(', ')}`) : null],
            dash(st?.clusters), dash(st?.changed), dash(st?.ready), dash(st?.notReady),
            `${st?.failed ?? 0} / ${st?.budget ?? 0}`,
            time(st?.until),
            names.length ? `${names.slice(0, STAGE_NAMES).join(', ')}${more > 0 ? ` and ${more} more` : ''}` : '—',
          ];
          if (may) {
            cells.push(st?.state === 'WaitingForApproval' ? h('button', {
              type: 'button', 'data-action': 'approve-stage', 'data-stage': st.name, 'data-key': `stage:${st.name}`,
              onclick: (e) => approveStage(e.currentTarget, st.name),
            }, 'Approve stage') : '—');
          }
          return row({ 'data-stage': st?.name ?? '' }, cells);
        }),
        empty: 'No stage.',
      }));
  }

  // autoscaler is the box of the DIG's capacity placement (nothing without one): each
  // member's state and last signals, the last evaluation, the last decisions, pause/resume.
  function autoscaler(a) {
    if (!a) return null;
    const signals = a.last?.signals || {};
    // read says what the last evaluation read on a member (the floor matters only to a
    // cluster being emptied).
    const read = (m) => {
      const s = signals[m?.cluster];
      if (!s) return '—';
      if (!s.reachable) return h('span', { class: 'error' }, `unreachable: ${s.error || ''}`);
      const parts = [];
      if (s.unschedulable) parts.push(`${s.unschedulable} pod(s) unschedulable`);
      if (s.atMaxReplicas) parts.push('HPA at its maximum');
      if (s.wantsFewer) parts.push('HPA wants fewer');
      if (s.atFloor && (m.state === 'SCALING_IN' || m.state === 'EVICTING')) parts.push('at the floor');
      return parts.join(', ') || 'room';
    };
    const signal = a.paused ? 'resume' : 'pause';
    return section('Autoscaler',
      kv([
        ['Capacity placement', a.name ?? ''],
        ['State', a.paused ? 'paused' : 'running', { 'data-testid': 'autoscaler-state' }],
        ['Last evaluation', a.last ? time(a.last.at) : 'none yet'],
        ['Waiting', a.last?.waiting || undefined, { class: 'warn' }],
        ['Update in flight', a.update || undefined],
      ]),
      may ? h('div', { class: 'actions' }, h('button', {
        type: 'button', 'data-action': `autoscaler-${signal}`, 'data-key': `autoscaler-${signal}`,
        onclick: (e) => run(e.currentTarget, async () => {
          await post(`${base}/capacity-placements/${encodeURIComponent(a.name)}/${signal}`);
          ctx.say(`Autoscaler of ${r.dig}: ${signal} sent.`, 'ok');
        }),
      }, a.paused ? 'Resume autoscaler' : 'Pause autoscaler')) : null,
      table({
        caption: 'Clusters, in order of preference', testid: 'autoscaler-members',
        head: ['Cluster', 'State', 'Since', 'Why', 'Signals read'],
        rows: list(a.members).map((m) => row({ 'data-cluster': m?.cluster ?? '' }, [
          dash(m?.cluster), h('td', { 'data-testid': 'member-state' }, stateText(m?.state)), time(m?.since), dash(m?.reason), read(m),
        ])),
        empty: 'No cluster yet.',
      }),
      table({
        caption: 'Decisions, newest first', testid: 'autoscaler-decisions', head: ['Time', 'Decision', 'Update'],
        rows: list(a.events).slice().reverse().map((e) => row(null, [
          time(e?.at), dash(e?.summary), e?.update ? `${e.update}: ${e.outcome || 'running'}` : '—',
        ])),
        empty: 'No decision yet.',
      }));
  }

  // artifacts is the box of the charts the apps name by reference (nothing when every
  // chart was uploaded): each one's source, stage, version and digest, its download, and
  // its retries; a Failed one's error is also listed above the table.
  function artifacts(arts) {
    if (!arts.length) return null;
    const failed = arts.filter((a) => a?.stage === 'Failed');
    return h('section', { 'data-testid': 'artifacts-section', 'aria-labelledby': 'artifacts-title' },
      h('h2', { id: 'artifacts-title' }, 'Charts by reference'),
      failed.length ? h('ul', { class: 'failures', 'data-testid': 'artifact-failures' }, failed.map((a) => h('li', { 'data-app': a.app ?? '' },
        h('strong', null, 'Failed:'), ` the chart of app ${a.app ?? '?'}: `, h('span', { class: 'error' }, a.error || 'no reason given'),
        '. Nothing was rendered from it.'))) : null,
      table({
        caption: 'Each app’s chart: where it comes from and how far its pipeline got',
        testid: 'artifacts',
        head: ['App', 'Source', 'Stage', 'Version', 'Digest', 'Size / download', 'Retries and errors', 'Updated'],
        rows: arts.map((a) => row({ 'data-app': a?.app ?? '', 'data-stage': a?.stage ?? '' }, [
          h('th', { scope: 'row' }, dash(a?.app)),
          [h('span', { class: 'source' }, dash(a?.source)), a?.transport ? h('span', { class: 'sub' }, TRANSPORTS[a.transport] || a.transport) : null],
          h('td', { 'data-testid': 'artifact-stage' }, stateText(a?.stage),
            a?.retrying ? h('span', { class: 'sub warn' }, 'retrying') : null),
          dash(a?.version),
          h('td', { 'data-testid': 'artifact-digest' }, digest(a)),
          h('td', { 'data-testid': 'artifact-transfer' }, transfer(a)),
          h('td', { 'data-testid': 'artifact-retry', class: 'wrap' }, retry(a)),
          time(a?.updated),
        ])),
      }));
  }

  // digest shows the pinned digest shortened, the whole of it in its title and copied by
  // its button (the outcome, with the whole digest, in #message).
  function digest(a) {
    const full = String(a?.digest || '');
    if (!full) return '—';
    const app = String(a.app ?? '');
    return [
      h('code', { class: 'digest', title: full, 'data-digest': full }, shortDigest(full)), ' ',
      h('button', {
        type: 'button', class: 'small', 'data-action': 'copy-digest', 'data-app': app, 'data-key': `copy-digest:${app}`,
        'aria-label': `Copy the digest of app ${app}`, title: `Copy ${full}`,
        onclick: async (e) => {
          const button = e.currentTarget;
          const ok = await copyText(full);
          // A poll may have rendered the table again meanwhile: its new button takes the focus.
          const key = button.dataset.key;
          (button.isConnected ? button : [...artifactsBox.querySelectorAll('[data-key]')].find((x) => x.dataset.key === key))?.focus();
          if (ok) ctx.say(`Digest of ${app} copied: ${full}`, 'ok');
          else ctx.say(`The browser refused to copy; the digest of ${app} is ${full}`, 'info');
        },
      }, 'Copy'),
    ];
  }

  // transfer: the download's progress while it runs, "cached" when the store had the
  // bits, else the archive's size.
  function transfer(a) {
    const size = Number(a?.size) || 0;
    const got = Number(a?.downloaded) || 0;
    if (a?.stage === 'Downloading') {
      return [
        `${bytes(got)} of ${size ? bytes(size) : 'an unknown size'}`,
        size ? h('progress', { max: String(size), value: String(Math.min(got, size)), 'aria-label': `Downloaded of ${a.app ?? ''}` }) : null,
      ];
    }
    if (a?.cached) return size ? `cached (not downloaded), ${bytes(size)}` : 'cached (not downloaded)';
    return size ? bytes(size) : '—';
  }

  // retry: a retrying artifact's attempts, next try and last error; a Failed one's error.
  function retry(a) {
    if (a?.retrying) {
      const at = when(a.nextTry);
      return [
        `retrying: attempt ${a.attempts ?? '?'}`,
        at ? [', next try at ', h('time', { datetime: at.toISOString() }, clock(at))] : null,
        h('span', { class: 'sub error' }, `Last error: ${a.error || 'none recorded'}`),
      ];
    }
    if (a?.stage === 'Failed') return h('span', { class: 'error' }, h('strong', null, 'Failed: '), a.error || 'no reason given');
    if (a?.error) return h('span', { class: 'error' }, `Error: ${a.error}`);
    return Number(a?.attempts) > 1 ? `${a.attempts} attempts` : '—';
  }

  // matrix: a row per cluster of the page, a column per app; each cell links to the objects.
  function matrix(d) {
    const apps = list(d.apps).map(String);
    const rows = list(d.clusters).map((c) => {
      const cp = String(c?.clusterProvider ?? '');
      const cl = String(c?.cluster ?? '');
      const key = `${cp}+${cl}`;
      return row({ 'data-cluster': key }, [
        h('th', { scope: 'row' }, key),
        h('td', { 'data-testid': 'cluster-state' }, stateText(c?.state)),
        list(c?.labels).join(', ') || '—',
        time(c?.readAt, 'never'),
        ...apps.map((app) => {
          const cell = c?.apps?.[app];
          if (!cell) return h('td', { 'data-app': app, class: 'none' }, '—', h('span', { class: 'sr-only' }, ' not placed'));
          // The API names the cell's state; without it, derive it as the API does.
          const state = cell.state || (cell.deployed === 'Applied' && cell.ready ? cell.ready : cell.deployed) || 'Unknown';
          const text = [cell.deployed || state, cell.ready].filter(Boolean).join(' / ');
          return h('td', { 'data-app': app, 'data-state': state, class: `cell ${stateClass(state)}` },
            h('a', { href: href('p', r.p, 'ca', r.ca, r.v, 'dig', r.dig, 'c', cp, cl, 'app', app), 'data-key': `${key}/${app}`,
              title: `${app} on ${key}: ${state}, ${cell.objects ?? 0} objects` },
              mark(state), ' ', text));
        }),
      ]);
    });
    return table({
      caption: 'Apps on the clusters of this page', testid: 'matrix', box: false,
      head: ['Cluster', 'State', 'Labels', 'Live state read', ...apps],
      rows, empty: d.total ? 'No cluster matches the filters.' : 'No cluster: the deployment intent group is not instantiated.',
    });
  }

  // retrying lists the page's clusters that wait for another attempt, and why.
  function retrying(clusters) {
    const rows = clusters.filter((c) => c?.retry);
    return [
      h('ul', { 'data-testid': 'retrying', class: 'retrying' }, rows.map((c) => {
        const key = `${c.clusterProvider ?? ''}+${c.cluster ?? ''}`;
        const at = when(c.retry.nextTry);
        return h('li', { 'data-cluster': key },
          h('strong', null, key), `: attempt ${c.retry.attempts ?? '?'}`,
          at ? [', next try at ', h('time', { datetime: at.toISOString() }, clock(at))] : null,
          h('span', { class: 'sub error' }, dash(c.retry.error)));
      })),
      rows.length ? null : h('p', { class: 'empty' }, 'No cluster of this page is retrying.'),
    ];
  }

  return {
    title: `Deployment intent group ${r.dig}`,
    crumbs: [...trail.app(r), [`DIG ${r.dig}`]],
    body: [
      summary, actions, operationBox, rolloutBox, autoscalerBox, artifactsBox,
      section('Clusters', countsBox, filters, pager, matrixBox),
      section('Retrying', retryBox),
      section('History', historyBox),
      section('Revisions, newest first', revisionsBox),
    ],
    load,
    // query: the hash's query changed under the same DIG (back/forward, an edited address).
    query(params) {
      const nq = readQuery(params);
      fCluster.value = nq.cluster;
      fLabel.value = nq.label;
      fState.value = nq.state;
      setQuery(nq);
    },
  };
}

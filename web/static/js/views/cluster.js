// Cluster view: state, actions, topology, problems, charts, alerts, recoveries.
import { html, useState, useEffect, useLayoutEffect, useRef, useMemo, useCallback } from '../../vendor/preact-htm/standalone.module.js';
import * as api from '../api.js';
import * as actions from '../actions.js';
import { usePoll, useNow, useCan, Link, NotFound, ErrorLine, StateBadge, ProblemBadge, SEV_RANK, Section, recoveryHref, instanceHref, notice } from '../ui.js';
import { TimeBar } from '../timebar.js';
import { readMoment, momentQuery, formatAt, parseTime, changeMs, markers, mergeTimes, pastStatus, lagOf, diff } from '../timemachine.js';
import { Topology } from '../topology.js';
import { useClusterStatus } from '../live.js';
import { ChartPanel } from '../charts.js';
import { cardState } from './overview.js';
import { key as fmtKey, ago, time as fmtTime, duration, between, isZeroTime } from '../format.js';
import { selector } from '../promql.js';

/** lagMap runs the heartbeat lag instant query for a matcher; Map instance → seconds. */
export async function lagMap(matchers, signal) {
  const res = await api.query(selector('dbpilot_heartbeat_lag_seconds', matchers), { signal }).catch((e) => { if (e.name === 'AbortError' || e instanceof api.ConnError) throw e; return []; });
  const m = new Map();
  for (const r of res) { const v = parseFloat(r.value && r.value[1]); if (r.metric && r.metric.instance && Number.isFinite(v)) m.set(r.metric.instance, v); }
  return m;
}

export function ClusterView({ name }) {
  // The status is pushed by serve as it changes; the heartbeat lag comes
  // from the metrics store every 2 s. A moment in the address (?at=) shows
  // the cluster as it was then, from the topology history: the time bar,
  // the charts and the recoveries stay (keyed) while the rest swaps between
  // the present and the past, so that the bar keeps the focus.
  const st = useClusterStatus(name);
  const [lagSt, refresh] = usePoll((signal) => lagMap({ cluster: name }, signal), 2000, [name]);
  useEffect(() => actions.onChanged(refresh), [refresh]);
  const now = useNow(1000);
  const tmv = useTimeMachine(name);
  const view = useRef(null);
  useDrawn(view, tmv, !!st.data);

  if (st.error && st.error.status === 404) return html`<${NotFound} what=${`cluster “${name}”`} detail=${st.error.message} />`;
  if (!st.data) return html`<div class="view">${st.error ? html`<${ErrorLine} error=${st.error} />` : html`<p class="muted">loading ${name}…</p>`}</div>`;
  const status = st.data;
  const { moment } = tmv;
  const past = moment.at != null;
  const comparing = moment.compare != null;
  const cursors = !past ? [] : comparing ? [moment.at, moment.compare] : [moment.at];
  const shownAt = comparing ? tmv.b.data : tmv.a.data;

  return html`<div class=${`view cluster${past ? ' past' : ''}`} ref=${view} data-moment=${past ? formatAt(comparing ? moment.compare : moment.at) : 'live'} data-compare=${comparing ? formatAt(moment.at) : undefined}>
    ${past ? html`<${PastHead} key="head-past" name=${name} tm=${tmv} now=${now} />` : html`<${LiveHead} key="head-live" status=${status} now=${now} />`}
    ${st.error && !(st.error instanceof api.ConnError) && html`<${ErrorLine} key="error" error=${st.error} />`}
    <${TimeMachineBar} key="timebar" tm=${tmv} now=${now} />
    ${past ? html`<${PastBody} key="body-past" tm=${tmv} now=${now} />` : html`<${LiveBody} key="body-live" status=${status} lag=${lagSt.data || new Map()} now=${now} />`}
    <${Section} key="metrics" title="Metrics"><${ChartPanel} scope=${{ cluster: name }} cursors=${cursors} /></${Section}>
    <div class="two-col" key="bottom">
      ${past ? html`<${AlertsAt} key="alerts-past" alerts=${(shownAt && shownAt.alerts) || []} at=${comparing ? moment.compare : moment.at} loaded=${!!shownAt} />` : html`<${Alerts} key="alerts-live" cluster=${name} />`}
      <${Recoveries} key="recoveries" cluster=${name} last=${status.last_recovery} />
    </div>
  </div>`;
}

function LiveHead({ status, now }) {
  const state = cardState(status, now);
  return html`<div class="toolbar">
    <h1 class="mono">${status.name}</h1>
    <${StateBadge} state=${state} text=${state === 'blocked' ? `blocked until ${fmtTime(status.blocked_until)}` : state} />
    <span class="muted">primary <span class="mono">${fmtKey(status.primary) || '—'}</span> · ${(status.instances || []).length} instance(s) · auto-failover ${status.auto_failover ? 'on' : 'off'} · observed ${ago(status.observed_at, now)}</span>
  </div>`;
}

/** LiveBody: the present, as the page was before the time machine: actions, problems, the tree. */
function LiveBody({ status, lag, now }) {
  const state = cardState(status, now);
  return html`<div class="live-body">
    <${ClusterActions} status=${status} state=${state} />
    <${ProblemList} problems=${status.problems} />
    <${Section} title="Topology"><${Topology} status=${status} lag=${lag} /></${Section}>
  </div>`;
}

// ---- the time machine (issue 27) ----

const HISTORY_POLL_MS = 5000;
const PAGE = 1000; // changes per request
const MAX_CHANGES = 20000; // kept in the page; the oldest go first

/**
 * useMoment is the moment in the address ({at, compare} in ms, null: live)
 * and a setter that writes it there: history.pushState for each step,
 * replaceState while a drag goes on (final false). Back and forward move
 * through the steps.
 */
function useMoment() {
  const [m, setM] = useState(() => readMoment(location.search));
  useEffect(() => {
    const pop = () => setM(readMoment(location.search));
    window.addEventListener('popstate', pop);
    return () => window.removeEventListener('popstate', pop);
  }, []);
  useEffect(() => { if (m.bad.length) notice(`?${m.bad.join(' and ?')} is not an RFC 3339 time (e.g. ${formatAt(Date.now())}): showing the present`, 'error'); }, [m.bad.join()]);
  // A step (a key, a click, a whole drag) is one entry of the history:
  // pushed as it begins, replaced while a drag goes on.
  const done = useRef(true);
  const set = useCallback((next, final) => {
    const q = momentQuery(location.search, next);
    if (q !== location.search) history[done.current ? 'pushState' : 'replaceState'](history.state, '', location.pathname + q);
    done.current = final;
    setM({ at: next.at, compare: next.compare, bad: [] });
  }, []);
  return [m, set];
}

/**
 * useHistoryMarks polls the cluster's topology changes (incrementally:
 * from the newest one known), recoveries and alerts every 5 s, for the
 * time bar: {start (ms, null: no history), markers, times}.
 */
function useHistoryMarks(name) {
  const kept = useRef({ list: [], ids: new Set() });
  useEffect(() => { kept.current = { list: [], ids: new Set() }; }, [name]);
  const [st] = usePoll(async (signal) => {
    const k = kept.current;
    for (let page = 0; page < 20; page++) {
      const last = k.list.length ? k.list[k.list.length - 1].time : '';
      const q = { limit: PAGE };
      if (last) q.from = last;
      const got = (await api.changes(name, q, { signal })) || [];
      let fresh = 0;
      for (const c of got) if (!k.ids.has(c.id)) { k.ids.add(c.id); k.list.push(c); fresh++; }
      if (got.length < PAGE || fresh === 0) break;
    }
    if (k.list.length > MAX_CHANGES) { const cut = k.list.splice(0, k.list.length - MAX_CHANGES); for (const c of cut) k.ids.delete(c.id); }
    const [recs, alerts] = await Promise.all([
      api.recoveries({ cluster: name, limit: 200 }, { signal }).catch((e) => { if (e.name === 'AbortError') throw e; return []; }),
      api.alerts({ cluster: name, limit: 500 }, { signal }).catch((e) => { if (e.name === 'AbortError') throw e; return []; }),
    ]);
    return { changes: k.list, recoveries: recs || [], alerts: alerts || [], n: k.list.length };
  }, HISTORY_POLL_MS, [name]);
  const d = st.data;
  return useMemo(() => {
    if (!d) return { start: null, markers: [], times: [], recoveries: [], error: st.error };
    const start = d.changes.length ? changeMs(d.changes[0].time) : null;
    const ms = markers({ changes: d.changes, recoveries: d.recoveries, alerts: d.alerts, start });
    const times = mergeTimes(d.changes.map((c) => changeMs(c.time)), ms.map((m) => m.t));
    return { start, markers: ms, times, recoveries: d.recoveries, error: st.error };
  }, [d && d.n, d && d.recoveries, d && d.alerts, st.error]);
}

/**
 * usePast fetches the cluster as it was at t (ms; null: nothing) — after
 * delay ms, the newest request only (a drag sends one every delay ms), and
 * an answer that arrives after a newer one's is dropped. Returns {data,
 * error, t}: the newest answer and the moment it is for.
 */
function usePast(name, t, delay) {
  const [st, setSt] = useState({ data: null, error: null, t: null });
  const seq = useRef(0);
  const applied = useRef(0);
  // A layout effect: the request leaves as soon as the moment is rendered,
  // not a frame later.
  useLayoutEffect(() => {
    if (t == null) return undefined;
    const my = ++seq.current;
    const load = async () => {
      try {
        const data = await api.clusterAt(name, t);
        if (my < applied.current) return; // out of order: a newer moment is drawn
        applied.current = my;
        setSt({ data, error: null, t });
      } catch (e) {
        if (my < applied.current) return;
        applied.current = my;
        setSt((s) => ({ data: s.data, error: e, t: s.t }));
      }
    };
    // Not even a timer when there is no delay: the request leaves now.
    const timer = delay > 0 ? setTimeout(load, delay) : (load(), 0);
    return () => clearTimeout(timer);
  }, [name, t]);
  return st;
}

/** useTimeMachine: the moment shown, the history's marks, the fetched moments, and the moves. */
function useTimeMachine(name) {
  const [moment, setMoment] = useMoment();
  const [dragging, setDragging] = useState(false);
  const hist = useHistoryMarks(name);
  // The moment the bar moves: B in compare mode, else the one shown.
  const moving = moment.compare != null ? 'compare' : 'at';
  const input = useRef(null); // {t, ms}: the key press or click that asked for t
  const a = usePast(name, moment.at, dragging && moving === 'at' ? 80 : 0);
  const b = usePast(name, moment.compare, dragging && moving === 'compare' ? 80 : 0);
  const move = useCallback((t, { final, input: ms }) => {
    setDragging(!final);
    input.current = ms != null ? { t, ms } : null;
    setMoment(moment.compare != null ? { at: moment.at, compare: t } : { at: t, compare: null }, final);
  }, [moment.at, moment.compare]);
  const live = useCallback(() => { setDragging(false); setMoment({ at: null, compare: null }, true); }, []);
  const compare = useCallback(() => {
    if (moment.compare != null) setMoment({ at: moment.compare, compare: null }, true); // stop: keep B
    else { const t = moment.at ?? Date.now(); setMoment({ at: t, compare: t }, true); }
  }, [moment.at, moment.compare]);
  return { moment, hist, a, b, move, live, compare, input, moving };
}

function TimeMachineBar({ tm, now }) {
  const comparing = tm.moment.compare != null;
  const t = comparing ? tm.moment.compare : tm.moment.at;
  // The moment drawn knows its neighbours (ClusterAt.prev/next) even past
  // the changes the page keeps.
  const shown = comparing ? tm.b.data : tm.a.data;
  const times = shown ? mergeTimes(tm.hist.times, [changeMs(shown.prev), changeMs(shown.next)].filter((x) => x != null)) : tm.hist.times;
  // The history's start: from its oldest change, or the moment's answer
  // (ClusterAt.since) until the changes are read.
  const start = tm.hist.start ?? (shown && changeMs(shown.since));
  return html`<${TimeBar} start=${start ?? null} now=${now} t=${t} pin=${comparing ? tm.moment.at : null}
    markers=${tm.hist.markers} times=${times} onMove=${tm.move} onLive=${tm.live} onCompare=${tm.compare} />`;
}

/**
 * useDrawn marks the view (ref, once shown: the page has loaded) with the moment whose tree is on screen
 * (data-drawn) and, when a key press or click asked for it, how long from
 * that input to the painted frame that shows it (data-redraw-ms,
 * data-redraw-at; bench/timemachine.sh reads them).
 */
function useDrawn(ref, tm, shown) {
  const past = tm.moment.compare != null ? tm.b : tm.a;
  useEffect(() => {
    const el = ref.current;
    if (!el || !past.data || tm.moment.at == null) return;
    const at = formatAt(past.t);
    el.dataset.drawn = at;
    const inp = tm.input.current;
    if (inp && inp.t === past.t) {
      // An effect runs once the frame with the new tree has been painted.
      tm.input.current = null;
      el.dataset.redrawMs = (performance.now() - inp.ms).toFixed(1);
      el.dataset.redrawAt = at;
    }
  }, [past.data, past.t, tm.moment.at != null, shown]);
}

/** ProblemList: problems, most urgent first; changed: Map problem id → "raised" | "cleared" (compare mode). */
function ProblemList({ problems, changed }) {
  const list = [...(problems || [])].sort((a, b) => SEV_RANK[a.severity] - SEV_RANK[b.severity]);
  if (!list.length) return null;
  return html`<ul class="problems">${list.map((p) => {
    const c = changed && changed.get(`${p.code}|${fmtKey(p.instance)}|${p.channel || ''}`);
    return html`<li class=${c ? `problem-${c}` : ''} data-changed=${c} data-code=${p.code}><${ProblemBadge} p=${p} /> <${Link} class="mono" href=${instanceHref(fmtKey(p.instance))}>${fmtKey(p.instance)}</${Link}> ${p.message}${c ? html` <span class="badge changed-badge">${c}</span>` : ''}</li>`;
  })}</ul>`;
}

function pastParts(tm) {
  const { moment, a, b } = tm;
  const comparing = moment.compare != null;
  const recs = tm.hist.recoveries;
  const sa = a.data ? pastStatus(a.data, recs) : null;
  const sb = comparing && b.data ? pastStatus(b.data, recs) : null;
  return { comparing, sa, sb, main: comparing ? sb : sa, mainAt: comparing ? b.data : a.data };
}

function PastHead({ name, tm, now }) {
  const { moment, a, b } = tm;
  const { comparing, main, mainAt } = pastParts(tm);
  const err = a.error || b.error;
  return html`<div class="toolbar">
    <h1 class="mono">${name}</h1>
    ${main && html`<${StateBadge} state=${main.state} />`}
    <span class="muted">${comparing ? 'comparing two moments' : html`as it was at <strong>${fmtTime(moment.at)}</strong> (${ago(moment.at, now)})`}${main && !comparing ? html` · primary <span class="mono">${fmtKey(main.primary) || '—'}</span> · ${(mainAt.instances || []).length} instance(s)` : ''}</span>
    ${err && !(err instanceof api.ConnError) && html`<${ErrorLine} error=${err} />`}
  </div>`;
}

/** PastBody: the cluster at a past moment (?at=), or two moments side by side (?at=&compare=). */
function PastBody({ tm, now }) {
  const { moment, a, b } = tm;
  const { comparing, sa, sb } = pastParts(tm);
  const d = sa && sb ? diff(sa, sb) : null;
  const marksFor = (side) => d && {
    nodes: new Set(d.keys),
    edges: new Map((side === 'a' ? d.edgesRemoved.map((e) => [`${e.from}>${e.to}`, 'removed']) : d.edgesAdded.map((e) => [`${e.from}>${e.to}`, 'added']))),
  };
  const problemMarks = (side) => d && new Map((side === 'a' ? d.cleared.map((p) => [p, 'cleared']) : d.raised.map((p) => [p, 'raised'])).map(([p, c]) => [`${p.code}|${fmtKey(p.instance)}|${p.channel || ''}`, c]));
  const drawSide = (side, data, st, t) => html`<div class="compare-side" data-side=${side} data-at=${formatAt(t)} data-drawn=${data ? formatAt(parseTime(data.at)) : ''}>
    <h3><span class="pin-name">${side.toUpperCase()}</span> ${fmtTime(t)} <span class="muted">(${ago(t, now)})</span>${st && html` · <${StateBadge} state=${st.state} />`} ${st && html`<span class="muted">primary <span class="mono">${fmtKey(st.primary) || '—'}</span></span>`}</h3>
    ${data && !data.recorded && html`<p class="muted not-recorded">nothing recorded at this moment</p>`}
    ${st && html`<${ProblemList} problems=${st.problems} changed=${problemMarks(side)} />`}
    ${st ? html`<${Topology} id=${`topology-${side}`} status=${st} lag=${lagOf(data)} readonly=${true} marks=${marksFor(side)} />` : html`<p class="muted">loading…</p>`}
  </div>`;

  return html`<div class="past-body">
    <p class="past-note" id="past-note" role="note">${comparing ? 'Two past moments' : 'A past moment'}, read from the topology history: switchover, failover, ack and relocation are off here. Press Live (or Escape) to act on the present.</p>
    ${comparing ? html`
      <${Section} title="Compare" id="compare">
        <div class="compare-grid">
          ${drawSide('a', a.data, sa, moment.at)}
          ${drawSide('b', b.data, sb, moment.compare)}
        </div>
        <h3>What changed from A to B</h3>
        ${d && (d.lines.length ? html`<ul id="compare-diff">${d.lines.map((l) => html`<li class="diff-line">${l}</li>`)}</ul>` : html`<p id="compare-diff" class="muted">no difference in the topology</p>`)}
      </${Section}>` : html`<div>
      ${a.data && !a.data.recorded && html`<p class="muted not-recorded">nothing was recorded at this moment${tm.hist.start != null ? ` (the history kept begins ${fmtTime(tm.hist.start)})` : ''}</p>`}
      ${sa && html`<${ProblemList} problems=${sa.problems} />`}
      <${Section} title="Topology">${sa ? html`<${Topology} status=${sa} lag=${lagOf(a.data)} readonly=${true} />` : html`<p class="muted">loading ${fmtTime(moment.at)}…</p>`}</${Section}>
    </div>`}
  </div>`;
}

function ClusterActions({ status, state }) {
  const primary = fmtKey(status.primary);
  const candidates = (status.instances || []).filter((i) => i.reachable && fmtKey(i.key) !== primary && (i.channels || []).some((c) => fmtKey(c.source) === primary)).map((i) => fmtKey(i.key));
  const [chosen, setTo] = useState('');
  // A chosen replica that is no longer one (after a switchover): back to
  // the best candidate, never a blank select.
  const to = candidates.includes(chosen) ? chosen : '';
  const blocked = state === 'blocked' || (status.last_recovery && !status.last_recovery.acked);
  // Only the actions serve says the tab's token may do (GET /api/whoami).
  const can = useCan();
  const who = api.currentWho();
  const none = !can('switchover') && !can('failover') && !can('ack');
  return html`<div class="actions" role="group" aria-label="cluster actions">
    ${can('switchover') && html`<label>Switchover to <select id="switchover-to" value=${to} onChange=${(e) => setTo(e.target.value)}>
      <option value="">best candidate</option>
      ${candidates.map((c) => html`<option value=${c}>${c}</option>`)}
    </select></label>
    <button type="button" data-action="switchover" disabled=${state === 'dead' || state === 'recovering'} onClick=${() => actions.switchover(status.name, to)}>Switchover…</button>`}
    ${can('failover') && html`<button type="button" data-action="failover" class="danger" disabled=${state !== 'dead'} title=${state === 'dead' ? 'recover the dead primary' : 'only when the primary is dead'} onClick=${() => actions.failover(status.name)}>Failover…</button>`}
    ${can('ack') && html`<button type="button" data-action="ack" disabled=${!blocked} title=${blocked ? 'acknowledge recoveries and unblock automatic recovery' : 'nothing to acknowledge'} onClick=${() => actions.ack(status.name)}>Ack…</button>`}
    ${who && html`<span class="muted role-note" data-role=${who.role}>token ${who.name} (${who.role})${none ? ': reads only' : ''}</span>`}
  </div>`;
}

/** Alerts of a cluster (optionally one instance): firing and pending, then resolved history. */
export function Alerts({ cluster, instance }) {
  const [st] = usePoll((signal) => api.alerts({ cluster, limit: 200 }, { signal }), 3000, [cluster]);
  const now = useNow(1000);
  let list = st.data || [];
  if (instance) list = list.filter((a) => a.labels && a.labels.instance === instance);
  const active = list.filter((a) => a.state === 'firing' || a.state === 'pending').sort((a, b) => (a.state === b.state ? 0 : a.state === 'firing' ? -1 : 1));
  const resolved = list.filter((a) => a.state === 'resolved').slice(0, 30);
  const row = (a) => html`<${AlertRow} key=${a.id} a=${a} now=${now} />`;
  return html`<${Section} title="Alerts" id="alerts">
    ${st.error && !(st.error instanceof api.ConnError) && html`<${ErrorLine} error=${st.error} />`}
    ${st.loaded && active.length === 0 && html`<p class="muted">no firing or pending alert</p>`}
    <ul class="rows">${active.map(row)}</ul>
    ${resolved.length > 0 && html`<details><summary>resolved (${resolved.length})</summary><ul class="rows">${resolved.map(row)}</ul></details>`}
  </${Section}>`;
}

function AlertRow({ a, now, state }) {
  state = state || a.state;
  return html`<li class=${`alert-row st-${state}`} data-alertname=${a.rule} data-state=${state}>
    <div class="row-head"><${StateBadge} state=${state} /> <strong>${a.rule}</strong> <span class=${`badge sev-${a.severity}`}>${a.severity}</span>
      <span class="muted">${state === 'resolved' ? `resolved ${ago(a.resolved_at, now)}, lasted ${duration(between(a.active_at, a.resolved_at))}` : state === 'firing' ? `firing since ${fmtTime(a.fired_at)} (${ago(a.fired_at, now)})` : `pending since ${fmtTime(a.active_at)}`}</span></div>
    <div class="summary">${a.summary}</div>
    <div class="labels">${Object.entries(a.labels || {}).sort().map(([k, v]) => html`<span class="label"><span class="muted">${k}=</span>${v}</span>`)}${a.suppressed ? html`<span class="label warn-text">suppressed: ${a.suppressed}</span>` : ''}</div>
  </li>`;
}

/** AlertsAt: the alerts of a cluster firing at a past moment at (ms), from ClusterAt. */
function AlertsAt({ alerts, at, loaded }) {
  return html`<${Section} title="Alerts" id="alerts" extra=${html`<span class="muted small">firing at ${fmtTime(at)}</span>`}>
    ${loaded && alerts.length === 0 && html`<p class="muted">no alert firing then</p>`}
    <ul class="rows">${alerts.map((a) => html`<${AlertRow} key=${a.id} a=${a} now=${at} state="firing" />`)}</ul>
  </${Section}>`;
}

/** Recoveries of a cluster as a timeline. */
export function Recoveries({ cluster, last }) {
  const [st, refresh] = usePoll((signal) => api.recoveries({ cluster, limit: 50 }, { signal }), 3000, [cluster]);
  // The pushed status names the newest recovery: a new or finished one is
  // listed at once, not at the next poll.
  const lastKey = last ? `${last.id}|${last.ended}|${last.acked}` : '';
  useEffect(() => { if (lastKey) refresh(); }, [lastKey]);
  const now = useNow(1000);
  const list = st.data || [];
  return html`<${Section} title="Recoveries" id="recoveries">
    ${st.error && !(st.error instanceof api.ConnError) && html`<${ErrorLine} error=${st.error} />`}
    ${st.loaded && list.length === 0 && html`<p class="muted">no recovery</p>`}
    <ol class="timeline">${list.map((r) => {
      const d = between(r.started, r.ended);
      const det = between(r.detected_at, r.started);
      const running = isZeroTime(r.ended);
      return html`<li key=${r.id} class=${`recovery-row ${running ? 'running' : r.success ? 'ok' : 'failed'}`} data-id=${r.id}>
        <${Link} href=${recoveryHref(r.id)}>
          <div class="row-head"><span class="rec-result">${running ? '↻ running' : r.success ? '✔ success' : '✖ failed'}</span> <strong>${r.kind}</strong> #${r.id}
            <span class="muted">${fmtTime(r.started)} (${ago(r.started, now)})</span></div>
          <div><span class="mono">${fmtKey(r.old_primary) || '—'}</span> → <span class="mono">${fmtKey(r.new_primary) || '—'}</span>
            · took ${running ? '…' : duration(d)}${det != null ? ` · detected ${fmtTime(r.detected_at)} (${duration(det)} before start)` : ''}</div>
          ${r.lost_replicas && r.lost_replicas.length > 0 && html`<div class="warn-text">lost replicas: ${r.lost_replicas.map(fmtKey).join(', ')}</div>`}
          ${r.error && html`<div class="error-line">${r.error}</div>`}
          <div class="muted">${r.acked ? `✔ acked by ${r.acked_by || '?'} ${ago(r.acked_at, now)}${r.ack_comment ? `: ${r.ack_comment}` : ''}` : '⊘ not acknowledged'}</div>
        </${Link}>
      </li>`;
    })}</ol>
  </${Section}>`;
}

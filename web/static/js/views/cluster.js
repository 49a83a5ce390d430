// Cluster view: state, actions, topology, problems, charts, alerts, recoveries.
import { html, useState, useEffect } from '../../vendor/preact-htm/standalone.module.js';
import * as api from '../api.js';
import * as actions from '../actions.js';
import { usePoll, useNow, useCan, Link, NotFound, ErrorLine, StateBadge, ProblemBadge, SEV_RANK, Section, recoveryHref, instanceHref } from '../ui.js';
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
  // from the metrics store every 2 s.
  const st = useClusterStatus(name);
  const [lagSt, refresh] = usePoll((signal) => lagMap({ cluster: name }, signal), 2000, [name]);
  useEffect(() => actions.onChanged(refresh), [refresh]);
  const now = useNow(1000);

  if (st.error && st.error.status === 404) return html`<${NotFound} what=${`cluster “${name}”`} detail=${st.error.message} />`;
  if (!st.data) return html`<div class="view">${st.error ? html`<${ErrorLine} error=${st.error} />` : html`<p class="muted">loading ${name}…</p>`}</div>`;
  const status = st.data;
  const lag = lagSt.data || new Map();
  const state = cardState(status, now);
  const problems = [...(status.problems || [])].sort((a, b) => SEV_RANK[a.severity] - SEV_RANK[b.severity]);

  return html`<div class="view cluster">
    <div class="toolbar">
      <h1 class="mono">${status.name}</h1>
      <${StateBadge} state=${state} text=${state === 'blocked' ? `blocked until ${fmtTime(status.blocked_until)}` : state} />
      <span class="muted">primary <span class="mono">${fmtKey(status.primary) || '—'}</span> · ${(status.instances || []).length} instance(s) · auto-failover ${status.auto_failover ? 'on' : 'off'} · observed ${ago(status.observed_at, now)}</span>
    </div>
    ${st.error && !(st.error instanceof api.ConnError) && html`<${ErrorLine} error=${st.error} />`}
    <${ClusterActions} status=${status} state=${state} />
    ${problems.length > 0 && html`<ul class="problems">${problems.map((p) => html`<li><${ProblemBadge} p=${p} /> <${Link} class="mono" href=${instanceHref(fmtKey(p.instance))}>${fmtKey(p.instance)}</${Link}> ${p.message}</li>`)}</ul>`}
    <${Section} title="Topology"><${Topology} status=${status} lag=${lag} /></${Section}>
    <${Section} title="Metrics"><${ChartPanel} scope=${{ cluster: name }} /></${Section}>
    <div class="two-col">
      <${Alerts} cluster=${name} />
      <${Recoveries} cluster=${name} last=${status.last_recovery} />
    </div>
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
  const row = (a) => html`<li key=${a.id} class=${`alert-row st-${a.state}`} data-alertname=${a.rule} data-state=${a.state}>
    <div class="row-head"><${StateBadge} state=${a.state} /> <strong>${a.rule}</strong> <span class=${`badge sev-${a.severity}`}>${a.severity}</span>
      <span class="muted">${a.state === 'resolved' ? `resolved ${ago(a.resolved_at, now)}, lasted ${duration(between(a.active_at, a.resolved_at))}` : a.state === 'firing' ? `firing since ${fmtTime(a.fired_at)} (${ago(a.fired_at, now)})` : `pending since ${fmtTime(a.active_at)}`}</span></div>
    <div class="summary">${a.summary}</div>
    <div class="labels">${Object.entries(a.labels || {}).sort().map(([k, v]) => html`<span class="label"><span class="muted">${k}=</span>${v}</span>`)}${a.suppressed ? html`<span class="label warn-text">suppressed: ${a.suppressed}</span>` : ''}</div>
  </li>`;
  return html`<${Section} title="Alerts" id="alerts">
    ${st.error && !(st.error instanceof api.ConnError) && html`<${ErrorLine} error=${st.error} />`}
    ${st.loaded && active.length === 0 && html`<p class="muted">no firing or pending alert</p>`}
    <ul class="rows">${active.map(row)}</ul>
    ${resolved.length > 0 && html`<details><summary>resolved (${resolved.length})</summary><ul class="rows">${resolved.map(row)}</ul></details>`}
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

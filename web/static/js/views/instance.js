// Instance page: what `dbpilot inspect` shows, channels, problems, charts, actions.
import { html, useState, useEffect } from '../../vendor/preact-htm/standalone.module.js';
import * as api from '../api.js';
import * as actions from '../actions.js';
import { usePoll, useNow, useCan, Link, NotFound, ErrorLine, StateBadge, ProblemBadge, Section, clusterHref, instanceHref } from '../ui.js';
import { ChartPanel } from '../charts.js';
import { Alerts, lagMap } from './cluster.js';
import { nodeRole, nodeState, fencedOf, fencedText } from '../topology.js';
import { key as fmtKey, onOff, durationNs, lag as fmtLag, lagLevel, ago, duration, catchUpDetail, groupCommit } from '../format.js';

function norm(k) { return k.replace(/^localhost:|^\[::1\]:/i, '127.0.0.1:').toLowerCase(); }

export function InstanceView({ addr }) {
  const [st, refresh] = usePoll(async (signal) => {
    const [all, lag] = await Promise.all([api.clusters({ signal }), lagMap({ instance: addr }, signal)]);
    return { all, lag };
  }, 1000, [addr]);
  useEffect(() => actions.onChanged(refresh), [refresh]);
  const now = useNow(1000);

  if (!st.data) return html`<div class="view">${st.error ? html`<${ErrorLine} error=${st.error} />` : html`<p class="muted">loading ${addr}…</p>`}</div>`;
  let cluster = null, inst = null;
  let detached = false;
  for (const c of st.data.all || []) for (const i of c.instances || []) if (norm(fmtKey(i.key)) === norm(addr)) { cluster = c; inst = i; }
  // Seen outside its cluster (an old primary after a failover).
  if (!inst) for (const c of st.data.all || []) for (const i of c.detached || []) if (norm(fmtKey(i.key)) === norm(addr)) { cluster = c; inst = i; detached = true; }
  if (!inst) return html`<${NotFound} what=${`instance “${addr}”`} />`;
  const k = fmtKey(inst.key);
  const problems = (cluster.problems || []).filter((p) => fmtKey(p.instance) === k);
  const hasChildren = (cluster.instances || []).some((i) => (i.channels || []).some((c) => fmtKey(c.source) === k));
  const role = nodeRole(inst, cluster, hasChildren, detached);
  const state = nodeState(inst, cluster, problems);
  const lg = st.data.lag.get(k);
  const apply = detached ? null : (cluster.replica_apply || []).find((a) => fmtKey(a.key) === k);
  const gc = cluster.group_commit && fmtKey(cluster.group_commit.key) === k ? cluster.group_commit : null;
  const rule = (cluster.promotion_rules || {})[k];
  const fenced = detached ? fencedOf(inst, cluster) : null;

  return html`<div class="view instance">
    <div class="toolbar">
      <h1 class="mono">${k}</h1>
      <${StateBadge} state=${state} /> <span class="badge">${role}</span>
      <span class="muted">cluster <${Link} href=${clusterHref(cluster.name)}>${cluster.name}</${Link}> · observed ${ago(inst.observed_at, now)}</span>
    </div>
    ${fenced && html`<p class=${`fenced-line ${fenced.errant ? 'warn-text' : ''}`} data-errant=${fenced.errant || ''}>former primary of ${cluster.name}, outside it since the failover${fenced.recovery_id ? ` #${fenced.recovery_id}` : ''}: ${fencedText(fenced)}${fenced.errant ? ' — GTIDs the primary lacks; a rejoin re-provisions it (they are discarded, and audited)' : ''}</p>`}
    ${!inst.reachable && html`<p class="error-line">✖ unreachable${inst.last_error ? `: ${inst.last_error}` : ''} — values below are the last observed</p>`}
    <${InstanceActions} inst=${inst} cluster=${cluster} role=${role} fenced=${fenced} />
    ${problems.length > 0 && html`<ul class="problems">${problems.map((p) => html`<li><${ProblemBadge} p=${p} /> ${p.message}${p.detail ? html` <span class="muted mono">${Object.entries(p.detail).map(([a, b]) => `${a}=${b}`).join(' ')}</span>` : ''}</li>`)}</ul>`}
    <div class="two-col">
      <${Section} title="Inspect"><${Inspect} i=${inst} rule=${rule} /></${Section}>
      <${Section} title="Replication">
        ${(inst.channels || []).length === 0 && html`<p class="muted">none (not a replica)</p>`}
        ${(inst.channels || []).map((c) => html`<${Channel} c=${c} lag=${lg} />`)}
        ${apply && html`<p class="catchup" data-state=${apply.state}>${catchUpDetail(apply)}</p>`}
        ${gc && html`<p class="group-commit">group commit: ${groupCommit(gc)}</p>`}
        ${(inst.replicas || []).length > 0 && html`<h3>Replicas</h3><ul class="plain">${inst.replicas.map((r) => html`<li><${Link} class="mono" href=${instanceHref(fmtKey(r))}>${fmtKey(r)}</${Link}></li>`)}</ul>`}
      </${Section}>
    </div>
    <${Section} title="Metrics"><${ChartPanel} scope=${{ cluster: cluster.name, instance: k }} /></${Section}>
    <${Alerts} cluster=${cluster.name} instance=${k} />
  </div>`;
}

function InstanceActions({ inst, cluster, role, fenced }) {
  const k = fmtKey(inst.key);
  const primary = fmtKey(cluster.primary);
  const targets = (cluster.instances || []).map((i) => fmtKey(i.key)).filter((t) => t !== k);
  const [below, setBelow] = useState('');
  const replicaOfPrimary = (inst.channels || []).some((c) => fmtKey(c.source) === primary);
  // Only the actions serve says the tab's token may do (GET /api/whoami).
  const can = useCan();
  if (role === 'detached') {
    if (!can('rejoin')) return null;
    // Outside the tree: rejoin attaches it below the primary (relocate moves members only).
    const errant = !!(fenced && fenced.errant);
    return html`<div class="actions" role="group" aria-label="instance actions">
      <button type="button" data-action="rejoin" disabled=${!inst.reachable || errant} title=${errant ? 'it has errant transactions: rejoin with re-provisioning' : 'attach it below the primary as a read_only replica'} onClick=${() => actions.rejoin(cluster.name, k, false)}>Rejoin…</button>
      <button type="button" data-action="rejoin-reclone" class=${errant ? '' : 'danger'} disabled=${!inst.reachable} title="re-provision it from a replica (its data and errant transactions discarded, audited), then attach it" onClick=${() => actions.rejoin(cluster.name, k, true)}>Rejoin with re-provisioning…</button>
    </div>`;
  }
  return html`<div class="actions" role="group" aria-label="instance actions">
    ${role !== 'primary' && can('relocate') && html`<label>Relocate below <select id="relocate-below" value=${below} onChange=${(e) => setBelow(e.target.value)}>
      <option value="">choose a source…</option>
      ${targets.map((t) => html`<option value=${t}>${t}${t === primary ? ' (primary)' : ''}</option>`)}
    </select></label>
    <button type="button" data-action="relocate" disabled=${!below} onClick=${() => actions.relocate(k, below)}>Relocate…</button>`}
    ${replicaOfPrimary && can('switchover') && html`<button type="button" data-action="switchover" onClick=${() => actions.switchover(cluster.name, k)}>Switchover to this…</button>`}
  </div>`;
}

function Inspect({ i, rule }) {
  const g = i.gtid || {};
  const s = i.semi_sync || {};
  const maria = i.flavor === 'mariadb';
  const rows = [
    ['flavor', `${i.flavor || '?'} ${i.version ? `${i.version.major}.${i.version.minor}.${i.version.patch}` : ''} (${(i.version_comment || '').trim()})`],
    ['version', i.version && i.version.raw],
    ['server_id', String(i.server_id)],
    ['server_uuid', i.server_uuid],
    ['hostname', i.hostname],
    ['report_host', i.report_host ? `${i.report_host}:${i.report_port || ''}` : ''],
    ['uptime', duration(Math.floor((i.uptime_ns || 0) / 1e9))],
    ['read_only', onOff(i.read_only) + (maria ? '' : `, super_read_only ${onOff(i.super_read_only)}`)],
    ['log_bin', `${onOff(i.log_bin)}, binlog_format ${i.binlog_format || '—'}, log_slave_updates ${onOff(i.log_replica_updates)}`],
    ['slave_net_timeout', i.slave_net_timeout_ns ? durationNs(i.slave_net_timeout_ns) : ''],
    ...(maria ? [
      ['gtid_domain_id', String(g.domain_id ?? 0)],
      ['gtid_strict_mode', onOff(g.strict_mode)],
      ['gtid_binlog_pos', g.binlog_pos || '-'],
      ['gtid_slave_pos', g.slave_pos || '-'],
      ['gtid_current_pos', g.current_pos || '-'],
      ['gtid_binlog_state', g.binlog_state || '-'],
    ] : [
      ['gtid_mode', g.mode],
      ['enforce_gtid_consistency', g.enforce_gtid_consistency],
      ['gtid_executed', g.executed || '-'],
      ['gtid_purged', g.purged || '-'],
    ]),
    ['semi_sync', `primary side ${onOff(s.primary_enabled)} (active ${onOff(s.primary_active)}, ${s.primary_clients || 0} clients, timeout ${durationNs(s.primary_timeout_ns)}), replica side ${onOff(s.replica_enabled)} (active ${onOff(s.replica_active)})`],
    ['promotion_rule', rule || ''],
  ];
  return html`<dl class="kv inspect">${rows.filter(([, v]) => v).map(([a, b]) => html`<dt>${a}</dt><dd class="mono">${b}</dd>`)}</dl>`;
}

function Channel({ c, lag }) {
  const ok = c.io_running === 'Yes' && c.sql_running;
  const rows = [
    ['source', `${fmtKey(c.source)} user ${c.source_user || '?'}`],
    ['IO / SQL', `IO ${c.io_running} · SQL ${c.sql_running ? 'Yes' : 'No'}`],
    ['io_state', c.io_state], ['sql_state', c.sql_state],
    ['seconds_behind', c.seconds_behind == null ? 'NULL' : `${c.seconds_behind}s`],
    ['using_gtid', c.using_gtid], ['gtid_io_pos', c.gtid_io_pos],
    ['retrieved_gtid_set', c.retrieved_gtid_set], ['executed_gtid_set', c.executed_gtid_set],
    ['source_log', `read ${c.source_log_file || '?'}:${c.read_source_log_pos || 0}, exec ${c.relay_source_log_file || '?'}:${c.exec_source_log_pos || 0}`],
    ['heartbeat', c.heartbeat_period_ns ? durationNs(c.heartbeat_period_ns) : ''],
    ['sql_delay', c.sql_delay ? `${c.sql_delay}s` : ''], ['parallel_mode', c.parallel_mode],
    ['last_io_error', c.last_io_error ? `${c.last_io_errno}: ${c.last_io_error}` : ''],
    ['last_sql_error', c.last_sql_error ? `${c.last_sql_errno}: ${c.last_sql_error}` : ''],
  ];
  return html`<div class=${`channel ${ok ? 'ok' : 'broken'}`}>
    <h3>channel ${c.name || '(default)'} <span class=${`badge ${ok ? 'state-ok' : 'state-stopped'}`}>${ok ? '● running' : '■ not running'}</span>
      <span class=${`lag lag-${lagLevel(lag)}`}>heartbeat lag ${fmtLag(lag)}</span></h3>
    <dl class="kv">${rows.filter(([, v]) => v).map(([a, b]) => html`<dt>${a}</dt><dd class="mono">${b}</dd>`)}</dl>
  </div>`;
}

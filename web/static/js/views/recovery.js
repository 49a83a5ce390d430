// One recovery: its record, the plan with the candidate reasoning, its audit steps,
// and a link to its incident report (GET /api/recoveries/{id}/report).
import { html } from '../../vendor/preact-htm/standalone.module.js';
import * as api from '../api.js';
import { usePoll, useNow, Link, NotFound, ErrorLine, Section, clusterHref, instanceHref } from '../ui.js';
import { key as fmtKey, time as fmtTime, timeMs, duration, between, ago, isZeroTime } from '../format.js';

// oneRecovery reads GET /api/recoveries/{id}; a serve without that route
// (404 "no API endpoint") is asked for the list instead.
async function oneRecovery(id, signal) {
  try {
    return await api.recovery(id, { signal });
  } catch (e) {
    if (!(e instanceof api.APIError) || e.status !== 404 || !/no API endpoint/i.test(e.message)) throw e;
    const all = await api.recoveries({ limit: 1000 }, { signal });
    const r = (all || []).find((x) => String(x.id) === id);
    if (!r) throw new api.APIError(404, `no recovery ${id}`, 'not_found');
    return r;
  }
}

export function RecoveryView({ id }) {
  const valid = /^\d+$/.test(id);
  const [st] = usePoll(async (signal) => {
    const [rec, steps] = await Promise.all([oneRecovery(id, signal), api.audit({ recovery: id, limit: 1000 }, { signal })]);
    return { rec, steps: steps || [] };
  }, 2000, [id]);
  const now = useNow(1000);
  if (!valid || (st.error && st.error.status === 404)) return html`<${NotFound} what=${`recovery “${id}”`} detail=${st.error && st.error.message} />`;
  if (!st.data) return html`<div class="view">${st.error ? html`<${ErrorLine} error=${st.error} />` : html`<p class="muted">loading recovery ${id}…</p>`}</div>`;
  const { rec: r, steps } = st.data;
  const running = isZeroTime(r.ended);
  const t0 = Date.parse(r.detected_at && !isZeroTime(r.detected_at) ? r.detected_at : r.started);
  return html`<div class="view recovery">
    <div class="toolbar">
      <h1>${r.kind} #${r.id}</h1>
      <span class=${`badge ${running ? 'state-recovering' : r.success ? 'state-ok' : 'state-dead'}`}>${running ? '↻ running' : r.success ? '✔ success' : '✖ failed'}</span>
      <span class="muted">cluster <${Link} href=${clusterHref(r.cluster)}>${r.cluster}</${Link}></span>
      <a class="report-link" data-action="incident-report" href=${api.reportPath(r.id)} target="_blank" rel="noopener"
        title="the whole incident on one printable page: timeline, decision, topology before and after, metrics, alerts, lost transactions, what clients saw"
        onClick=${async (e) => { if (api.getToken()) { e.preventDefault(); await api.openReport(r.id); } }}>Incident report</a>
    </div>
    <${Section} title="Record">
      <dl class="kv">
        <dt>from → to</dt><dd class="mono">${fmtKey(r.old_primary) || '—'} → ${fmtKey(r.new_primary) || '—'}</dd>
        <dt>detected</dt><dd>${fmtTime(r.detected_at)}</dd>
        <dt>started</dt><dd>${fmtTime(r.started)} (${ago(r.started, now)})${between(r.detected_at, r.started) != null ? ` · ${duration(between(r.detected_at, r.started))} after detection` : ''}</dd>
        <dt>ended</dt><dd>${running ? 'running…' : `${fmtTime(r.ended)} · took ${duration(between(r.started, r.ended))}`}</dd>
        <dt>lost replicas</dt><dd class="mono">${r.lost_replicas && r.lost_replicas.length ? r.lost_replicas.map(fmtKey).join(', ') : 'none'}</dd>
        ${r.error && html`<dt>error</dt><dd class="error-line">${r.error}</dd>`}
        <dt>acknowledged</dt><dd>${r.acked ? `yes, by ${r.acked_by || '?'} at ${fmtTime(r.acked_at)}${r.ack_comment ? `: ${r.ack_comment}` : ''}` : 'no'}</dd>
      </dl>
    </${Section}>
    ${r.plan && html`<${Section} title="Plan"><pre class="plan">${r.plan}</pre></${Section}>`}
    <${Section} title=${`Audit (${steps.length} step(s))`}>
      <table class="audit">
        <thead><tr><th>time</th><th>+</th><th>event</th><th>instance</th><th>message</th><th>detail</th></tr></thead>
        <tbody>${steps.map((e) => html`<tr key=${e.id} class="audit-row" data-event=${e.event}>
          <td class="mono nowrap">${timeMs(e.time)}</td>
          <td class="mono nowrap muted">${Number.isFinite(t0) ? `+${duration((Date.parse(e.time) - t0) / 1000)}` : ''}</td>
          <td class="nowrap">${e.event}</td>
          <td class="mono nowrap">${e.instance && e.instance.host ? html`<${Link} href=${instanceHref(fmtKey(e.instance))}>${fmtKey(e.instance)}</${Link}>` : ''}</td>
          <td>${e.message}</td>
          <td class="mono small detail">${Object.entries(e.detail || {}).map(([k, v]) => html`<div><span class="muted">${k}=</span>${v}</div>`)}</td>
        </tr>`)}</tbody>
      </table>
      ${steps.length === 0 && html`<p class="muted">no audit event recorded for this recovery</p>`}
    </${Section}>
  </div>`;
}

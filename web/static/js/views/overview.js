// Fleet overview: one card per cluster, trouble first, filter by name.
import { html, useState } from '../../vendor/preact-htm/standalone.module.js';
import * as api from '../api.js';
import { usePoll, useNow, Link, clusterHref, StateBadge, ProblemBadge, SEV_RANK, ErrorLine, navigate } from '../ui.js';
import { key as fmtKey, ago, isZeroTime } from '../format.js';

/** cardState: the cluster's state, "blocked" while automatic recovery is blocked. */
export function cardState(c, now = Date.now()) {
  if (c.state === 'dead' || c.state === 'recovering') return c.state;
  if (!isZeroTime(c.blocked_until) && Date.parse(c.blocked_until) > now) return 'blocked';
  return c.state || 'unknown';
}

const RANK = { dead: 0, recovering: 1, blocked: 2, unreachable: 3, unknown: 4, ok: 5 };

function worst(problems) {
  let w = null;
  for (const p of problems || []) if (!w || SEV_RANK[p.severity] < SEV_RANK[w.severity]) w = p;
  return w;
}

function troubleScore(c, firing, now) {
  const s = RANK[cardState(c, now)] ?? 4;
  const w = worst(c.problems);
  const sev = w ? SEV_RANK[w.severity] : 3;
  return [s, firing > 0 ? 0 : 1, sev];
}

export function Overview() {
  const params = new URLSearchParams(location.search);
  const [filter, setFilter] = useState(params.get('q') || '');
  const [st] = usePoll((signal) => api.clusters({ signal }), 1000, []);
  const [al] = usePoll((signal) => api.alerts({ state: 'firing' }, { signal }), 3000, []);
  const now = useNow(1000);

  const firing = new Map();
  for (const a of al.data || []) {
    const c = (a.labels && a.labels.cluster) || '';
    firing.set(c, (firing.get(c) || 0) + 1);
  }
  const list = (st.data || []).filter((c) => c.name.toLowerCase().includes(filter.trim().toLowerCase()));
  list.sort((a, b) => {
    const x = troubleScore(a, firing.get(a.name) || 0, now), y = troubleScore(b, firing.get(b.name) || 0, now);
    for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return x[i] - y[i];
    return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
  });
  const setF = (v) => {
    setFilter(v);
    const q = v ? `?q=${encodeURIComponent(v)}` : '';
    history.replaceState(null, '', `/${q}`);
  };

  return html`<div class="view overview">
    <div class="toolbar">
      <h1>Fleet</h1>
      <input id="filter" type="search" placeholder="filter clusters by name" aria-label="filter clusters by name" value=${filter} onInput=${(e) => setF(e.target.value)} />
      <span class="muted">${st.data ? `${list.length} of ${st.data.length} cluster(s)` : 'loading…'}</span>
    </div>
    ${st.error && !(st.error instanceof api.ConnError) && html`<${ErrorLine} error=${st.error} />`}
    ${st.data && st.data.length === 0 && html`<p class="muted">serve watches no cluster.</p>`}
    <div class="cards">
      ${list.map((c) => {
        const state = cardState(c, now);
        const w = worst(c.problems);
        const insts = c.instances || [];
        const down = insts.filter((i) => !i.reachable).length;
        const f = firing.get(c.name) || 0;
        const r = c.last_recovery;
        return html`<${Link} key=${c.name} class=${`cluster-card st-${state}`} href=${clusterHref(c.name)} data-cluster=${c.name} data-state=${state}>
          <div class="card-head"><span class="card-name">${c.name}</span><${StateBadge} state=${state} text=${state === 'blocked' ? `blocked until ${new Date(c.blocked_until).toLocaleTimeString()}` : state} /></div>
          <dl class="kv">
            <dt>primary</dt><dd class="mono">${fmtKey(c.primary) || '—'}</dd>
            <dt>instances</dt><dd>${insts.length}${down ? html` <span class="warn-text">(${down} unreachable)</span>` : ''}</dd>
            <dt>worst problem</dt><dd>${w ? html`<${ProblemBadge} p=${w} withInstance=${true} />` : html`<span class="muted">none</span>`}${(c.problems || []).length > 1 ? html` <span class="muted">+${c.problems.length - 1}</span>` : ''}</dd>
            <dt>firing alerts</dt><dd>${f ? html`<span class="badge state-firing">🔥 ${f} firing</span>` : html`<span class="muted">0</span>`}</dd>
            ${c.owner && html`<dt>owner</dt><dd class="card-owner mono" title="the serve that observes this cluster and collects its metrics">${c.owner}</dd>`}
            <dt>last recovery</dt><dd>${r ? html`${r.success ? '✔' : '✖'} ${r.kind} ${ago(r.started, now)}${r.acked ? '' : html` <span class="warn-text">(not acked)</span>`}` : html`<span class="muted">none</span>`}</dd>
          </dl>
        </${Link}>`;
      })}
    </div>
  </div>`;
}

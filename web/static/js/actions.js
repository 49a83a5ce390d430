// Topology changes: dialog#confirm shows the dry-run plan (or the refusal,
// verbatim), runs the real call on confirm and shows its result.
import { html, useState, useEffect, useRef } from '../vendor/preact-htm/standalone.module.js';
import * as api from './api.js';
import { notice } from './ui.js';
import { key as fmtKey, duration, between } from './format.js';

let sink = () => {};
const afterHooks = new Set();
/** onChanged registers f to run after a real operation (to refresh views now). */
export function onChanged(f) { afterHooks.add(f); return () => afterHooks.delete(f); }

/**
 * open shows dialog#confirm for steps [{label, dry: () => Promise, run: () => Promise}].
 * opt.input = {label, placeholder} asks for a text (ack comment) passed to run(text); no dry run then.
 */
function open(title, steps, opt = {}) { sink({ title, steps, opt, id: Date.now() }); }

const errText = (e) => (e && e.message) || String(e);

function recoverySummary(r) {
  if (!r) return 'done';
  const d = between(r.started, r.ended);
  const parts = [`${r.success ? '✔ success' : '✖ failed'}: ${r.kind} #${r.id}`];
  if (r.old_primary && r.old_primary.host) parts.push(`${fmtKey(r.old_primary)} → ${fmtKey(r.new_primary) || '?'}`);
  if (d != null) parts.push(`took ${duration(d)}`);
  if (r.lost_replicas && r.lost_replicas.length) parts.push(`lost replicas: ${r.lost_replicas.map(fmtKey).join(', ')}`);
  if (r.error) parts.push(r.error);
  return parts.join(' · ');
}

function planText(r) {
  if (!r) return '(no plan returned)';
  return r.plan || recoverySummary(r);
}

async function guard(f) {
  try { return await f(); } catch (e) {
    if (e instanceof api.NeedToken) { notice(e.message, 'error'); return undefined; }
    throw e;
  }
}

export function relocate(replica, below) {
  open(`Relocate ${replica} below ${below}`, [{
    label: replica,
    dry: () => api.relocate(replica, below, true),
    run: () => api.relocate(replica, below, false),
  }]);
}

/** relocateReplicas moves every child of src below target: one call per replica. */
export function relocateReplicas(src, children, target) {
  const list = children.filter((c) => c !== target);
  if (list.length === 0) { notice(`${src} has no replicas to move below ${target}`, 'error'); return; }
  open(`Relocate the ${list.length} replica(s) of ${src} below ${target}`, list.map((c) => ({
    label: c,
    dry: () => api.relocate(c, target, true),
    run: () => api.relocate(c, target, false),
  })));
}

/** rejoin attaches a detached server (a fenced old primary) below the cluster's primary; reclone re-provisions it first. */
export function rejoin(cluster, instance, reclone) {
  open(`Rejoin ${instance} below the primary of ${cluster}${reclone ? ' (re-provision it: its errant transactions are discarded, and audited)' : ''}`, [{
    label: instance,
    dry: () => api.rejoin(cluster, instance, reclone, true),
    run: () => api.rejoin(cluster, instance, reclone, false),
  }]);
}

export function switchover(cluster, to) {
  open(`Switchover of ${cluster}${to ? ` to ${to}` : ' (best candidate)'}`, [{
    label: cluster,
    dry: () => api.switchover(cluster, to, true),
    run: () => api.switchover(cluster, to, false),
  }]);
}

export function failover(cluster) {
  open(`Failover of ${cluster}`, [{
    label: cluster,
    dry: () => api.failover(cluster, true),
    run: () => api.failover(cluster, false),
  }]);
}

export function ack(cluster) {
  open(`Acknowledge the recoveries of ${cluster}`, [{
    label: cluster,
    run: async (comment) => { const r = await api.ack(cluster, comment); return { ackText: `acknowledged ${r && r.acked != null ? r.acked : 0} recovery(ies); automatic recovery is unblocked` }; },
  }], { input: { label: 'Comment', placeholder: 'why it is safe to unblock (kept in the audit log)' } });
}

/** Confirm renders dialog#confirm. */
export function Confirm() {
  const [req, setReq] = useState(null);
  const [plans, setPlans] = useState([]); // [{label, ok, text}]
  const [phase, setPhase] = useState('idle'); // planning, planned, running, done
  const [results, setResults] = useState([]);
  const [comment, setComment] = useState('');
  const ref = useRef(null);
  const confirmBtn = useRef(null);

  useEffect(() => { sink = (r) => setReq(r); return () => { sink = () => {}; }; }, []);

  useEffect(() => {
    if (!req) return;
    const d = ref.current;
    if (d && !d.open) d.showModal();
    setResults([]);
    setComment('');
    if (req.opt.input) { setPlans([]); setPhase('planned'); return; }
    setPhase('planning');
    setPlans([]);
    let live = true;
    (async () => {
      const out = [];
      for (const s of req.steps) {
        try {
          const r = await guard(s.dry);
          if (r === undefined) { close(); return; }
          out.push({ label: s.label, ok: true, text: planText(r) });
        } catch (e) {
          out.push({ label: s.label, ok: false, text: errText(e) });
        }
        if (!live) return;
        setPlans([...out]);
      }
      setPhase('planned');
    })();
    return () => { live = false; };
  }, [req]);

  useEffect(() => { if (phase === 'planned' && confirmBtn.current && !confirmBtn.current.disabled) confirmBtn.current.focus(); }, [phase]);

  const close = () => { const d = ref.current; if (d && d.open) d.close(); setReq(null); setPhase('idle'); };

  const confirm = async () => {
    setPhase('running');
    const out = [];
    const steps = req.opt.input ? req.steps : req.steps.filter((s, i) => plans[i] && plans[i].ok);
    for (const s of steps) {
      try {
        const r = await guard(() => s.run(comment));
        if (r === undefined) { out.push({ label: s.label, ok: false, text: 'not done: this action needs the API token' }); continue; }
        out.push({ label: s.label, ok: r.ackText ? true : r.success !== false, text: r.ackText || recoverySummary(r) });
      } catch (e) {
        const rec = e.body && e.body.recovery;
        out.push({ label: s.label, ok: false, text: errText(e) + (rec ? ` (recovery #${rec.id})` : '') });
      }
      setResults([...out]);
    }
    setPhase('done');
    afterHooks.forEach((f) => f());
  };

  const multi = req && req.steps.length > 1;
  const anyOK = plans.some((p) => p.ok);
  const canConfirm = req && (req.opt.input ? comment.trim() !== '' : anyOK) && phase === 'planned';

  return html`<dialog id="confirm" ref=${ref} onClose=${() => { setReq(null); setPhase('idle'); }} aria-labelledby="confirm-title">
    ${req && html`<form method="dialog" onSubmit=${(e) => { e.preventDefault(); if (phase === 'done') close(); else if (canConfirm) confirm(); }}>
      <h2 id="confirm-title">${req.title}</h2>
      ${phase === 'planning' && html`<p class="muted">asking serve for a dry-run plan…</p>`}
      ${plans.map((p) => html`<div class="plan-item">
        ${multi && html`<h3>${p.label}</h3>`}
        ${p.ok ? html`<pre class="plan">${p.text}</pre>` : html`<p class="refused" role="alert">${p.text}</p>`}
      </div>`)}
      ${req.opt.input && phase !== 'done' && html`<label class="field">${req.opt.input.label}
        <input type="text" name="comment" value=${comment} placeholder=${req.opt.input.placeholder} onInput=${(e) => setComment(e.target.value)} autofocus /></label>`}
      ${phase === 'running' && html`<p class="muted">running…</p>`}
      ${results.length > 0 && html`<div class="result" role="status">${results.map((r) => html`<p class=${r.ok ? 'ok' : 'failed'}>${multi ? `${r.label}: ` : ''}${r.text}</p>`)}</div>`}
      <div class="buttons">
        ${phase !== 'done' && html`<button type="submit" data-action="confirm" ref=${confirmBtn} disabled=${!canConfirm} class="primary">${req.opt.input ? 'Acknowledge' : multi ? `Run ${plans.filter((p) => p.ok).length} relocation(s)` : 'Confirm'}</button>`}
        <button type="button" data-action="cancel" onClick=${close}>${phase === 'done' ? 'Close' : 'Cancel'}</button>
      </div>
    </form>`}
  </dialog>`;
}

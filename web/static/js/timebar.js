// The time bar of the cluster page (issue 27): a track over the history
// kept [start, now] with its change markers, a handle to drag, buttons and
// keys to step, "Live" and "Compare". It only says where to go (onMove);
// the cluster view fetches and draws the moment.
import { html, useRef, useState, useEffect } from '../vendor/preact-htm/standalone.module.js';
import { step, fraction, timeAt, formatAt, lanes } from './timemachine.js';
import { time as fmtTime, ago } from './format.js';

const STEP_BUTTONS = [
  ['prev', '⇤ change', 'previous change (PageUp)'],
  ['min-', '−1 min', 'one minute back (Shift+←)'],
  ['sec-', '−1 s', 'one second back (←)'],
  ['sec+', '+1 s', 'one second on (→)'],
  ['min+', '+1 min', 'one minute on (Shift+→)'],
  ['next', 'change ⇥', 'next change (PageDown)'],
];

const KIND_ICON = { failover: '✖', switchover: '⇄', relocation: '↪', rejoin: '↩', primary: '★', 'thread-stop': '■', 'thread-start': '▶', alert: '▲' };

/** keyStep maps a key press on the track to a step (null: not ours). */
export function keyStep(e) {
  switch (e.key) {
    case 'ArrowLeft': return e.shiftKey ? 'min-' : 'sec-';
    case 'ArrowRight': return e.shiftKey ? 'min+' : 'sec+';
    case 'PageUp': return 'prev';
    case 'PageDown': return 'next';
    default: return null;
  }
}

/**
 * TimeBar: start, now (ms): the track's ends; t: the moment shown (ms; null:
 * live); pin: compare mode's moment A (ms) or null; markers (timemachine
 * markers); times: the sorted change times PageUp/PageDown step to.
 * onMove(t, {final, input}) is called with each new moment (final: the step
 * ended — a key, a button, a marker, the end of a drag; input: the
 * performance.now() of the key press or click); onLive() returns to the
 * present; onCompare() toggles compare mode.
 */
export function TimeBar({ start, now, t, pin, markers, times, onMove, onLive, onCompare }) {
  const track = useRef(null);
  const [dragging, setDragging] = useState(false);
  const live = t == null;
  const end = Math.max(now, start ?? now);
  const shown = live ? end : t;
  // Until the history's start is known the track begins at the moment
  // shown, and steps are not held below anything.
  const lo = start ?? Math.min(shown, end);
  const opts = { start, now: end, times };
  const go = (how, input) => onMove(step(t, how, opts), { final: true, input });

  const atX = (clientX) => {
    const r = track.current.getBoundingClientRect();
    return timeAt((clientX - r.left) / Math.max(1, r.width), lo, end);
  };
  const down = (e) => {
    if (e.button !== 0 || e.target.closest('.tb-marker')) return;
    e.preventDefault();
    track.current.focus();
    track.current.setPointerCapture(e.pointerId);
    setDragging(true);
    onMove(atX(e.clientX), { final: false, input: performance.now() });
  };
  const move = (e) => { if (dragging) onMove(atX(e.clientX), { final: false, input: performance.now() }); };
  const up = (e) => {
    if (!dragging) return;
    setDragging(false);
    onMove(atX(e.clientX), { final: true, input: performance.now() });
  };
  const key = (e) => {
    const how = keyStep(e);
    if (how) { e.preventDefault(); go(how, performance.now()); return; }
    if (e.key === 'Escape' && !live) { e.preventDefault(); onLive(); }
    else if (e.key === 'Home') { e.preventDefault(); onMove(lo, { final: true, input: performance.now() }); }
    else if (e.key === 'End') { e.preventDefault(); onLive(); }
  };
  // Escape anywhere on the page (no dialog open) returns to the present.
  useEffect(() => {
    if (live) return;
    const esc = (e) => { if (e.key === 'Escape' && !e.defaultPrevented && !document.querySelector('dialog[open]')) onLive(); };
    window.addEventListener('keydown', esc);
    return () => window.removeEventListener('keydown', esc);
  }, [live, onLive]);

  const pct = (x) => `${(fraction(x, lo, end) * 100).toFixed(3)}%`;
  const lane = lanes(markers || [], lo, end);
  const label = live ? 'live' : `${fmtTime(shown)}.${String(new Date(shown).getMilliseconds()).padStart(3, '0')}`;
  return html`<div id="timebar" class=${`timebar${live ? ' live' : ' past'}${dragging ? ' dragging' : ''}`} data-mode=${pin != null ? 'compare' : live ? 'live' : 'past'} data-at=${live ? '' : formatAt(shown)} data-start=${start != null ? formatAt(lo) : ''}>
    <div class="tb-controls" role="group" aria-label="time machine">
      ${STEP_BUTTONS.map(([how, text, title]) => html`<button type="button" class="tb-step" data-step=${how} title=${title} aria-label=${title} disabled=${start == null} onClick=${() => go(how, performance.now())}>${text}</button>`)}
      <output id="tb-moment" class=${live ? 'live' : 'past'} aria-live="polite" title=${live ? '' : formatAt(shown)}>${live ? '● live' : html`${label} <span class="muted">(${ago(shown, now)})</span>`}</output>
      <button type="button" id="tb-live" data-action="live" class=${live ? '' : 'primary'} disabled=${live} onClick=${onLive} title="back to the present (Escape)">Live</button>
      <button type="button" id="tb-compare" data-action="compare" aria-pressed=${pin != null ? 'true' : 'false'} onClick=${onCompare} title=${pin != null ? 'stop comparing: show the moment of the bar' : 'pin this moment as A and choose B with the bar'}>${pin != null ? 'Stop comparing' : 'Compare'}</button>
      <span class="muted small">${start == null ? 'no history recorded yet' : `history since ${fmtTime(lo)}`}</span>
    </div>
    <div id="tb-track" class="tb-track" ref=${track} tabindex="0" role="slider"
        aria-label="moment shown: ←/→ 1 s, Shift 1 min, PageUp/PageDown previous/next change, Escape live"
        aria-valuemin=${lo} aria-valuemax=${end} aria-valuenow=${shown} aria-valuetext=${label}
        onPointerDown=${down} onPointerMove=${move} onPointerUp=${up} onPointerCancel=${() => setDragging(false)} onKeyDown=${key}>
      <div class="tb-rail"></div>
      ${(markers || []).map((m, i) => html`<button type="button" key=${m.id} class=${`tb-marker kind-${m.kind} lane-${lane[i]}`} data-kind=${m.kind} data-t=${formatAt(m.t)} style=${`left: ${pct(m.t)}`}
          title=${`${fmtTime(m.t)} ${m.label}`} aria-label=${`${m.label} at ${fmtTime(m.t)}`} tabindex="-1"
          onPointerDown=${(e) => e.stopPropagation()} onClick=${() => onMove(m.t, { final: true, input: performance.now() })}>${KIND_ICON[m.kind] || '•'}</button>`)}
      ${pin != null && html`<div class="tb-pin" data-pin="a" style=${`left: ${pct(pin)}`} title=${`A: ${fmtTime(pin)}`}><span>A</span></div>`}
      <div id="tb-handle" class="tb-handle" style=${`left: ${pct(shown)}`}>${pin != null ? html`<span>B</span>` : ''}</div>
    </div>
  </div>`;
}

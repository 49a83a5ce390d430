// Shared UI pieces: navigation, polling, notices, badges.
import { html, useState, useEffect, useRef, useCallback } from '../vendor/preact-htm/standalone.module.js';
import { ConnError, WHO_EVENT, can } from './api.js';

export { html };

// ---- navigation (history API) ----
const routeListeners = new Set();
export function onRoute(f) { routeListeners.add(f); return () => routeListeners.delete(f); }
export function navigate(path, replace = false) {
  if (path === location.pathname + location.search) return;
  history[replace ? 'replaceState' : 'pushState'](null, '', path);
  routeListeners.forEach((f) => f());
  window.scrollTo(0, 0);
}
window.addEventListener('popstate', () => routeListeners.forEach((f) => f()));

/** Link: an <a> that navigates without reloading (modifier clicks open normally). */
export function Link({ href, children, ...rest }) {
  const click = (e) => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(href);
  };
  return html`<a href=${href} onClick=${click} ...${rest}>${children}</a>`;
}

export const clusterHref = (name) => `/clusters/${encodeURIComponent(name)}`;
export const instanceHref = (k) => `/instances/${encodeURIComponent(k).replace(/%3A/gi, ':')}`;
export const recoveryHref = (id) => `/recoveries/${encodeURIComponent(id)}`;

// ---- what the tab's token may do ----
/**
 * useCan re-renders the component when serve says anew what the tab's token
 * may do (GET /api/whoami) and returns can(action): whether to show an
 * action's controls.
 */
export function useCan() {
  const [, setN] = useState(0);
  useEffect(() => {
    const f = () => setN((n) => n + 1);
    window.addEventListener(WHO_EVENT, f);
    return () => window.removeEventListener(WHO_EVENT, f);
  }, []);
  return can;
}

// ---- notices ----
let noticeSink = () => {};
export function setNoticeSink(f) { noticeSink = f; }
/** notice shows one line in #notice; kind: "error" | "info" | "ok". */
export function notice(text, kind = 'info') { noticeSink(text ? { text: String(text), kind, at: Date.now() } : null); }

// ---- polling ----
/**
 * usePoll calls fn(signal) now and again every ms after each answer (not
 * overlapping). While serve does not answer it retries with backoff 250 ms →
 * 2 s and keeps the last data. Hidden tabs poll at most every hiddenMs.
 * Returns [{data, error, loaded}, refresh].
 */
export function usePoll(fn, ms, deps, hiddenMs = 10000) {
  const [st, setSt] = useState({ data: undefined, error: null, loaded: false });
  const kick = useRef(() => {});
  useEffect(() => {
    let stop = false, timer = 0, inflight = false, again = false, backoff = 250;
    const ctl = new AbortController();
    setSt({ data: undefined, error: null, loaded: false });
    const tick = async () => {
      clearTimeout(timer);
      if (inflight) { again = true; return; }
      inflight = true;
      let delay = ms;
      try {
        const data = await fn(ctl.signal);
        if (stop) return;
        backoff = 250;
        setSt({ data, error: null, loaded: true });
      } catch (e) {
        if (stop || e.name === 'AbortError') return;
        if (e instanceof ConnError) { delay = Math.min(backoff, 2000); backoff = Math.min(backoff * 2, 2000); }
        setSt((s) => ({ data: s.data, error: e, loaded: s.loaded || !(e instanceof ConnError) }));
      } finally { inflight = false; }
      if (stop) return;
      if (again) { again = false; delay = 0; }
      if (document.visibilityState === 'hidden') delay = Math.max(delay, hiddenMs);
      timer = setTimeout(tick, delay);
    };
    kick.current = tick;
    const vis = () => { if (document.visibilityState === 'visible') tick(); };
    document.addEventListener('visibilitychange', vis);
    tick();
    return () => { stop = true; ctl.abort(); clearTimeout(timer); document.removeEventListener('visibilitychange', vis); };
  }, deps);
  const refresh = useCallback(() => kick.current(), []);
  return [st, refresh];
}

/** useNow re-renders every ms (for "5s ago" texts). */
export function useNow(ms = 1000) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => { const t = setInterval(() => setNow(Date.now()), ms); return () => clearInterval(t); }, [ms]);
  return now;
}

// ---- badges: colour never the only signal (icon + text) ----
const STATE_ICON = { ok: '●', unreachable: '◌', dead: '✖', recovering: '↻', blocked: '⊘', unknown: '?', stopped: '■', firing: '🔥', pending: '…', resolved: '✓' };
export function StateBadge({ state, text }) {
  return html`<span class=${`badge state-${state}`}><span aria-hidden="true">${STATE_ICON[state] || '•'}</span> ${text || state}</span>`;
}

const SEV_ICON = { critical: '✖', warning: '▲', info: 'ℹ' };
export const SEV_RANK = { critical: 0, warning: 1, info: 2 };
export function ProblemBadge({ p, withInstance }) {
  const title = p.message + (p.detail ? ' — ' + Object.entries(p.detail).map(([k, v]) => `${k}=${v}`).join(' ') : '');
  return html`<span class=${`badge sev-${p.severity}`} title=${title}><span aria-hidden="true">${SEV_ICON[p.severity] || '•'}</span> ${p.code}${p.channel ? ` (${p.channel})` : ''}${withInstance && p.instance ? ` @ ${p.instance.host}:${p.instance.port}` : ''}</span>`;
}

export function NotFound({ what, detail }) {
  return html`<div class="not-found" role="alert"><h2>Not found</h2><p>${what} was not found.</p>${detail && html`<p class="muted">${detail}</p>`}<p><${Link} href="/">Back to the fleet overview</${Link}></p></div>`;
}

/** ErrorLine shows an API error's text verbatim. */
export function ErrorLine({ error }) {
  if (!error) return null;
  return html`<p class="error-line" role="status">✖ ${error.message}</p>`;
}

export function Section({ title, children, extra, id }) {
  return html`<section class="panel" id=${id}><header class="panel-head"><h2>${title}</h2>${extra}</header>${children}</section>`;
}

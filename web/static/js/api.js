// Fetch wrapper for serve's JSON API: bearer token (per tab, sessionStorage),
// the X-Dbpilot-Source header, error bodies {error, code}, connection state.

import { takeEvents } from './sse.js';

const TOKEN_KEY = 'dbpilot.token';

/** APIError is an answer of the API with an error body; message is its "error" text verbatim. */
export class APIError extends Error {
  constructor(status, message, code, body) {
    super(message);
    this.status = status;
    this.code = code || '';
    this.body = body || null;
  }
}

/** ConnError: serve did not answer (restarting, network). */
export class ConnError extends Error {}

/** NeedToken: a write was attempted and the token dialog was cancelled. */
export class NeedToken extends Error {
  constructor() { super('this action needs the API token (dbpilot serve --sandbox NAME keeps it in the sandbox directory; a configured serve in token_file); nothing was done'); }
}

export function getToken() {
  try { return sessionStorage.getItem(TOKEN_KEY) || ''; } catch { return ''; }
}
/** TOKEN_EVENT is dispatched on window whenever the tab's token is set or removed. */
export const TOKEN_EVENT = 'dbpilot-token';
export function setToken(t) {
  try { if (t) sessionStorage.setItem(TOKEN_KEY, t); else sessionStorage.removeItem(TOKEN_KEY); } catch { /* private mode */ }
  window.dispatchEvent(new Event(TOKEN_EVENT));
}

// Listeners: connection state and notices, set by app.js.
const hooks = { conn: () => {}, notice: () => {}, askToken: async () => null };
export function setHooks(h) { Object.assign(hooks, h); }

let pendingAsk = null;
/** askToken opens dialog#token once for all callers waiting; resolves to the token or null. */
export function askToken(reason) {
  if (!pendingAsk) {
    pendingAsk = Promise.resolve(hooks.askToken(reason)).then((t) => {
      pendingAsk = null;
      // A notice about a missing or wrong token is answered now.
      if (t) { setToken(t.trim()); hooks.notice(null); }
      return t ? t.trim() : null;
    });
  }
  return pendingAsk;
}

async function send(method, path, body, signal) {
  const headers = { 'X-Dbpilot-Source': 'web', Accept: 'application/json' };
  const tok = getToken();
  if (tok) headers.Authorization = `Bearer ${tok}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let resp;
  try {
    resp = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal, cache: 'no-store' });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    hooks.conn(false);
    throw new ConnError(`dbpilot serve does not answer (${e.message})`);
  }
  const text = await resp.text().catch(() => '');
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = null; }
  // A proxy answering 502-504 without our body means serve is away.
  if (!data && (resp.status === 502 || resp.status === 503 || resp.status === 504)) {
    hooks.conn(false);
    throw new ConnError(`dbpilot serve does not answer (HTTP ${resp.status})`);
  }
  hooks.conn(true);
  if (resp.ok) {
    if (data && data.status === 'error') throw new APIError(resp.status, data.error, data.errorType, data);
    return data;
  }
  const msg = (data && data.error) || text.trim() || `HTTP ${resp.status}`;
  throw new APIError(resp.status, msg, data && (data.code || data.errorType), data);
}

const wrongToken = (e) => e instanceof APIError && e.status === 401 && /wrong/i.test(e.message);

/** get reads path; on 401 asks for the token and retries (reads need it when serve listens off-loopback). */
export async function get(path, opt = {}) {
  for (let attempt = 0; ; attempt++) {
    try {
      return await send('GET', path, undefined, opt.signal);
    } catch (e) {
      if (!(e instanceof APIError) || e.status !== 401 || attempt >= 2) throw e;
      if (wrongToken(e)) { setToken(''); hooks.notice('the API token was wrong and has been forgotten; enter it again', 'error'); }
      const t = await askToken('Reading this server needs the API token.');
      if (!t) throw new APIError(401, 'reading needs the API token; reload the page to enter it', 'EAUTH');
    }
  }
}

/** post sends a write; asks for the token first when the tab has none. */
export async function post(path, body) {
  if (!getToken()) {
    const t = await askToken('This action needs the API token.');
    if (!t) throw new NeedToken();
  }
  try {
    return await send('POST', path, body);
  } catch (e) {
    if (wrongToken(e)) {
      setToken('');
      throw new APIError(401, `${e.message}: the token was removed from this tab; enter the right one and try again`, 'EAUTH', e.body);
    }
    throw e;
  }
}

/**
 * streamCluster reads serve's event stream of a cluster's status
 * (GET /api/clusters/NAME/events) and calls onStatus with each status as it
 * is pushed. It returns when serve ends the stream (stopping) and throws
 * ConnError when serve does not answer or the connection breaks, APIError
 * for an answer that is not a stream (404 unknown cluster, 401, a serve
 * without streams).
 */
export async function streamCluster(name, onStatus, signal) {
  const headers = { 'X-Dbpilot-Source': 'web', Accept: 'text/event-stream' };
  const tok = getToken();
  if (tok) headers.Authorization = `Bearer ${tok}`;
  let resp;
  try {
    resp = await fetch(`/api/clusters/${enc(name)}/events`, { headers, signal, cache: 'no-store' });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    hooks.conn(false);
    throw new ConnError(`dbpilot serve does not answer (${e.message})`);
  }
  if (!resp.ok || !(resp.headers.get('Content-Type') || '').startsWith('text/event-stream')) {
    const text = await resp.text().catch(() => '');
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch { data = null; }
    if (!data && resp.status >= 502 && resp.status <= 504) { hooks.conn(false); throw new ConnError(`dbpilot serve does not answer (HTTP ${resp.status})`); }
    hooks.conn(true);
    throw new APIError(resp.status, (data && data.error) || text.trim() || `HTTP ${resp.status}`, data && data.code, data);
  }
  hooks.conn(true);
  const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      const { events, rest } = takeEvents(buf + value);
      buf = rest;
      for (const ev of events) {
        if (ev.event === 'cluster') onStatus(JSON.parse(ev.data));
      }
    }
  } catch (e) {
    if (e.name === 'AbortError' || (signal && signal.aborted)) throw e;
    hooks.conn(false);
    throw new ConnError(`the connection to dbpilot serve broke (${e.message})`);
  } finally {
    reader.releaseLock();
  }
}

// ---- what the tab's token may do (GET /api/whoami) ----
/** WHO_EVENT is dispatched on window whenever what the tab's token may do is known anew. */
export const WHO_EVENT = 'dbpilot-who';
// who: {name, role, actions} of the tab's token, as serve answered;
// 'pending' while a token is set and serve has not answered; null: no token.
let who = null;
let whoSeq = 0;
/** currentWho is the answer of GET /api/whoami for the tab's token ({name, role, actions}), or null. */
export function currentWho() { return who && who !== 'pending' ? who : null; }
/**
 * can tells whether the page shows the control of an action (an
 * httpapi.Actions name: ack, relocate, switchover, failover, rejoin). Serve
 * decides: with a token, only the actions GET /api/whoami lists for it (none
 * until it answers); without one, every control shows and asks for a token
 * when used.
 */
export function can(action) {
  if (who === null) return true;
  if (who === 'pending') return false;
  return !who.role || (who.actions || []).includes(action);
}
/** refreshWho asks serve what the tab's token may do and dispatches WHO_EVENT. */
export async function refreshWho() {
  const seq = ++whoSeq;
  who = getToken() ? 'pending' : null;
  window.dispatchEvent(new Event(WHO_EVENT));
  if (!who) return;
  for (;;) {
    try {
      // Quietly: a wrong token is for the read or write that uses it to
      // report (and forget), not for this question.
      const w = await send('GET', '/api/whoami');
      if (seq !== whoSeq) return;
      who = w && w.role ? w : null;
      break;
    } catch (e) {
      if (seq !== whoSeq) return;
      // Refused (a wrong token) or a serve without roles: every control
      // shows, as without a token.
      if (!(e instanceof ConnError)) { who = null; break; }
      await new Promise((r) => setTimeout(r, 1000)); // serve away: ask again
    }
  }
  window.dispatchEvent(new Event(WHO_EVENT));
}
window.addEventListener(TOKEN_EVENT, () => { refreshWho(); });

const enc = encodeURIComponent;
export const clusters = (o) => get('/api/clusters', o);
export const cluster = (name, o) => get(`/api/clusters/${enc(name)}`, o);
export const alerts = (q, o) => get(`/api/alerts?${new URLSearchParams(q)}`, o);
export const recoveries = (q, o) => get(`/api/recoveries?${new URLSearchParams(q)}`, o);
export const recovery = (id, o) => get(`/api/recoveries/${enc(id)}`, o);
export const audit = (q, o) => get(`/api/audit?${new URLSearchParams(q)}`, o);
/** clusterAt reads the cluster as it was at t (ms): ClusterAt (GET /api/clusters/NAME/at). */
export const clusterAt = (name, t, o) => get(`/api/clusters/${enc(name)}/at?t=${new Date(t).toISOString()}`, o);
/** changes reads the topology changes of a cluster, oldest first: q {from, to (RFC 3339), limit}. */
export const changes = (name, q, o) => get(`/api/clusters/${enc(name)}/changes?${new URLSearchParams(q)}`, o);

/** reportPath is the address of a recovery's incident report (one HTML page). */
export const reportPath = (id) => `/api/recoveries/${enc(id)}/report`;

/**
 * openReport opens a recovery's incident report in a new tab when the tab
 * has a token, which a plain link cannot send: the page is fetched with it
 * and opened as a blob: address (the tab is opened at once, within the
 * click, so that no pop-up blocker stops it). Without a token the link
 * itself opens it. Returns false when the caller should let the link do it.
 */
export async function openReport(id) {
  if (!getToken()) return false;
  const w = window.open('', '_blank');
  try {
    for (let attempt = 0; ; attempt++) {
      const headers = { 'X-Dbpilot-Source': 'web', Accept: 'text/html', Authorization: `Bearer ${getToken()}` };
      const resp = await fetch(reportPath(id), { headers, cache: 'no-store' });
      if (resp.ok) {
        const url = URL.createObjectURL(new Blob([await resp.blob()], { type: 'text/html' }));
        if (w) w.location.href = url; else window.location.assign(url);
        setTimeout(() => URL.revokeObjectURL(url), 60000);
        return true;
      }
      const text = await resp.text().catch(() => '');
      let data = null;
      try { data = JSON.parse(text); } catch { data = null; }
      const err = new APIError(resp.status, (data && data.error) || text.trim() || `HTTP ${resp.status}`, data && data.code, data);
      if (resp.status !== 401 || attempt >= 1) throw err;
      if (wrongToken(err)) setToken('');
      if (!(await askToken('Reading this server needs the API token.'))) throw err;
    }
  } catch (e) {
    if (w) w.close();
    hooks.notice(`incident report: ${e.message}`, 'error');
    return true;
  }
}
export const relocate = (replica, below, dryRun) => post('/api/relocate', { replica, below, dry_run: dryRun });
export const rejoin = (name, instance, reclone, dryRun) => post(`/api/clusters/${enc(name)}/rejoin`, { instance, dry_run: dryRun, reclone: !!reclone });
export const switchover = (name, to, dryRun) => post(`/api/clusters/${enc(name)}/switchover`, to ? { dry_run: dryRun, to } : { dry_run: dryRun });
export const failover = (name, dryRun) => post(`/api/clusters/${enc(name)}/failover`, { dry_run: dryRun });
export const ack = (name, comment) => post(`/api/clusters/${enc(name)}/ack`, { by: 'web', comment });

/** query runs an instant PromQL query; returns the result vector. */
export async function query(expr, o) {
  const d = await get(`/api/metrics/query?${new URLSearchParams({ expr })}`, o);
  return (d && d.data && d.data.result) || [];
}

/** queryRange runs a range query (unix seconds, step seconds); returns the matrix. */
export async function queryRange(expr, start, end, step, o) {
  const d = await get(`/api/metrics/query_range?${new URLSearchParams({ expr, start, end, step })}`, o);
  return (d && d.data && d.data.result) || [];
}

/** seriesExist tells whether any series matches a selector since start. */
export async function seriesExist(match, start, o) {
  const d = await get(`/api/metrics/series?${new URLSearchParams({ 'match[]': match, start, limit: 1 })}`, o);
  return !!(d && d.data && d.data.length);
}

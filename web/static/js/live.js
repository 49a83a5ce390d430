// A cluster's live status: pushed by serve's event stream (a failover is
// seen as it happens), polled every second when the stream is unavailable,
// and held on screen long enough for a person to see a failover: a status
// in trouble (dead, recovering, unreachable) stays HOLD_MS before one with
// another primary replaces it.
import { useState, useEffect } from '../vendor/preact-htm/standalone.module.js';
import * as api from './api.js';
import { key as fmtKey } from './format.js';

export const HOLD_MS = 1000;
const TROUBLE = new Set(['dead', 'recovering', 'unreachable']);

/** inTrouble tells whether a status is one a failover goes through. */
export const inTrouble = (status) => !!status && TROUBLE.has(status.state);

/**
 * holdMs is how long to wait before next replaces shown, whose trouble was
 * first shown at troubleSince (ms; 0 when shown is not in trouble): a new
 * primary waits until the trouble has been on screen HOLD_MS; anything
 * else is shown at once.
 */
export function holdMs(shown, troubleSince, next, now) {
  if (!shown || !next || !troubleSince) return 0;
  if (fmtKey(shown.primary) === fmtKey(next.primary)) return 0;
  return Math.max(0, troubleSince + HOLD_MS - now);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** useClusterStatus returns {data, error, loaded} for the named cluster, live. */
export function useClusterStatus(name) {
  const [st, setSt] = useState({ data: undefined, error: null, loaded: false });
  useEffect(() => {
    let stop = false, timer = 0, pending = null, troubleSince = 0, shown = null;
    const ctl = new AbortController();
    setSt({ data: undefined, error: null, loaded: false });
    const apply = (status) => {
      shown = status;
      if (inTrouble(status)) troubleSince = troubleSince || Date.now();
      else troubleSince = 0;
      setSt({ data: status, error: null, loaded: true });
    };
    const offer = (status) => {
      pending = status;
      const wait = holdMs(shown, troubleSince, status, Date.now());
      if (wait <= 0) { clearTimeout(timer); timer = 0; pending = null; apply(status); return; }
      if (!timer) timer = setTimeout(() => { timer = 0; const p = pending; pending = null; if (p && !stop) apply(p); }, wait);
    };
    const fail = (e) => setSt((s) => ({ data: s.data, error: e, loaded: s.loaded || !(e instanceof api.ConnError) }));
    const poll = async () => {
      while (!stop) {
        try { offer(await api.cluster(name, { signal: ctl.signal })); } catch (e) { if (stop || e.name === 'AbortError') return; fail(e); }
        await sleep(1000);
      }
    };
    (async () => {
      let backoff = 250;
      while (!stop) {
        try {
          await api.streamCluster(name, (s) => { backoff = 250; offer(s); }, ctl.signal);
        } catch (e) {
          if (stop || e.name === 'AbortError') return;
          if (e instanceof api.APIError) {
            if (e.status === 401) {
              if (/wrong/i.test(e.message)) api.setToken('');
              if (await api.askToken('Reading this server needs the API token.')) continue;
              fail(new api.APIError(401, 'reading needs the API token; reload the page to enter it', 'EAUTH'));
              return;
            }
            if (e.status === 404 && e.code === 'ENOTFOUND') { fail(e); return; }
            // A serve without the stream, or a proxy that does not pass it.
            await poll();
            return;
          }
          fail(e);
        }
        if (stop) return;
        await sleep(backoff);
        backoff = Math.min(backoff * 2, 2000);
      }
    })();
    return () => { stop = true; ctl.abort(); clearTimeout(timer); };
  }, [name]);
  return st;
}

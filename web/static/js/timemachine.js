// The time machine's logic (issue 27): the moment in the address (?at=,
// ?compare=), stepping through time, the markers on the time bar, a past
// cluster (GET /api/clusters/NAME/at) in the shape the tree draws, and what
// changed between two moments. Pure: no DOM, no fetch.
import { key as fmtKey } from './format.js';

export const SECOND = 1000;
export const MINUTE = 60 * SECOND;

const RFC3339 = /^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}:\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})$/;

/**
 * parseTime reads an RFC 3339 time (any offset, any fraction of a second)
 * into milliseconds since the epoch; null when it is not one. Fractions
 * finer than a millisecond round down, or up with ceil (a change at
 * 12.000000500 is only seen by a moment at 12.001).
 */
export function parseTime(s, ceil = false) {
  if (typeof s !== 'string') return null;
  const m = RFC3339.exec(s.trim());
  if (!m) return null;
  const frac = (m[3] || '').padEnd(3, '0');
  const ms = Date.parse(`${m[1]}T${m[2]}.${frac.slice(0, 3)}${m[4].toUpperCase() === 'Z' ? 'Z' : m[4]}`);
  if (!Number.isFinite(ms)) return null;
  const finer = ceil && /[1-9]/.test(frac.slice(3));
  return ms + (finer ? 1 : 0);
}

/** changeMs is the first millisecond at which a time (RFC 3339, e.g. a change's) has happened. */
export const changeMs = (s) => parseTime(s, true);

/** zeroTime: Go's zero time, missing or invalid. */
export function zeroTime(s) {
  const ms = parseTime(s);
  return ms == null || ms <= -62135596800000;
}

/** formatAt formats ms as the address carries a moment: RFC 3339 UTC with milliseconds. */
export function formatAt(ms) {
  return new Date(Math.floor(ms)).toISOString();
}

/**
 * readMoment reads ?at= and ?compare= from a query string:
 * {at, compare} in ms, null when absent; bad lists the parameters whose
 * value is not an RFC 3339 time (they are ignored). A compare without an
 * at is ignored.
 */
export function readMoment(search) {
  const q = new URLSearchParams(search || '');
  const bad = [];
  const one = (name) => {
    if (!q.has(name)) return null;
    const ms = parseTime(q.get(name));
    if (ms == null) bad.push(name);
    return ms;
  };
  const at = one('at');
  const compare = one('compare');
  return { at, compare: at == null ? null : compare, bad };
}

/**
 * withParams returns search with the parameters of set replaced (a null
 * or undefined value removes one), the others kept in their order. Times
 * keep their colons, so that a link reads as it is.
 */
export function withParams(search, set) {
  const q = new URLSearchParams(search || '');
  for (const [k, v] of Object.entries(set)) {
    if (v == null || v === '') q.delete(k);
    else q.set(k, String(v));
  }
  const s = q.toString().replace(/%3A/gi, ':');
  return s ? `?${s}` : '';
}

/** momentQuery is withParams for a moment ({at, compare} in ms; null: live, no compare). */
export function momentQuery(search, { at, compare }) {
  return withParams(search, { at: at == null ? null : formatAt(at), compare: at == null || compare == null ? null : formatAt(compare) });
}

export function clamp(t, lo, hi) {
  if (hi != null && t > hi) t = hi;
  if (lo != null && t < lo) t = lo;
  return t;
}

/** mergeTimes merges lists of times (ms) into one sorted list without repeats. */
export function mergeTimes(...lists) {
  const all = [];
  for (const l of lists) for (const t of l || []) if (Number.isFinite(t)) all.push(t);
  all.sort((a, b) => a - b);
  return all.filter((t, i) => i === 0 || t !== all[i - 1]);
}

/** prevTime is the newest of sorted times before t (null: none). */
export function prevTime(times, t) {
  let lo = 0, hi = times.length; // first index with times[i] >= t
  while (lo < hi) { const m = (lo + hi) >> 1; if (times[m] < t) lo = m + 1; else hi = m; }
  return lo > 0 ? times[lo - 1] : null;
}

/** nextTime is the oldest of sorted times after t (null: none). */
export function nextTime(times, t) {
  let lo = 0, hi = times.length; // first index with times[i] > t
  while (lo < hi) { const m = (lo + hi) >> 1; if (times[m] <= t) lo = m + 1; else hi = m; }
  return lo < times.length ? times[lo] : null;
}

/** STEPS are the ways to move through time: the time bar's buttons and keys. */
export const STEPS = ['prev', 'min-', 'sec-', 'sec+', 'min+', 'next'];

/**
 * step moves t (ms; null: now) by how — sec-, sec+ (±1 s), min-, min+
 * (±1 min), prev, next (the change before or after t in the sorted times;
 * without one, the history's start or now) — clamped to [start, now].
 */
export function step(t, how, { start, now, times = [] }) {
  const from = t == null ? now : t;
  let to;
  switch (how) {
    case 'sec-': to = from - SECOND; break;
    case 'sec+': to = from + SECOND; break;
    case 'min-': to = from - MINUTE; break;
    case 'min+': to = from + MINUTE; break;
    case 'prev': { const p = prevTime(times, from); to = p == null ? start ?? from : p; break; }
    case 'next': { const n = nextTime(times, from); to = n == null ? now : n; break; }
    default: throw new Error(`unknown step ${how}`);
  }
  return clamp(to, start, now);
}

/** fraction is where t lies on [start, end], 0..1. */
export function fraction(t, start, end) {
  if (!(end > start)) return 1;
  return clamp((t - start) / (end - start), 0, 1);
}

/** timeAt is the moment (whole ms) at fraction f of [start, end]. */
export function timeAt(f, start, end) {
  return Math.round(start + clamp(f, 0, 1) * (end - start));
}

// ---- markers ----

/** Marker kinds, as data-kind on the time bar. */
export const MARKER_KINDS = ['failover', 'switchover', 'relocation', 'rejoin', 'primary', 'thread-stop', 'thread-start', 'alert'];

const RECOVERY_MARK = { 'failover-auto': 'failover', 'failover-manual': 'failover', switchover: 'switchover', relocate: 'relocation', rejoin: 'rejoin' };

const sources = (inst) => (inst && inst.channels ? inst.channels.map((c) => fmtKey(c.source)).filter(Boolean).sort() : []);
const ioOn = (c) => c.io_running === 'Yes';

/**
 * recoveryMoment is the moment a recovery is shown at: when its trouble
 * was detected (the dead primary on the tree), else when it started.
 */
export function recoveryMoment(r) {
  return !zeroTime(r.detected_at) ? changeMs(r.detected_at) : changeMs(r.started);
}

/**
 * shownMoment is where a recovery's marker goes: its recoveryMoment, or,
 * when the history recorded the trouble (a problem on the old primary)
 * within 5 s after it, that record's moment: serve stamps its detection a
 * few milliseconds before it records the observation that raised it, and
 * the marker must show the dead primary.
 */
export function shownMoment(r, troubles) {
  const t = recoveryMoment(r);
  if (t == null || zeroTime(r.detected_at)) return t;
  const old = fmtKey(r.old_primary);
  let best = null;
  for (const x of troubles) {
    if (!x.keys.has(old) || Math.abs(x.t - t) > 5 * SECOND) continue;
    if (best == null || Math.abs(x.t - t) < Math.abs(best - t)) best = x.t;
  }
  return best != null && best > t ? best : t;
}

/**
 * markers builds the time bar's markers, oldest first: {t (ms), kind,
 * label, id} for the recoveries (failover, switchover, relocation,
 * rejoin; at shownMoment), the topology changes (a source changed: relocation; a
 * replication thread stopped or started; a primary changed without a
 * recovery), and alerts fired, within [start, now] when given. A change
 * that a recovery made (during it, up to 5 s after its end) is the
 * recovery's marker, not one of its own.
 */
export function markers({ changes = [], recoveries = [], alerts = [], start = null, now = null } = {}) {
  const out = [];
  const windows = [];
  // The cluster's problems as recorded: a failover is shown where its
  // trouble is on record.
  const troubles = changes.filter((c) => c.kind === 'cluster' && (c.problems || []).length).map((c) => ({ t: changeMs(c.time), keys: new Set(c.problems.map((p) => fmtKey(p.instance))) }));
  for (const r of recoveries) {
    const kind = RECOVERY_MARK[r.kind];
    if (!kind) continue;
    const t = shownMoment(r, troubles);
    if (t == null) continue;
    const end = zeroTime(r.ended) ? Infinity : changeMs(r.ended) + 5 * SECOND;
    windows.push([t, end]);
    const who = r.kind === 'relocate' || r.kind === 'rejoin' ? `${fmtKey(r.old_primary)} below ${fmtKey(r.new_primary) || '?'}` : `${fmtKey(r.old_primary) || '?'} → ${fmtKey(r.new_primary) || '?'}`;
    out.push({ t, kind, id: `r${r.id}`, label: `${r.kind} #${r.id}: ${who}${zeroTime(r.ended) ? ' (running)' : r.success ? '' : ' (failed)'}` });
  }
  const byRecovery = (t) => windows.some(([a, b]) => t >= a && t <= b);
  const last = new Map(); // instance → its state before the change
  let primary = null;
  for (const c of changes) {
    const t = changeMs(c.time);
    if (t == null) continue;
    if (c.kind === 'cluster') {
      const p = fmtKey(c.primary);
      if (primary !== null && p !== primary && !byRecovery(t)) out.push({ t, kind: 'primary', id: `c${c.id}`, label: c.summary || `primary ${primary || '—'} → ${p || '—'}` });
      primary = p;
      continue;
    }
    const k = fmtKey(c.instance);
    const before = last.get(k);
    last.set(k, c.kind === 'instance' ? c.state : null);
    if (c.kind !== 'instance' || !before || !c.state || byRecovery(t)) continue;
    const was = sources(before), now2 = sources(c.state);
    if (was.join(',') !== now2.join(',') && was.length && now2.length) {
      out.push({ t, kind: 'relocation', id: `c${c.id}`, label: c.summary || `${k} now replicates from ${now2.join(', ')}` });
      continue;
    }
    const chBefore = new Map((before.channels || []).map((ch) => [ch.name || '', ch]));
    let stopped = [], started = [];
    for (const ch of c.state.channels || []) {
      const b = chBefore.get(ch.name || '');
      if (!b) continue;
      if (ioOn(b) && !ioOn(ch)) stopped.push('IO'); else if (!ioOn(b) && ioOn(ch)) started.push('IO');
      if (b.sql_running && !ch.sql_running) stopped.push('SQL'); else if (!b.sql_running && ch.sql_running) started.push('SQL');
    }
    if (stopped.length) out.push({ t, kind: 'thread-stop', id: `c${c.id}`, label: c.summary || `${k}: ${stopped.join(' and ')} thread stopped` });
    else if (started.length) out.push({ t, kind: 'thread-start', id: `c${c.id}`, label: c.summary || `${k}: ${started.join(' and ')} thread started` });
  }
  for (const a of alerts) {
    if (zeroTime(a.fired_at)) continue;
    const t = changeMs(a.fired_at);
    const inst = a.labels && a.labels.instance;
    out.push({ t, kind: 'alert', id: `a${a.id}`, label: `alert ${a.rule} fired${inst ? ` on ${inst}` : ''}` });
  }
  return out
    .filter((m) => (start == null || m.t >= start) && (now == null || m.t <= now))
    .sort((a, b) => a.t - b.t || MARKER_KINDS.indexOf(a.kind) - MARKER_KINDS.indexOf(b.kind));
}

/**
 * lanes gives each marker (oldest first) a lane 0..max-1 so that markers
 * closer than gap (a fraction of [start, end]) do not cover each other:
 * the first lane whose last marker is far enough, else the one whose last
 * marker is furthest.
 */
export function lanes(ms, start, end, gap = 0.015, max = 3) {
  const last = new Array(max).fill(-Infinity);
  return ms.map((m) => {
    const f = fraction(m.t, start, end);
    let lane = last.findIndex((x) => f - x >= gap);
    if (lane < 0) lane = last.indexOf(Math.min(...last));
    last[lane] = f;
    return lane;
  });
}

// ---- a past cluster, drawn as the present is ----

const hasProblem = (problems, code) => (problems || []).some((p) => p.code === code);

/**
 * pastStatus turns a ClusterAt into what the tree draws (ClusterStatus's
 * shape): the instances outside the cluster (not the primary, replicating
 * from nobody, while a primary is known) are detached; the state comes
 * from the problems then, and from the recoveries (recovering while one
 * ran); last_recovery is the newest recovery begun by then; past is true
 * (the tree then says nothing of what the history does not keep).
 */
export function pastStatus(at, recoveries = []) {
  const t = parseTime(at.at);
  const primary = fmtKey(at.primary);
  const members = [], detached = [];
  for (const i of at.instances || []) {
    const k = fmtKey(i.key);
    if (primary && k !== primary && !(i.channels || []).length) detached.push(i);
    else members.push(i);
  }
  const begun = recoveries.filter((r) => { const m = recoveryMoment(r); return m != null && t != null && m <= t; });
  begun.sort((a, b) => recoveryMoment(b) - recoveryMoment(a));
  const last = begun[0] || null;
  const running = last && (zeroTime(last.ended) || changeMs(last.ended) > t);
  let state = 'ok';
  if (!at.recorded || (!primary && !(at.instances || []).length)) state = 'unknown';
  else if (running) state = 'recovering';
  else if (hasProblem(at.problems, 'DeadPrimary')) state = 'dead';
  else if (hasProblem(at.problems, 'UnreachablePrimary')) state = 'unreachable';
  return {
    name: at.name, state, primary: at.primary || { host: '', port: 0 },
    instances: members, detached, problems: at.problems || [],
    last_recovery: last, observed_at: at.at, fenced: [], promotion_rules: {}, past: true,
  };
}

/** lagOf turns ClusterAt.lag (object HOST:PORT → s) into the Map the tree reads. */
export function lagOf(at) {
  return new Map(Object.entries((at && at.lag) || {}).filter(([, v]) => Number.isFinite(v)));
}

// ---- what changed between two moments ----

const SEMI = (s) => (!s ? 'off' : s.primary_enabled && s.replica_enabled ? 'both' : s.primary_enabled ? 'primary' : s.replica_enabled ? 'replica' : 'off');
const threads = (i) => (i.channels || []).map((c) => `${c.name ? `${c.name}: ` : ''}IO ${c.io_running || 'No'} SQL ${c.sql_running ? 'Yes' : 'No'}`).join('; ') || '—';

/** roleAt is an instance's role in a moment's status (pastStatus): primary, intermediate, replica, detached, unknown. */
export function roleAt(inst, status) {
  const k = fmtKey(inst.key);
  if ((status.detached || []).some((d) => fmtKey(d.key) === k)) return 'detached';
  if (k === fmtKey(status.primary)) return 'primary';
  if (!(inst.channels || []).length) return 'unknown';
  const kids = (status.instances || []).some((o) => sources(o).includes(k));
  return kids ? 'intermediate' : 'replica';
}

/** facts are the properties of an instance the comparison looks at, as text. */
function facts(inst, status) {
  return {
    role: roleAt(inst, status),
    source: sources(inst).join(', ') || '—',
    threads: threads(inst),
    read_only: inst.read_only ? 'ON' : 'OFF',
    reachable: inst.reachable ? 'yes' : 'no',
    semi_sync: SEMI(inst.semi_sync),
  };
}

const edgesOf = (status) => {
  const out = new Map();
  for (const i of [...(status.instances || []), ...(status.detached || [])]) for (const s of sources(i)) out.set(`${s}>${fmtKey(i.key)}`, { from: s, to: fmtKey(i.key) });
  return out;
};
const problemId = (p) => `${p.code}|${fmtKey(p.instance)}|${p.channel || ''}`;

/**
 * diff compares two moments (pastStatus of each, a before b): the primary
 * when it changed ({from, to}); instances added, removed or changed, with
 * each changed fact {field, from, to} (role, source, threads, read_only,
 * reachable, semi_sync); edges (source → replica) that appeared or
 * disappeared; problems raised or cleared; and lines: the differences in
 * words. keys is every HOST:PORT that differs.
 */
export function diff(a, b) {
  const ia = new Map([...(a.instances || []), ...(a.detached || [])].map((i) => [fmtKey(i.key), i]));
  const ib = new Map([...(b.instances || []), ...(b.detached || [])].map((i) => [fmtKey(i.key), i]));
  const instances = [];
  for (const [k, i] of ib) {
    if (!ia.has(k)) { instances.push({ key: k, change: 'added', fields: [] }); continue; }
    const fa = facts(ia.get(k), a), fb = facts(i, b);
    const fields = Object.keys(fb).filter((f) => fa[f] !== fb[f]).map((f) => ({ field: f, from: fa[f], to: fb[f] }));
    if (fields.length) instances.push({ key: k, change: 'changed', fields });
  }
  for (const k of ia.keys()) if (!ib.has(k)) instances.push({ key: k, change: 'removed', fields: [] });
  instances.sort((x, y) => (x.key < y.key ? -1 : x.key > y.key ? 1 : 0));
  const ea = edgesOf(a), eb = edgesOf(b);
  const edgesAdded = [...eb].filter(([id]) => !ea.has(id)).map(([, e]) => e);
  const edgesRemoved = [...ea].filter(([id]) => !eb.has(id)).map(([, e]) => e);
  const pa = new Map((a.problems || []).map((p) => [problemId(p), p]));
  const pb = new Map((b.problems || []).map((p) => [problemId(p), p]));
  const raised = [...pb].filter(([id]) => !pa.has(id)).map(([, p]) => p);
  const cleared = [...pa].filter(([id]) => !pb.has(id)).map(([, p]) => p);
  const primary = fmtKey(a.primary) !== fmtKey(b.primary) ? { from: fmtKey(a.primary), to: fmtKey(b.primary) } : null;

  const lines = [];
  if (primary) lines.push(`primary ${primary.from || '—'} → ${primary.to || '—'}`);
  for (const d of instances) {
    if (d.change === 'added') lines.push(`${d.key} appeared`);
    else if (d.change === 'removed') lines.push(`${d.key} is gone`);
    else lines.push(`${d.key}: ${d.fields.map((f) => `${f.field.replace('_', ' ')} ${f.from} → ${f.to}`).join(', ')}`);
  }
  for (const e of edgesAdded) lines.push(`${e.to} replicates from ${e.from}`);
  for (const e of edgesRemoved) lines.push(`${e.to} no longer replicates from ${e.from}`);
  for (const p of raised) lines.push(`raised ${p.code} on ${fmtKey(p.instance)}${p.channel ? ` (${p.channel})` : ''}`);
  for (const p of cleared) lines.push(`cleared ${p.code} on ${fmtKey(p.instance)}${p.channel ? ` (${p.channel})` : ''}`);
  const keys = new Set(instances.map((d) => d.key));
  for (const e of [...edgesAdded, ...edgesRemoved]) keys.add(e.to);
  for (const p of [...raised, ...cleared]) if (fmtKey(p.instance)) keys.add(fmtKey(p.instance));
  if (primary) { if (primary.from) keys.add(primary.from); if (primary.to) keys.add(primary.to); }
  return { primary, instances, edgesAdded, edgesRemoved, raised, cleared, lines, keys: [...keys].sort() };
}

// ---- the charts around a moment ----

/**
 * chartWindow is the chart range that shows the moments ts (ms; one or a
 * list) for a window of span seconds ending now (ms): null when they are
 * inside the live window (far enough from its start that a cursor stays on
 * it a while), else a fixed window {from, to} (unix seconds) around them,
 * of the same span (wider when they are further apart), its centre rounded
 * to a tenth of the span so that small steps keep the same window.
 */
export function chartWindow(ts, span, now) {
  const list = (Array.isArray(ts) ? ts : [ts]).filter((t) => t != null && Number.isFinite(t));
  if (!list.length) return null;
  const lo = Math.min(...list) / 1000, hi = Math.max(...list) / 1000;
  if (lo >= now / 1000 - span * 0.95) return null;
  const width = Math.max(span, Math.ceil((hi - lo) * 1.25));
  const q = Math.max(1, Math.round(width / 10));
  const mid = Math.round((lo + hi) / 2 / q) * q;
  return { from: Math.floor(mid - width / 2), to: Math.ceil(mid + width / 2) };
}

// Formatting of durations, sizes, lag and times for the console. Pure.

/** key returns "host:port" for an InstanceKey ({host, port}); IPv6 in brackets. */
export function key(k) {
  if (!k || (!k.host && !k.port)) return '';
  const h = k.host.includes(':') && !k.host.startsWith('[') ? `[${k.host}]` : k.host;
  return `${h}:${k.port}`;
}

/** isZeroTime: Go's zero time, missing or invalid. */
export function isZeroTime(t) {
  if (!t) return true;
  const ms = Date.parse(t);
  return !Number.isFinite(ms) || ms <= -62135596800000;
}

/** duration formats seconds compactly: 0.4s → "400ms", 75 → "1m15s", 90061 → "1d1h". */
export function duration(sec) {
  if (sec == null || !Number.isFinite(sec)) return '—';
  const neg = sec < 0;
  let s = Math.abs(sec);
  let out;
  if (s === 0) out = '0s';
  else if (s < 1) out = `${Math.round(s * 1000)}ms`;
  else if (s < 10) out = `${trim(s.toFixed(1))}s`;
  else if (s < 60) out = `${Math.round(s)}s`;
  else {
    s = Math.round(s);
    const d = Math.floor(s / 86400), h = Math.floor((s % 86400) / 3600);
    const m = Math.floor((s % 3600) / 60), r = s % 60;
    if (d > 0) out = h ? `${d}d${h}h` : `${d}d`;
    else if (h > 0) out = m ? `${h}h${m}m` : `${h}h`;
    else out = r ? `${m}m${r}s` : `${m}m`;
  }
  return neg ? `-${out}` : out;
}

/** durationNs formats a Go time.Duration in nanoseconds. */
export function durationNs(ns) {
  return ns == null ? '—' : duration(ns / 1e9);
}

function trim(s) {
  return s.replace(/\.0+$/, '').replace(/(\.\d*?)0+$/, '$1');
}

/** bytes formats a size with binary units: 1536 → "1.5 KiB". */
export function bytes(n) {
  if (n == null || !Number.isFinite(n)) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let i = 0, v = Math.abs(n);
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  const s = i === 0 ? String(Math.round(v)) : v >= 100 ? v.toFixed(0) : v >= 10 ? trim(v.toFixed(1)) : trim(v.toFixed(2));
  return `${n < 0 ? '-' : ''}${s} ${units[i]}`;
}

/** lag formats replication lag in seconds; null/undefined/NaN → "—" (unknown, not zero). */
export function lag(sec) {
  if (sec == null || !Number.isFinite(sec)) return '—';
  if (sec < 0) sec = 0;
  if (sec < 1) return `${Math.round(sec * 1000)}ms`;
  return duration(sec);
}

/** lagLevel grades lag for styling: "ok" < 1 s, "warn" < 30 s, "crit" otherwise, "unknown" without a value. */
export function lagLevel(sec) {
  if (sec == null || !Number.isFinite(sec)) return 'unknown';
  if (sec < 1) return 'ok';
  if (sec < 30) return 'warn';
  return 'crit';
}

/** number formats a rate or count for axes and legends: 1234 → "1.23k". */
export function number(v) {
  if (v == null || !Number.isFinite(v)) return '—';
  const a = Math.abs(v);
  if (a >= 1e9) return trim((v / 1e9).toFixed(2)) + 'G';
  if (a >= 1e6) return trim((v / 1e6).toFixed(2)) + 'M';
  if (a >= 1e4) return trim((v / 1e3).toFixed(1)) + 'k';
  if (a >= 1e3) return trim((v / 1e3).toFixed(2)) + 'k';
  if (a >= 100 || a === 0) return String(Math.round(v));
  if (a >= 1) return trim(v.toFixed(2));
  return trim(v.toPrecision(2));
}

/** percent formats 0..100. */
export function percent(v) {
  return v == null || !Number.isFinite(v) ? '—' : `${v < 10 ? trim(v.toFixed(1)) : Math.round(v)}%`;
}

const pad = (n, w = 2) => String(n).padStart(w, '0');

/** time formats an RFC 3339 time (or ms) as local "YYYY-MM-DD HH:MM:SS"; zero → "—". */
export function time(t) {
  if (typeof t !== 'number' && isZeroTime(t)) return '—';
  const d = new Date(typeof t === 'number' ? t : Date.parse(t));
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** timeMs formats a time with milliseconds, for audit steps. */
export function timeMs(t) {
  if (isZeroTime(t)) return '—';
  const d = new Date(Date.parse(t));
  return `${time(d.getTime())}.${pad(d.getMilliseconds(), 3)}`;
}

/** ago formats how long before now a time was: "5s ago", "3h20m ago"; future → "in 5m". */
export function ago(t, now = Date.now()) {
  if (typeof t !== 'number' && isZeroTime(t)) return '—';
  const ms = typeof t === 'number' ? t : Date.parse(t);
  const s = (now - ms) / 1000;
  if (Math.abs(s) < 1) return 'now';
  return s >= 0 ? `${duration(Math.floor(s))} ago` : `in ${duration(Math.ceil(-s))}`;
}

/** between returns the seconds from a to b (RFC 3339 strings), or null if either is zero. */
export function between(a, b) {
  if (isZeroTime(a) || isZeroTime(b)) return null;
  return (Date.parse(b) - Date.parse(a)) / 1000;
}

/** onOff formats a boolean as ON/OFF. */
export const onOff = (b) => (b ? 'ON' : 'OFF');

/** catchUp formats a replica's catch-up state (a ClusterStatus replica_apply entry) shortly, for a topology box: "" when caught up, not measured yet, or unknown to serve. */
export function catchUp(a) {
  if (!a) return '';
  switch (a.state) {
    case 'catching_up': return `catch-up ${duration(Math.round(a.catchup_seconds))}`;
    case 'falling_behind': return `behind +${trimRate(a.falling_behind_by)} tx/s`;
    case 'stopped': return 'SQL stopped';
    default: return '';
  }
}

/** catchUpDetail is the catch-up with the numbers behind it, for the instance page. */
export function catchUpDetail(a) {
  if (!a) return '';
  const backlog = `backlog ${a.backlog_transactions} tx (${bytes(a.backlog_bytes)} of relay log)`;
  const rates = `${a.rate_seconds > 0 ? `applies ${trimRate(a.apply_rate)} tx/s (over ${duration(Math.round(a.rate_seconds))})` : 'apply rate not measured yet'}, primary commits ${trimRate(a.commit_rate)} tx/s`;
  let verdict;
  switch (a.state) {
    case 'caught_up': verdict = 'caught up'; break;
    case 'catching_up': verdict = `catches up in ${duration(Math.round(a.catchup_seconds))}`; break;
    case 'falling_behind': verdict = `falling behind by ${trimRate(a.falling_behind_by)} tx/s`; break;
    case 'stopped': verdict = `SQL thread stopped: falling behind by ${trimRate(a.falling_behind_by)} tx/s`; break;
    default: verdict = 'catch-up not predicted yet';
  }
  const extra = [];
  if (a.workers_total > 0) extra.push(`${a.workers_busy}/${a.workers_total} workers busy`);
  if (a.retry_rate > 0) extra.push(`${trimRate(a.retry_rate)} retries/s`);
  if (a.parallel_mode) extra.push(`mode ${a.parallel_mode}`);
  return `${verdict} — ${backlog}; ${rates}${extra.length ? '; ' + extra.join(', ') : ''}`;
}

/** groupCommit formats a primary's group commit figures (ClusterStatus group_commit). */
export function groupCommit(gc) {
  if (!gc) return '';
  const per = gc.group_rate > 0 ? `${gc.commits_per_group.toFixed(2)} commits per group` : 'no group commits';
  const wait = gc.binlog_commit_wait_count >= 0 ? `; binlog_commit_wait_count ${gc.binlog_commit_wait_count}, _usec ${gc.binlog_commit_wait_usec}` : '';
  return `${per} (${trimRate(gc.commit_rate)} commits/s in ${trimRate(gc.group_rate)} groups/s); closed by count ${trimRate(gc.trigger_count_rate)}/s, timeout ${trimRate(gc.trigger_timeout_rate)}/s, lock wait ${trimRate(gc.trigger_lock_wait_rate)}/s${wait}`;
}

function trimRate(v) {
  if (v == null || !Number.isFinite(v)) return '—';
  return v >= 100 ? String(Math.round(v)) : trim(v.toFixed(1));
}

import { test, eq } from './t.js';
import * as f from '../static/js/format.js';

test('format: key', () => {
  eq(f.key({ host: '127.0.0.1', port: 3306 }), '127.0.0.1:3306');
  eq(f.key({ host: '::1', port: 3306 }), '[::1]:3306');
  eq(f.key(null), '');
});
test('format: duration', () => {
  eq(f.duration(0), '0s');
  eq(f.duration(0.25), '250ms');
  eq(f.duration(2.5), '2.5s');
  eq(f.duration(75), '1m15s');
  eq(f.duration(3600), '1h');
  eq(f.duration(3720), '1h2m');
  eq(f.duration(90061), '1d1h');
  eq(f.duration(null), '—');
  eq(f.durationNs(4e9), '4s');
});
test('format: bytes', () => {
  eq(f.bytes(0), '0 B');
  eq(f.bytes(1536), '1.5 KiB');
  eq(f.bytes(10 * 1024 * 1024), '10 MiB');
  eq(f.bytes(undefined), '—');
});
test('format: lag (unknown is not zero)', () => {
  eq(f.lag(null), '—');
  eq(f.lag(NaN), '—');
  eq(f.lag(0.015), '15ms');
  eq(f.lag(-1), '0ms');
  eq(f.lag(125), '2m5s');
  eq(f.lagLevel(undefined), 'unknown');
  eq(f.lagLevel(0.2), 'ok');
  eq(f.lagLevel(5), 'warn');
  eq(f.lagLevel(60), 'crit');
});
test('format: number and percent', () => {
  eq(f.number(0), '0');
  eq(f.number(1234), '1.23k');
  eq(f.number(12345), '12.3k');
  eq(f.number(2.5e6), '2.5M');
  eq(f.number(0.0123), '0.012');
  eq(f.percent(7.25), '7.3%');
  eq(f.percent(55.4), '55%');
});
test('format: zero times and ago', () => {
  eq(f.isZeroTime('0001-01-01T00:00:00Z'), true);
  eq(f.isZeroTime(undefined), true);
  eq(f.time('0001-01-01T00:00:00Z'), '—');
  const now = Date.parse('2026-01-02T03:04:05Z');
  eq(f.ago('2026-01-02T03:03:05Z', now), '1m ago');
  eq(f.ago('2026-01-02T03:09:05Z', now), 'in 5m');
  eq(f.between('2026-01-02T03:03:05Z', '2026-01-02T03:03:07.5Z'), 2.5);
  eq(f.between('0001-01-01T00:00:00Z', '2026-01-02T03:03:07.5Z'), null);
});
test('format: time is local YYYY-MM-DD HH:MM:SS', () => {
  eq(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/.test(f.time('2026-01-02T03:04:05Z')), true);
  eq(/\.\d{3}$/.test(f.timeMs('2026-01-02T03:04:05.123Z')), true);
});
test('format: catch-up', () => {
  eq(f.catchUp(null), '');
  eq(f.catchUp({ state: 'caught_up' }), '');
  eq(f.catchUp({ state: 'catching_up', catchup_seconds: 74.6 }), 'catch-up 1m15s');
  eq(f.catchUp({ state: 'falling_behind', falling_behind_by: 12.34 }), 'behind +12.3 tx/s');
  eq(f.catchUp({ state: 'stopped', falling_behind_by: 40 }), 'SQL stopped');
  eq(f.catchUp({ state: 'unknown' }), '');
  eq(f.catchUpDetail({ state: 'catching_up', catchup_seconds: 16, backlog_transactions: 1442, backlog_bytes: 3032348,
    apply_rate: 169.8, rate_seconds: 2, commit_rate: 79.7, workers_busy: 2, workers_total: 4, parallel_mode: 'optimistic' }),
  'catches up in 16s — backlog 1442 tx (2.89 MiB of relay log); applies 170 tx/s (over 2s), primary commits 79.7 tx/s; 2/4 workers busy, mode optimistic');
  eq(f.catchUpDetail({ state: 'unknown', backlog_transactions: 10, backlog_bytes: 0, rate_seconds: 0, commit_rate: 5 }),
    'catch-up not predicted yet — backlog 10 tx (0 B of relay log); apply rate not measured yet, primary commits 5 tx/s');
  eq(f.groupCommit({ commit_rate: 46, group_rate: 45.4, commits_per_group: 1.0132, trigger_count_rate: 0, trigger_timeout_rate: 0, trigger_lock_wait_rate: 0, binlog_commit_wait_count: 0, binlog_commit_wait_usec: 100000 }),
    '1.01 commits per group (46 commits/s in 45.4 groups/s); closed by count 0/s, timeout 0/s, lock wait 0/s; binlog_commit_wait_count 0, _usec 100000');
});

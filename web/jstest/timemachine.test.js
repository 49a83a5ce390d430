import { test, eq, ok } from './t.js';
import * as tm from '../static/js/timemachine.js';

const T0 = Date.parse('2026-11-29T08:00:00.000Z');
const iso = (ms) => new Date(ms).toISOString();
const k = (port) => ({ host: '127.0.0.1', port });
const inst = (port, o = {}) => ({ key: k(port), reachable: true, read_only: true, semi_sync: {}, ...o });
const repl = (port, src, o = {}) => inst(port, { channels: [{ name: '', source: k(src), io_running: 'Yes', sql_running: true }], ...o });

test('timemachine: ?at= is RFC 3339 UTC with milliseconds, both ways', () => {
  eq(tm.formatAt(T0 + 7), '2026-11-29T08:00:00.007Z');
  eq(tm.parseTime('2026-11-29T08:00:00.007Z'), T0 + 7);
  eq(tm.parseTime(tm.formatAt(T0 + 123456)), T0 + 123456);
  eq(tm.parseTime('2026-11-29T08:00:00Z'), T0, 'no fraction');
  eq(tm.parseTime('2026-11-29T09:00:00.5+01:00'), T0 + 500, 'an offset');
  eq(tm.parseTime('2026-11-29T08:00:00.123456789Z'), T0 + 123, 'nanoseconds round down');
  eq(tm.changeMs('2026-11-29T08:00:00.123456789Z'), T0 + 124, 'a change is seen from the next millisecond');
  eq(tm.changeMs('2026-11-29T08:00:00.123000000Z'), T0 + 123);
  for (const bad of ['', 'now', '2026-11-29', '2026-11-29T08:00:00', '1764403200000', '2026-13-40T08:00:00Z', null, undefined, 5]) eq(tm.parseTime(bad), null, String(bad));
  ok(tm.zeroTime('0001-01-01T00:00:00Z') && tm.zeroTime(undefined) && !tm.zeroTime(iso(T0)), 'zero time');
});

test('timemachine: the address keeps the moment and the chart range', () => {
  eq(tm.readMoment(''), { at: null, compare: null, bad: [] });
  eq(tm.readMoment(`?range=5m&at=${iso(T0)}`), { at: T0, compare: null, bad: [] });
  eq(tm.readMoment(`?at=${iso(T0)}&compare=${iso(T0 + 60000)}`), { at: T0, compare: T0 + 60000, bad: [] });
  eq(tm.readMoment(`?compare=${iso(T0)}`), { at: null, compare: null, bad: [] }, 'compare needs an at');
  eq(tm.readMoment('?at=yesterday'), { at: null, compare: null, bad: ['at'] });
  eq(tm.momentQuery('?range=5m', { at: T0, compare: null }), '?range=5m&at=2026-11-29T08:00:00.000Z');
  eq(tm.momentQuery('?range=5m&at=x', { at: T0, compare: T0 + 1 }), '?range=5m&at=2026-11-29T08:00:00.000Z&compare=2026-11-29T08:00:00.001Z');
  eq(tm.momentQuery(`?at=${iso(T0)}&compare=${iso(T0)}&range=6h`, { at: null, compare: T0 }), '?range=6h', 'live drops both');
  eq(tm.withParams('?at=a&range=1h', { range: null, from: 1, to: 2 }), '?at=a&from=1&to=2');
  eq(tm.withParams('', { range: null }), '');
  const back = tm.readMoment(tm.momentQuery('', { at: T0 + 999, compare: T0 - 1 }));
  eq([back.at, back.compare], [T0 + 999, T0 - 1], 'round trip');
});

test('timemachine: steps of a second, a minute, clamped to the history', () => {
  const o = { start: T0, now: T0 + 10 * 60000, times: [] };
  eq(tm.step(T0 + 5000, 'sec-', o), T0 + 4000);
  eq(tm.step(T0 + 5000, 'sec+', o), T0 + 6000);
  eq(tm.step(T0 + 90000, 'min-', o), T0 + 30000);
  eq(tm.step(T0 + 90000, 'min+', o), T0 + 150000);
  eq(tm.step(T0 + 500, 'sec-', o), T0, 'not before the history');
  eq(tm.step(T0 + 30000, 'min-', o), T0);
  eq(tm.step(o.now - 10, 'sec+', o), o.now, 'not after now');
  eq(tm.step(null, 'sec-', o), o.now - 1000, 'from live: a second before now');
  eq(tm.step(null, 'min-', o), o.now - 60000);
  const unknown = { start: null, now: o.now, times: [] };
  eq(tm.step(T0 + 5000, 'sec+', unknown), T0 + 6000, 'history start not known yet: a step still moves by its size');
  eq(tm.step(T0 - 5000, 'sec-', unknown), T0 - 6000);
});

test('timemachine: steps to the previous and next change', () => {
  const times = tm.mergeTimes([T0 + 3000, T0 + 1000], [T0 + 3000, T0 + 7000, NaN]);
  eq(times, [T0 + 1000, T0 + 3000, T0 + 7000]);
  const o = { start: T0, now: T0 + 20000, times };
  eq(tm.step(T0 + 5000, 'prev', o), T0 + 3000);
  eq(tm.step(T0 + 3000, 'prev', o), T0 + 1000, 'from a change: the one before');
  eq(tm.step(T0 + 3000, 'next', o), T0 + 7000, 'from a change: the one after');
  eq(tm.step(T0 + 3001, 'prev', o), T0 + 3000);
  eq(tm.step(T0 + 1000, 'prev', o), T0, 'none before: the history start');
  eq(tm.step(T0 + 7000, 'next', o), T0 + 20000, 'none after: now');
  eq(tm.step(null, 'prev', o), T0 + 7000, 'from live: the newest change');
  eq(tm.prevTime([], 5), null);
  eq(tm.nextTime([1, 2], 2), null);
  let bad = false;
  try { tm.step(T0, 'hour+', o); } catch { bad = true; }
  ok(bad, 'an unknown step throws');
});

test('timemachine: markers close together take other lanes', () => {
  const at = (...fs) => fs.map((f) => ({ t: T0 + f * 1000 }));
  eq(tm.lanes(at(0, 100, 200), T0, T0 + 1000000), [0, 0, 0], 'far apart: one lane');
  eq(tm.lanes(at(0, 1, 2, 50, 51), T0, T0 + 1000000), [0, 1, 2, 0, 1]);
  eq(tm.lanes(at(0, 1, 2, 3), T0, T0 + 1000000), [0, 1, 2, 0], 'all lanes taken: the one free longest');
  eq(tm.lanes([], T0, T0 + 1), []);
});

test('timemachine: fraction and timeAt map the track', () => {
  eq(tm.fraction(T0 + 250, T0, T0 + 1000), 0.25);
  eq(tm.fraction(T0 - 5, T0, T0 + 1000), 0);
  eq(tm.fraction(T0 + 5000, T0, T0 + 1000), 1);
  eq(tm.fraction(T0, T0, T0), 1, 'an empty history: at its end');
  eq(tm.timeAt(0.5, T0, T0 + 1001), T0 + 501);
  eq(tm.timeAt(-1, T0, T0 + 1000), T0);
  eq(tm.timeAt(tm.fraction(T0 + 777, T0, T0 + 1000), T0, T0 + 1000), T0 + 777);
});

const rec = (id, kind, det, start, end, o = {}) => ({ id, kind, old_primary: k(1), new_primary: k(2), detected_at: det ? iso(det) : '0001-01-01T00:00:00Z', started: iso(start), ended: end ? iso(end) : '0001-01-01T00:00:00Z', success: true, ...o });
const ch = (id, t, kind, port, state, o = {}) => ({ id, time: iso(t), cluster: 'c', kind, instance: port ? k(port) : undefined, state, summary: '', ...o });

test('timemachine: markers of recoveries, relocations, threads and alerts', () => {
  const changes = [
    ch(1, T0, 'cluster', 0, null, { primary: k(1) }),
    ch(2, T0, 'instance', 2, repl(2, 1)),
    ch(3, T0, 'instance', 3, repl(3, 1)),
    // 3's SQL thread stops, then starts
    ch(4, T0 + 10000, 'instance', 3, repl(3, 1, { channels: [{ name: '', source: k(1), io_running: 'Yes', sql_running: false }] }), { summary: '127.0.0.1:3: SQL thread stopped' }),
    ch(5, T0 + 20000, 'instance', 3, repl(3, 1)),
    // 3 is relocated below 2 (by hand: no recovery)
    ch(6, T0 + 30000, 'instance', 3, repl(3, 2)),
    // the failover: 2 replicates from nobody, 3 moves, the primary changes
    ch(7, T0 + 41000, 'instance', 2, inst(2, { read_only: false })),
    ch(8, T0 + 41000, 'cluster', 0, null, { primary: k(2) }),
    ch(9, T0 + 41500, 'instance', 3, repl(3, 2, { channels: [{ name: '', source: k(2), io_running: 'Connecting', sql_running: true }] })),
    // a primary change long after any recovery
    ch(10, T0 + 90000, 'cluster', 0, null, { primary: k(3), summary: 'primary 127.0.0.1:2 → 127.0.0.1:3' }),
  ];
  const recoveries = [rec(7, 'failover-auto', T0 + 40000, T0 + 40500, T0 + 42000), rec(8, 'rejoin', 0, T0 + 60000, T0 + 61000)];
  const alerts = [
    { id: 1, rule: 'MySQLDown', labels: { instance: '127.0.0.1:1' }, fired_at: iso(T0 + 40200) },
    { id: 2, rule: 'Pending', labels: {}, fired_at: '0001-01-01T00:00:00Z' },
  ];
  const m = tm.markers({ changes, recoveries, alerts });
  eq(m.map((x) => [x.t - T0, x.kind]), [[10000, 'thread-stop'], [20000, 'thread-start'], [30000, 'relocation'], [40000, 'failover'], [40200, 'alert'], [60000, 'rejoin'], [90000, 'primary']]);
  eq(m[0].label, '127.0.0.1:3: SQL thread stopped', 'the change\'s summary');
  eq(m[1].label, '127.0.0.1:3: SQL thread started', 'made up without one');
  ok(m[3].label.includes('failover-auto #7') && m[3].label.includes('127.0.0.1:1 → 127.0.0.1:2'), m[3].label);
  eq(m[4].label, 'alert MySQLDown fired on 127.0.0.1:1');
  ok(m.every((x, i) => i === 0 || m[i - 1].t <= x.t), 'oldest first');
  const within = tm.markers({ changes, recoveries, alerts, start: T0 + 15000, now: T0 + 45000 });
  eq(within.map((x) => x.kind), ['thread-start', 'relocation', 'failover', 'alert'], 'only within [start, now]');
  // The failover's trouble recorded 4 ms after its detection: the marker
  // goes there (it shows the dead primary); recorded before: stays.
  const trouble = (dt) => [ch(20, T0 + 40000 + dt, 'cluster', 0, null, { primary: k(1), problems: [{ code: 'DeadPrimary', severity: 'critical', instance: k(1), message: 'dead' }] })];
  eq(tm.markers({ changes: trouble(4), recoveries }).find((x) => x.kind === 'failover').t, T0 + 40004);
  eq(tm.markers({ changes: trouble(-300), recoveries }).find((x) => x.kind === 'failover').t, T0 + 40000);
  eq(tm.markers({ changes: trouble(9000), recoveries }).find((x) => x.kind === 'failover').t, T0 + 40000, 'too far: not this one');
  const running = tm.markers({ recoveries: [rec(9, 'switchover', 0, T0, 0)] });
  eq([running[0].kind, running[0].t], ['switchover', T0], 'a recovery without detection: at its start');
  ok(running[0].label.endsWith('(running)'), running[0].label);
});

const at = (t, o) => ({ name: 'c', at: iso(t), recorded: true, since: iso(T0), primary: k(1), instances: [inst(1, { read_only: false, semi_sync: { primary_enabled: true } }), repl(2, 1), repl(3, 1)], problems: [], alerts: [], lag: {}, ...o });

test('timemachine: a past moment is drawn as the present is', () => {
  const before = tm.pastStatus(at(T0 + 1000));
  eq(before.state, 'ok');
  eq(before.instances.length, 3);
  eq(before.detached, []);
  eq(before.last_recovery, null);
  eq(before.past, true, 'marked past: the tree leaves out what the history does not keep');
  const recs = [rec(7, 'failover-auto', T0 + 40000, T0 + 40500, T0 + 42000)];
  const dead = at(T0 + 40100, { instances: [inst(1, { reachable: false }), repl(2, 1), repl(3, 1)], problems: [{ code: 'DeadPrimary', severity: 'critical', instance: k(1), message: 'dead' }] });
  eq(tm.pastStatus(dead, []).state, 'dead');
  eq(tm.pastStatus(dead, recs).state, 'recovering', 'a recovery under way');
  eq(tm.pastStatus(dead, recs).last_recovery.id, 7);
  const after = tm.pastStatus(at(T0 + 50000, { primary: k(2), instances: [inst(1, { reachable: false }), inst(2, { read_only: false }), repl(3, 2)] }), recs);
  eq(after.state, 'ok');
  eq(after.detached.map((i) => i.key.port), [1], 'the old primary is apart');
  eq(after.instances.map((i) => i.key.port), [2, 3]);
  eq(tm.roleAt(after.detached[0], after), 'detached');
  eq(tm.roleAt(after.instances[0], after), 'primary');
  eq(tm.roleAt(after.instances[1], after), 'replica');
  eq(tm.pastStatus({ name: 'c', at: iso(T0), recorded: false, instances: [], problems: [] }).state, 'unknown', 'before the history');
  eq([...tm.lagOf({ lag: { '127.0.0.1:2': 0.5, x: null } })], [['127.0.0.1:2', 0.5]]);
  eq(tm.lagOf(null).size, 0);
});

test('timemachine: compare names what changed between two moments', () => {
  const a = tm.pastStatus(at(T0 + 1000, { problems: [{ code: 'ReplicaLagging', severity: 'warning', instance: k(3), message: 'lag' }] }));
  const b = tm.pastStatus(at(T0 + 50000, {
    primary: k(2),
    instances: [inst(1, { reachable: false }), inst(2, { read_only: false, semi_sync: { primary_enabled: true } }), repl(3, 2), repl(4, 2)],
    problems: [{ code: 'Unreachable', severity: 'warning', instance: k(1), message: 'down' }],
  }));
  const d = tm.diff(a, b);
  eq(d.primary, { from: '127.0.0.1:1', to: '127.0.0.1:2' });
  const by = Object.fromEntries(d.instances.map((x) => [x.key, x]));
  eq(by['127.0.0.1:4'].change, 'added');
  eq(by['127.0.0.1:1'].fields.map((f) => f.field), ['role', 'read_only', 'reachable', 'semi_sync']);
  eq(by['127.0.0.1:1'].fields[0], { field: 'role', from: 'primary', to: 'detached' });
  eq(by['127.0.0.1:2'].fields.map((f) => [f.field, f.from, f.to]), [['role', 'replica', 'primary'], ['source', '127.0.0.1:1', '—'], ['threads', 'IO Yes SQL Yes', '—'], ['read_only', 'ON', 'OFF'], ['semi_sync', 'off', 'primary']]);
  eq(by['127.0.0.1:3'].fields.map((f) => f.field), ['source']);
  eq(d.edgesAdded, [{ from: '127.0.0.1:2', to: '127.0.0.1:3' }, { from: '127.0.0.1:2', to: '127.0.0.1:4' }]);
  eq(d.edgesRemoved, [{ from: '127.0.0.1:1', to: '127.0.0.1:2' }, { from: '127.0.0.1:1', to: '127.0.0.1:3' }]);
  eq(d.raised.map((p) => p.code), ['Unreachable']);
  eq(d.cleared.map((p) => p.code), ['ReplicaLagging']);
  eq(d.keys, ['127.0.0.1:1', '127.0.0.1:2', '127.0.0.1:3', '127.0.0.1:4']);
  ok(d.lines[0] === 'primary 127.0.0.1:1 → 127.0.0.1:2', d.lines[0]);
  ok(d.lines.includes('127.0.0.1:4 appeared'), d.lines.join(' | '));
  ok(d.lines.includes('127.0.0.1:3: source 127.0.0.1:1 → 127.0.0.1:2'), d.lines.join(' | '));
  ok(d.lines.includes('cleared ReplicaLagging on 127.0.0.1:3') && d.lines.includes('raised Unreachable on 127.0.0.1:1'), d.lines.join(' | '));
  const gone = tm.diff(b, a);
  eq(gone.instances.find((x) => x.key === '127.0.0.1:4').change, 'removed');
  const same = tm.diff(a, tm.pastStatus(at(T0 + 9000, { problems: a.problems })));
  eq([same.primary, same.instances, same.edgesAdded, same.edgesRemoved, same.raised, same.cleared, same.lines, same.keys], [null, [], [], [], [], [], [], []], 'an idle minute: nothing');
  const stopped = tm.diff(a, tm.pastStatus(at(T0 + 9000, { problems: a.problems, instances: [a.instances[0], repl(2, 1, { channels: [{ name: '', source: k(1), io_running: 'No', sql_running: true }] }), a.instances[2]] })));
  eq(stopped.instances, [{ key: '127.0.0.1:2', change: 'changed', fields: [{ field: 'threads', from: 'IO Yes SQL Yes', to: 'IO No SQL Yes' }] }]);
  eq(stopped.edgesAdded.length + stopped.edgesRemoved.length, 0, 'a stopped thread keeps its edge');
});

test('timemachine: the charts move to a moment outside their window', () => {
  const now = T0 + 86400000;
  eq(tm.chartWindow(null, 3600, now), null, 'live');
  eq(tm.chartWindow(now - 60000, 3600, now), null, 'inside the last hour');
  const w = tm.chartWindow(now - 7200000, 3600, now);
  eq(w.to - w.from, 3600);
  ok(w.from * 1000 <= now - 7200000 && now - 7200000 <= w.to * 1000, 'the moment is inside');
  eq(tm.chartWindow(now - 7200000 + 1000, 3600, now), w, 'a step keeps the window');
  ok(tm.chartWindow(now - 7200000 + 600000, 3600, now).from > w.from, 'ten minutes on: a later window');
  eq(tm.chartWindow([now - 7200000], 3600, now), w, 'a list of one');
  const both = tm.chartWindow([now - 7200000, now - 7200000 - 3 * 3600000], 3600, now);
  ok(both.from * 1000 <= now - 7200000 - 3 * 3600000 && now - 7200000 <= both.to * 1000, 'two moments far apart: both inside');
  eq(tm.chartWindow([now - 7200000, null], 3600, now), w, 'a missing moment is ignored');
});

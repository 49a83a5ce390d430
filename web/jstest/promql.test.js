import { test, eq, ok } from './t.js';
import * as p from '../static/js/promql.js';

test('promql: step never ships more points than pixels', () => {
  for (const w of [2, 3, 50, 333, 600, 601, 1000, 1919, 3840]) {
    for (const r of [1, 59, 300, 3600, 21600, 86400, 604800, 7 * 86400 + 13]) {
      const step = p.chooseStep(r, w);
      ok(Number.isInteger(step) && step >= 1, `step ${step}`);
      for (const offset of [0, 0.3, 7, 12345.6]) {
        const g = p.alignRange(1.7e9 + offset, 1.7e9 + offset + r, step);
        ok(g.points <= w, `range ${r} width ${w}: ${g.points} points > ${w} px`);
      }
    }
  }
});
test('promql: step is 1 s when pixels suffice, and the smallest that fits', () => {
  eq(p.chooseStep(300, 1000), 1);
  eq(p.chooseStep(86400, 601), 144);
  eq(p.chooseStep(3600, 600), 7);
  ok(p.alignRange(0, 86400, 144).points <= 601);
});
test('promql: 24 h at 1 s data for 3 instances stays within the width', () => {
  const step = p.chooseStep(86400, 800);
  const g = p.alignRange(1e9, 1e9 + 86400, step);
  ok(g.points * 3 <= 2400, 'points');
});
test('promql: windows', () => {
  eq(p.windowFor(1), '2s');
  eq(p.windowFor(2), '2s');
  eq(p.windowFor(144), '144s');
  eq(p.rate('x{a="b"}', 30), 'rate(x{a="b"}[30s])');
  eq(p.peak('g', 1), 'max_over_time(g[2s])');
  eq(p.peak('g', 1, 10), 'max_over_time(g[10s])');
  eq(p.peak('g', 144, 10), 'max_over_time(g[144s])');
  const ck = p.chartSpecs({ cluster: 'c' }, 1).find((c) => c.id === 'checkpoint');
  ok(ck.queries[0].expr.includes('[10s]'), `the InnoDB gauges (sampled every 5 s) keep a line at a 1 s step: ${ck.queries[0].expr}`);
});
test('promql: selectors escape label values', () => {
  eq(p.selector('m', { cluster: 'a"b\\c' }), 'm{cluster="a\\"b\\\\c"}');
  eq(p.selector('m', [['role', '!=', 'primary'], ['instance', '=~', 'h:1|h:2']]), 'm{role!="primary",instance=~"h:1|h:2"}');
  eq(p.selector('m', { cluster: '<script>alert(1)</script>' }), 'm{cluster="<script>alert(1)</script>"}');
});
test('promql: combine labels each sub-query', () => {
  eq(p.combine([{ id: 'a', expr: 'x' }]), 'x');
  eq(p.combine([{ id: 'a', expr: 'x' }, { id: 'b', expr: 'y' }]), 'label_replace(x, "dbp_q", "a", "", "") or label_replace(y, "dbp_q", "b", "", "")');
});
test('promql: chart specs cover the contract ids and scope', () => {
  const c = p.chartSpecs({ cluster: 'web' }, 5);
  eq(c.map((s) => s.id), ['qps', 'commands', 'threads', 'lag', 'checkpoint', 'dirty', 'rows', 'semisync']);
  ok(c.every((s) => s.queries.every((q) => q.expr.includes('cluster="web"'))));
  const i = p.chartSpecs({ cluster: 'web', instance: 'h:1' }, 5);
  ok(i.every((s) => s.queries.every((q) => q.expr.includes('instance="h:1"') && !q.expr.includes('cluster='))));
  ok(c.find((s) => s.id === 'lag').queries[0].expr.includes('dbpilot_heartbeat_lag_seconds'));
  eq(p.wsrepSpec({ cluster: 'web' }, 5).id, 'wsrep');
  const b = p.benchSpecs({ cluster: 'web' });
  eq(b.map((s) => s.id), ['bench-rate', 'bench-latency']);
  ok(b.every((s) => s.queries.every((q) => q.expr.includes('cluster="web"') && q.expr.includes('dbpilot_bench_'))));
  ok(b[1].queries[1].expr.includes('quantile="0.99"'));
  ok(p.benchSpecs({ cluster: 'web', instance: 'h:1' }).every((s) => s.queries.every((q) => q.expr.includes('instance="h:1"'))));
});
test('promql: toColumns aligns a matrix on the grid, gaps are null', () => {
  const g = p.alignRange(100, 110, 5); // 100, 105, 110
  const cols = p.toColumns([{ metric: { instance: 'b' }, values: [[100, '1'], [110, '3']] }, { metric: { instance: 'a' }, values: [[105, 'NaN']] }], g, (m) => m.instance);
  eq(cols.x, [100, 105, 110]);
  eq(cols.series, [{ name: 'a', values: [null, null, null] }, { name: 'b', values: [1, null, 3] }]);
});
test('promql: mergeColumns appends a tail and drops old points', () => {
  const old = { x: [100, 105, 110], series: [{ name: 'a', values: [1, 2, 3] }] };
  const tail = { x: [110, 115], series: [{ name: 'a', values: [4, 5] }, { name: 'b', values: [9, null] }] };
  const m = p.mergeColumns(old, tail, 105);
  eq(m.x, [105, 110, 115]);
  eq(m.series, [{ name: 'a', values: [2, 4, 5] }, { name: 'b', values: [null, 9, null] }]);
});
test('promql: refresh period', () => {
  eq(p.refreshEvery(300), 2000);
  eq(p.refreshEvery(300, 1), 2000);
  eq(p.refreshEvery(3600, 7), 7000);
  eq(p.refreshEvery(21600), 30000);
  eq(p.refreshEvery(604800, 1009), 1009000);
});
test('promql: the chart range in the address', () => {
  eq(p.rangeFromQuery(''), { preset: '1h' });
  eq(p.rangeFromQuery('?range=5m'), { preset: '5m' });
  eq(p.rangeFromQuery('?range=3y'), { preset: '1h' });
  eq(p.rangeFromQuery('?range=constructor'), { preset: '1h' });
  eq(p.rangeFromQuery('?from=1700000000&to=1700003600'), { preset: 'custom', from: 1700000000, to: 1700003600, back: '1h' });
  eq(p.rangeFromQuery('?from=1700003600&to=1700000000'), { preset: '1h' });
  eq(p.rangeFromQuery('?from=abc&to=1700000000'), { preset: '1h' });
  eq(p.rangeFromQuery('?from=1.5&to=3'), { preset: '1h' });
  for (const r of [{ preset: '1h' }, { preset: '24h' }, { preset: 'custom', from: 1700000000, to: 1700003600, back: '1h' }]) {
    eq(p.rangeFromQuery(p.rangeToQuery(r)), r);
  }
  eq(p.rangeToQuery({ preset: '1h' }), '');
  eq(p.rangeToQuery({ preset: '7d' }), '?range=7d');
});

// PromQL query building and step choice for the charts. Pure.
//
// Rule: never ship more points than pixels. step = max(1 s, ceil(range /
// (width - 1))) with start and end aligned to multiples of step, so a chart
// gets at most `width` points. Counters are drawn as rate(x[W]) with
// W = max(2 s, step) (two 1 s samples at least). Gauges are drawn as
// max_over_time(x[W]) with the same W: a spike shorter than the step survives
// downsampling (avg would flatten it, last-value would drop it); the 2 s floor
// keeps 1 s scrape jitter from leaving holes at step 1 s.

/** Range presets of select#range, in seconds. */
export const RANGES = { '5m': 300, '1h': 3600, '6h': 21600, '24h': 86400, '7d': 604800 };

/**
 * rangeFromQuery reads a chart range from a page address's query string, so
 * that a link names what it shows: ?range=5m|1h|6h|24h|7d, or
 * ?from=UNIX&to=UNIX (seconds) for a fixed window. Anything else: def.
 */
export function rangeFromQuery(search, def = '1h') {
  const q = new URLSearchParams(search || '');
  const from = Number(q.get('from')), to = Number(q.get('to'));
  if (q.has('from') && q.has('to') && Number.isInteger(from) && Number.isInteger(to) && to > from && from > 0) {
    return { preset: 'custom', from, to, back: def };
  }
  const r = q.get('range');
  return { preset: r && Object.hasOwn(RANGES, r) ? r : def };
}

/** rangeToQuery is rangeFromQuery's inverse ("" for the default range). */
export function rangeToQuery(range, def = '1h') {
  if (range.preset === 'custom') return `?from=${range.from}&to=${range.to}`;
  return range.preset === def ? '' : `?range=${range.preset}`;
}

/**
 * refreshEvery: live refresh period (ms) for a range drawn at step seconds:
 * 2 s up to 1 h, 30 s beyond, and never more often than a new point can
 * appear (1 h at a 7 s step refreshes every 7 s).
 */
export function refreshEvery(rangeSec, step = 1) {
  return Math.max(rangeSec <= 3600 ? 2000 : 30000, Math.ceil(step) * 1000);
}

/** chooseStep returns the step in whole seconds for a range drawn on width pixels. */
export function chooseStep(rangeSec, widthPx) {
  const w = Math.max(2, Math.floor(widthPx || 0));
  const r = Math.max(0, rangeSec);
  return Math.max(1, Math.ceil(r / (w - 1)));
}

/** alignRange aligns [start, end] (unix seconds) to the step grid; points is how many the query returns at most. */
export function alignRange(start, end, step) {
  const s = Math.ceil(start / step) * step;
  const e = Math.floor(end / step) * step;
  return { start: s, end: e, step, points: e >= s ? (e - s) / step + 1 : 0 };
}

/**
 * windowFor returns the range-vector window for a step: max(min, step), as a
 * PromQL duration; min (default 2 s) is at least the sampling interval of
 * the series, or steps shorter than it find no sample and the line breaks.
 */
export function windowFor(step, min = 2) {
  return `${Math.max(min, Math.ceil(step))}s`;
}

/** escapeValue escapes a label value for a double-quoted PromQL string. */
export function escapeValue(v) {
  return String(v).replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/**
 * selector builds name{...}. matchers is an object {label: value} (equality)
 * or an array of [label, op, value] with op one of = != =~ !~.
 */
export function selector(name, matchers = {}) {
  const list = Array.isArray(matchers) ? matchers : Object.entries(matchers).map(([k, v]) => [k, '=', v]);
  const parts = list.filter((m) => m[2] != null).map(([k, op, v]) => `${k}${op}"${escapeValue(v)}"`);
  return `${name}{${parts.join(',')}}`;
}

/** rate of a counter selector at a step. */
export const rate = (sel, step) => `rate(${sel}[${windowFor(step)}])`;

/** peak of a gauge selector at a step (max_over_time, see the header). */
export const peak = (sel, step, min = 2) => `max_over_time(${sel}[${windowFor(step, min)}])`;

// INNODB_WINDOW covers two runs of the innodb collector (every 5 s): its
// gauges draw a line even at a 1 s step.
const INNODB_WINDOW = 10;

/** QLABEL is the label combine() adds to tell the sub-queries apart. */
export const QLABEL = 'dbp_q';

/**
 * combine joins several expressions into one query (one HTTP request per
 * chart): each result carries QLABEL = its id.
 */
export function combine(queries) {
  if (queries.length === 1) return queries[0].expr;
  return queries.map((q) => `label_replace(${q.expr}, "${QLABEL}", "${escapeValue(q.id)}", "", "")`).join(' or ');
}

const COMMANDS = 'select|insert|insert_select|update|update_multi|delete|delete_multi|replace|begin|commit|rollback|set_option';

/**
 * chartSpecs lists the charts of a scope: {cluster} (one line per instance)
 * or {cluster, instance} (one instance, lines by command/operation). Each
 * spec: {id, title, unit, queries: [{id, expr}], name(metric) → legend}.
 * Queries are built for a step (windows depend on it).
 */
export function chartSpecs(scope, step) {
  const m = scope.instance ? { instance: scope.instance } : { cluster: scope.cluster };
  const one = !!scope.instance;
  const s = (name, extra = []) => selector(name, [...Object.entries(m).map(([k, v]) => [k, '=', v]), ...extra]);
  const byInst = one ? '' : ' by (instance)';
  const inst = (mt) => mt.instance || '';
  const specs = [
    {
      id: 'qps', title: 'Queries per second', unit: '/s',
      queries: [{ id: 'qps', expr: `sum${byInst || ' by (instance)'} (${rate(s('mysql_global_status_questions'), step)})` }],
      name: inst,
    },
    {
      id: 'commands', title: 'Commands by type', unit: '/s',
      queries: [{ id: 'cmd', expr: `sum by (command) (${rate(s('mysql_global_status_commands_total', [['command', '=~', COMMANDS]]), step)}) > 0` }],
      name: (mt) => mt.command || '',
    },
    {
      id: 'threads', title: 'Threads running / connected', unit: '',
      queries: [
        { id: 'running', expr: `max${byInst} (${peak(s('mysql_global_status_threads_running'), step)})` },
        { id: 'connected', expr: `max${byInst} (${peak(s('mysql_global_status_threads_connected'), step)})` },
      ],
      name: (mt) => (one ? mt[QLABEL] : `${mt[QLABEL]} ${inst(mt)}`),
    },
    {
      id: 'lag', title: 'Replication lag (heartbeat)', unit: 's',
      queries: [{ id: 'lag', expr: `max by (instance) (${peak(s('dbpilot_heartbeat_lag_seconds', one ? [] : [['role', '!=', 'primary']]), step)})` }],
      name: inst,
    },
    {
      id: 'checkpoint', title: 'InnoDB checkpoint age', unit: '%',
      queries: [{ id: 'ckpt', expr: `max by (instance) (${peak(s('dbpilot_innodb_checkpoint_age_percent'), step, INNODB_WINDOW)})` }],
      name: inst,
    },
    {
      id: 'dirty', title: 'Buffer pool dirty pages', unit: '%',
      queries: [{ id: 'dirty', expr: `max by (instance) (${peak(s('dbpilot_innodb_buffer_pool_dirty_percent'), step, INNODB_WINDOW)})` }],
      name: inst,
    },
    rowsSpec(s, step, one),
    {
      id: 'semisync', title: 'Semi-sync waits', unit: '/s',
      queries: [
        { id: 'tx waits', expr: `sum${byInst} (${rate(s('dbpilot_semisync_primary_tx_waits_total'), step)})` },
        { id: 'no-ack tx', expr: `sum${byInst} (${rate(s('dbpilot_semisync_primary_no_tx_total'), step)})` },
      ],
      name: (mt) => (one ? mt[QLABEL] : `${mt[QLABEL]} ${inst(mt)}`),
    },
  ];
  return specs;
}

// Rows per second: InnoDB row operations where the server reports them
// (MySQL; MariaDB 10.x before 11), else the handler counters (both).
// rowsSpec: an instance's rows/s by operation; a cluster's one line per
// instance (all operations), so that a 50-instance cluster draws 50 series
// and not 300.
function rowsSpec(s, step, one) {
  const by = one ? 'operation' : 'instance';
  const innodb = `sum by (${by}) (${rate(s('mysql_global_status_innodb_row_ops_total'), step)})`;
  const handlers = `sum by (${by}) (label_replace(${rate(s('mysql_global_status_handlers_total', [['handler', '=~', 'write|update|delete|read_rnd_next|read_next|read_key']]), step)}, "operation", "$1", "handler", "(.*)"))`;
  return {
    id: 'rows', title: one ? 'Rows per second' : 'Rows per second (all operations)', unit: '/s',
    queries: [{ id: 'rows', expr: `${innodb} or (${handlers} unless on() ${innodb})` }],
    name: (mt) => (one ? mt.operation : mt.instance),
  };
}

/** wsrepSpec is the Galera chart, added when the cluster has wsrep metrics. */
export function wsrepSpec(scope, step) {
  const m = scope.instance ? { instance: scope.instance } : { cluster: scope.cluster };
  const one = !!scope.instance;
  const byInst = one ? '' : ' by (instance)';
  return {
    id: 'wsrep', title: 'Galera: flow control paused / recv queue', unit: '',
    queries: [
      { id: 'fc paused', expr: `max${byInst} (${rate(selector('mysql_global_status_wsrep_flow_control_paused_ns', m), step)}) / 1e9` },
      { id: 'recv queue', expr: `max${byInst} (${peak(selector('mysql_global_status_wsrep_local_recv_queue', m), step)})` },
    ],
    name: (mt) => (one ? mt[QLABEL] : `${mt[QLABEL]} ${mt.instance || ''}`),
  };
}

/**
 * benchSpecs are the load charts of `dbpilot bench` runs that wrote to this
 * serve (dbpilot_bench_*), added when the scope has such series: the
 * achieved and target rate, and the p99 latency from intended start.
 */
export function benchSpecs(scope) {
  const m = scope.instance ? { instance: scope.instance } : { cluster: scope.cluster };
  return [
    {
      id: 'bench-rate', title: 'Bench: transactions/s (achieved, target)', unit: '',
      queries: [
        { id: 'achieved', expr: `sum (${selector('dbpilot_bench_rate', m)})` },
        { id: 'target', expr: `sum (${selector('dbpilot_bench_rate_target', m)}) > 0` },
      ],
      name: (mt) => mt[QLABEL],
    },
    {
      id: 'bench-latency', title: 'Bench: latency from intended start (p50, p99)', unit: 's',
      queries: [
        { id: 'p50', expr: `max (${selector('dbpilot_bench_latency_seconds', { ...m, quantile: '0.5' })})` },
        { id: 'p99', expr: `max (${selector('dbpilot_bench_latency_seconds', { ...m, quantile: '0.99' })})` },
      ],
      name: (mt) => mt[QLABEL],
    },
  ];
}

/**
 * toColumns turns a Prometheus matrix into uPlot's columns on the aligned
 * grid: x = [start, start+step, ..., end] and one array per series (null
 * where the series has no point). name(metric) labels each series; series
 * are sorted by name.
 */
export function toColumns(result, grid, name = (m) => JSON.stringify(m)) {
  const n = grid.points;
  const x = new Array(n);
  for (let i = 0; i < n; i++) x[i] = grid.start + i * grid.step;
  const series = [];
  for (const r of result || []) {
    const ys = new Array(n).fill(null);
    for (const [t, v] of r.values || []) {
      const i = Math.round((t - grid.start) / grid.step);
      if (i < 0 || i >= n) continue;
      const f = parseFloat(v);
      ys[i] = Number.isFinite(f) ? f : null;
    }
    series.push({ name: name(r.metric || {}) || '(value)', values: ys });
  }
  series.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { x, series };
}

/**
 * mergeColumns appends a fresh tail (columns on the same step grid) to old
 * ones, dropping points before keepFrom; series are matched by name.
 */
export function mergeColumns(old, tail, keepFrom) {
  const x = [];
  const idx = new Map();
  for (const t of old.x) if (t >= keepFrom && (tail.x.length === 0 || t < tail.x[0])) { idx.set(t, x.length); x.push(t); }
  const oldLen = x.length;
  for (const t of tail.x) { idx.set(t, x.length); x.push(t); }
  const names = [...new Set([...old.series.map((s) => s.name), ...tail.series.map((s) => s.name)])].sort();
  const series = names.map((nm) => {
    const ys = new Array(x.length).fill(null);
    const o = old.series.find((s) => s.name === nm);
    if (o) old.x.forEach((t, i) => { const j = idx.get(t); if (j !== undefined && j < oldLen) ys[j] = o.values[i]; });
    const n = tail.series.find((s) => s.name === nm);
    if (n) tail.x.forEach((t, i) => { ys[oldLen + i] = n.values[i]; });
    return { name: nm, values: ys };
  });
  return { x, series };
}

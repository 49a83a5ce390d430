// Charts (uPlot): range picker, drag-to-zoom with reset, shared cursor,
// never more points than pixels, live refresh only while the tab is visible.
import { html, useState, useEffect, useRef } from '../vendor/preact-htm/standalone.module.js';
import uPlot from '../vendor/uplot/uPlot.esm.min.js';
import * as api from './api.js';
import { RANGES, rangeFromQuery, rangeToQuery, chooseStep, alignRange, chartSpecs, wsrepSpec, benchSpecs, combine, toColumns, mergeColumns, refreshEvery } from './promql.js';
import { number, time as fmtTime } from './format.js';
import { withParams, chartWindow, formatAt } from './timemachine.js';

const PALETTE = ['#4e9af1', '#f28e2b', '#59a14f', '#e15759', '#b07aa1', '#edc948', '#76b7b2', '#ff9da7', '#9c755f', '#bab0ac', '#8cd17d', '#d37295'];
const HEIGHT = 170;

// yAxisSize fits the y axis to its longest label (uPlot's fixed default cuts
// "0.0005%"); uPlot calls it again until the size settles.
function yAxisSize(u, values, axisIdx, cycleNum) {
  const axis = u.axes[axisIdx];
  if (cycleNum > 1) return axis._size;
  const longest = (values || []).reduce((a, v) => (String(v).length > a.length ? String(v) : a), '');
  u.ctx.font = axis.font[0];
  return Math.max(40, Math.ceil(axis.ticks.size + axis.gap + u.ctx.measureText(longest).width / devicePixelRatio + 4));
}

const toLocalInput = (sec) => { const d = new Date(sec * 1000); const p = (n) => String(n).padStart(2, '0'); return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`; };

/**
 * ChartPanel: the range picker and every chart of a scope ({cluster} or
 * {cluster, instance}). cursors: moments (ms) to mark with a vertical line
 * (the time machine's); the charts' window moves to show them when they
 * fall outside it.
 */
export function ChartPanel({ scope, cursors = [] }) {
  // {preset} or {preset:'custom', from, to, back}; read from and written to
  // the address (?range= or ?from=&to=), so that a link shows the same window.
  const [range, setRange] = useState(() => rangeFromQuery(location.search));
  const [width, setWidth] = useState(0);
  const [wsrep, setWsrep] = useState(false);
  const [bench, setBench] = useState(false);
  const [custom, setCustom] = useState(null);
  const grid = useRef(null);
  const scopeKey = `${scope.cluster}|${scope.instance || ''}`;

  useEffect(() => {
    const el = grid.current;
    if (!el) return;
    const measure = () => {
      const first = el.querySelector('.chart-body') || el;
      const w = Math.floor(first.clientWidth);
      if (w > 0) setWidth((old) => (Math.abs(old - w) >= 8 ? w : old));
    };
    const ro = new ResizeObserver(measure);
    ro.observe(el);
    measure();
    return () => ro.disconnect();
  }, []);

  useEffect(() => {
    const q = rangeToQuery(range);
    // Only the range's own parameters: the moment (?at=) and the rest stay.
    const next = withParams(location.search, { range: null, from: null, to: null, ...Object.fromEntries(new URLSearchParams(q)) });
    if (next !== location.search) history.replaceState(history.state, '', location.pathname + next);
  }, [range.preset, range.from, range.to]);

  useEffect(() => {
    let live = true;
    const m = scope.instance ? `{instance="${scope.instance.replace(/["\\]/g, '\\$&')}"}` : `{cluster="${scope.cluster.replace(/["\\]/g, '\\$&')}"}`;
    api.seriesExist(`mysql_global_status_wsrep_cluster_size${m}`, Math.floor(Date.now() / 1000) - 3600).then((b) => live && setWsrep(b)).catch(() => {});
    api.seriesExist(`dbpilot_bench_rate${m}`, Math.floor(Date.now() / 1000) - 3600).then((b) => live && setBench(b)).catch(() => {});
    return () => { live = false; };
  }, [scopeKey]);

  const choose = (v) => {
    if (v === 'custom') {
      const now = Math.floor(Date.now() / 1000);
      const span = range.preset === 'custom' ? range.to - range.from : RANGES[range.preset];
      setCustom({ from: toLocalInput(now - span), to: toLocalInput(now) });
      return;
    }
    setCustom(null);
    setRange({ preset: v });
  };
  const applyCustom = (e) => {
    e.preventDefault();
    const from = Math.floor(Date.parse(custom.from) / 1000), to = Math.floor(Date.parse(custom.to) / 1000);
    if (!(to > from)) return;
    setRange({ preset: 'custom', from, to, back: range.preset === 'custom' ? range.back : range.preset });
  };
  const zoom = (from, to) => {
    if (!(to - from >= 2)) return;
    setRange((r) => ({ preset: 'custom', from: Math.floor(from), to: Math.ceil(to), back: r.preset === 'custom' ? r.back : r.preset }));
  };
  const reset = () => { setCustom(null); setRange({ preset: range.back || '1h' }); };

  // A moment outside the window: a window of the same span around it
  // (not kept in the address: Live brings the chosen range back).
  const span = range.preset === 'custom' ? range.to - range.from : RANGES[range.preset];
  const marks = cursors.filter((c) => c != null);
  let shown = range;
  if (marks.length) {
    const inside = range.preset === 'custom' && marks.every((c) => c / 1000 >= range.from && c / 1000 <= range.to);
    const w = inside ? null : chartWindow(marks, span, Date.now());
    if (w) shown = { preset: 'custom', from: w.from, to: w.to, back: range.preset === 'custom' ? range.back : range.preset };
  }
  const cursorKey = marks.join(',');
  const step = width ? chooseStep(shown.preset === 'custom' ? shown.to - shown.from : span, Math.max(60, width - 60)) : 0; // plot area ≈ width − y axis
  const specs = step ? [...chartSpecs(scope, step), ...(wsrep ? [wsrepSpec(scope, step)] : []), ...(bench ? benchSpecs(scope) : [])] : [];
  const selectValue = custom ? 'custom' : range.preset;

  return html`<div class="charts">
    <div class="range-bar">
      <label>Range <select id="range" value=${selectValue} onChange=${(e) => choose(e.target.value)}>
        ${['5m', '1h', '6h', '24h', '7d', 'custom'].map((r) => html`<option value=${r}>${r}</option>`)}
      </select></label>
      ${custom && html`<form class="custom-range" onSubmit=${applyCustom}>
        <input type="datetime-local" aria-label="from" value=${custom.from} onInput=${(e) => setCustom({ ...custom, from: e.target.value })} />
        <span>→</span>
        <input type="datetime-local" aria-label="to" value=${custom.to} onInput=${(e) => setCustom({ ...custom, to: e.target.value })} />
        <button type="submit">Apply</button></form>`}
      ${range.preset === 'custom' && html`<span class="muted">${fmtTime(range.from * 1000)} → ${fmtTime(range.to * 1000)}</span>
        <button type="button" class="reset-zoom" onClick=${reset}>Reset zoom</button>`}
      <span class="muted small">${step ? `step ${step}s · drag on a chart to zoom` : ''}</span>
    </div>
    <div class="chart-grid" ref=${grid}>
      ${specs.length === 0 && html`<div class="chart-body"></div>`}
      ${specs.map((s) => html`<${Chart} key=${`${scopeKey}|${s.id}`} spec=${s} range=${shown} step=${step} width=${width} onZoom=${zoom} cursors=${marks} cursorKey=${cursorKey} />`)}
    </div>
  </div>`;
}

/**
 * placeCursors puts a vertical line (div.tm-cursor in uPlot's overlay; A
 * dashed in compare mode) at each moment (ms) of cursors: moving one costs a
 * style change, not a redraw of the chart.
 */
function placeCursors(u, cursors) {
  const over = u.over;
  if (!over) return;
  const lines = Array.from(over.querySelectorAll('.tm-cursor'));
  while (lines.length < cursors.length) {
    const d = document.createElement('div');
    d.className = 'tm-cursor';
    over.appendChild(d);
    lines.push(d);
  }
  lines.forEach((d, i) => {
    const x = i < cursors.length ? u.valToPos(cursors[i] / 1000, 'x') : NaN;
    const shown = Number.isFinite(x) && x >= 0 && x <= over.clientWidth;
    d.style.display = shown ? 'block' : 'none';
    if (shown) d.style.left = `${x}px`;
    d.classList.toggle('pin', cursors.length > 1 && i === 0);
  });
}

function Chart({ spec, range, step, width, onZoom, cursors = [], cursorKey = '' }) {
  const box = useRef(null);
  const plot = useRef(null);
  const cursorRef = useRef(cursors);
  cursorRef.current = cursors;
  useEffect(() => { if (plot.current) placeCursors(plot.current, cursorRef.current); }, [cursorKey]);
  const cols = useRef(null);
  const [info, setInfo] = useState({ points: 0, error: '', empty: false });
  const zoomRef = useRef(onZoom);
  zoomRef.current = onZoom;
  const expr = combine(spec.queries);

  useEffect(() => {
    let stop = false, timer = 0;
    const ctl = new AbortController();
    cols.current = null;
    const live = range.preset !== 'custom';
    const span = live ? RANGES[range.preset] : range.to - range.from;
    const load = async () => {
      clearTimeout(timer);
      if (stop) return;
      if (live && document.visibilityState !== 'visible') return; // resumed by visibilitychange
      const now = Math.floor(Date.now() / 1000);
      const end = live ? now : range.to;
      const g = alignRange(end - span, end, step);
      try {
        let data;
        const old = cols.current;
        if (live && old && old.step === step && old.x.length) {
          // Tail only: re-read the last two points (their windows were incomplete) and append.
          const from = Math.max(g.start, old.x[old.x.length - 1] - 2 * step);
          const tg = alignRange(from, g.end, step);
          const res = await api.queryRange(expr, tg.start, tg.end, step, { signal: ctl.signal });
          data = mergeColumns(old, toColumns(res, tg, spec.name), g.start);
        } else {
          const res = await api.queryRange(expr, g.start, g.end, step, { signal: ctl.signal });
          data = toColumns(res, g, spec.name);
        }
        if (stop) return;
        data.step = step;
        cols.current = data;
        draw(data);
        setInfo({ points: data.x.length, error: '', empty: data.series.length === 0 });
      } catch (e) {
        if (stop || e.name === 'AbortError') return;
        if (e instanceof api.ConnError) {
          // serve is away (the header says "reconnecting"): keep what is
          // drawn and try again soon, whatever the range.
          timer = setTimeout(load, 1000);
          return;
        }
        setInfo((i) => ({ ...i, error: e.message }));
      }
      if (live && !stop) timer = setTimeout(load, refreshEvery(span, step));
    };
    const vis = () => { if (document.visibilityState === 'visible' && live) load(); };
    document.addEventListener('visibilitychange', vis);
    load();
    return () => { stop = true; ctl.abort(); clearTimeout(timer); document.removeEventListener('visibilitychange', vis); };
  }, [expr, range.preset, range.from, range.to, step]);

  useEffect(() => () => { if (plot.current) { plot.current.destroy(); plot.current = null; } }, []);
  useEffect(() => { if (plot.current && width) plot.current.setSize({ width, height: HEIGHT }); }, [width]);

  function draw(data) {
    const names = data.series.map((s) => s.name);
    const u = plot.current;
    const cols2 = [data.x, ...data.series.map((s) => s.values)];
    if (u && u._names === names.join('\n')) { u.setData(cols2); return; }
    if (u) u.destroy();
    const css = getComputedStyle(document.documentElement);
    const fg = css.getPropertyValue('--muted').trim() || '#888';
    const gridc = css.getPropertyValue('--grid').trim() || 'rgba(128,128,128,.2)';
    const unit = spec.unit;
    const fmtv = (u2, v) => (v == null ? '—' : `${number(v)}${unit}`);
    const opts = {
      width: width || box.current.clientWidth, height: HEIGHT,
      cursor: { sync: { key: 'dbpilot', setSeries: false }, drag: { x: true, y: false, setScale: false } },
      select: { show: true },
      legend: { live: true },
      scales: { x: { time: true }, y: { range: (u2, min, max) => [Math.min(0, min ?? 0), max > 0 ? max * 1.08 : 1] } },
      axes: [
        { stroke: fg, grid: { stroke: gridc, width: 1 }, ticks: { stroke: gridc } },
        { stroke: fg, grid: { stroke: gridc, width: 1 }, ticks: { stroke: gridc }, size: yAxisSize, values: (u2, vals) => vals.map((v) => `${number(v)}${unit === '%' ? '%' : ''}`) },
      ],
      series: [{ value: (u2, v) => (v == null ? '—' : fmtTime(v * 1000)) }, ...names.map((n, i) => ({ label: n, stroke: PALETTE[i % PALETTE.length], width: 1.5, spanGaps: false, points: { show: false }, value: fmtv }))],
      hooks: {
        // The time machine's moments: a vertical line each, placed again
        // whenever the chart is drawn.
        draw: [(u2) => placeCursors(u2, cursorRef.current)],
        setSelect: [(u2) => {
          if (u2.select.width > 4) {
            const from = u2.posToVal(u2.select.left, 'x'), to = u2.posToVal(u2.select.left + u2.select.width, 'x');
            u2.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
            zoomRef.current(from, to);
          }
        }],
      },
    };
    const p = new uPlot(opts, cols2, box.current);
    p._names = names.join('\n');
    plot.current = p;
  }

  const inRange = (c) => c / 1000 >= (range.preset === 'custom' ? range.from : Date.now() / 1000 - RANGES[range.preset]) && (range.preset !== 'custom' || c / 1000 <= range.to);
  return html`<div class="chart" data-chart=${spec.id} data-points=${info.points} data-cursor=${cursors.length ? cursors.map(formatAt).join(' ') : undefined} data-cursor-shown=${cursors.length ? String(cursors.every(inRange)) : undefined}>
    <h3>${spec.title}${spec.unit && spec.unit !== '%' ? html` <span class="muted small">(${spec.unit})</span>` : ''}</h3>
    <div class="chart-body" ref=${box}></div>
    ${info.error && html`<p class="error-line">✖ ${info.error}</p>`}
    ${!info.error && info.empty && info.points > 0 && html`<p class="muted small nodata">no data in this range</p>`}
  </div>`;
}

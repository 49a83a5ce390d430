// The replication tree as SVG: one box per instance, edges for every
// channel, drag-and-drop (pointer events) and keyboard relocation.
import { html, useState, useRef, useEffect } from '../vendor/preact-htm/standalone.module.js';
import { layout, edgePath } from './layout.js';
import { key as fmtKey, lag as fmtLag, lagLevel, catchUp as fmtCatchUp } from './format.js';
import { navigate, instanceHref, notice, SEV_RANK, useCan } from './ui.js';
import * as actions from './actions.js';

export const BOX = { w: 228, h: 136, gapX: 30, gapY: 58 };

/** formerPrimary: the recovery that replaced inst as primary, when the cluster's last one did. */
export function formerPrimary(inst, status) {
  const r = status.last_recovery;
  return r && r.old_primary && fmtKey(r.old_primary) === fmtKey(inst.key) && fmtKey(r.new_primary) !== fmtKey(inst.key) ? r : null;
}

/** fencedOf: what serve knows of inst as a fenced former primary (status.fenced), or null. */
export function fencedOf(inst, status) {
  const k = fmtKey(inst.key);
  return (status.fenced || []).find((f) => fmtKey(f.key) === k) || null;
}

/** fencedText says what a fenced former primary is: "fenced · errant: none" (or the GTIDs), "NOT fenced: writable", "down: fenced when it answers". */
export function fencedText(f) {
  if (!f.reachable) return 'former primary, down: fenced when it answers';
  if (!f.read_only) return 'former primary, NOT fenced: writable';
  if (!f.compared) return 'fenced · errant: unknown';
  return `fenced · errant: ${f.errant || 'none'}`;
}

/** nodeRole: primary | intermediate | replica | detached (seen, outside the cluster) | unknown. */
export function nodeRole(inst, status, hasChildren, detached = false) {
  const k = fmtKey(inst.key);
  if (detached) return 'detached';
  if (k === fmtKey(status.primary)) return 'primary';
  if (inst.channels && inst.channels.length) return hasChildren ? 'intermediate' : 'replica';
  return 'unknown';
}

/** nodeState: ok | unreachable | dead | stopped. */
export function nodeState(inst, status, problems) {
  if (!inst.reachable) {
    const k = fmtKey(inst.key);
    const dead = (k === fmtKey(status.primary) && status.state === 'dead') || problems.some((p) => p.code === 'DeadPrimary') || !!formerPrimary(inst, status);
    return dead ? 'dead' : 'unreachable';
  }
  if ((inst.channels || []).some((c) => c.io_running !== 'Yes' || !c.sql_running)) return 'stopped';
  return 'ok';
}

const SEMI = (s) => (s.primary_enabled && s.replica_enabled ? 'both' : s.primary_enabled ? 'primary' : s.replica_enabled ? 'replica' : '');
const SEV_ICON = { critical: '✖', warning: '▲', info: 'ℹ' };
const STATE_MARK = { dead: '✖ DEAD', unreachable: '◌ UNREACHABLE', stopped: '■ STOPPED' };

function shortVersion(v) {
  if (!v || !v.raw) return '';
  return v.raw.replace(/-log$/, '').replace(/-\d+\+deb.*$|-0\+deb.*$|-\d*ubuntu.*$/, '');
}

function channelText(inst) {
  const ch = inst.channels || [];
  if (!ch.length) return '';
  const one = (c) => `IO ${c.io_running === 'Yes' ? '✔' : c.io_running === 'Connecting' ? '…' : '✖'} SQL ${c.sql_running ? '✔' : '✖'}`;
  if (ch.length === 1) return one(ch[0]);
  const ok = ch.filter((c) => c.io_running === 'Yes' && c.sql_running).length;
  return `${ch.length} channels, ${ok} running`;
}

/**
 * Topology draws status (ClusterStatus). lag: Map instance → seconds.
 * id: the svg's id (topology; compare mode draws topology-a and
 * topology-b). readonly: a past moment, nothing moves. marks: what differs
 * from the other moment in compare mode ({nodes: Set of HOST:PORT, edges:
 * Map "SRC>REPLICA" → "added" | "removed"}).
 */
export function Topology({ status, lag, id = 'topology', readonly = false, marks = null }) {
  // Detached instances (an old primary after a failover) are drawn apart,
  // greyed, as roots of their own.
  const members = status.instances || [];
  const memberKeys = new Set(members.map((i) => fmtKey(i.key)));
  const detached = (status.detached || []).filter((i) => !memberKeys.has(fmtKey(i.key)));
  const detachedKeys = new Set(detached.map((i) => fmtKey(i.key)));
  const insts = [...members, ...detached];
  const nodes = insts.map((i) => ({ key: fmtKey(i.key), sources: (i.channels || []).map((c) => fmtKey(c.source)) }));
  const L = layout(nodes, fmtKey(status.primary), { w: BOX.w, h: BOX.h, gapX: BOX.gapX, gapY: BOX.gapY });
  const children = new Map();
  for (const e of L.edges) { if (!children.has(e.from)) children.set(e.from, []); children.get(e.from).push(e.to); }
  const probs = new Map();
  for (const p of status.problems || []) { const k = fmtKey(p.instance); if (!probs.has(k)) probs.set(k, []); probs.get(k).push(p); }
  for (const l of probs.values()) l.sort((a, b) => SEV_RANK[a.severity] - SEV_RANK[b.severity]);
  const rules = status.promotion_rules || {};

  const svg = useRef(null);
  const [drag, setDrag] = useState(null); // {src, mode, x, y, over}
  const [moving, setMoving] = useState(null); // keyboard: {src, mode}
  const justDragged = useRef(false);
  const enterDown = useRef(null); // the box Enter went down on
  // Boxes move (drag, keyboard) only when serve says the tab's token may
  // relocate (GET /api/whoami).
  const mayMove = useCan()('relocate') && !readonly;

  const toSvg = (cx, cy) => {
    const s = svg.current;
    const m = s && s.getScreenCTM();
    if (!m) return { x: 0, y: 0 };
    const p = new DOMPoint(cx, cy).matrixTransform(m.inverse());
    return { x: p.x, y: p.y };
  };

  const move = (src, dst, mode) => {
    if (!src || !dst || src === dst) return;
    if (mode === 'subtree') actions.relocateReplicas(src, children.get(src) || [], dst);
    else actions.relocate(src, dst);
  };

  const nodeAt = (e) => {
    let g = e.target && e.target.closest ? e.target.closest('g.node') : null;
    if (!g || (drag && g.dataset.key === drag.src)) {
      const el = document.elementFromPoint(e.clientX, e.clientY);
      g = el && el.closest ? el.closest('g.node') : null;
    }
    return g ? g.dataset.key : null;
  };

  // Window listeners while a pointer drag is under way.
  useEffect(() => {
    if (!drag) return;
    const mv = (e) => {
      const p = toSvg(e.clientX, e.clientY);
      const moved = drag.moved || Math.hypot(e.clientX - drag.cx, e.clientY - drag.cy) > 4;
      setDrag((d) => d && { ...d, x: p.x, y: p.y, moved, over: nodeAt(e) });
    };
    const up = (e) => {
      const target = nodeAt(e);
      const d = drag;
      setDrag(null);
      if (d.moved || (target && target !== d.src)) {
        justDragged.current = true;
        setTimeout(() => { justDragged.current = false; }, 0);
        if (target && target !== d.src) move(d.src, target, d.mode);
      }
    };
    const cancel = () => setDrag(null);
    window.addEventListener('pointermove', mv);
    window.addEventListener('pointerup', up);
    window.addEventListener('pointercancel', cancel);
    return () => { window.removeEventListener('pointermove', mv); window.removeEventListener('pointerup', up); window.removeEventListener('pointercancel', cancel); };
  }, [drag && drag.src, drag && drag.mode, drag && drag.moved]);

  const down = (k, mode) => (e) => {
    if (e.button !== 0 || !mayMove) return;
    e.preventDefault();
    e.stopPropagation();
    const p = toSvg(e.clientX, e.clientY);
    setDrag({ src: k, mode, x: p.x, y: p.y, cx: e.clientX, cy: e.clientY, moved: false, over: null });
  };

  const keydown = (k) => (e) => {
    if ((e.key === 'm' || e.key === 'M') && mayMove) {
      const mode = e.shiftKey ? 'subtree' : 'one';
      setMoving({ src: k, mode });
      notice(`moving ${mode === 'subtree' ? `the replicas of ${k}` : k}: focus the new source and press Enter (Esc cancels)`, 'info');
      e.preventDefault();
    } else if (e.key === 'Enter') {
      // Acted on at keyup: a dialog opened at keydown would take the focus
      // and the rest of this key press (its keypress) would press its button.
      e.preventDefault();
      enterDown.current = k;
    } else if (e.key === 'Escape' && moving) { setMoving(null); notice(null); }
  };
  const keyup = (k) => (e) => {
    if (e.key !== 'Enter') return;
    const pressed = enterDown.current === k;
    enterDown.current = null;
    if (!pressed) return;
    e.preventDefault();
    if (moving && moving.src !== k) { const m = moving; setMoving(null); notice(null); move(m.src, k, m.mode); } else if (!moving) navigate(instanceHref(k));
  };

  const width = Math.max(L.width + 120, 400);
  const height = L.height + 8;
  const center = (k) => { const p = L.pos.get(k); return p ? { x: p.x + BOX.w / 2, y: p.y + BOX.h / 2 } : null; };

  return html`<div class="topology-wrap">
    <svg id=${id} ref=${svg} width=${width} height=${height} viewBox=${`0 0 ${width} ${height}`} role="group" aria-label=${`replication topology of ${status.name}`} class=${`topology${drag && drag.moved ? ' dragging' : ''}`} data-readonly=${readonly ? 'true' : undefined}>
      <defs>
        <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" class="arrowhead" /></marker>
      </defs>
      ${L.edges.map((e) => {
        const a = L.pos.get(e.from), b = L.pos.get(e.to);
        const inst = insts.find((i) => fmtKey(i.key) === e.to);
        const ch = inst && (inst.channels || []).find((c) => fmtKey(c.source) === e.from);
        const broken = ch && (ch.io_running !== 'Yes' || !ch.sql_running);
        const changed = marks && marks.edges ? marks.edges.get(`${e.from}>${e.to}`) : undefined;
        return html`<path key=${`${e.from}>${e.to}`} class=${`edge edge-${e.kind}${broken ? ' broken' : ''}${changed ? ` edge-changed edge-${changed}` : ''}`} data-from=${e.from} data-to=${e.to} data-kind=${e.kind} data-changed=${changed} d=${edgePath(a, b, e.kind, BOX)} marker-end="url(#arrow)"><title>${`${e.from} → ${e.to}${ch && ch.name ? ` (channel ${ch.name})` : ''}${broken ? ': replication not running' : ''}`}</title></path>`;
      })}
      ${insts.map((i) => {
        const k = fmtKey(i.key);
        const p = L.pos.get(k);
        const ps = probs.get(k) || [];
        const kids = children.get(k) || [];
        const role = nodeRole(i, status, kids.length > 0, detachedKeys.has(k));
        const former = role === 'detached' ? formerPrimary(i, status) : null;
        const fenced = role === 'detached' ? fencedOf(i, status) : null;
        const what = fenced ? fencedText(fenced) : former ? `former primary (${former.kind} #${former.id})` : 'outside the cluster';
        const state = nodeState(i, status, ps);
        const lg = lag && lag.get(k);
        const ap = (status.replica_apply || []).find((a) => fmtKey(a.key) === k);
        const cu = fmtCatchUp(ap);
        const semi = SEMI(i.semi_sync || {});
        // The history keeps no GTID state (Instance.Shape): a past box says
        // whether the replica used GTID, not the server's mode.
        const usingGTID = (i.channels || []).find((c) => c.using_gtid && c.using_gtid !== 'No');
        const gtid = i.gtid && i.gtid.mode ? `GTID ${i.gtid.mode}` : status.past ? (usingGTID ? `GTID ${usingGTID.using_gtid}` : '') : 'no GTID';
        const cls = ['node', `role-${role}`, `st-${state}`];
        if (drag && drag.moved && drag.over === k && drag.src !== k) cls.push('drop-target');
        if (drag && drag.src === k) cls.push('drag-source');
        if (moving && moving.src === k) cls.push('moving');
        const rule = rules[k];
        if (fenced) cls.push(fenced.errant ? 'fenced errant' : 'fenced');
        const changed = !!(marks && marks.nodes && marks.nodes.has(k));
        if (changed) cls.push('changed');
        return html`<g key=${k} class=${cls.join(' ')} data-key=${k} data-role=${role} data-state=${state} data-fenced=${fenced ? 'true' : undefined} data-errant=${fenced ? fenced.errant || '' : undefined} data-changed=${changed ? 'true' : undefined} tabindex="0"
            style=${`transform: translate(${p.x}px, ${p.y}px)`}
            aria-label=${`${k}, ${role}, ${state}${ps.length ? `, ${ps.length} problem(s)` : ''}`}
            onPointerDown=${down(k, 'one')} onKeyDown=${keydown(k)} onKeyUp=${keyup(k)}
            onClick=${(e) => { if (justDragged.current) return; if (e.target.closest('a')) return; navigate(instanceHref(k)); }}>
          <rect class="box" width=${BOX.w} height=${BOX.h} rx="6" />
          <rect class="rolebar" width="5" height=${BOX.h} rx="2" />
          <a href=${instanceHref(k)} onClick=${(e) => { e.preventDefault(); if (!justDragged.current) navigate(instanceHref(k)); }} draggable="false">
            <text class="addr" x="14" y="20">${k}</text>
          </a>
          <text class="line" x="14" y="38"><tspan class="role">${role}</tspan> · ${shortVersion(i.version) || i.flavor || (i.reachable ? '?' : 'not reachable')}</text>
          <text class="line" x="14" y="55">${i.reachable ? `${i.read_only ? 'ro' : 'RW'} · ${i.log_bin ? i.binlog_format || 'binlog' : 'no binlog'}${gtid ? ` · ${gtid}` : ''}` : 'last seen state'}</text>
          <text class="line" x="14" y="72">${semi ? `semi-sync ${semi}${i.semi_sync.primary_enabled ? (i.semi_sync.primary_active ? ' (on)' : ' (fell back)') : ''}` : 'async'}${rule ? ` · promo ${rule}` : ''}</text>
          <text class="line" x="14" y="89">${role === 'detached' ? html`<tspan class=${fenced && fenced.errant ? 'warn-text' : ''}>${what.length > 34 ? what.slice(0, 33) + '…' : what}<title>${what}</title></tspan>` : channelText(i) || (role === 'primary' ? `${kids.length} replica(s)` : '')}${i.channels && i.channels.length ? html` · lag <tspan class=${`lag lag-${lagLevel(lg)}`}>${fmtLag(lg)}</tspan>` : ''}${cu ? html` · <tspan class="catchup" data-state=${ap.state}>${cu}</tspan>` : ''}</text>
          ${state !== 'ok' && html`<text class="statemark" x=${BOX.w - 10} y="20" text-anchor="end">${STATE_MARK[state]}</text>`}
          ${ps.slice(0, 2).map((pr, n) => html`<g class=${`pbadge sev-${pr.severity}`} transform=${`translate(${14 + n * 104}, 102)`}>
            <title>${pr.message}</title>
            <rect width="100" height="20" rx="4" />
            <text x="5" y="14">${SEV_ICON[pr.severity] || '•'} ${pr.code.length > 13 ? pr.code.slice(0, 12) + '…' : pr.code}</text>
          </g>`)}
          ${ps.length > 2 && html`<text class="line more" x=${BOX.w - 10} y="130" text-anchor="end">+${ps.length - 2} more</text>`}
          ${kids.length > 0 && mayMove && html`<g class="handle" transform=${`translate(${BOX.w / 2 - 12}, ${BOX.h - 7})`} onPointerDown=${down(k, 'subtree')}>
            <title>${`drag to move the ${kids.length} replica(s) of ${k} (keyboard: Shift+M)`}</title>
            <rect width="24" height="14" rx="7" /><text x="12" y="11" text-anchor="middle">⇊</text>
          </g>`}
        </g>`;
      })}
      ${drag && drag.moved && (() => { const c = center(drag.src); return c && html`<line class="drag-line" x1=${c.x} y1=${c.y} x2=${drag.x} y2=${drag.y} />`; })()}
    </svg>
    ${mayMove && html`<p class="hint muted">Drag a box onto another to relocate it below that one; drag the ⇊ handle to move all its replicas. Keyboard: focus a box, press m (Shift+M for its replicas), focus the new source, press Enter.</p>`}
  </div>`;
}

// Replication tree layout: a layered tidy tree, roots at the top. Pure.
//
// Input: nodes [{key, sources: [key...]}] (sources = the instance's channels'
// sources, in channel order) and the cluster's primary key. Roots are the
// primary and every instance without a source inside the cluster; instances
// only reachable through a cycle (a ring without a known primary) get the
// smallest key as root, deterministically. Each instance gets one tree
// parent (its first source reached breadth-first); every other channel is a
// non-tree edge: "back" when it closes a cycle (the source is the replica's
// descendant or itself), "cross" otherwise (multi-source). Each node is
// visited once, so cycles always terminate.

/**
 * layout returns {pos: Map key → {x, y, depth, parent}, edges: [{from, to,
 * kind: "tree"|"back"|"cross"}], width, height}. x, y are the top-left corner
 * of a box of opt.w × opt.h.
 */
export function layout(nodes, primary, opt = {}) {
  const w = opt.w ?? 200, h = opt.h ?? 120, gx = opt.gapX ?? 28, gy = opt.gapY ?? 56, pad = opt.pad ?? 16;
  const keys = [...new Set(nodes.map((n) => n.key))].sort();
  const inCluster = new Set(keys);
  const sources = new Map();
  for (const n of nodes) {
    const list = sources.get(n.key) || [];
    for (const s of n.sources || []) if (inCluster.has(s) && !list.includes(s)) list.push(s);
    sources.set(n.key, list);
  }
  // children: replicas of each node, sorted for determinism.
  const children = new Map(keys.map((k) => [k, []]));
  for (const k of keys) for (const s of sources.get(k)) if (s !== k) children.get(s).push(k);
  for (const c of children.values()) c.sort();

  const parent = new Map();
  const depth = new Map();
  const order = []; // roots in placement order
  const visit = (root) => {
    parent.set(root, null);
    depth.set(root, 0);
    order.push(root);
    const queue = [root];
    for (let i = 0; i < queue.length; i++) {
      const p = queue[i];
      for (const c of children.get(p)) {
        if (depth.has(c)) continue;
        parent.set(c, p);
        depth.set(c, depth.get(p) + 1);
        queue.push(c);
      }
    }
  };
  const roots = [];
  if (primary && inCluster.has(primary)) roots.push(primary);
  for (const k of keys) if (k !== primary && sources.get(k).filter((s) => s !== k).length === 0) roots.push(k);
  for (const r of roots) if (!depth.has(r)) visit(r);
  for (const k of keys) if (!depth.has(k)) visit(k); // cycles with no root: smallest key first

  const kids = new Map(keys.map((k) => [k, []]));
  for (const k of keys) { const p = parent.get(k); if (p != null) kids.get(p).push(k); }

  // Tidy placement: leaves left to right, parents centred over their children.
  const slot = new Map();
  let next = 0;
  const place = (k) => {
    const cs = kids.get(k);
    if (cs.length === 0) { slot.set(k, next++); return; }
    for (const c of cs) place(c);
    slot.set(k, (slot.get(cs[0]) + slot.get(cs[cs.length - 1])) / 2);
  };
  for (const r of order) place(r);

  const pos = new Map();
  let maxDepth = 0;
  for (const k of keys) {
    const d = depth.get(k);
    maxDepth = Math.max(maxDepth, d);
    pos.set(k, { x: pad + slot.get(k) * (w + gx), y: pad + d * (h + gy), depth: d, parent: parent.get(k) });
  }

  const isAncestor = (a, b) => { // a is b or an ancestor of b
    for (let c = b, guard = 0; c != null && guard <= keys.length; c = parent.get(c), guard++) if (c === a) return true;
    return false;
  };
  const edges = [];
  for (const k of keys) {
    for (const s of sources.get(k)) {
      let kind = 'cross';
      if (parent.get(k) === s) kind = 'tree';
      else if (isAncestor(k, s)) kind = 'back';
      edges.push({ from: s, to: k, kind });
    }
  }
  const width = keys.length ? pad * 2 + next * w + (next - 1) * gx : pad * 2;
  const height = keys.length ? pad * 2 + (maxDepth + 1) * h + maxDepth * gy : pad * 2;
  return { pos, edges, width, height, roots: order };
}

/** edgePath returns an SVG path from the bottom of box a to the top of box b; non-tree edges curve out to the side. */
export function edgePath(a, b, kind, opt = {}) {
  const w = opt.w ?? 200, h = opt.h ?? 120;
  if (kind === 'tree') {
    const x1 = a.x + w / 2, y1 = a.y + h, x2 = b.x + w / 2, y2 = b.y;
    const my = (y1 + y2) / 2;
    return `M${x1},${y1} C${x1},${my} ${x2},${my} ${x2},${y2}`;
  }
  // Side to side: leave a's right edge, enter b's right edge (or left when b is left of a), bulging outwards.
  const right = b.x >= a.x;
  const x1 = right ? a.x + w : a.x, y1 = a.y + h / 2;
  const x2 = right ? b.x + w : b.x, y2 = b.y + h / 2 + (kind === 'back' ? 10 : 0);
  const bulge = (right ? 1 : -1) * (60 + Math.abs(y2 - y1) * 0.25);
  const cx = (right ? Math.max(x1, x2) : Math.min(x1, x2)) + bulge;
  return `M${x1},${y1} C${cx},${y1} ${cx},${y2} ${x2},${y2}`;
}

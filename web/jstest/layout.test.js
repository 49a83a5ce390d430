import { test, eq, ok } from './t.js';
import { layout, edgePath } from '../static/js/layout.js';

const n = (key, ...sources) => ({ key, sources });
const depth = (L, k) => L.pos.get(k).depth;

test('layout: chain A→B→C is three levels', () => {
  const L = layout([n('a:1'), n('b:1', 'a:1'), n('c:1', 'b:1')], 'a:1');
  eq([depth(L, 'a:1'), depth(L, 'b:1'), depth(L, 'c:1')], [0, 1, 2]);
  eq(L.edges.map((e) => e.kind), ['tree', 'tree']);
  eq(L.pos.get('a:1').x, L.pos.get('c:1').x, 'a chain is one column');
  eq(L.roots, ['a:1']);
});

test('layout: star, primary centred over its replicas, replicas do not overlap', () => {
  const L = layout([n('p:1'), n('r:3', 'p:1'), n('r:1', 'p:1'), n('r:2', 'p:1')], 'p:1', { w: 100, gapX: 10 });
  const xs = ['r:1', 'r:2', 'r:3'].map((k) => L.pos.get(k).x);
  eq(xs, [...xs].sort((a, b) => a - b), 'replicas sorted by key');
  for (let i = 1; i < xs.length; i++) ok(xs[i] - xs[i - 1] >= 100, 'boxes overlap');
  eq(L.pos.get('p:1').x, xs[1], 'primary centred');
  ok(['r:1', 'r:2', 'r:3'].every((k) => depth(L, k) === 1));
});

test('layout: ring A→B→A terminates, places both, one back edge', () => {
  const L = layout([n('a:1', 'b:1'), n('b:1', 'a:1')], 'a:1');
  eq(L.pos.size, 2);
  eq(depth(L, 'a:1'), 0);
  eq(depth(L, 'b:1'), 1);
  const back = L.edges.filter((e) => e.kind === 'back');
  eq(back.length, 1);
  eq([back[0].from, back[0].to], ['b:1', 'a:1']);
  ok(edgePath(L.pos.get('b:1'), L.pos.get('a:1'), 'back').startsWith('M'), 'back edge path');
});

test('layout: ring without a known primary picks the smallest key as root', () => {
  const nodes = [n('c:1', 'b:1'), n('a:1', 'c:1'), n('b:1', 'a:1')];
  const L = layout(nodes, '');
  eq(L.roots, ['a:1']);
  eq([depth(L, 'a:1'), depth(L, 'b:1'), depth(L, 'c:1')], [0, 1, 2]);
  eq(L.edges.filter((e) => e.kind === 'back').length, 1);
  const L2 = layout([...nodes].reverse(), '');
  eq([...L2.pos.entries()], [...L.pos.entries()], 'deterministic whatever the input order');
});

test('layout: multi-source replica gets one tree parent and a cross edge', () => {
  const L = layout([n('m1:1'), n('m2:1'), n('r:1', 'm1:1', 'm2:1')], 'm1:1');
  eq(L.pos.size, 3);
  eq(L.pos.get('r:1').parent, 'm1:1');
  const kinds = Object.fromEntries(L.edges.map((e) => [`${e.from}>${e.to}`, e.kind]));
  eq(kinds, { 'm1:1>r:1': 'tree', 'm2:1>r:1': 'cross' });
  ok(L.roots.includes('m2:1'), 'the second source is a root');
  ok(L.pos.get('m1:1').x !== L.pos.get('m2:1').x, 'sources side by side');
});

test('layout: dead primary with orphans (replicas still point at it)', () => {
  const L = layout([n('p:1'), n('r:1', 'p:1'), n('r:2', 'p:1')], 'p:1');
  eq(L.roots, ['p:1']);
  eq([depth(L, 'r:1'), depth(L, 'r:2')], [1, 1]);
});

test('layout: after failover the new primary is the root, old one a separate root', () => {
  // r:1 promoted; r:2 moved below it; p:1 dead, no channels.
  const L = layout([n('p:1'), n('r:1'), n('r:2', 'r:1')], 'r:1');
  eq(L.roots, ['r:1', 'p:1']);
  eq(depth(L, 'r:2'), 1);
  eq(L.pos.get('r:2').parent, 'r:1');
});

test('layout: sources outside the cluster are ignored, self-loops do not hang', () => {
  const L = layout([n('a:1', 'x:9'), n('b:1', 'b:1', 'a:1')], 'a:1');
  eq(depth(L, 'b:1'), 1);
  eq(L.edges.length, 2);
});

test('layout: big ring of 50 terminates', () => {
  const nodes = [];
  for (let i = 0; i < 50; i++) nodes.push(n(`h${String(i).padStart(2, '0')}:1`, `h${String((i + 49) % 50).padStart(2, '0')}:1`));
  const L = layout(nodes, 'h00:1');
  eq(L.pos.size, 50);
  eq(depth(L, 'h49:1'), 49);
});

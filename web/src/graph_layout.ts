// The layered layout of a DAG, free of the DOM: longestPath() gives each
// key its depth (longest path from a root), layered() turns that into
// positions, left to right, with rows ordered to cross fewer edges.
// Contract: keys are unique; `ups` maps a key to the keys it depends on,
// and entries naming unknown keys are ignored. A cycle (which cannot be
// journaled) does not hang: the key that closes it counts as depth 0. The
// work is linear in the graph's size, and the recursion is only as deep as
// the DAG is long. Positions are node centres in px, inside a 10 px margin.

export interface Placed {
  x: number;
  y: number;
}

export interface Laid {
  pos: Map<string, Placed>;
  width: number;
  height: number;
}

// Each of `keys`' longest-path depth from a root.
export function longestPath(keys: string[], ups: Map<string, string[]>): Map<string, number> {
  const known = new Set(keys);
  const depth = new Map<string, number>();
  const visit = (k: string, seen: Set<string>): number => {
    const d0 = depth.get(k);
    if (d0 !== undefined) return d0;
    if (seen.has(k)) return 0;  // a cycle cannot be journaled; stay safe anyway
    seen.add(k);
    let d = 0;
    for (const u of ups.get(k) ?? []) if (known.has(u)) d = Math.max(d, visit(u, seen) + 1);
    depth.set(k, d);
    return d;
  };
  // The recursion depth is the DAG's depth, not its size.
  for (const k of keys) visit(k, new Set());
  return depth;
}

// A curve from the right side of one node to the left side of the next.
export function edgePath(a: Placed, b: Placed, aw: number, bw: number): string {
  const x1 = a.x + aw / 2, x2 = b.x - bw / 2;
  const c = Math.max(12, (x2 - x1) / 2);
  const f = (n: number) => n.toFixed(1);
  return `M${f(x1)} ${f(a.y)} C${f(x1 + c)} ${f(a.y)} ${f(x2 - c)} ${f(b.y)} ${f(x2)} ${f(b.y)}`;
}

// Orders each layer so as to cross fewer edges: barycentre sweeps down
// and up, four times.
function orderRows(rows: string[][], ups: Map<string, string[]>, downs: Map<string, string[]>): void {
  // A node's place in its layer, centred on 0 so that layers compare.
  const at = new Map<string, number>();
  const number = (row: string[]) => row.forEach((k, i) => at.set(k, i - (row.length - 1) / 2));
  rows.forEach(number);
  const sortBy = (row: string[], next: Map<string, string[]>) => {
    const bary = new Map<string, number>();
    for (const k of row) {
      const ns = (next.get(k) ?? []).filter((n) => at.has(n));
      bary.set(k, ns.length ? ns.reduce((sum, n) => sum + at.get(n)!, 0) / ns.length : at.get(k)!);
    }
    row.sort((a, b) => bary.get(a)! - bary.get(b)!);
    number(row);
  };
  for (let sweep = 0; sweep < 4; sweep++) {
    for (let i = 1; i < rows.length; i++) sortBy(rows[i], ups);
    for (let i = rows.length - 2; i >= 0; i--) sortBy(rows[i], downs);
  }
}

// Heights: each node wants the mean height of its neighbours on one side;
// a forward pass keeps them `step` apart, then the layer moves as a block.
function heights(rows: string[][], ups: Map<string, string[]>, downs: Map<string, string[]>,
  step: number): Map<string, number> {
  const y = new Map<string, number>();
  const place = (row: string[], next: Map<string, string[]>) => {
    const want = row.map((k) => {
      const ns = (next.get(k) ?? []).filter((n) => y.has(n));
      return ns.length ? ns.reduce((sum, n) => sum + y.get(n)!, 0) / ns.length : NaN;
    });
    const base = row.map((_, i) => (i - (row.length - 1) / 2) * step);
    const desired = want.map((v, i) => (isNaN(v) ? base[i] : v));
    const got: number[] = [];
    desired.forEach((d, i) => got.push(i ? Math.max(d, got[i - 1] + step) : d));
    const shift = desired.reduce((sum, d, i) => sum + d - got[i], 0) / Math.max(1, row.length);
    row.forEach((k, i) => y.set(k, got[i] + shift));
  };
  rows[0].forEach((k, i) => y.set(k, (i - (rows[0].length - 1) / 2) * step));
  for (let i = 1; i < rows.length; i++) place(rows[i], ups);
  if (rows.length > 1) {
    for (const k of rows[0]) y.delete(k);
    place(rows[0], downs);
  }
  return y;
}

// Places `keys` (nodes of w × h) in layers by longest path from a root,
// left to right, gapX apart; within a layer, orders them to cross fewer
// edges (barycentre sweeps) and puts each near the mean height of what it
// depends on, one row (h + gapY) apart. Linear in the graph's size, unlike
// a full Sugiyama layout, and as compact as the widest layer.
export function layered(keys: string[], ups: Map<string, string[]>, w: number, h: number, gapX: number,
  gapY: number): Laid {
  const known = new Set(keys);
  const depth = longestPath(keys, ups);
  const rows: string[][] = [];
  for (const k of keys) (rows[depth.get(k)!] ??= []).push(k);
  for (let i = 0; i < rows.length; i++) rows[i] ??= [];
  const downs = new Map<string, string[]>();
  for (const k of keys) for (const u of ups.get(k) ?? []) if (known.has(u)) (downs.get(u) ?? downs.set(u, []).get(u)!).push(k);
  orderRows(rows, ups, downs);
  const y = heights(rows, ups, downs, h + gapY);
  let top = Infinity, bottom = -Infinity;
  for (const v of y.values()) {
    top = Math.min(top, v);
    bottom = Math.max(bottom, v);
  }
  const margin = 10;
  const pos = new Map<string, Placed>();
  for (const k of keys) pos.set(k, { x: margin + depth.get(k)! * (w + gapX) + w / 2, y: margin + h / 2 + y.get(k)! - top });
  return { pos, width: 2 * margin + rows.length * w + (rows.length - 1) * gapX, height: 2 * margin + h + bottom - top };
}

// A line diff (Myers' O(ND) shortest edit script) and its grouping into
// hunks with context, for the pipeline page's version diff. No DOM here.
//
// Bounded: the common head and tail are cut off first, and the search gives
// up after a budget of steps (a snapshot of thousands of tasks that changed
// everywhere); the middle is then shown as removed and added whole, and the
// answer says it is not the shortest.

export type LineOp = " " | "-" | "+";

export interface DiffLine {
  op: LineOp;
  text: string;
  // 0-based line numbers in the old (a) and new (b) text; -1 where absent.
  a: number;
  b: number;
}

export interface LineDiff {
  lines: DiffLine[];
  // True when the budget ran out and the middle is shown as replaced whole.
  rough: boolean;
}

// Steps (diagonal moves and edits) the search may take before giving up,
// and edits it looks for (its memory grows with their square): a few
// hundred milliseconds and some 16 MB at worst in a browser.
const DEFAULT_BUDGET = 10_000_000;
const MAX_EDITS = 2000;

// The edits that turn `a` into `b`, in order, with the unchanged lines.
export function diffLines(a: readonly string[], b: readonly string[], budget = DEFAULT_BUDGET): LineDiff {
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head &&
         a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;

  const lines: DiffLine[] = [];
  for (let i = 0; i < head; i++) lines.push({ op: " ", text: a[i], a: i, b: i });
  const midA = a.slice(head, a.length - tail);
  const midB = b.slice(head, b.length - tail);
  const edits = myers(intern(midA, midB), budget);
  let rough = false;
  if (edits) {
    for (const e of edits) {
      lines.push({
        op: e.op, text: e.op === "+" ? midB[e.b] : midA[e.a],
        a: e.a < 0 ? -1 : e.a + head, b: e.b < 0 ? -1 : e.b + head,
      });
    }
  } else {
    rough = true;
    midA.forEach((text, i) => lines.push({ op: "-", text, a: i + head, b: -1 }));
    midB.forEach((text, i) => lines.push({ op: "+", text, a: -1, b: i + head }));
  }
  for (let i = 0; i < tail; i++) {
    const ai = a.length - tail + i, bi = b.length - tail + i;
    lines.push({ op: " ", text: a[ai], a: ai, b: bi });
  }
  return { lines, rough };
}

// The lines as numbers (equal text, equal number), so that the search
// compares integers.
function intern(a: readonly string[], b: readonly string[]): [Int32Array, Int32Array] {
  const ids = new Map<string, number>();
  const of = (xs: readonly string[]) => Int32Array.from(xs, (x) => {
    let id = ids.get(x);
    if (id === undefined) ids.set(x, (id = ids.size));
    return id;
  });
  return [of(a), of(b)];
}

interface Edit {
  op: LineOp;
  a: number;
  b: number;
}

// Myers' greedy forward search, keeping each round's furthest points to walk
// back along; undefined when `budget` steps did not reach the end.
function myers([A, B]: [Int32Array, Int32Array], budget: number): Edit[] | undefined {
  const n = A.length, m = B.length;
  const max = n + m;
  const off = max + 1;
  const v = new Int32Array(2 * max + 3);
  const trace: Int32Array[] = [];  // trace[d][k + d]: furthest x on diagonal k after d edits
  let steps = 0;
  for (let d = 0; d <= Math.min(max, MAX_EDITS); d++) {
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[off + k - 1] < v[off + k + 1]) ? v[off + k + 1] : v[off + k - 1] + 1;
      let y = x - k;
      const start = x;
      while (x < n && y < m && A[x] === B[y]) {
        x++;
        y++;
      }
      steps += 1 + x - start;
      v[off + k] = x;
      if (x >= n && y >= m) {
        trace.push(v.slice(off - d, off + d + 1));
        return walkBack(trace, n, m);
      }
    }
    trace.push(v.slice(off - d, off + d + 1));
    if (steps > budget) return undefined;
  }
  return undefined;
}

function walkBack(trace: Int32Array[], n: number, m: number): Edit[] {
  const out: Edit[] = [];
  let x = n, y = m;
  for (let d = trace.length - 1; d > 0; d--) {
    const prev = trace[d - 1];
    const at = (k: number) => prev[k + d - 1];
    const k = x - y;
    const down = k === -d || (k !== d && at(k - 1) < at(k + 1));
    const pk = down ? k + 1 : k - 1;
    const px = at(pk), py = px - pk;
    const sx = down ? px : px + 1;  // where this round's edit ended, before its snake
    while (x > sx) {
      x--;
      y--;
      out.push({ op: " ", a: x, b: y });
    }
    if (down) {
      y--;
      out.push({ op: "+", a: -1, b: y });
    } else {
      x--;
      out.push({ op: "-", a: x, b: -1 });
    }
    x = px;
    y = py;
  }
  while (x > 0 && y > 0) {
    x--;
    y--;
    out.push({ op: " ", a: x, b: y });
  }
  return out.reverse();
}

export interface Hunk {
  lines: DiffLine[];
  // Unchanged lines left out before this hunk.
  skipped: number;
}

// The changed lines with `context` unchanged lines around each; what lies
// between hunks is counted, not kept. `after` counts what follows the last.
export function hunks(diff: readonly DiffLine[], context = 3): { hunks: Hunk[]; after: number } {
  const keep = new Uint8Array(diff.length);
  diff.forEach((l, i) => {
    if (l.op === " ") return;
    for (let j = Math.max(0, i - context); j <= Math.min(diff.length - 1, i + context); j++) keep[j] = 1;
  });
  const out: Hunk[] = [];
  let skipped = 0;
  let current: Hunk | undefined;
  diff.forEach((l, i) => {
    if (!keep[i]) {
      skipped++;
      current = undefined;
      return;
    }
    if (!current) {
      current = { lines: [], skipped };
      out.push(current);
      skipped = 0;
    }
    current.lines.push(l);
  });
  return { hunks: out, after: skipped };
}

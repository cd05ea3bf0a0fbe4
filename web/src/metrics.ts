// Reads the node's /metrics (Prometheus text) into name{labels} -> value.

export type Samples = Map<string, number>;

export function parseMetrics(text: string): Samples {
  const out: Samples = new Map();
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const space = line.lastIndexOf(" ");
    if (space < 0) continue;
    const value = Number(line.slice(space + 1));
    if (!isNaN(value)) out.set(line.slice(0, space).toLowerCase(), value);
  }
  return out;
}

// The sum of every series of `name` (all label sets), 0 when absent.
export function total(samples: Samples, name: string): number {
  let sum = 0;
  for (const [key, v] of samples) {
    if (key === name || key.startsWith(name + "{")) sum += v;
  }
  return sum;
}

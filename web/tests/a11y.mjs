// axe-core (npm, a dev dependency) over a page open in playwright: its
// source is evaluated in the page through the DevTools protocol, which the
// dashboard's CSP (script-src 'self') does not govern, so the page is
// checked exactly as it is served.
import fs from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
let source = "";

// Runs axe on the page as it is now. Answers {blocking, minor}: the
// violations of impact serious or critical, and the count of the others.
export async function axeCheck(page) {
  source ||= fs.readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");
  if (!(await page.evaluate(() => typeof window.axe === "object"))) await page.evaluate(source);
  const violations = await page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ["violations"] });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help,
      targets: v.nodes.map((n) => n.target.join(" ")), summary: v.nodes[0]?.failureSummary ?? "" }));
  });
  const blocking = violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  return { blocking, minor: violations.length - blocking.length };
}

// One line per serious or critical violation: rule, impact, help and the
// first three elements it was found on.
export function describe(blocking) {
  return blocking.map((v) => `${v.id} (${v.impact}): ${v.help} [${v.targets.length} element(s): ` +
    `${v.targets.slice(0, 3).join(" | ")}]`).join("\n");
}

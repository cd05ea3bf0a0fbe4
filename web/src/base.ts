// Where the dashboard lives: "" at the root of the node's HTTP port, or the
// node's --http-base-path ("/apollo"), which the server writes into the page
// as <meta name="apollo11-base">. The rest of the code speaks in paths from
// that base ("/api/runs", "/run/ID"); what goes to the browser or the network
// is prefixed with it.
export const BASE: string =
  document.querySelector<HTMLMetaElement>('meta[name="apollo11-base"]')?.content ?? "";

// The page's path below the base ("/run/ID"); "/" for the base itself.
export function appPath(pathname: string): string {
  if (!BASE || !pathname.startsWith(BASE)) return pathname;
  return pathname.slice(BASE.length) || "/";
}

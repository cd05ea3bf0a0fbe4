#pragma once
// Serves the embedded dashboard: GET / and the client-side page paths
// (/runs, /run/ID, /exec/ID, /workers, /pipelines) answer index.html, and
// /assets/NAME the bundled scripts, styles and icon. Every answer carries a
// strict Content-Security-Policy (no inline script or style, nothing from
// another origin) and an ETag; If-None-Match answers 304. Assets are
// immutable per build; the HTML is revalidated on each load.
//
// Under a base path (--http-base-path /apollo) every path above is served
// below it (/apollo/, /apollo/run/ID, /apollo/assets/NAME), and index.html is
// served with its own links rewritten to it and a <meta name="apollo11-base">
// that tells the scripts where they live.

#include <httplib.h>

#include <string>

namespace apollo11::observability {

class Dashboard {
 public:
  // The Content-Security-Policy header value every dashboard answer sends.
  static const char* kContentSecurityPolicy;

  // Registers the routes on `server` under `base` ("" or "/apollo"). Call
  // once, before it serves.
  static void Register(httplib::Server& server, const std::string& base);
  // Answers the embedded file first named `stem` (scripts/build-dashboard.sh
  // puts it in the bundle; the embed step names it STEM.HASH.EXT), with its
  // ETag; 500 in a build without it. "licenses.": the third-party notices of
  // what the binaries carry; "openapi.": docs/api/openapi.json.
  static void SendEmbedded(std::string_view stem, const httplib::Request& req,
                           httplib::Response& res);

  // Sets the security headers every dashboard and API answer carries.
  static void SecurityHeaders(httplib::Response& res);
};

}  // namespace apollo11::observability

#pragma once
// The dashboard's files, embedded in the binary at build time:
// scripts/build-dashboard.sh bundles web/ with esbuild and
// scripts/embed_assets.py writes them as byte arrays into a generated .cc in
// the build directory (dashboard_assets_data.cc), which defines
// DashboardAssets(). Nothing is read from disk at run time.

#include <span>
#include <string_view>

namespace apollo11::observability {

struct DashboardAsset {
  std::string_view path;          // as requested: "/assets/app.js"
  std::string_view content_type;  // "text/javascript; charset=utf-8"
  std::string_view etag;          // strong, quoted: a hash of the content
  std::string_view body;
};

// Every embedded file; the storage is static and lives for the program.
std::span<const DashboardAsset> DashboardAssets();

}  // namespace apollo11::observability

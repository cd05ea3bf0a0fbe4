#include "cli/pipeline_registration.h"

#include <filesystem>

#include "dsl/diagnostic.h"
#include "dsl/pipeline_json.h"

namespace apollo11::cli {

std::string PipelineNameOf(std::string_view yaml, const std::string& path) {
  size_t at = 0;
  while (at < yaml.size()) {
    const size_t end = std::min(yaml.find('\n', at), yaml.size());
    std::string_view line = yaml.substr(at, end - at);
    if (line.rfind("name:", 0) == 0) {
      std::string_view v = line.substr(5);
      const size_t hash = v.find(" #");
      if (hash != std::string_view::npos) v = v.substr(0, hash);
      while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
      while (!v.empty() && (v.back() == ' ' || v.back() == '\r' || v.back() == '\t')) {
        v.remove_suffix(1);
      }
      if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front()) {
        v = v.substr(1, v.size() - 2);
      }
      if (!v.empty() && v.size() <= 200) return std::string(v);
    }
    at = end + 1;
  }
  return std::filesystem::path(path).stem().string();
}

actors::RegistryRequest RegistrationOf(dsl::ParseResult* parsed, std::string_view yaml,
                                       const std::string& path, const std::string& actor) {
  actors::RegistryRequest r;
  r.actor = actor;
  if (parsed->ok()) {
    r.op = static_cast<uint8_t>(actors::RegistryOp::kAdd);
    r.name = parsed->pipeline->name;
    dsl::ForgetSource(&*parsed->pipeline);
    r.pipeline_json = dsl::CanonicalJson(*parsed->pipeline);
    r.pipeline_hash = dsl::HashCanonicalJson(r.pipeline_json);
    return r;
  }
  r.op = static_cast<uint8_t>(actors::RegistryOp::kReject);
  r.name = PipelineNameOf(yaml, path);
  for (const dsl::Diagnostic& d : parsed->diagnostics) {
    if (d.severity != dsl::Diagnostic::Severity::kError) continue;
    r.errors += (r.errors.empty() ? "" : "\n") + dsl::FormatDiagnostic(d);
  }
  if (r.errors.empty()) r.errors = path + ": the pipeline does not validate";
  return r;
}

}  // namespace apollo11::cli

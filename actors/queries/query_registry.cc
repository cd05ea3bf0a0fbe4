// registry: the read-only answers about registered pipelines, for
// QueryService (pipelines, pipeline NAME[@V], pipeline_versions NAME). They
// read what is committed, through a PipelineRegistry over the journal.

#include "actors/queries/query_service.h"
#include "actors/registry/pipeline_registry.h"
#include "common/json_dump.h"
#include "dsl/credentials.h"
#include "dsl/pipeline_json.h"

namespace apollo11::actors {
namespace {

nlohmann::json VersionJson(const storage::PipelineVersionRecord& v, uint32_t active) {
  return {{"version", v.version},     {"hash", v.hash},
          {"label", VersionLabel(v)}, {"added_at", FormatTimestamp(v.added_at)},
          {"added_by", v.added_by},   {"active", v.version == active}};
}

}  // namespace

nlohmann::json& QueryService::EntryOf(nlohmann::json* pipelines, const std::string& name) {
  for (auto& p : *pipelines) {
    if (p.value("name", "") == name) return p;
  }
  pipelines->push_back({{"name", name}, {"runs", 0}});
  return pipelines->back();
}

Status QueryService::AddRegistered(nlohmann::json* pipelines) const {
  PipelineRegistry registry(registry_);
  auto states = registry.States();
  if (!states.ok()) return states.status();
  for (const auto& s : *states) {
    nlohmann::json* entry = &EntryOf(pipelines, s.name);
    (*entry)["registered"] = true;
    (*entry)["active_version"] = s.active;
    (*entry)["latest_version"] = s.latest;
    (*entry)["paused"] = s.paused;
    if (s.paused) (*entry)["paused_by"] = s.paused_by;
    (*entry)["removed"] = s.active == 0;
    if (s.active != 0) {
      auto v = registry.Resolve(s.name, "");
      if (v.ok()) (*entry)["label"] = VersionLabel(*v);
    }
  }
  return Status::Ok();
}

Result<std::optional<nlohmann::json>> QueryService::RegisteredPipeline(const Query& q) const {
  const size_t at = q.id.find('@');
  const std::string name = q.id.substr(0, at);
  const std::string ref = at == std::string::npos ? "" : q.id.substr(at + 1);
  PipelineRegistry registry(registry_);
  auto state = registry.State(name);
  if (!state.ok()) return state.status();
  if (!state->has_value()) {
    if (at == std::string::npos) return std::optional<nlohmann::json>();  // not registered
    return Status::NotFound("no pipeline " + name + " in the registry");
  }
  auto version = registry.Resolve(name, ref);
  if (!version.ok()) return version.status();
  auto snapshot = journal_->GetPipeline(version->hash);
  if (!snapshot.ok()) return snapshot.status();
  if (!snapshot->has_value()) {
    return Status::NotFound("no snapshot " + version->hash + " of pipeline " + name);
  }
  auto doc = ParseJsonBounded(**snapshot);
  if (doc.is_discarded()) return Status::Corrupt("snapshot " + version->hash + " is not JSON");
  if (q.arg != "full") {
    dsl::HideEnvValues(&doc);
    dsl::RedactCredentials(&doc);
  }
  nlohmann::json out = VersionJson(*version, (*state)->active);
  out["name"] = name;
  out["paused"] = (*state)->paused;
  out["snapshot"] = std::move(doc);
  return std::optional<nlohmann::json>(std::move(out));
}

Result<nlohmann::json> QueryService::PipelineVersionsJson(const std::string& name) const {
  PipelineRegistry registry(registry_);
  auto state = registry.State(name);
  if (!state.ok()) return state.status();
  if (!state->has_value()) return Status::NotFound("no pipeline " + name + " in the registry");
  auto versions = registry.Versions(name);
  if (!versions.ok()) return versions.status();
  nlohmann::json list = nlohmann::json::array();
  for (const auto& v : *versions) list.push_back(VersionJson(v, (*state)->active));
  return nlohmann::json{{"name", name},
                        {"active_version", (*state)->active},
                        {"paused", (*state)->paused},
                        {"versions", std::move(list)}};
}

}  // namespace apollo11::actors

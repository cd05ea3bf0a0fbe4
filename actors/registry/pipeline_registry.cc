#include "actors/registry/pipeline_registry.h"

#include <algorithm>

namespace apollo11::actors {
namespace {

bool AllDigits(const std::string& s) {
  return !s.empty() && s.size() <= 9 && s.find_first_not_of("0123456789") == std::string::npos;
}

bool HexPrefix(const std::string& s) {
  return s.size() >= 4 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

std::string Known(const std::vector<storage::PipelineVersionRecord>& versions) {
  std::string out;
  for (const auto& v : versions) out += (out.empty() ? "" : ", ") + VersionLabel(v);
  return out.empty() ? "none" : out;
}

}  // namespace

std::string VersionLabel(const storage::PipelineVersionRecord& v) {
  return std::to_string(v.version) + "-" + v.hash;
}

Status PipelineRegistry::Load() {
  if (loaded_) return Status::Ok();
  auto states = store_->ListPipelineStates();
  if (!states.ok()) return states.status();
  for (auto& s : *states) states_[s.name] = std::move(s);
  loaded_ = true;
  return Status::Ok();
}

Result<std::vector<storage::PipelineVersionRecord>*> PipelineRegistry::VersionsOf(
    const std::string& name) {
  auto it = versions_.find(name);
  if (it == versions_.end()) {
    auto stored = store_->PipelineVersions(name);
    if (!stored.ok()) return stored.status();
    it = versions_.emplace(name, std::move(*stored)).first;
  }
  return &it->second;
}

Status CheckDomainPrefix(const std::string& name) {
  const size_t dot = name.find('.');
  if (dot != std::string::npos && dot != 0 && name.back() != '.') return Status::Ok();
  return Status::InvalidInput("pipeline name '" + name +
                              "' has no domain prefix (DOMAIN.NAME, e.g. order." + name +
                              "): this coordinator requires one (started with "
                              "--allow-unprefixed-names, it would let the name in)");
}

Result<PipelineRegistry::Added> PipelineRegistry::Add(const std::string& name,
                                                      const std::string& hash,
                                                      std::string canonical_json, Micros now,
                                                      const std::string& actor,
                                                      storage::RunBatch* batch) {
  if (name.empty() || hash.empty()) {
    return Status::InvalidInput("a pipeline needs a name and a snapshot hash to be registered");
  }
  if (name.size() > 200) return Status::InvalidInput("pipeline name longer than 200 bytes");
  if (require_domain_prefix_) APOLLO11_RETURN_IF_ERROR(CheckDomainPrefix(name));
  APOLLO11_RETURN_IF_ERROR(Load());
  auto versions = VersionsOf(name);
  if (!versions.ok()) return versions.status();
  storage::PipelineStateRecord& state = states_[name];
  state.name = name;
  if (state.active != 0) {
    for (const auto& v : **versions) {
      if (v.version == state.active && v.hash == hash) return Added{v, true};
    }
  }
  storage::PipelineVersionRecord record{name, state.latest + 1, hash, now, actor};
  state.latest = record.version;
  state.active = record.version;
  state.changed_at = now;
  (*versions)->push_back(record);
  batch->PutPipeline(hash, std::move(canonical_json));
  batch->PutPipelineVersion(record);
  batch->PutPipelineState(state);
  return Added{record, false};
}

Result<storage::PipelineVersionRecord> PipelineRegistry::Resolve(const std::string& name,
                                                                 const std::string& ref) {
  APOLLO11_RETURN_IF_ERROR(Load());
  auto state = states_.find(name);
  if (state == states_.end()) {
    return Status::NotFound("no pipeline " + name +
                            " in the registry (register it with apollo11 pipelines add FILE)");
  }
  auto versions = VersionsOf(name);
  if (!versions.ok()) return versions.status();
  const auto& all = **versions;
  if (ref.empty()) {
    if (state->second.active == 0) {
      return Status::InvalidInput("pipeline " + name +
                                  " was removed; name a version (NAME@N) or add it again");
    }
    for (const auto& v : all) {
      if (v.version == state->second.active) return v;
    }
    return Status::NotFound("the active version of " + name + " is missing from the registry");
  }
  const size_t dash = ref.find('-');
  const std::string seq = dash == std::string::npos ? ref : ref.substr(0, dash);
  std::vector<const storage::PipelineVersionRecord*> found;
  for (const auto& v : all) {
    if (AllDigits(seq) && std::to_string(v.version) == std::to_string(std::stoul(seq))) {
      if (dash == std::string::npos || v.hash.rfind(ref.substr(dash + 1), 0) == 0) {
        found.push_back(&v);
      }
    } else if (!AllDigits(ref) && HexPrefix(ref) && v.hash.rfind(ref, 0) == 0) {
      found.push_back(&v);
    }
  }
  if (found.size() == 1) return *found.front();
  if (found.size() > 1) {
    return Status::InvalidInput("version '" + ref + "' of " + name +
                                " is ambiguous: " + Known(all));
  }
  return Status::NotFound("pipeline " + name + " has no version '" + ref +
                          "' (versions: " + Known(all) + ")");
}

Status PipelineRegistry::SetPaused(const std::string& name, bool paused, Micros now,
                                   const std::string& actor, storage::RunBatch* batch) {
  APOLLO11_RETURN_IF_ERROR(Load());
  auto it = states_.find(name);
  if (it == states_.end()) return Status::NotFound("no pipeline " + name + " in the registry");
  storage::PipelineStateRecord& state = it->second;
  state.paused = paused;
  state.paused_by = paused ? actor : "";
  state.changed_at = now;
  batch->PutPipelineState(state);
  return Status::Ok();
}

Status PipelineRegistry::Remove(const std::string& name, Micros now, storage::RunBatch* batch) {
  APOLLO11_RETURN_IF_ERROR(Load());
  auto it = states_.find(name);
  if (it == states_.end() || it->second.active == 0) {
    return Status::NotFound("no pipeline " + name + " in the registry");
  }
  it->second.active = 0;
  it->second.changed_at = now;
  batch->PutPipelineState(it->second);
  return Status::Ok();
}

Result<std::optional<storage::PipelineStateRecord>> PipelineRegistry::State(
    const std::string& name) {
  APOLLO11_RETURN_IF_ERROR(Load());
  auto it = states_.find(name);
  if (it == states_.end()) return std::optional<storage::PipelineStateRecord>();
  return std::optional<storage::PipelineStateRecord>(it->second);
}

Result<std::vector<storage::PipelineStateRecord>> PipelineRegistry::States() {
  APOLLO11_RETURN_IF_ERROR(Load());
  std::vector<storage::PipelineStateRecord> out;
  for (const auto& [name, state] : states_) out.push_back(state);
  return out;
}

Result<std::vector<storage::PipelineVersionRecord>> PipelineRegistry::Versions(
    const std::string& name) {
  auto versions = VersionsOf(name);
  if (!versions.ok()) return versions.status();
  return **versions;
}

Result<std::optional<std::string>> PipelineRegistry::RunOfKey(const std::string& name,
                                                              const std::string& key) {
  auto it = keys_.find({name, key});
  if (it != keys_.end()) return std::optional<std::string>(it->second);
  return store_->RunOfTriggerKey(name, key);
}

void PipelineRegistry::RememberKey(const std::string& name, const std::string& key,
                                   const std::string& run_id, Micros now,
                                   storage::RunBatch* batch) {
  keys_[{name, key}] = run_id;
  batch->PutTriggerKey({name, key, run_id, now});
}

}  // namespace apollo11::actors

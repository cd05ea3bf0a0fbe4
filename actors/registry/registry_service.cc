#include "actors/registry/registry_service.h"

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "actors/scheduler/scheduler_run.h"
#include "dsl/param_values.h"
#include "dsl/pipeline_json.h"

namespace apollo11::actors {

RegistryService::RegistryService(storage::RegistryStore* registry, storage::RunReader* runs,
                                 const Clock* clock, RegistryHost* host)
    : registry_(registry), runs_(runs), clock_(clock), host_(host) {}

Result<std::optional<StartResult>> RegistryService::KnownKey(const StartRequest& request) {
  if (request.trigger_key.size() > 256) {
    return Status::InvalidInput("an idempotency key may hold at most 256 bytes");
  }
  auto seen = registry_.RunOfKey(request.name, request.trigger_key);
  if (!seen.ok()) return seen.status();
  if (!seen->has_value()) return std::optional<StartResult>();
  StartResult out{**seen, 0, true};
  if (auto version = host_->ActiveRunVersion(out.run_id)) {
    out.version = *version;
  } else if (auto rec = runs_->GetRun(out.run_id); rec.ok() && rec->has_value()) {
    out.version = (*rec)->pipeline_version;
  }
  return std::optional<StartResult>(out);
}

Status RegistryService::SameRequest(const StartRequest& request, const StartResult& known) {
  std::string differ;
  if (!request.version.empty()) {
    auto version = registry_.Resolve(request.name, request.version);
    if (version.ok() && version->version != known.version) {
      differ = "version " + std::to_string(version->version) + " (the run has version " +
               std::to_string(known.version) + ")";
    }
  }
  auto rec = runs_->GetRun(known.run_id);
  if (rec.ok() && rec->has_value()) {  // not yet committed: nothing to compare
    for (const auto& [name, value] : request.params) {
      auto had = (*rec)->params.find(name);
      if (had != (*rec)->params.end() && had->second == value) continue;
      differ += (differ.empty() ? "" : ", ") + name + "=" + value + " (the run has " +
                (had == (*rec)->params.end() ? std::string("none") : had->second) + ")";
    }
  }
  if (differ.empty()) return Status::Ok();
  return Status::Conflict("idempotency key " + request.trigger_key + " started run " +
                          known.run_id + " of " + request.name + " with other values: " + differ +
                          "; a key names one request: use a new key for a different one");
}

Result<StartResult> RegistryService::StartPinned(const StartRequest& request) {
  if (!request.trigger_key.empty()) {
    auto known = KnownKey(request);
    if (!known.ok()) return known.status();
    if (known->has_value()) {
      APOLLO11_RETURN_IF_ERROR(SameRequest(request, **known));
      return **known;
    }
  }
  auto version = registry_.Resolve(request.name, request.version);
  if (!version.ok()) return version.status();
  if (!request.ignore_pause) {
    auto state = registry_.State(request.name);
    if (!state.ok()) return state.status();
    if (state->has_value() && (*state)->paused) {
      return Status::Error(
          StatusCode::kConflict,
          "pipeline " + request.name + " is paused" +
              ((*state)->paused_by.empty() ? "" : " (by " + (*state)->paused_by + ")") +
              ": no new runs start until `apollo11 unpause " + request.name + "`");
    }
  }
  auto snapshot = runs_->GetPipeline(version->hash);
  if (!snapshot.ok()) return snapshot.status();
  if (!snapshot->has_value()) {
    return Status::NotFound("the snapshot " + version->hash + " of " + request.name + "@" +
                            std::to_string(version->version) + " is missing from the journal");
  }
  auto spec = SpecFromSnapshot(**snapshot, "registered pipeline");
  if (!spec.ok()) return spec.status();
  auto params = dsl::ResolveParams(request.name, spec->params, request.params);
  if (!params.ok()) return params.status();
  SubmitRun submit;
  submit.pipeline_json = std::move(**snapshot);
  submit.pipeline_hash = version->hash;
  submit.params = std::move(*params);
  auto run_id = host_->StartRun(std::move(submit), std::move(*spec), version->version);
  if (!run_id.ok()) return run_id.status();
  if (!request.trigger_key.empty()) {
    registry_.RememberKey(request.name, request.trigger_key, *run_id, clock_->Now(),
                          host_->batch());
  }
  spdlog::info("run {} of {}@{} started by {}{}", *run_id, request.name, VersionLabel(*version),
               request.actor,
               request.trigger_key.empty() ? "" : " (key " + request.trigger_key + ")");
  return StartResult{*run_id, version->version, false};
}

Result<std::string> RegistryService::StateJson(const std::string& name) {
  auto state = registry_.State(name);
  if (!state.ok()) return state.status();
  nlohmann::json j = {{"name", name}};
  if (state->has_value()) {
    j["active"] = (*state)->active;
    j["paused"] = (*state)->paused;
  }
  return j.dump();
}

Result<std::string> RegistryService::Add(const RegistryRequest& r, const std::string& actor,
                                         Micros now) {
  auto spec = SpecFromSnapshot(r.pipeline_json, "registered pipeline");
  if (!spec.ok()) return spec.status();
  if (spec->name != r.name) {
    return Status::InvalidInput("the snapshot names pipeline " + spec->name + ", not " + r.name);
  }
  // The hash is the coordinator's own: a version is named by what it holds.
  const std::string hash = dsl::HashCanonicalJson(r.pipeline_json);
  auto added = registry_.Add(r.name, hash, r.pipeline_json, now, actor, host_->batch());
  if (!added.ok()) {
    host_->StagePipelineRejected(r.name, added.status().message());
    return added.status();
  }
  if (!added->unchanged) {
    spdlog::info("pipeline {}@{} registered by {}", r.name, VersionLabel(added->version), actor);
  }
  return nlohmann::json{{"name", r.name},
                        {"version", added->version.version},
                        {"hash", added->version.hash},
                        {"label", VersionLabel(added->version)},
                        {"unchanged", added->unchanged}}
      .dump();
}

Result<std::string> RegistryService::Trigger(const RegistryRequest& r, const std::string& actor) {
  StartRequest start;
  start.name = r.name;
  start.version = r.ref;
  start.params = r.params;
  start.trigger_key = r.key;
  start.actor = actor;
  auto started = StartPinned(start);
  if (!started.ok()) return started.status();
  return nlohmann::json{{"run_id", started->run_id},
                        {"name", r.name},
                        {"version", started->version},
                        {"existing", started->existing}}
      .dump();
}

Result<std::string> RegistryService::Apply(const RegistryRequest& r) {
  const Micros now = clock_->Now();
  const std::string actor = r.actor.empty() ? "client" : r.actor.substr(0, 64);
  if (r.name.empty()) return Status::InvalidInput("a registry request needs a pipeline name");
  switch (static_cast<RegistryOp>(r.op)) {
    case RegistryOp::kAdd:
      return Add(r, actor, now);
    case RegistryOp::kReject:
      spdlog::warn("pipeline {}: a new version was rejected; the active one stays: {}", r.name,
                   r.errors);
      host_->StagePipelineRejected(r.name, r.errors);
      return Status::InvalidInput(r.errors.empty() ? "pipeline " + r.name + " was rejected"
                                                   : r.errors);
    case RegistryOp::kRemove:
      APOLLO11_RETURN_IF_ERROR(registry_.Remove(r.name, now, host_->batch()));
      spdlog::info("pipeline {} removed from the registry by {}", r.name, actor);
      return StateJson(r.name);
    case RegistryOp::kPause:
    case RegistryOp::kUnpause: {
      const bool paused = static_cast<RegistryOp>(r.op) == RegistryOp::kPause;
      APOLLO11_RETURN_IF_ERROR(registry_.SetPaused(r.name, paused, now, actor, host_->batch()));
      spdlog::info("pipeline {} {} by {}", r.name, paused ? "paused" : "unpaused", actor);
      return StateJson(r.name);
    }
    case RegistryOp::kTrigger:
      return Trigger(r, actor);
    case RegistryOp::kBackfill:
      // The client gate answers it from the schedules (ScheduleCore).
      return Status::Unsupported("a backfill is not a registry change");
  }
  return Status::InvalidInput("unknown registry operation " + std::to_string(r.op));
}

}  // namespace apollo11::actors

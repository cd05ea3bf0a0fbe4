#pragma once
// The registry's side of the scheduler: a client's registry request (add,
// reject, remove, pause, unpause, trigger) and the runs a registered
// pipeline starts (a trigger, a schedule's fire, a backfill: StartPinned).
// It owns the registry's state (PipelineRegistry: versions, active one,
// pause, trigger keys) and reaches the scheduler through a narrow port,
// RegistryHost: the turn's batch, starting a run, an alert after the commit.
//
// Scheduler thread only; what it stages is committed by the turn's commit.

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "actors/client_protocol.h"
#include "actors/registry/pipeline_registry.h"
#include "common/clock.h"
#include "common/status.h"
#include "dsl/pipeline.h"
#include "storage/registry_store.h"
#include "storage/run_batch.h"
#include "storage/run_reader.h"

namespace apollo11::actors {

// A request to start a run of a registered pipeline, NAME@VERSION.
struct StartRequest {
  std::string name;
  std::string version;  // "" = the active one; "N", "N-HASH" or a hash prefix
  // Overrides of the declared params: undeclared or ill-typed ones are
  // refused (dsl::ResolveParams).
  std::map<std::string, std::string> params;
  // "" = none. A key already seen for `name` starts nothing and answers the
  // run it started (stored with the run in one commit, so it survives a
  // crash). Schedules use "schedule:<time>", backfill likewise.
  std::string trigger_key;
  std::string actor = "trigger";  // who asked, for the log line
  bool ignore_pause = false;      // true only for operator-driven reruns
};
struct StartResult {
  std::string run_id;
  uint32_t version = 0;
  bool existing = false;  // the trigger key had started run_id already
};

// What the registry needs of the scheduler that hosts it.
class RegistryHost {
 public:
  virtual ~RegistryHost() = default;
  // The turn's batch, committed by the turn's commit.
  virtual storage::RunBatch* batch() = 0;
  // Starts a run of the validated snapshot in `submit` (its model `spec`),
  // pinned to registered version `version`; returns its id.
  virtual Result<std::string> StartRun(SubmitRun submit, dsl::PipelineSpec spec,
                                       uint32_t version) = 0;
  // The version active run `run_id` is pinned to; nullopt when it is not
  // active in this scheduler.
  virtual std::optional<uint32_t> ActiveRunVersion(const std::string& run_id) const = 0;
  // Raises `pipeline_rejected` for `name` after the next commit.
  virtual void StagePipelineRejected(const std::string& name, const std::string& errors) = 0;
};

class RegistryService {
 public:
  // Every pointer must outlive the service.
  RegistryService(storage::RegistryStore* registry, storage::RunReader* runs, const Clock* clock,
                  RegistryHost* host);

  // Starts a run of NAME@VERSION with the request's params, pinned to that
  // version, or answers the run its trigger key started. NotFound: no such
  // pipeline or version; Conflict: the pipeline is paused; InvalidInput: a
  // removed pipeline without a version, bad params, a key over 256 bytes.
  Result<StartResult> StartPinned(const StartRequest& request);
  // Applies a client's registry request and returns the reply's JSON (see
  // RegistryReply). A kReject stages the pipeline_rejected alert and
  // returns InvalidInput carrying the errors; kBackfill is the schedules'
  // (Unsupported here).
  Result<std::string> Apply(const RegistryRequest& request);

  PipelineRegistry& pipelines() { return registry_; }

 private:
  Result<std::string> Add(const RegistryRequest& r, const std::string& actor, Micros now);
  Result<std::string> Trigger(const RegistryRequest& r, const std::string& actor);
  // {name, active, paused} of `name` as the registry holds it now.
  Result<std::string> StateJson(const std::string& name);
  // The run key `key` of `name` started, when it started one.
  Result<std::optional<StartResult>> KnownKey(const StartRequest& request);
  // Ok when `request` asks for what its key's run `known` got (each param it
  // gives, and the version it names, if any); a Conflict naming the run and
  // each difference otherwise.
  Status SameRequest(const StartRequest& request, const StartResult& known);

  PipelineRegistry registry_;
  storage::RunReader* runs_;
  const Clock* clock_;
  RegistryHost* host_;
};

}  // namespace apollo11::actors

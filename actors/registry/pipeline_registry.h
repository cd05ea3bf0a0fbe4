#pragma once
// registry: the pipeline registry's rules, apart from any actor. Pipelines
// are registered as NAME@VERSION: VERSION is a sequence number per name
// (1, 2, ...; never reused) naming the content hash of the resolved snapshot,
// shown as "N-HASH". Adding the snapshot the active version already has
// changes nothing. A pipeline may be paused (no new scheduled or triggered
// runs) and removed (no version active; its versions and runs stay readable).
// Trigger keys make a start idempotent: (name, key) starts one run.
//
// The registry stages every change into the caller's RunBatch and keeps an
// in-memory view that includes what is staged, so the next request in the
// same turn sees it; the scheduler is the one writer, so that view is the
// truth once the batch commits (a failed commit is retried with the batch
// kept). Single-threaded: the scheduler's thread calls everything.

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "storage/records.h"
#include "storage/registry_store.h"
#include "storage/run_batch.h"

namespace apollo11::actors {

// "N-HASH" for version N of snapshot HASH.
std::string VersionLabel(const storage::PipelineVersionRecord& v);

// Ok when `name` has a domain prefix (DOMAIN.NAME: a dot, neither first nor
// last); otherwise the InvalidInput a coordinator that requires one answers
// (registration and every run start give the same).
Status CheckDomainPrefix(const std::string& name);

class PipelineRegistry {
 public:
  // `store` must outlive the registry.
  explicit PipelineRegistry(storage::RegistryStore* store) : store_(store) {}

  // Policy: names must carry a domain prefix ("order.sync"), as
  // --require-domain-prefix asks.
  void set_require_domain_prefix(bool on) { require_domain_prefix_ = on; }

  struct Added {
    storage::PipelineVersionRecord version;
    bool unchanged = false;  // the active version has this snapshot already
  };
  // Registers snapshot `canonical_json` (content hash `hash`) of pipeline
  // `name` as its next version and makes it active. InvalidInput for a name
  // without a domain prefix under the policy, or an empty name or hash.
  Result<Added> Add(const std::string& name, const std::string& hash, std::string canonical_json,
                    Micros now, const std::string& actor, storage::RunBatch* batch);

  // The version `ref` of `name`: "" = the active one, "N", "N-HASH", or a
  // prefix (4+ hex digits) of one version's hash. NotFound naming what
  // exists; InvalidInput for a removed pipeline asked without a version.
  Result<storage::PipelineVersionRecord> Resolve(const std::string& name, const std::string& ref);

  // Pauses or unpauses `name`. NotFound when it was never registered.
  Status SetPaused(const std::string& name, bool paused, Micros now, const std::string& actor,
                   storage::RunBatch* batch);
  // Removes `name`: no version is active any more. NotFound when it is not
  // registered (or removed already).
  Status Remove(const std::string& name, Micros now, storage::RunBatch* batch);

  // The state of `name`, nullopt when never registered.
  Result<std::optional<storage::PipelineStateRecord>> State(const std::string& name);
  // Every registered name (removed ones too), ordered by name.
  Result<std::vector<storage::PipelineStateRecord>> States();
  // The versions of `name`, oldest first.
  Result<std::vector<storage::PipelineVersionRecord>> Versions(const std::string& name);

  // The run that trigger key `key` of `name` started, if any.
  Result<std::optional<std::string>> RunOfKey(const std::string& name, const std::string& key);
  // Stages that `key` of `name` started `run_id`.
  void RememberKey(const std::string& name, const std::string& key, const std::string& run_id,
                   Micros now, storage::RunBatch* batch);

 private:
  // Loads the states once from the store.
  Status Load();
  Result<std::vector<storage::PipelineVersionRecord>*> VersionsOf(const std::string& name);

  storage::RegistryStore* store_;
  bool require_domain_prefix_ = false;
  bool loaded_ = false;
  std::map<std::string, storage::PipelineStateRecord> states_;
  std::map<std::string, std::vector<storage::PipelineVersionRecord>> versions_;  // loaded lazily
  std::map<std::pair<std::string, std::string>, std::string> keys_;              // staged or seen
};

}  // namespace apollo11::actors

#pragma once
// The pipeline registry's durable state (one part of RunStore,
// storage/run_store.h): registered pipelines, their versions and state, and
// the runs their trigger keys started. Written through RunBatch; read here.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "storage/records.h"

namespace apollo11::storage {

class RegistryStore {
 public:
  virtual ~RegistryStore() = default;

  // registry: the state of every registered pipeline name (removed ones
  // too, with active = 0), ordered by name.
  virtual Result<std::vector<PipelineStateRecord>> ListPipelineStates() = 0;
  // registry: the state of pipeline `name`; nullopt when never registered.
  virtual Result<std::optional<PipelineStateRecord>> GetPipelineState(const std::string& name) = 0;
  // registry: the versions of pipeline `name`, oldest first (empty when none).
  virtual Result<std::vector<PipelineVersionRecord>> PipelineVersions(const std::string& name) = 0;
  // registry: the run that trigger key `key` of pipeline `name` started;
  // nullopt when the key is unknown.
  virtual Result<std::optional<std::string>> RunOfTriggerKey(const std::string& name,
                                                             const std::string& key) = 0;
};

}  // namespace apollo11::storage

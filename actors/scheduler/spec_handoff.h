#pragma once
// A parsed pipeline handed from a client in this process (the embedded
// `apollo11 run`) to the scheduler with its submission, so the scheduler
// does not decode again the snapshot the client has just encoded from the
// same model (the 5,000-task noop DAG: about 25 ms of decoding, an inflate
// and a deflate on the scheduler's thread before the run could start).
//
// Contract: Offer(hash, spec) is given a spec equal to what the scheduler
// would decode from the snapshot whose content hash is `hash`, locations
// dropped (dsl::DropLocations), and the submission carrying that
// snapshot follows. Take(hash) returns the spec offered under `hash` once;
// a submission with no offer (any remote client) is decoded as before. One
// offer is kept at most: a newer one replaces it. Thread-safe.

#include <optional>
#include <string>

#include "dsl/pipeline.h"

namespace apollo11::actors {

class SpecHandoff {
 public:
  static void Offer(std::string hash, dsl::PipelineSpec spec);
  static std::optional<dsl::PipelineSpec> Take(const std::string& hash);
};

}  // namespace apollo11::actors

#include "storage/run_batch.h"

#include "storage/record_codec.h"

namespace apollo11::storage {

void RunBatch::PutExecution(const ExecutionRecord& r) {
  executions_.push_back({r.exec_id, codec::EncodeExecution(r)});
}

void RunBatch::PutExecution(const ExecutionRecord& r, std::string_view run_id,
                            std::string_view trace_id) {
  executions_.push_back({r.exec_id, codec::EncodeExecution(r, run_id, trace_id)});
}

}  // namespace apollo11::storage

#include "storage/run_batch.h"

#include "storage/record_codec.h"

namespace apollo11::storage {

void RunBatch::PutExecution(const ExecutionRecord& r) {
  executions_.push_back({r.exec_id, codec::EncodeExecution(r)});
}

}  // namespace apollo11::storage

#include "storage/run_batch.h"

#include "common/ids.h"
#include "storage/record_codec.h"

namespace apollo11::storage {

namespace {

std::string ExecIdOf(const ExecutionRecord& r, std::string_view run_id) {
  return r.exec_id.empty() ? MakeExecId(run_id, r.task_id) : r.exec_id;
}

}  // namespace

void RunBatch::PutExecution(const ExecutionRecord& r) {
  executions_.push_back({ExecIdOf(r, r.run_id.get()), codec::EncodeExecution(r)});
}

void RunBatch::PutExecution(const ExecutionRecord& r, std::string_view run_id,
                            std::string_view trace_id) {
  executions_.push_back({ExecIdOf(r, run_id), codec::EncodeExecution(r, run_id, trace_id)});
}

}  // namespace apollo11::storage

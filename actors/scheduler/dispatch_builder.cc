#include "actors/scheduler/dispatch_builder.h"

#include <algorithm>

#include "common/wire_limits.h"
#include "dsl/task_fields.h"
#include "dsl/templated_fields.h"
#include "transport/codec.h"

namespace apollo11::actors {
namespace {

// The id a slot runs as: its task's, or a foreach instance's "ID[i]".
const std::string& TaskIdOf(const SchedulerRun& run, int task) {
  return run.dag->IsInstance(task) ? run.execs[task].task_id : run.task_spec(task).id;
}

}  // namespace

std::string DispatchBuilder::ExpandKey(const std::string& tmpl, const std::string& run_id,
                                       const std::string& task_id,
                                       const std::map<std::string, std::string>& params) {
  if (tmpl.empty()) return run_id + "." + task_id;
  std::string out;
  size_t pos = 0;
  while (pos < tmpl.size()) {
    size_t open = tmpl.find("${", pos);
    if (open == std::string::npos) {
      out.append(tmpl, pos, std::string::npos);
      break;
    }
    out.append(tmpl, pos, open - pos);
    size_t close = tmpl.find('}', open);
    if (close == std::string::npos) {
      out.append(tmpl, open, std::string::npos);
      break;
    }
    std::string name = tmpl.substr(open + 2, close - open - 2);
    if (name == "run_id") {
      out += run_id;
    } else if (name == "task_id") {
      out += task_id;
    } else if (name.rfind("params.", 0) == 0) {
      auto it = params.find(name.substr(7));
      if (it != params.end()) out += it->second;
    }
    pos = close + 1;
  }
  return out;
}

QueuedExec DispatchBuilder::Build(const SchedulerRun& run, int task, Micros ready_at) const {
  const dsl::TaskSpec& spec = run.task_spec(task);
  QueuedExec q;
  q.group = spec.group;
  q.priority = spec.priority;
  q.ready_at = ready_at;
  q.expected_ms = run.expected_ms[task];
  q.labels = spec.labels;
  transport::Dispatch& d = q.dispatch;
  d.exec_id = run.ExecId(task);
  d.attempt = run.dag->attempt(task);
  d.trace_id = run.trace_id;
  const std::string idempotency_key =
      ExpandKey(spec.idempotency_key, run.run_id, TaskIdOf(run, task), run.record.params);
  transport::TaskPayload& p = d.task;
  dsl::CopyWireFields(spec, &p);  // the fields the task list marks for the wire
  p.type = static_cast<uint8_t>(spec.type);
  p.timeout_ms = spec.timeout ? spec.timeout->count() : 0;
  p.kill_grace_ms = kill_grace_.count();
  p.run_precheck = !spec.precheck.empty() && run.dag->requeues(task) > 0;
  if (spec.type == dsl::TaskType::kNoop) {
    p.env.clear();  // a noop runs nothing: no environment to send
    return q;
  }
  Status expanded = ExpandTemplates(run, task, idempotency_key, &p);
  if (!expanded.ok()) {
    Refuse(&d, "could not fill in the task's fields: " + expanded.message());
    return q;
  }
  FillEnv(run, task, d, idempotency_key, &p);
  RefuseIfUnsendable(&d);
  return q;
}

Status DispatchBuilder::ExpandTemplates(const SchedulerRun& run, int task,
                                        const std::string& idempotency_key,
                                        transport::TaskPayload* p) {
  const storage::ExecutionRecord& rec = run.execs[task];
  dsl::TemplateValues values;
  values.run_id = run.run_id;
  values.task_id = TaskIdOf(run, task);
  if (run.dag->IsInstance(task)) values.item = &rec.item.get();
  values.idempotency_key = idempotency_key;
  values.params = &run.record.params;
  values.output = [&run](const std::string& id) -> const std::string* {
    const int up = run.graph->Find(id);
    return up < 0 ? nullptr : &run.execs[up].task_output.get();
  };
  Status status = Status::Ok();
  dsl::TemplateBudget budget;  // shared by the task's fields
  dsl::ForEachTemplatedField(
      *p, [&](const char* key, dsl::TemplateContext ctx, std::string& value) {
        if (!status.ok() || !dsl::TemplateExpander::HasPlaceholder(value)) return;
        Result<std::string> out = dsl::TemplateExpander::Expand(value, ctx, values, &budget);
        if (!out.ok()) {
          status = Status::InvalidInput(std::string("'") + key + "': " + out.status().message());
          return;
        }
        value = std::move(*out);
      });
  return status;
}

void DispatchBuilder::FillEnv(const SchedulerRun& run, int task, const transport::Dispatch& d,
                              const std::string& idempotency_key, transport::TaskPayload* p) const {
  const dsl::TaskSpec& spec = run.task_spec(task);
  p->env["APOLLO11_RUN_ID"] = run.run_id;
  p->env["APOLLO11_TASK_ID"] = TaskIdOf(run, task);
  if (run.dag->IsInstance(task)) {
    p->env["APOLLO11_ITEM"] = run.execs[task].item;
    p->env["APOLLO11_ITEM_INDEX"] = std::to_string(run.dag->InstanceIndex(task));
  }
  p->env["APOLLO11_EXECUTION_ID"] = d.exec_id;
  p->env["APOLLO11_ATTEMPT"] = std::to_string(d.attempt);
  p->env["APOLLO11_TRACE_ID"] = d.trace_id;
  // W3C Trace Context: the attempt's span in the run's trace, for the
  // task's own tracing (and the traceparent header of an http task).
  // The author's own `env: {TRACEPARENT: ...}` (a trace begun elsewhere) wins.
  if (std::string parent = TraceParent(d.trace_id, d.exec_id, d.attempt); !parent.empty()) {
    p->env.emplace("TRACEPARENT", std::move(parent));
  }
  p->env["APOLLO11_IDEMPOTENCY_KEY"] = idempotency_key;
  p->env["APOLLO11_PIPELINE"] = run.spec().name;
  // Only processes get inputs; db and http tasks get their values through
  // templates the coordinator expands (ExpandTemplates).
  if (spec.type != dsl::TaskType::kShell && spec.type != dsl::TaskType::kPython) return;
  // The graph's edges, in declaration order (the spec's lists are freed).
  const auto upstream = run.graph->Upstream(run.dag->ParentOf(task));
  p->inputs.reserve(run.record.params.size() + upstream.size());
  for (const auto& [name, value] : run.record.params) {
    p->inputs.push_back({static_cast<uint8_t>(transport::InputKind::kParam), name, value});
  }
  const size_t cap = OutputShare(output_env_cap_, upstream.size());
  for (const engine::Edge& edge : upstream) {
    const std::string& out = run.outputs[edge.task];
    p->inputs.push_back({static_cast<uint8_t>(transport::InputKind::kOutput),
                         run.graph->id(edge.task),
                         out.size() > cap ? out.substr(out.size() - cap) : out});
  }
}

size_t DispatchBuilder::OutputShare(size_t per_upstream_cap, size_t upstreams) {
  if (upstreams == 0) return per_upstream_cap;
  return std::min(per_upstream_cap, kMaxDispatchOutputsBytes / upstreams);
}

void DispatchBuilder::RefuseIfUnsendable(transport::Dispatch* d) {
  Status fits = transport::CheckFits(transport::MsgType::kDispatch, *d);
  if (fits.ok()) return;
  Refuse(d,
         "the task cannot be sent to a worker: " + fits.message() + " (see Limits in docs/dsl.md)");
}

void DispatchBuilder::Refuse(transport::Dispatch* d, std::string reason) {
  transport::TaskPayload refused;
  refused.type = d->task.type;
  refused.timeout_ms = d->task.timeout_ms;
  refused.kill_grace_ms = d->task.kill_grace_ms;
  refused.refusal = std::move(reason);
  d->task = std::move(refused);
}

}  // namespace apollo11::actors

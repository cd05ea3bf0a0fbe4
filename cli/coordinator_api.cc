#include "cli/coordinator_api.h"

#include "cli/pipeline_registration.h"
#include "common/json_dump.h"
#include "dsl/parser.h"
#include "dsl/pipeline_json.h"

namespace apollo11::cli {

CoordinatorApi::CoordinatorApi(std::string endpoint, std::optional<transport::CurveKeyPair> curve,
                               std::string server_public, std::chrono::milliseconds timeout)
    : endpoint_(std::move(endpoint)),
      curve_(std::move(curve)),
      server_public_(std::move(server_public)),
      timeout_(timeout) {}

Result<RemoteCoordinator*> CoordinatorApi::Link() {
  if (!link_) {
    auto link = RemoteCoordinator::ConnectWithKeys(endpoint_, curve_, server_public_, timeout_);
    if (!link.ok()) return link.status();
    link_ = std::move(*link);
    link_->set_warn_on_journal_error(false);
  }
  link_->set_on_behalf(on_behalf_);
  return link_.get();
}

void CoordinatorApi::ActAs(const observability::Principal& caller) {
  actor_ = "http:" + caller.name;
  on_behalf_.principal = caller.name;
  on_behalf_.role = caller.roles ? transport::FormatRoles(caller.roles) : "";
  on_behalf_.transport = caller.transport;
  on_behalf_.source = caller.address;
  on_behalf_.request_id = caller.request_id;
}

Status CoordinatorApi::Record(const observability::Principal& caller, const Note& note) {
  ActAs(caller);
  auto link = Link();
  if (!link.ok()) return link.status();
  actors::AuditNote sent;
  sent.action = note.action;
  sent.target = note.target;
  sent.ok = note.ok;
  sent.outcome = note.outcome;
  Status s = (*link)->Record(std::move(sent));
  DropLinkAfter(s);
  return s;
}

Result<nlohmann::json> CoordinatorApi::Audit(const storage::AuditFilter& filter) {
  auto link = Link();
  if (!link.ok()) return link.status();
  return Forget((*link)->Audit(filter));
}

void CoordinatorApi::DropLinkAfter(const Status& status) {
  if (!status.ok() && status.code() == StatusCode::kIo) link_.reset();
  // A standby sent the request on to the leader: the next one starts at
  // this node's coordinator again (which may lead by then).
  if (link_ && link_->current_endpoint() != endpoint_) link_.reset();
}

template <class T>
T CoordinatorApi::Forget(T result) {
  DropLinkAfter(result.ok() ? Status::Ok() : result.status());
  return result;
}

Result<nlohmann::json> CoordinatorApi::Query(const std::string& kind, const std::string& id,
                                             uint32_t limit) {
  auto link = Link();
  if (!link.ok()) return link.status();
  return Forget((*link)->Query(kind, id, "", limit ? limit : 20));
}

Result<nlohmann::json> CoordinatorApi::RunsPage(const std::string& filter_json, uint32_t limit) {
  auto link = Link();
  if (!link.ok()) return link.status();
  return Forget((*link)->Query("runs_page", "", filter_json, limit));
}

Result<nlohmann::json> CoordinatorApi::Changes(const std::string& since, uint32_t wait_ms) {
  auto link = Link();
  if (!link.ok()) return link.status();
  return Forget((*link)->Query("changes", "", since, wait_ms));
}

Result<nlohmann::json> CoordinatorApi::Logs(const std::string& exec_id, const std::string& stream,
                                            uint32_t attempt, uint64_t offset, uint32_t max_bytes,
                                            std::string* data) {
  auto link = Link();
  if (!link.ok()) return link.status();
  nlohmann::json meta;
  auto bytes = Forget((*link)->FetchLog(exec_id, stream, attempt, offset, max_bytes, &meta));
  if (!bytes.ok()) return bytes.status();
  *data = std::move(*bytes);
  return meta;
}

Result<nlohmann::json> CoordinatorApi::TraceLog(const std::string& exec_id, std::string* data) {
  auto link = Link();
  if (!link.ok()) return link.status();
  nlohmann::json meta;
  auto lines = Forget((*link)->TraceLog(exec_id, &meta));
  if (!lines.ok()) return lines.status();
  *data = std::move(*lines);
  return meta;
}

Result<std::string> CoordinatorApi::Confirm(const std::string& exec_id, bool kill) {
  auto link = Link();
  if (!link.ok()) return link.status();
  return Forget((*link)->Confirm(exec_id, kill));
}

Result<std::string> CoordinatorApi::Trigger(const std::string& name,
                                            const std::map<std::string, std::string>& params) {
  TriggerSpec t;
  t.name = name;
  t.params = params;
  auto run = TriggerRun(t);
  if (!run.ok()) return run.status();
  return run->value("run_id", "");
}

Result<nlohmann::json> CoordinatorApi::TriggerRun(const TriggerSpec& t) {
  actors::RegistryRequest r;
  r.op = static_cast<uint8_t>(actors::RegistryOp::kTrigger);
  r.name = t.name;
  r.ref = t.version;
  r.key = t.key;
  r.params = t.params;
  return SendRegistry(std::move(r));
}

Result<nlohmann::json> CoordinatorApi::SendRegistry(actors::RegistryRequest r) {
  r.actor = actor_;
  auto link = Link();
  if (!link.ok()) return link.status();
  return Forget((*link)->Registry(r));
}

Result<nlohmann::json> CoordinatorApi::ChangeRegistry(const RegistryChange& c) {
  actors::RegistryRequest r;
  using actors::RegistryOp;
  const RegistryOp op = c.op == "pause"      ? RegistryOp::kPause
                        : c.op == "unpause"  ? RegistryOp::kUnpause
                        : c.op == "remove"   ? RegistryOp::kRemove
                        : c.op == "backfill" ? RegistryOp::kBackfill
                                             : static_cast<RegistryOp>(0);
  if (op == static_cast<RegistryOp>(0)) {
    return Status::InvalidInput("unknown registry change '" + c.op + "'");
  }
  r.op = static_cast<uint8_t>(op);
  r.name = c.name;
  r.from = c.from;
  r.to = c.to;
  r.max_active = c.max_active;
  r.dry_run = c.dry_run;
  return SendRegistry(std::move(r));
}

Result<nlohmann::json> CoordinatorApi::Register(const std::string& yaml, const std::string& label) {
  dsl::ParseOptions options;
  options.read_files = false;  // the request is the whole input: nothing read from this disk
  // Parsed as a file of a directory that does not exist (relative paths
  // lead nowhere), its diagnostics then naming `label`.
  const std::string anchor = "/nonexistent/apollo11-http/pipeline.yaml";
  dsl::ParseResult parsed = dsl::ParsePipelineText(yaml, anchor, options);
  for (dsl::Diagnostic& d : parsed.diagnostics) {
    if (d.where.file.str() == anchor) d.where.file = label;
  }
  actors::RegistryRequest r = RegistrationOf(&parsed, yaml, anchor, actor_);
  if (r.errors.starts_with(anchor)) r.errors.replace(0, anchor.size(), label);
  auto link = Link();
  if (!link.ok()) return link.status();
  auto reply = Forget((*link)->Registry(r));
  if (!parsed.ok()) {
    return Status::InvalidInput("the pipeline was rejected; the active version (if any) stays:\n" +
                                r.errors);
  }
  return reply;
}

Result<std::string> CoordinatorApi::Rerun(const std::string& run_id, const std::string& from,
                                          bool downstream) {
  auto link = Link();
  if (!link.ok()) return link.status();
  actors::RerunRun rerun;
  rerun.run_id = run_id;
  rerun.failed = from.empty();
  rerun.from_task = from;
  rerun.downstream = downstream;
  return Forget((*link)->Rerun(rerun));
}

Status CoordinatorApi::Cancel(const std::string& run_id, const std::string& reason) {
  auto link = Link();
  if (!link.ok()) return link.status();
  Status s = (*link)->Cancel(run_id, reason);
  DropLinkAfter(s);
  return s;
}

}  // namespace apollo11::cli

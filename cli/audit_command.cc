// `apollo11 audit [--since T] [--principal P] [--action A] [--limit N]
// [--json]`: the audit trail, newest first: who asked for what change,
// through what and from where, and what came of it. Through a coordinator
// (--coordinator or $APOLLO11_COORDINATOR; the key must have the admin
// role under CURVE) or from the local state dir's journal (whoever may read
// its files).

#include <cstdio>
#include <nlohmann/json.hpp>

#include "actors/queries/query_service.h"
#include "cli/client_flags.h"
#include "cli/command.h"
#include "cli/state_dir.h"
#include "common/json_dump.h"
#include "common/timestamp_parse.h"
#include "storage/journal.h"

namespace apollo11::cli {
namespace {

struct AuditFlags : ClientFlags {
  std::string since, principal, action;
  size_t limit = 100;
};

int FailAudit(const Status& s) { return FailCommand("audit", s); }

Result<storage::AuditFilter> AuditFilterOf(const AuditFlags& f) {
  storage::AuditFilter filter;
  filter.principal = f.principal;
  filter.action = f.action;
  filter.limit = f.limit;
  if (!f.since.empty()) {
    auto since = ParseSince(f.since, SystemClock().Now());
    if (!since.ok()) return since.status();
    filter.since = *since;
  }
  return filter;
}

// One line per record: when, who (role) through what, the action and its
// target, then what came of it and where the request came from.
void PrintAuditLines(const nlohmann::json& records) {
  if (records.empty()) {
    std::printf("no audit records match\n");
    return;
  }
  for (const auto& r : records) {
    const std::string role = r.value("role", "");
    std::printf("%s  %s%s via %s  %s %s: %s %s  [from %s, request %s]\n", r.value("at", "").c_str(),
                r.value("principal", "").c_str(), role.empty() ? "" : (" (" + role + ")").c_str(),
                r.value("transport", "").c_str(), r.value("action", "").c_str(),
                r.value("target", "").c_str(), r.value("ok", false) ? "done" : "REFUSED",
                r.value("outcome", "").c_str(), r.value("source", "").c_str(),
                r.value("request_id", "").c_str());
  }
}

int PrintAudit(const nlohmann::json& doc, bool json) {
  const nlohmann::json& records = doc.contains("records") ? doc["records"] : doc;
  if (doc.is_object() && !doc.value("complete", true)) {
    std::fprintf(stderr,
                 "apollo11 audit: the listing stopped after reading %zu records of the trail; "
                 "narrow it with --since\n",
                 storage::AuditFilter{}.max_scan);
  }
  if (json) {
    std::printf("%s\n", SafeJsonDump(records, 2).c_str());
  } else {
    PrintAuditLines(records);
  }
  return kExitOk;
}

int AuditRemote(const AuditFlags& f, const storage::AuditFilter& filter) {
  auto remote = f.Connect();
  if (!remote.ok()) return FailAudit(remote.status());
  auto doc = (*remote)->Audit(filter);
  if (!doc.ok()) return FailAudit(doc.status());
  return PrintAudit(*doc, f.json);
}

int AuditLocal(const AuditFlags& f, const storage::AuditFilter& filter) {
  auto journal = OpenJournalReadOnly(f.state_dir);
  if (!journal.ok()) return FailAudit(journal.status());
  bool complete = true;
  auto records = (*journal)->ListAudit(filter, &complete);
  if (!records.ok()) return FailAudit(records.status());
  nlohmann::json out = nlohmann::json::array();
  for (const storage::AuditRecord& r : *records) out.push_back(actors::AuditRecordJson(r));
  return PrintAudit(nlohmann::json{{"records", std::move(out)}, {"complete", complete}}, f.json);
}

}  // namespace

void AddAuditCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<AuditFlags>();
  CLI::App* cmd = app.add_subcommand(
      "audit", "the audit trail: who changed what, through what, from where, and the outcome");
  cmd->add_option("--since", f->since,
                  "only records from this time (2026-12-01T08:00:00Z) or age (90m, 1h, 7d) on");
  cmd->add_option("--principal", f->principal,
                  "only this principal's records (alice, key:Ab3dE9fG1h2J, anonymous)");
  cmd->add_option("--action", f->action, "only this action (cancel, trigger, submit, ...)");
  cmd->add_option("--limit", f->limit, "at most this many records, the newest (1 to 10000)")
      ->check(CLI::Range(1, 10000));
  ClientFlagHelp help;
  help.json = "the records as a JSON array, newest first";
  AddClientFlags(cmd, f.get(), kJsonFlag | kStateDirFlag | kRemoteFlags, help);
  cmd->callback([f, exit_code] {
    auto filter = AuditFilterOf(*f);
    if (!filter.ok()) {
      *exit_code = FailAudit(filter.status());
      return;
    }
    *exit_code = f->Endpoint().empty() ? AuditLocal(*f, *filter) : AuditRemote(*f, *filter);
  });
}

}  // namespace apollo11::cli

// registry: `apollo11 trigger NAME[@VERSION] -p k=v ... [--idempotency-key K]
// [--wait]`, `apollo11 pause|unpause NAME` and `apollo11 backfill NAME --from
// T1 --to T2 [--max-active N]`, against a coordinator's pipeline registry
// and schedules.

#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/client_flags.h"
#include "cli/command.h"
#include "common/json_dump.h"
#include "common/timestamp_parse.h"
#include "dsl/param_values.h"

namespace apollo11::cli {
namespace {

struct TriggerFlags : ClientFlags {
  std::string target;  // NAME or NAME@VERSION
  std::vector<std::string> params;
  std::string key;
  bool wait = false;
};

Result<std::unique_ptr<RemoteCoordinator>> Remote(const ClientFlags& f) {
  if (f.Endpoint().empty()) {
    return Status::InvalidInput(
        "the pipeline registry lives on a coordinator: pass --coordinator ENDPOINT or set "
        "APOLLO11_COORDINATOR");
  }
  return f.Connect();
}

int Trigger(const TriggerFlags& f) {
  actors::RegistryRequest r;
  r.op = static_cast<uint8_t>(actors::RegistryOp::kTrigger);
  const size_t at = f.target.find('@');
  r.name = f.target.substr(0, at);
  if (at != std::string::npos) r.ref = f.target.substr(at + 1);
  r.key = f.key;
  r.actor = "cli";
  r.follow = f.wait;  // the run's end is pushed to this client
  for (const std::string& p : f.params) {
    Status parsed = dsl::ParseParamArg(p, &r.params);
    if (!parsed.ok()) return FailCommand("trigger", parsed);
  }
  auto remote = Remote(f);
  if (!remote.ok()) return FailCommand("trigger", remote.status());
  auto reply = (*remote)->Registry(r);
  if (!reply.ok()) return FailCommand("trigger", reply.status());
  const std::string run_id = reply->value("run_id", "");
  // --json prints one document: the trigger's answer, or with --wait the
  // run's status once it ended (as `submit --wait --json`).
  if (f.json && !f.wait) {
    std::printf("%s\n", SafeJsonDump(*reply, 2).c_str());
  } else if (!f.json) {
    std::printf("%s\n", run_id.c_str());
  }
  std::fflush(stdout);
  if (reply->value("existing", false)) {
    std::fprintf(stderr, "apollo11 trigger: key %s started %s already; no new run\n", f.key.c_str(),
                 run_id.c_str());
  }
  if (!f.wait) return kExitOk;
  // The coordinator pushes the run's end to this client (r.follow); a run
  // an idempotency key found, which may be over, is asked for at once, and
  // any run after a second without news (a coordinator of an older version
  // pushes nothing).
  FollowHooks hooks;
  hooks.quiet_poll = reply->value("existing", false) ? std::chrono::milliseconds(1)
                                                     : std::chrono::milliseconds(1000);
  Status followed = (*remote)->Follow(run_id, hooks);
  if (!followed.ok()) return FailCommand("trigger", followed);
  auto run = (*remote)->Query(f.json ? "status" : "run", run_id);
  if (!run.ok()) return FailCommand("trigger", run.status());
  if (f.json) std::printf("%s\n", SafeJsonDump(*run, 2).c_str());
  return run->value("state", "") == "SUCCESS" ? kExitOk : kExitRunFailed;
}

int Pause(const ClientFlags& f, const std::string& name, bool pause) {
  const char* cmd = pause ? "pause" : "unpause";
  actors::RegistryRequest r;
  r.op = static_cast<uint8_t>(pause ? actors::RegistryOp::kPause : actors::RegistryOp::kUnpause);
  r.name = name;
  r.actor = "cli";
  auto remote = Remote(f);
  if (!remote.ok()) return FailCommand(cmd, remote.status());
  auto reply = (*remote)->Registry(r);
  if (!reply.ok()) return FailCommand(cmd, reply.status());
  if (f.json) {
    std::printf("%s\n", SafeJsonDump(*reply, 2).c_str());
  } else if (pause) {
    std::printf("pipeline %s paused: no new scheduled or triggered runs; running ones go on\n",
                name.c_str());
  } else {
    std::printf("pipeline %s unpaused\n", name.c_str());
  }
  return kExitOk;
}

struct BackfillFlags : ClientFlags {
  std::string name, from, to;
  int max_active = 0;
  bool dry_run = false;
};

// What a dry run would queue: the count and each time, one per line.
void PrintBackfillPreview(const BackfillFlags& f, const nlohmann::json& reply) {
  const auto& times = reply.contains("times") && reply["times"].is_array()
                          ? reply["times"]
                          : nlohmann::json::array();
  const size_t would = reply.contains("would_queue") && reply["would_queue"].is_number_unsigned()
                           ? reply["would_queue"].get<size_t>()
                           : times.size();
  std::printf("backfill of %s would queue %zu scheduled time(s) (dry run: nothing queued)%s\n",
              f.name.c_str(), would, would > times.size() ? "; the first 1000:" : "");
  for (const auto& t : times) {
    if (t.is_string()) std::printf("  %s\n", t.get<std::string>().c_str());
  }
}

int Backfill(const BackfillFlags& f) {
  actors::RegistryRequest r;
  r.op = static_cast<uint8_t>(actors::RegistryOp::kBackfill);
  r.name = f.name;
  r.actor = "cli";
  r.max_active = f.max_active;
  r.dry_run = f.dry_run;
  auto from = ParseTimestamp(f.from);
  if (!from.ok()) return FailCommand("backfill", from.status());
  auto to = ParseTimestamp(f.to);
  if (!to.ok()) return FailCommand("backfill", to.status());
  r.from = *from;
  r.to = *to;
  auto remote = Remote(f);
  if (!remote.ok()) return FailCommand("backfill", remote.status());
  auto reply = (*remote)->Registry(r);
  if (!reply.ok()) return FailCommand("backfill", reply.status());
  if (f.json) {
    std::printf("%s\n", SafeJsonDump(*reply, 2).c_str());
  } else if (f.dry_run) {
    PrintBackfillPreview(f, *reply);
  } else {
    std::printf(
        "backfill of %s: %d scheduled time(s) from %s to %s queued (times that fired already "
        "are left out); `apollo11 pipelines show %s` lists the fires\n",
        f.name.c_str(), reply->value("queued", 0), FormatTimestamp(*from).c_str(),
        FormatTimestamp(*to).c_str(), f.name.c_str());
  }
  return kExitOk;
}

void AddBackfillCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<BackfillFlags>();
  CLI::App* b = app.add_subcommand(
      "backfill", "one run per scheduled time of a pipeline's schedule in [--from, --to]");
  b->add_option("name", f->name, "pipeline name (it must have a schedule)")->required();
  b->add_option("--from", f->from, "first time (2026-11-01, 2026-11-01T03:00:00Z, ...+08:00)")
      ->required();
  b->add_option("--to", f->to, "last time, inclusive, not in the future")->required();
  b->add_option("--max-active", f->max_active,
                "runs of the backfill at once (default: the schedule's max_active_runs)")
      ->check(CLI::Range(1, 1000));
  b->add_flag("--dry-run", f->dry_run,
              "list the scheduled times it would queue (times that fired already are left out) "
              "and queue nothing");
  AddClientFlags(b, f.get(), kRemoteFlags | kJsonFlag);
  b->callback([f, exit_code] { *exit_code = Backfill(*f); });
}

}  // namespace

void AddTriggerCommands(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<TriggerFlags>();
  CLI::App* t = app.add_subcommand("trigger", "start a run of a registered pipeline");
  t->add_option("pipeline", f->target, "NAME, or NAME@VERSION (N, N-HASH or a hash prefix)")
      ->required();
  t->add_option("-p,--param", f->params, "a declared param: key=value (repeatable)")
      ->allow_extra_args(false);
  t->add_option("--idempotency-key", f->key,
                "the same key twice starts one run and answers its id both times");
  t->add_flag("--wait", f->wait, "wait until the run ends; exit with its outcome");
  AddClientFlags(t, f.get(), kRemoteFlags | kJsonFlag);
  t->callback([f, exit_code] { *exit_code = Trigger(*f); });

  for (bool pause : {true, false}) {
    auto pf = std::make_shared<ClientFlags>();
    auto name = std::make_shared<std::string>();
    CLI::App* p = app.add_subcommand(
        pause ? "pause" : "unpause",
        pause ? "stop new scheduled and triggered runs of a pipeline (running ones go on)"
              : "let a paused pipeline start runs again");
    p->add_option("name", *name, "pipeline name")->required();
    AddClientFlags(p, pf.get(), kRemoteFlags | kJsonFlag);
    p->callback([pf, name, pause, exit_code] { *exit_code = Pause(*pf, *name, pause); });
  }
  AddBackfillCommand(app, exit_code);
}

}  // namespace apollo11::cli

// registry: `apollo11 pipelines [list|add FILE...|show NAME[@V]|versions
// NAME|diff NAME V1 V2|rm NAME]`, the pipeline registry of a coordinator.

#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/client_flags.h"
#include "cli/command.h"
#include "cli/line_diff.h"
#include "cli/pipeline_registration.h"
#include "common/json_dump.h"
#include "common/small_file.h"
#include "dsl/diagnostic.h"
#include "dsl/parser.h"

namespace apollo11::cli {
namespace {

struct PipelinesFlags : ClientFlags {
  std::vector<std::string> files;
  std::vector<std::string> library_dirs;
  std::string name, v1, v2;
  uint32_t fires = 20;  // show: the newest fires listed
};

std::string Str(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

Result<std::unique_ptr<RemoteCoordinator>> Remote(const PipelinesFlags& f) {
  if (f.Endpoint().empty()) {
    return Status::InvalidInput(
        "the pipeline registry lives on a coordinator: pass --coordinator ENDPOINT or set "
        "APOLLO11_COORDINATOR");
  }
  return f.Connect();
}

int Add(const PipelinesFlags& f) {
  auto remote = Remote(f);
  if (!remote.ok()) return FailCommand("pipelines add", remote.status());
  int code = kExitOk;
  // --json: one document, the answer for one file or an array of them.
  nlohmann::json answers = nlohmann::json::array();
  for (const std::string& file : f.files) {
    auto text = ReadSmallFile(file, 32 << 20);
    if (!text) {
      code = FailCommand("pipelines add", Status::InvalidInput("cannot read " + file));
      continue;
    }
    dsl::ParseOptions options;
    options.library_dirs = f.library_dirs;
    dsl::ParseResult parsed = dsl::ParsePipelineText(*text, file, options);
    for (const dsl::Diagnostic& d : parsed.diagnostics) {
      std::fprintf(stderr, "%s\n", dsl::FormatDiagnostic(d).c_str());
    }
    auto reply = (*remote)->Registry(RegistrationOf(&parsed, *text, file, "cli"));
    if (!parsed.ok()) {
      std::fprintf(stderr,
                   "apollo11 pipelines add: %s was rejected; the active version (if any) stays\n",
                   file.c_str());
      code = kExitInvalidInput;
      continue;
    }
    if (!reply.ok()) {
      code = FailCommand("pipelines add", reply.status());
      continue;
    }
    if (f.json) {
      answers.push_back(std::move(*reply));
    } else {
      std::printf("%s@%s%s\n", Str(*reply, "name").c_str(), Str(*reply, "label").c_str(),
                  reply->value("unchanged", false) ? " (unchanged)" : "");
    }
  }
  if (f.json && !answers.empty()) {
    std::printf("%s\n", SafeJsonDump(f.files.size() == 1 ? answers[0] : answers, 2).c_str());
  }
  return code;
}

int Query(const PipelinesFlags& f, const char* cmd, const std::string& kind, const std::string& id,
          nlohmann::json* out, uint32_t limit = 1000) {
  auto remote = Remote(f);
  if (!remote.ok()) return FailCommand(cmd, remote.status());
  auto doc = (*remote)->Query(kind, id, "", limit);
  if (!doc.ok()) return FailCommand(cmd, doc.status());
  *out = std::move(*doc);
  return kExitOk;
}

int List(const PipelinesFlags& f) {
  nlohmann::json doc;
  if (int code = Query(f, "pipelines", "pipelines", "", &doc); code != kExitOk) return code;
  if (f.json) {
    std::printf("%s\n", SafeJsonDump(doc, 2).c_str());
    return kExitOk;
  }
  std::printf("%-28s %-26s %-8s %5s  %-24s %-24s %s\n", "PIPELINE", "VERSION", "STATE", "RUNS",
              "NEXT FIRE", "LAST FIRE", "LAST RUN");
  for (const auto& p : doc) {
    std::string state = !p.value("registered", false) ? "-"
                        : p.value("removed", false)   ? "removed"
                        : p.value("paused", false)    ? "paused"
                                                      : "active";
    std::string version = p.contains("label") ? Str(p, "label") : "(not registered)";
    std::string next = "-", last = "-";
    if (p.contains("schedule") && p["schedule"].is_object()) {
      next = Str(p["schedule"], "next_fire");
      last = Str(p["schedule"], "last_fire");
      if (next.empty()) next = "(none)";
      if (last.empty()) last = "(none yet)";
      // A paused pipeline's schedule decides its times but starts nothing.
      if (p.value("paused", false)) next = "(paused)";
    }
    std::printf("%-28s %-26s %-8s %5d  %-24s %-24s %s %s\n", Str(p, "name").c_str(),
                version.c_str(), state.c_str(), p.value("runs", 0), next.c_str(), last.c_str(),
                Str(p, "last_run_id").c_str(), Str(p, "last_run_state").c_str());
  }
  return kExitOk;
}

int Show(const PipelinesFlags& f) {
  nlohmann::json doc;
  if (int code = Query(f, "pipelines show", "pipeline", f.name, &doc, f.fires); code != kExitOk) {
    return code;
  }
  std::printf("%s\n", SafeJsonDump(doc, 2).c_str());
  return kExitOk;
}

int Versions(const PipelinesFlags& f) {
  nlohmann::json doc;
  if (int code = Query(f, "pipelines versions", "pipeline_versions", f.name, &doc);
      code != kExitOk) {
    return code;
  }
  if (f.json) {
    std::printf("%s\n", SafeJsonDump(doc, 2).c_str());
    return kExitOk;
  }
  for (const auto& v : doc["versions"]) {
    std::printf("%s %s@%-24s added %s by %s\n", v.value("active", false) ? "*" : " ",
                f.name.c_str(), Str(v, "label").c_str(), Str(v, "added_at").c_str(),
                Str(v, "added_by").c_str());
  }
  if (doc.value("paused", false)) std::printf("(paused)\n");
  return kExitOk;
}

bool MultiLine(const nlohmann::json& j) {
  return j.is_string() && j.get_ref<const std::string&>().find('\n') != std::string::npos;
}

// Appends to `changes` (an array) the paths where two JSON values differ:
// {"path", "from", "to"} (either absent when the key is), and two texts of
// several lines (a task's code, SQL or command) line by line as {"path",
// "line", "mark" ("-" or "+"), "text"}.
void DiffJson(const std::string& path, const nlohmann::json& a, const nlohmann::json& b,
              nlohmann::json* changes) {
  if (a == b) return;
  if (a.is_string() && b.is_string() && (MultiLine(a) || MultiLine(b))) {
    for (const DiffLine& d :
         LineDiff(a.get_ref<const std::string&>(), b.get_ref<const std::string&>())) {
      changes->push_back(
          {{"path", path}, {"line", d.line}, {"mark", std::string(1, d.mark)}, {"text", d.text}});
    }
    return;
  }
  if (a.is_object() && b.is_object()) {
    for (const auto& [k, v] : a.items()) {
      DiffJson(path + "." + k, v, b.contains(k) ? b[k] : nlohmann::json(), changes);
    }
    for (const auto& [k, v] : b.items()) {
      if (!a.contains(k)) DiffJson(path + "." + k, nlohmann::json(), v, changes);
    }
    return;
  }
  nlohmann::json change = {{"path", path}};
  if (!a.is_null()) change["from"] = a;
  if (!b.is_null()) change["to"] = b;
  changes->push_back(std::move(change));
}

// The changes as "-" and "+" lines; a text's lines as "- PATH:LINE: \"text\""
// (each value JSON-quoted: no control character reaches the terminal).
void PrintChanges(const nlohmann::json& changes) {
  for (const nlohmann::json& c : changes) {
    const std::string path = c.value("path", "");
    if (c.contains("mark")) {
      std::printf("%s %s:%zu: %s\n", c.value("mark", "").c_str(), path.c_str(),
                  c.value("line", size_t{0}), SafeJsonDump(c["text"]).c_str());
      continue;
    }
    if (c.contains("from"))
      std::printf("- %s: %s\n", path.c_str(), SafeJsonDump(c["from"]).c_str());
    if (c.contains("to")) std::printf("+ %s: %s\n", path.c_str(), SafeJsonDump(c["to"]).c_str());
  }
}

// Drops source locations ("where"): a task that only moved is no change.
void StripLocations(nlohmann::json* j) {
  if (j->is_object()) {
    j->erase("where");
    for (auto& [k, v] : j->items()) StripLocations(&v);
  } else if (j->is_array()) {
    for (auto& v : *j) StripLocations(&v);
  }
}

// Tasks keyed by id, so that a diff names the task that changed.
nlohmann::json Keyed(nlohmann::json snapshot) {
  StripLocations(&snapshot);
  if (!snapshot.contains("tasks") || !snapshot["tasks"].is_array()) return snapshot;
  nlohmann::json tasks = nlohmann::json::object();
  for (auto& t : snapshot["tasks"]) {
    if (t.is_object()) tasks[t.value("id", "?")] = t;
  }
  snapshot["tasks"] = std::move(tasks);
  return snapshot;
}

int Diff(const PipelinesFlags& f) {
  nlohmann::json a, b;
  if (int code = Query(f, "pipelines diff", "pipeline", f.name + "@" + f.v1, &a); code) return code;
  if (int code = Query(f, "pipelines diff", "pipeline", f.name + "@" + f.v2, &b); code) return code;
  nlohmann::json changes = nlohmann::json::array();
  DiffJson("", Keyed(a["snapshot"]), Keyed(b["snapshot"]), &changes);
  if (f.json) {
    const nlohmann::json doc = {{"name", f.name},
                                {"from", Str(a, "label")},
                                {"to", Str(b, "label")},
                                {"changes", std::move(changes)}};
    std::printf("%s\n", SafeJsonDump(doc, 2).c_str());
    return kExitOk;
  }
  std::printf("--- %s@%s\n+++ %s@%s\n", f.name.c_str(), Str(a, "label").c_str(), f.name.c_str(),
              Str(b, "label").c_str());
  PrintChanges(changes);
  if (changes.empty()) std::printf("(no difference)\n");
  return kExitOk;
}

int Remove(const PipelinesFlags& f) {
  auto remote = Remote(f);
  if (!remote.ok()) return FailCommand("pipelines rm", remote.status());
  actors::RegistryRequest r;
  r.op = static_cast<uint8_t>(actors::RegistryOp::kRemove);
  r.name = f.name;
  r.actor = "cli";
  auto reply = (*remote)->Registry(r);
  if (!reply.ok()) return FailCommand("pipelines rm", reply.status());
  std::printf("pipeline %s removed: no version is active; its versions and runs stay\n",
              f.name.c_str());
  return kExitOk;
}

}  // namespace

void AddPipelinesCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<PipelinesFlags>();
  CLI::App* p = app.add_subcommand("pipelines", "the pipeline registry of a coordinator");
  AddClientFlags(p, f.get(), kRemoteFlags | kJsonFlag);
  p->fallthrough();  // `pipelines add FILE --coordinator E`: the flags are the parent's
  p->callback([p, f, exit_code] {
    if (p->get_subcommands().empty()) *exit_code = List(*f);
  });
  CLI::App* list = p->add_subcommand("list", "registered pipelines and those seen in runs");
  list->callback([f, exit_code] { *exit_code = List(*f); });
  CLI::App* add = p->add_subcommand("add", "register pipeline files as new versions");
  add->add_option("files", f->files, "pipeline YAML files")->required();
  AddLibraryOption(add, &f->library_dirs);
  add->callback([f, exit_code] { *exit_code = Add(*f); });
  CLI::App* show = p->add_subcommand("show", "the snapshot of NAME[@VERSION]");
  show->add_option("name", f->name, "NAME or NAME@VERSION")->required();
  show->add_option("--fires", f->fires, "how many of the schedule's newest fires to list")
      ->check(CLI::Range(1, 1000));
  show->callback([f, exit_code] { *exit_code = Show(*f); });
  CLI::App* versions = p->add_subcommand("versions", "the versions of a pipeline");
  versions->add_option("name", f->name, "pipeline name")->required();
  versions->callback([f, exit_code] { *exit_code = Versions(*f); });
  CLI::App* diff = p->add_subcommand("diff", "what changed between two versions");
  diff->add_option("name", f->name, "pipeline name")->required();
  diff->add_option("v1", f->v1, "a version (N, N-HASH or a hash prefix)")->required();
  diff->add_option("v2", f->v2, "another version")->required();
  diff->callback([f, exit_code] { *exit_code = Diff(*f); });
  CLI::App* rm = p->add_subcommand("rm", "remove a pipeline: no version active any more");
  rm->add_option("name", f->name, "pipeline name")->required();
  rm->callback([f, exit_code] { *exit_code = Remove(*f); });
}

}  // namespace apollo11::cli

#pragma once
// What a pipeline file shares with the files it imports: the import graph
// (cycles and missing files reported, each file read once), the named retry
// policies and the task templates they define. Internal to dsl/.

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "dsl/field_reader.h"
#include "dsl/parser.h"
#include "dsl/yaml_guard.h"
#include "dsl/yaml_tree.h"

namespace apollo11::dsl::internal {

// The start of the error for a file named where no file is read
// (ParseOptions::read_files false).
inline constexpr const char* kNoFilesRead =
    "the pipeline text is the whole input here (registered over HTTP, the coordinator reads no "
    "file for it; `apollo11 pipelines add` reads the files on your side)";

struct NamedPolicy {
  std::optional<RetryPolicy> policy;  // nullopt when its definition had errors
  SourceLocation where;
};

struct Template {
  std::vector<Field> fields;
  SourceLocation where;
  size_t bytes = 0;  // expanded size of its fields, copied into each task extending it
};

class Library {
 public:
  // Reports through `report` and reads imports through `guard`; both must
  // outlive the library.
  Library(const ParseOptions& options, FieldReader* report, YamlGuard* guard)
      : options_(options), report_(report), guard_(guard) {}

  // The path by which a file is known in the import graph.
  static std::string CanonicalKey(const std::filesystem::path& p);

  // Confines imports to `pipeline_dir` and options.library_dirs, each
  // followed through symbolic links. Call before LoadImports.
  void ConfineImportsTo(const std::filesystem::path& pipeline_dir);

  // Marks the file (canonical key, displayed path) as being read, so an
  // import of it is a cycle, until CloseFile.
  void OpenFile(const std::string& key, const std::string& display);
  void CloseFile();

  // The `imports`, `retry_policy` and `templates` keys of a pipeline or an
  // imported file.
  void LoadImports(const Field& f);
  void LoadPolicies(const Field& f);
  void LoadTemplates(const Field& f);

  // A retry policy mapping; nullopt after reporting its errors.
  std::optional<RetryPolicy> ParseRetryMap(const YamlNode& node, const std::string& file);

  // Counts one task's copy of `t`; false once the template fields copied
  // into tasks pass options.max_expanded_bytes (a large template extended by
  // many tasks multiplies like an alias).
  bool ChargeTemplateUse(const Template& t);
  size_t max_expanded_bytes() const { return options_.max_expanded_bytes; }
  // ParseOptions::read_files: false = no file is read or looked up.
  bool reads_files() const { return options_.read_files; }

  // Drops the templates and the imported files' trees once every task is
  // read: the templates' fields point into those trees. Policies stay.
  void ReleaseDocuments() {
    templates_.clear();
    trees_.clear();
  }

  const std::map<std::string, NamedPolicy>& policies() const { return policies_; }
  const std::map<std::string, Template>& templates() const { return templates_; }

 private:
  void LoadLibrary(const YamlNode& root, const std::string& file);
  // The file an import names (display path, for messages), looked for beside
  // the importing file and then in each library dir; nullopt after reporting
  // that it is missing or resolves outside every allowed directory.
  std::optional<std::filesystem::path> ResolveImport(const Field& f, const YamlNode& item);
  // True when canonical `p` is inside one of roots_.
  bool IsAllowed(const std::filesystem::path& p) const;
  // True when `root` looks like a pipeline library (a mapping with at least
  // one of its keys); otherwise reports that, without quoting the file.
  bool LooksLikeLibrary(const YamlNode& root, const std::string& file);
  // Reads the file at `path` into `out`, or reports why it cannot at `blame`.
  bool ReadFile(const std::string& path, const SourceLocation& blame, std::string* out);

  ParseOptions options_;
  FieldReader* report_;
  YamlGuard* guard_;
  std::vector<std::filesystem::path> roots_;                // canonical; imports stay inside one
  std::vector<std::pair<std::string, std::string>> stack_;  // (canonical, display) of open files
  std::set<std::string> loaded_;
  std::map<std::string, NamedPolicy> policies_;
  std::map<std::string, Template> templates_;
  std::vector<std::shared_ptr<const YamlTree>> trees_;  // imported files, kept for templates_
  size_t template_bytes_used_ = 0;
};

}  // namespace apollo11::dsl::internal

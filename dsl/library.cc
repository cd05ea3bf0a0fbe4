#include "dsl/library.h"

#include <algorithm>
#include <charconv>

#include "dsl/suggest.h"
#include "dsl/task_fields.h"

namespace apollo11::dsl::internal {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kLibraryKeys = {"version", "imports", "retry_policy", "templates"};
const std::vector<std::string> kRetryKeys = {"max_retries", "delay",  "backoff",
                                             "max_delay",   "jitter", "on_exit_codes"};
constexpr size_t kMaxImportedFiles = 256;

}  // namespace

std::string Library::CanonicalKey(const fs::path& p) {
  std::error_code ec;
  fs::path c = fs::weakly_canonical(p, ec);
  return ec ? p.lexically_normal().string() : c.string();
}

void Library::ConfineImportsTo(const fs::path& pipeline_dir) {
  roots_.clear();
  std::vector<fs::path> dirs{pipeline_dir};
  for (const std::string& d : options_.library_dirs) dirs.emplace_back(d);
  for (const fs::path& d : dirs) {
    std::error_code ec;
    fs::path absolute = fs::absolute(d, ec);
    fs::path root(CanonicalKey(ec ? d : absolute));
    if (root.filename().empty()) root = root.parent_path();
    roots_.push_back(root);
  }
}

bool Library::IsAllowed(const fs::path& p) const {
  for (const fs::path& root : roots_) {
    if (std::mismatch(root.begin(), root.end(), p.begin(), p.end()).first == root.end()) {
      return true;
    }
  }
  return false;
}

std::optional<fs::path> Library::ResolveImport(const Field& f, const YamlNode& item) {
  const fs::path named(item.Scalar());
  std::vector<fs::path> candidates{(fs::path(f.file).parent_path() / named).lexically_normal()};
  if (named.is_relative()) {
    for (const std::string& dir : options_.library_dirs) {
      candidates.push_back((fs::path(dir) / named).lexically_normal());
    }
  }
  std::optional<fs::path> outside;
  for (const fs::path& candidate : candidates) {
    std::error_code ec;
    fs::path absolute = fs::absolute(candidate, ec);
    if (ec || !fs::exists(absolute, ec)) continue;
    fs::path canonical(CanonicalKey(absolute));
    if (IsAllowed(canonical)) return candidate;
    if (!outside) outside = canonical;
  }
  if (outside) {
    report_->Error(f.file, item,
                   "import " + Quote(item.Scalar()) + " resolves to " + outside->string() +
                       ", outside the pipeline's directory " +
                       (roots_.empty() ? std::string() : roots_.front().string()) +
                       (roots_.size() > 1 ? " and the library directories" : "") +
                       "; imports stay inside them (add one with --library) and it is not read");
    return std::nullopt;
  }
  std::error_code ec;
  fs::path absolute = fs::absolute(candidates.front(), ec);
  report_->Error(f.file, item,
                 "import " + Quote(item.Scalar()) + " not found (looked for " +
                     (ec ? candidates.front() : absolute).string() + ")");
  return std::nullopt;
}

bool Library::LooksLikeLibrary(const YamlNode& root, const std::string& file) {
  if (root.IsMap()) {
    for (YamlPair it : root.pairs()) {
      const YamlNode key = it.key;
      if (key.IsScalar() &&
          std::find(kLibraryKeys.begin(), kLibraryKeys.end(), key.Scalar()) != kLibraryKeys.end()) {
        return true;
      }
    }
  }
  report_->Error(file, root,
                 std::string("not a pipeline library: an imported file is a mapping of "
                             "retry_policy:, templates:, imports: and version:, this one is ") +
                     KindName(root) + " without them (its content is not shown)");
  return false;
}

void Library::OpenFile(const std::string& key, const std::string& display) {
  stack_.push_back({key, display});
}

void Library::CloseFile() { stack_.pop_back(); }

bool Library::ReadFile(const std::string& path, const SourceLocation& blame, std::string* out) {
  std::string why = ReadFileText(path, options_.max_file_bytes, out);
  if (why.empty()) return true;
  report_->Error(blame, why);
  return false;
}

void Library::LoadImports(const Field& f) {
  if (!f.value.IsSequence()) {
    report_->Error(
        FieldReader::At(f),
        std::string("'imports' must be a list of file paths, found ") + KindName(f.value));
    return;
  }
  for (YamlNode item : f.value.items()) {
    if (!item.IsScalar() || item.Scalar().empty()) {
      report_->Error(f.file, item, "each import must be a file path");
      continue;
    }
    if (!options_.read_files) {
      report_->Error(f.file, item, std::string(kNoFilesRead) + ": 'imports' names one");
      continue;
    }
    std::optional<fs::path> resolved = ResolveImport(f, item);
    if (!resolved) continue;
    const fs::path& display = *resolved;
    std::error_code ec;
    fs::path absolute = fs::absolute(display, ec);
    std::string key = CanonicalKey(ec ? display : absolute);
    auto on_stack = std::find_if(stack_.begin(), stack_.end(),
                                 [&](const auto& entry) { return entry.first == key; });
    if (on_stack != stack_.end()) {
      std::string chain;
      for (auto it = on_stack; it != stack_.end(); ++it) chain += it->second + " -> ";
      report_->Error(f.file, item, "import cycle: " + chain + display.string());
      continue;
    }
    if (loaded_.count(key)) continue;  // already imported through another file
    if (loaded_.size() >= kMaxImportedFiles) {
      report_->Error(f.file, item,
                     "more than " + std::to_string(kMaxImportedFiles) + " imported files");
      return;
    }
    loaded_.insert(key);
    std::string text;
    // The resolved path, not the one through links that were checked: a link
    // changed in between cannot redirect the read.
    if (!ReadFile(key, Loc(f.file, item.Mark()), &text)) continue;
    std::shared_ptr<const YamlTree> tree =
        guard_->Parse(text, display.string(), YamlGuard::kImported);
    if (!tree || !LooksLikeLibrary(tree->root(), display.string())) continue;
    trees_.push_back(tree);  // its templates' fields point into it
    stack_.push_back({key, display.string()});
    LoadLibrary(tree->root(), display.string());
    stack_.pop_back();
  }
}

void Library::LoadLibrary(const YamlNode& root, const std::string& file) {
  std::vector<Field> fields =
      report_->Fields(root, file, kLibraryKeys,
                      "an imported file (it may hold version, imports, retry_policy, templates)");
  for (const Field& f : fields) {
    if (f.key == "imports") LoadImports(f);
  }
  for (const Field& f : fields) {
    if (f.key == "version") {
      std::string version;
      if (report_->GetString(f, &version) && version != "1.0") {
        report_->Error(FieldReader::At(f),
                       "unsupported version " + Quote(version) + " (this build reads \"1.0\")");
      }
    } else if (f.key == "retry_policy") {
      LoadPolicies(f);
    } else if (f.key == "templates") {
      LoadTemplates(f);
    }
  }
}

void Library::LoadPolicies(const Field& f) {
  if (!f.value.IsMap()) {
    report_->Error(FieldReader::At(f),
                   std::string("'retry_policy' must map policy names to policies, found ") +
                       KindName(f.value));
    return;
  }
  for (YamlPair it : f.value.pairs()) {
    const YamlNode k = it.key;
    if (!k.IsScalar() || !MatchesIdChars(k.Scalar())) {
      report_->Error(f.file, k, "retry policy names are words of a-z, 0-9 and _");
      continue;
    }
    const std::string name(k.Scalar());
    SourceLocation where = Loc(f.file, k.Mark());
    auto existing = policies_.find(name);
    if (existing != policies_.end()) {
      report_->Error(where, "retry policy " + Quote(name) + " is defined twice (first at " +
                                LocText(existing->second.where) + ")");
      continue;
    }
    policies_[name] = NamedPolicy{ParseRetryMap(it.value, f.file), where};
  }
}

void Library::LoadTemplates(const Field& f) {
  if (!f.value.IsMap()) {
    report_->Error(FieldReader::At(f),
                   std::string("'templates' must map template names to task fields, found ") +
                       KindName(f.value));
    return;
  }
  std::vector<std::string> allowed;
  for (const std::string& k : TaskKeys()) {
    if (k != "id" && k != "extends") allowed.push_back(k);
  }
  for (YamlPair it : f.value.pairs()) {
    const YamlNode k = it.key;
    if (!k.IsScalar() || !MatchesIdChars(k.Scalar())) {
      report_->Error(f.file, k, "template names are words of a-z, 0-9 and _");
      continue;
    }
    const std::string name(k.Scalar());
    SourceLocation where = Loc(f.file, k.Mark());
    auto existing = templates_.find(name);
    if (existing != templates_.end()) {
      report_->Error(where, "template " + Quote(name) + " is defined twice (first at " +
                                LocText(existing->second.where) + ")");
      continue;
    }
    if (!it.value.IsMap()) {
      report_->Error(f.file, it.value,
                     "template " + Quote(name) + " must be a mapping of task fields, found " +
                         KindName(it.value));
      continue;
    }
    templates_[name] =
        Template{report_->Fields(it.value, f.file, allowed,
                                 "template " + Quote(name) +
                                     " (templates hold task fields except id and extends)"),
                 where, ExpandedBytes(it.value)};
  }
}

bool Library::ChargeTemplateUse(const Template& t) {
  if (template_bytes_used_ > options_.max_expanded_bytes ||
      t.bytes > options_.max_expanded_bytes - template_bytes_used_) {
    return false;
  }
  template_bytes_used_ += t.bytes;
  return true;
}

std::optional<RetryPolicy> Library::ParseRetryMap(const YamlNode& node, const std::string& file) {
  if (!node.IsMap()) {
    report_->Error(
        file, node,
        std::string("a retry policy must be a mapping (max_retries, delay, backoff, ...), found ") +
            KindName(node));
    return std::nullopt;
  }
  size_t errors_before = report_->ErrorCount();
  RetryPolicy policy;
  bool has_max_retries = false;
  bool has_jitter = false;
  const Field* delay_field = nullptr;
  const Field* max_delay_field = nullptr;
  std::vector<Field> fields = report_->Fields(node, file, kRetryKeys, "a retry policy");
  for (const Field& f : fields) {
    if (f.key == "max_retries") {
      has_max_retries = report_->GetInt(f, 0, 1000, &policy.max_retries);
    } else if (f.key == "delay") {
      if (report_->GetDuration(f, &policy.delay)) delay_field = &f;
    } else if (f.key == "max_delay") {
      if (report_->GetDuration(f, &policy.max_delay)) max_delay_field = &f;
    } else if (f.key == "backoff") {
      std::string b;
      if (report_->GetChoice(f, {"fixed", "exponential"}, &b)) {
        policy.backoff = b == "fixed" ? Backoff::kFixed : Backoff::kExponential;
      }
    } else if (f.key == "jitter") {
      has_jitter = true;
      double j = 0;
      const std::string_view s = f.value.Scalar();
      auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), j);
      if (!f.value.IsScalar() || ec != std::errc() || end != s.data() + s.size() || j < 0 ||
          j > 1) {
        report_->Error(FieldReader::At(f), "'jitter' must be a fraction from 0 to 1 (e.g. 0.2)");
      } else {
        policy.jitter = j;
      }
    } else if (f.key == "on_exit_codes") {
      report_->GetIntList(f, 0, 255, &policy.on_exit_codes);
    }
  }
  if (!has_max_retries && !HasKey(fields, "max_retries")) {
    report_->Error(file, node, "retry policy needs 'max_retries'");
  }
  if (!has_jitter && policy.backoff == Backoff::kExponential) policy.jitter = 0.2;
  if (delay_field && max_delay_field && policy.max_delay < policy.delay) {
    report_->Error(FieldReader::At(*max_delay_field), "'max_delay' is shorter than 'delay'");
  }
  if (report_->ErrorCount() != errors_before) return std::nullopt;
  return policy;
}

}  // namespace apollo11::dsl::internal

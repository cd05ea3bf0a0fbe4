// The readers of the db, secret and foreach task fields (TaskParser's other
// readers are in task_parser.cc; the key table is dsl/task_fields.h).
#include <cstring>
#include <optional>

#include "dsl/credentials.h"
#include "dsl/secret_ref.h"
#include "dsl/task_parser.h"

namespace apollo11::dsl::internal {
namespace {

const std::vector<std::string> kForeachKeys = {"task", "items"};

}  // namespace

bool TaskParser::ReadSecretMap(const Field& f, std::map<std::string, std::string>* out) {
  bool ok = report_->GetStringMap(f, /*env_names=*/true, out);
  if (!f.value.IsMap()) return false;
  for (YamlPair it : f.value.pairs()) {
    const YamlNode v = it.value;
    if (!v.IsScalar() && !v.IsNull()) continue;  // reported by GetStringMap
    auto ref = ParseSecretRef(v.IsNull() ? "" : v.Scalar());
    if (!ref.ok()) {
      report_->Error(f.file, v, "secret " + Quote(it.key.Scalar()) + ": " + ref.status().message());
      ok = false;
    }
  }
  return ok;
}

bool TaskParser::ReadDbUrl(const Field& f, std::string* out) {
  if (!report_->GetString(f, out)) return false;
  for (const char* scheme : {"postgres://", "postgresql://", "mysql://", "mariadb://"}) {
    if (!StartsWith(*out, scheme) || out->size() <= std::strlen(scheme)) continue;
    const std::string found = CredentialInUrl(*out, UrlField::kDbHost);
    if (!found.empty()) {
      report_->Error(FieldReader::At(f),
                     "'host' must not hold a password (it has " + found +
                         "; credentials never sit in the pipeline); name the variable that "
                         "holds it with 'password_env:' or use 'secrets:'");
      return false;
    }
    return true;
  }
  if (StartsWith(*out, "sqlite:///") && out->size() > std::strlen("sqlite:///")) return true;
  report_->Error(FieldReader::At(f),
                 "'host' must be a URL postgres://..., mysql://..., mariadb://... or "
                 "sqlite:///PATH, found " +
                     Quote(*out));
  return false;
}

bool TaskParser::ReadEnvName(const Field& f, std::string* out) {
  if (!report_->GetString(f, out)) return false;
  if (IsEnvName(*out)) return true;
  report_->Error(FieldReader::At(f),
                 Quote(f.key) + " must name an environment variable, found " + Quote(*out));
  return false;
}

bool TaskParser::ReadForeach(const Field& f, std::string* out) {
  if (!f.value.IsMap()) return report_->GetString(f, out);
  for (const Field& e : report_->Fields(f.value, f.file, kForeachKeys, "foreach (task, items)")) {
    if (e.key == "task") return report_->GetString(e, out);
  }
  report_->Error(FieldReader::At(f), "foreach needs 'task' (the upstream task to fan out over)");
  return false;
}

bool TaskParser::ReadForeachItems(const Field& f, std::string* out) {
  const YamlNode items = f.value["items"];
  if (!items.IsDefined()) return false;
  Field e{"items", items, items, f.file};
  if (!report_->GetString(e, out)) return false;
  const std::string& path = *out;
  const bool ok = path == "output" || (StartsWith(path, "output.") && path.size() > 7 &&
                                       path.back() != '.' && path.find("..") == std::string::npos);
  if (!ok) {
    report_->Error(FieldReader::At(e), "foreach items " + Quote(path) +
                                           " must be 'output' or 'output.PATH' (a JSON array "
                                           "in the upstream's $APOLLO11_OUTPUT output)");
    out->clear();
    return false;
  }
  return true;
}

bool TaskParser::ReadMaxParallel(const Field& f, int* out) {
  return report_->GetInt(f, 1, 1'000'000, out);
}

}  // namespace apollo11::dsl::internal

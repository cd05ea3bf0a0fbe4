#include "dsl/template_check.h"

#include <string>

#include "dsl/templated_fields.h"

namespace apollo11::dsl {
namespace {

constexpr size_t kAncestorWalkBudget = 2'000'000;

// Marks in *seen (with `stamp`) every ancestor of task `t`. False when the
// budget ran out before the walk ended.
bool MarkAncestors(const PipelineSpec& spec,
                   const std::unordered_map<std::string_view, size_t>& index, size_t t,
                   size_t stamp, std::vector<size_t>* seen, size_t* budget) {
  std::vector<size_t> stack = {t};
  while (!stack.empty()) {
    const size_t at = stack.back();
    stack.pop_back();
    for (const Dependency& d : spec.tasks[at].depends_on) {
      if (*budget == 0) return false;
      --*budget;
      auto it = index.find(d.task);
      if (it == index.end() || (*seen)[it->second] == stamp) continue;
      (*seen)[it->second] = stamp;
      stack.push_back(it->second);
    }
  }
  return true;
}

// Why `ref` in task `t` is wrong, or empty. Computes t's ancestors on the
// first output reference.
std::string Problem(const PipelineSpec& spec,
                    const std::unordered_map<std::string_view, size_t>& index, size_t t,
                    const TemplateRef& ref, std::vector<size_t>* seen, bool* walked, bool* walk_ok,
                    size_t* budget) {
  const TaskSpec& task = spec.tasks[t];
  switch (ref.kind) {
    case TemplateRef::Kind::kParam:
      return spec.params.contains(ref.name) ? "" : "no such param '" + ref.name + "'";
    case TemplateRef::Kind::kItem:
      return task.foreach.empty() ? "${item} is only set in a task with foreach" : "";
    case TemplateRef::Kind::kOutput:
      break;
    default:
      return "";
  }
  if (!index.contains(ref.name)) return "unknown task '" + ref.name + "'";
  if (!*walked) {
    *walked = true;
    *walk_ok = MarkAncestors(spec, index, t, t + 1, seen, budget);
  }
  if (*walk_ok && (*seen)[index.at(ref.name)] != t + 1) {
    return "task '" + ref.name + "' is not an upstream of '" + task.id +
           "' (add it to depends_on); its output would not exist yet";
  }
  return "";
}

// A db task's `sql` is never expanded: a value pasted into SQL would be an
// injection. A placeholder there is refused with the way to bind it.
void RefuseSqlPlaceholders(const TaskSpec& task, std::vector<Diagnostic>* out) {
  const std::string& sql = Unboxed(task.sql);
  if (!TemplateExpander::HasPlaceholder(sql)) return;
  std::vector<TemplateRef> refs;
  const bool scanned = TemplateExpander::Scan(sql, &refs).ok() && !refs.empty();
  const std::string first =
      scanned ? sql.substr(refs[0].begin, refs[0].end - refs[0].begin) : std::string("${");
  out->push_back(Diagnostic{
      Diagnostic::Severity::kError, task.where,
      "task '" + task.id + "', 'sql': " + first +
          " is not expanded in SQL (pasting a value into a statement is an injection): write a "
          "placeholder ($1 for PostgreSQL, ? for MariaDB and SQLite) and bind the value with "
          "params: [\"" +
          first + "\"]"});
}

}  // namespace

void CheckTemplates(const PipelineSpec& spec,
                    const std::unordered_map<std::string_view, size_t>& index,
                    std::vector<Diagnostic>* out) {
  std::vector<size_t> seen;
  size_t budget = kAncestorWalkBudget;
  for (size_t t = 0; t < spec.tasks.size(); ++t) {
    const TaskSpec& task = spec.tasks[t];
    if (task.type == TaskType::kDb) RefuseSqlPlaceholders(task, out);
    bool walked = false, walk_ok = false;
    ForEachTemplatedField(task, [&](const char* key, TemplateContext, const std::string& value) {
      if (!TemplateExpander::HasPlaceholder(value)) return;
      std::vector<TemplateRef> refs;
      Status s = TemplateExpander::Scan(value, &refs);
      auto report = [&](const std::string& why) {
        out->push_back(Diagnostic{Diagnostic::Severity::kError, task.where,
                                  "task '" + task.id + "', '" + key + "': " + why});
      };
      if (!s.ok()) return report(s.message());
      for (const TemplateRef& ref : refs) {
        if (seen.empty() && ref.kind == TemplateRef::Kind::kOutput) {
          seen.assign(spec.tasks.size(), 0);
        }
        std::string why = Problem(spec, index, t, ref, &seen, &walked, &walk_ok, &budget);
        if (!why.empty()) {
          report("${" + std::string(value.substr(ref.begin + 2, ref.end - ref.begin - 3)) +
                 "}: " + why);
        }
      }
    });
  }
}

}  // namespace apollo11::dsl

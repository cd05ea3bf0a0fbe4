#pragma once
// The fields of a task whose `${...}` placeholders are expanded, each with
// the context that decides its escaping (dsl/template_expander.h). One list
// for the checker (over a dsl::TaskSpec) and the coordinator (over the
// DISPATCH's transport::TaskPayload): both have these members by the same
// names. Adding a templated field is one line here.

#include "common/rare.h"
#include "dsl/template_expander.h"

namespace apollo11::dsl {

// Calls fn(key, context, value) for every templated string of `task`; value
// is a (const) std::string& the caller may read or replace.
template <typename Task, typename Fn>
void ForEachTemplatedField(Task& task, Fn&& fn) {
  fn("command", TemplateContext::kShell, task.command);
  for (auto& arg : Unboxed(task.args)) fn("args", TemplateContext::kRaw, arg);
  fn("url", TemplateContext::kUrl, Unboxed(task.url));
  fn("body", TemplateExpander::BodyContext(Unboxed(task.body)), Unboxed(task.body));
  for (auto& [name, value] : Unboxed(task.headers)) fn("headers", TemplateContext::kHeader, value);
  for (auto& [name, value] : Unboxed(task.env)) fn("env", TemplateContext::kRaw, value);
  // A db task's bound values: the expanded text is bound, never pasted into SQL.
  for (auto& value : Unboxed(task.sql_params)) fn("params", TemplateContext::kRaw, value);
}

}  // namespace apollo11::dsl

#include "dsl/checker.h"

#include <unordered_map>
#include <unordered_set>

#include "dsl/dag.h"
#include "dsl/suggest.h"
#include "dsl/task_limits.h"
#include "dsl/template_check.h"

namespace apollo11::dsl {
namespace {

std::string Where(const SourceLocation& l) {
  return l.file + ":" + std::to_string(l.line) + ":" + std::to_string(l.column);
}

void Add(std::vector<Diagnostic>* out, Diagnostic::Severity s, const SourceLocation& where,
         std::string message) {
  out->push_back(Diagnostic{s, where, std::move(message)});
}

// Upstream walks for the failure-join warning stop after this many steps in
// total, so a pathological file cannot make validation quadratic.
constexpr size_t kJoinWalkBudget = 2'000'000;

// Warns about joins under `trigger: all` that can never be satisfied: waiting
// for one task to both succeed and fail, or waiting for the failure of U and
// for the success of a task that itself only runs when U succeeds.
void CheckFailureJoins(const PipelineSpec& spec,
                       const std::unordered_map<std::string_view, size_t>& index,
                       std::vector<Diagnostic>* out) {
  size_t budget = kJoinWalkBudget;
  std::vector<size_t> mark(spec.tasks.size(), SIZE_MAX);
  for (size_t t = 0; t < spec.tasks.size(); ++t) {
    const TaskSpec& task = spec.tasks[t];
    if (task.trigger != Trigger::kAll) continue;
    bool mixed = false;
    for (const Dependency& d : task.depends_on) {
      mixed |= d.on == DependencyCondition::kFailure || d.on == DependencyCondition::kTimeout;
    }
    if (!mixed) continue;  // only joins involving a failure or timeout branch can conflict
    std::unordered_map<std::string_view, unsigned> conditions;  // bit per DependencyCondition
    for (const Dependency& d : task.depends_on) {
      conditions[d.task] |= 1u << static_cast<unsigned>(d.on);
    }
    bool has_failure_branch = false;
    for (const auto& [upstream, bits] : conditions) {
      const unsigned kSuccess = 1u << static_cast<unsigned>(DependencyCondition::kSuccess);
      const unsigned kFailure = 1u << static_cast<unsigned>(DependencyCondition::kFailure);
      const unsigned kTimeout = 1u << static_cast<unsigned>(DependencyCondition::kTimeout);
      int outcomes =
          ((bits & kSuccess) ? 1 : 0) + ((bits & kFailure) ? 1 : 0) + ((bits & kTimeout) ? 1 : 0);
      if (outcomes > 1) {
        Add(out, Diagnostic::Severity::kWarning, task.where,
            "task '" + task.id + "' waits for two different outcomes of '" + std::string(upstream) +
                "' with trigger: all; it can never run (use trigger: any, or on: done)");
      }
      if (bits & (kFailure | kTimeout)) has_failure_branch = true;
    }
    if (!has_failure_branch) continue;
    // Which success dependencies require a failure-branch upstream to succeed?
    for (const Dependency& d : task.depends_on) {
      if (d.on != DependencyCondition::kSuccess) continue;
      auto start = index.find(d.task);
      if (start == index.end()) continue;
      std::vector<size_t> todo{start->second};
      mark[start->second] = t;
      while (!todo.empty() && budget > 0) {
        --budget;
        const TaskSpec& node = spec.tasks[todo.back()];
        todo.pop_back();
        if (node.trigger != Trigger::kAll) continue;  // may run whatever one upstream did
        for (const Dependency& up : node.depends_on) {
          if (up.on != DependencyCondition::kSuccess) continue;
          auto c = conditions.find(up.task);
          if (c != conditions.end() &&
              (c->second & ~(1u << static_cast<unsigned>(DependencyCondition::kSuccess) |
                             1u << static_cast<unsigned>(DependencyCondition::kDone))) != 0) {
            Add(out, Diagnostic::Severity::kWarning, d.where,
                "task '" + task.id + "' joins the failure branch of '" + up.task + "' with '" +
                    d.task + "', which runs only if '" + up.task +
                    "' succeeds; with trigger: all it can never run");
            todo.clear();
            break;
          }
          auto next = index.find(up.task);
          if (next != index.end() && mark[next->second] != t) {
            mark[next->second] = t;
            todo.push_back(next->second);
          }
        }
      }
    }
  }
}

// The dependency entries of `deps` that repeat an earlier entry's task and
// condition, in order. Linear in the entry count (a task with 20,000
// dependencies once took 31 s here: a set was rebuilt per entry).
std::vector<const Dependency*> RepeatedEntries(const std::vector<Dependency>& deps) {
  std::vector<const Dependency*> repeated;
  if (deps.size() < 2) return repeated;
  std::unordered_set<std::string_view> seen[static_cast<size_t>(DependencyCondition::kDone) + 1];
  for (const Dependency& d : deps) {
    if (!seen[static_cast<size_t>(d.on)].insert(d.task).second) repeated.push_back(&d);
  }
  return repeated;
}

}  // namespace

void CheckPipeline(const PipelineSpec& spec, const CheckOptions& options,
                   std::vector<Diagnostic>* out) {
  CheckTaskLimits(spec, out);
  std::unordered_map<std::string_view, size_t> index;
  index.reserve(spec.tasks.size());
  bool graph_ok = true;
  for (size_t i = 0; i < spec.tasks.size(); ++i) {
    const TaskSpec& task = spec.tasks[i];
    auto [it, inserted] = index.emplace(task.id, i);
    if (!inserted) {
      graph_ok = false;
      Add(out, Diagnostic::Severity::kError, task.where,
          "duplicate task id '" + task.id + "' (first defined at " +
              Where(spec.tasks[it->second].where) + ")");
    }
  }

  std::vector<std::string> all_ids;  // built lazily for "did you mean"
  size_t suggestions_left = 100;
  for (const TaskSpec& task : spec.tasks) {
    bool foreach_found = task.foreach.empty();
    for (const Dependency& d : task.depends_on) {
      if (d.task == task.foreach) foreach_found = true;
      if (d.task == task.id) {
        graph_ok = false;
        Add(out, Diagnostic::Severity::kError, d.where, "task '" + task.id + "' depends on itself");
        continue;
      }
      if (!index.contains(d.task)) {
        graph_ok = false;
        std::string hint;
        if (suggestions_left > 0) {
          --suggestions_left;
          if (all_ids.empty()) {
            for (const TaskSpec& t : spec.tasks) all_ids.push_back(t.id);
          }
          hint = DidYouMean(d.task, all_ids);
        }
        Add(out, Diagnostic::Severity::kError, d.where,
            "task '" + task.id + "' depends on unknown task '" + d.task + "'" + hint);
        continue;
      }
    }
    for (const Dependency* d : RepeatedEntries(task.depends_on)) {
      if (d->task == task.id || !index.contains(d->task)) continue;  // reported above
      Add(out, Diagnostic::Severity::kWarning, d->where,
          "task '" + task.id + "' lists dependency '" + d->task + "' twice");
    }
    if (!foreach_found) {
      Add(out, Diagnostic::Severity::kError, task.where,
          "task '" + task.id + "': foreach '" + task.foreach.get() +
              "' must name one of the task's dependencies");
    }
    if (task.max_parallel > 0 && task.foreach.empty()) {
      Add(out, Diagnostic::Severity::kError, task.where,
          "task '" + task.id + "': max_parallel only applies to a task with foreach");
    }
  }

  for (const Cycle& cycle : FindCycles(spec)) {
    graph_ok = false;
    Add(out, Diagnostic::Severity::kError, cycle.where,
        "dependency cycle: " + FormatCyclePath(cycle));
  }

  if (graph_ok && !spec.tasks.empty()) {
    DagSummary summary = Summarize(spec);
    if (summary.depth > options.chain_warning_threshold) {
      const TaskSpec* end = spec.FindTask(summary.chain_end);
      Add(out, Diagnostic::Severity::kWarning,
          end ? end->where.get() : SourceLocation{spec.source_file},
          "the longest dependency chain has " + std::to_string(summary.depth) + " tasks (" +
              summary.chain_start + " -> " + summary.chain_end + "), above the threshold of " +
              std::to_string(options.chain_warning_threshold) +
              "; a failure near its end retries a long way from its cause");
    }
    CheckFailureJoins(spec, index, out);
    CheckTemplates(spec, index, out);
  }
}

}  // namespace apollo11::dsl

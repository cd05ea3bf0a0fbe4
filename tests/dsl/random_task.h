#pragma once
// Pipeline tasks of random shape for the DSL's JSON tests: the writers and
// readers that skip the DOM for plain tasks are compared with the DOM on
// them.

#include <random>
#include <string>

#include "dsl/pipeline.h"

namespace apollo11::dsl::testing {

// A task of random shape: mostly the plain fields CanonicalJson writes
// without a DOM, sometimes text that needs escaping or a field it leaves to
// the DOM writer.
inline TaskSpec RandomTask(std::mt19937& random, int i) {
  auto pick = [&](int n) { return static_cast<int>(random() % static_cast<unsigned>(n)); };
  const char* const kTexts[] = {"t",         "a-b_c.d", "with \"quote\"", "back\\slash",
                                "tab\there", "ctl\x01", "caf\xc3\xa9",    "del\x7f",
                                "",          "/x/y"};
  const char* const kFiles[] = {"p.yaml", "other.yaml", "we\"ird.yaml", "d\xc3\xa9j\xc3\xa0.yaml"};
  TaskSpec t;
  t.id = "t" + std::to_string(i) + (pick(8) == 0 ? kTexts[pick(10)] : "");
  t.type = static_cast<TaskType>(pick(static_cast<int>(std::size(kTaskTypes))));
  if (pick(2) == 0) t.command = std::string(kTexts[pick(10)]) + (pick(2) ? "true" : "");
  if (pick(3) > 0) t.where = SourceLocation{SharedText(kFiles[pick(4)]), pick(5000) - 2, pick(90)};
  for (int d = pick(4); d > 0; --d) {
    Dependency dep;
    dep.task = "t" + std::to_string(pick(i + 1)) + (pick(10) == 0 ? kTexts[pick(10)] : "");
    dep.on = static_cast<DependencyCondition>(pick(4));
    if (pick(2) == 0) dep.where = SourceLocation{SharedText(kFiles[pick(4)]), pick(70), pick(9)};
    t.depends_on.push_back(dep);
  }
  if (pick(4) == 0) t.trigger = Trigger::kAny;
  if (pick(4) == 0) t.timeout = Millis(static_cast<int64_t>(random()) - (1ll << 30));
  switch (pick(12)) {  // now and then a field only the DOM writer writes
    case 0:
      t.env.mut()["K"] = "v";
      break;
    case 1:
      t.retry = RetryPolicy{};
      break;
    case 2:
      t.priority = -3;
      break;
    case 3:
      t.foreach_items = "xs";
      break;
    default:
      break;
  }
  return t;
}

}  // namespace apollo11::dsl::testing

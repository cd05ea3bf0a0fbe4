#pragma once
// The one list of task types. Everything that names a type or tells types
// apart follows from APOLLO11_TASK_TYPES: the TaskType enum (whose values
// are the DISPATCH's wire `type`), each type's word in YAML and in snapshots,
// the parser's choice list and "one of ..." messages, the key a task of the
// type must have, the snapshot readers' value list (pipeline_json_internal.h)
// and which runner a worker's executor starts it with (executor/executor.cc:
// the type kShell runs on kShellRunner, and a type without a runner does not
// compile). tests/dsl/task_types_test.cc holds the list against
// schema/pipeline.schema.json and the task field list.
//
// A new type is one row here, its runner in the executor and its word in the
// schema's type enum; its own keys are rows of APOLLO11_TASK_FIELDS.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace apollo11::dsl {

// X(enumerator, name, required), in value order:
//   enumerator  the TaskType enumerator; its value is sent on the wire (a
//               DISPATCH's `type`), so rows are only ever appended
//   name        the YAML `type:` word, also the snapshot's JSON value
//   required    the key a task of this type must have (its own or from a
//               template it extends), or keys separated by '|' of which it
//               must have one; "" for none
#define APOLLO11_TASK_TYPES(X)        \
  X(kShell, "shell", "command")       \
  X(kPython, "python", "script|code") \
  X(kHttp, "http", "url")             \
  X(kDb, "db", "host")                \
  X(kNoop, "noop", "")

#define APOLLO11_TASK_TYPE_ENUMERATOR(enumerator, name, required) enumerator,
enum class TaskType { APOLLO11_TASK_TYPES(APOLLO11_TASK_TYPE_ENUMERATOR) };
#undef APOLLO11_TASK_TYPE_ENUMERATOR

// Keys every type may have (APOLLO11_TASK_FIELDS rows without an owner) that
// a type refuses because they would do nothing there: X(enumerator, key,
// why). Validation names the key, the type and `why`.
#define APOLLO11_TASK_REFUSED_KEYS(X)                                                   \
  X(kHttp, "env",                                                                       \
    "it starts no process, so nothing reads an environment; put the value in its url, " \
    "headers or body (a secret: list it under secrets: and write $NAME there)")         \
  X(kNoop, "retry", "it runs nothing, so it cannot fail")                               \
  X(kNoop, "timeout", "it runs nothing, so it cannot run long")                         \
  X(kNoop, "precheck", "it runs nothing, so there is nothing to check before it")       \
  X(kNoop, "env", "it starts no process")                                               \
  X(kNoop, "secrets", "it starts no process")

// Why a task of type `t` refuses `key`, or "" when it does not.
std::string_view RefusedKeyReason(TaskType t, std::string_view key);

// What the list says of one type.
struct TaskTypeInfo {
  TaskType type;
  std::string_view name;
  std::string_view required;  // "" = no key is required
};

#define APOLLO11_TASK_TYPE_INFO(enumerator, name, required) \
  TaskTypeInfo{TaskType::enumerator, name, required},
// Indexed by the TaskType's value.
inline constexpr TaskTypeInfo kTaskTypes[] = {APOLLO11_TASK_TYPES(APOLLO11_TASK_TYPE_INFO)};
#undef APOLLO11_TASK_TYPE_INFO

// "shell", "python", ...; "unknown" for a value not in the list.
const char* ToString(TaskType t);

// The entry of `t`; `t` must be a TaskType of the list.
const TaskTypeInfo& InfoOf(TaskType t);

// The type named `name` in YAML or a snapshot, or nullopt.
std::optional<TaskType> ParseTaskType(std::string_view name);

// The type whose value is `value` (a DISPATCH's `type`), or nullopt when this
// build does not know it (a newer coordinator's type): never a blind cast.
std::optional<TaskType> TaskTypeFromWire(unsigned value);

// Every type's name, in the list's order, for a choice among them.
const std::vector<std::string>& TaskTypeNames();

// The names as one phrase for messages: "shell, python, http, db, noop".
const std::string& TaskTypeNameList();

}  // namespace apollo11::dsl

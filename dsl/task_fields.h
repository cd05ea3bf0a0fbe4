#pragma once
// The one list of a task's fields. Everything that walks a task's keys
// follows from APOLLO11_TASK_FIELDS: the parser's key table (known keys,
// "did you mean" hints, which task type owns a key, each key's reader), the
// pipeline snapshot's JSON writer and reader (pipeline_json.cc), and the copy
// of the fields a worker needs into the DISPATCH payload and from it into the
// executor's request (CopyWireFields). tests/dsl/task_fields_test.cc holds
// the list against schema/pipeline.schema.json.
//
// A new field is one line here, its TaskSpec member and its schema entry;
// a field the worker needs also gets a member of the same name in
// transport::TaskPayload (appended to MSGPACK_DEFINE) and executor::ExecRequest.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dsl/pipeline.h"

namespace apollo11::dsl {

// X(key, member, reader, owner, snapshot, wire), in the order the docs list
// the keys (suggestions prefer the earliest of equally close keys):
//   key       the YAML key; also the snapshot's JSON key for kValue fields
//   member    the TaskSpec member it fills (extends fills none)
//   reader    the TaskParser::Read<reader> method that reads and checks it
//   owner     the one task type whose key it is, or std::nullopt for any type
//   snapshot  kValue: the member as JSON, written only when it differs from
//             a default TaskSpec; kCustom: written by hand in pipeline_json.cc;
//             kNone: not in the snapshot (resolved by the parser)
//   wire      kWire: copied by name into TaskPayload and ExecRequest;
//             kLocal: the coordinator's alone (or sent in another form)
#define APOLLO11_TASK_FIELDS(X)                                                    \
  X("id", id, Id, std::nullopt, kCustom, kLocal)                                   \
  X("type", type, Type, std::nullopt, kCustom, kLocal)                             \
  X("command", command, Text, TaskType::kShell, kValue, kWire)                     \
  X("workdir", workdir, Text, TaskType::kShell, kValue, kWire)                     \
  X("script", script, ScriptPath, TaskType::kPython, kValue, kWire)                \
  X("code", code, Text, TaskType::kPython, kValue, kWire)                          \
  X("args", args, TextList, TaskType::kPython, kValue, kWire)                      \
  X("url", url, HttpUrl, TaskType::kHttp, kValue, kWire)                           \
  X("method", method, HttpMethod, TaskType::kHttp, kValue, kWire)                  \
  X("headers", headers, TextMap, TaskType::kHttp, kValue, kWire)                   \
  X("body", body, TextOrEmpty, TaskType::kHttp, kValue, kWire)                     \
  X("expect_status", expect_status, HttpStatuses, TaskType::kHttp, kValue, kWire)  \
  X("host", db_host, DbUrl, TaskType::kDb, kValue, kWire)                          \
  X("sql", sql, Text, TaskType::kDb, kValue, kWire)                                \
  X("depends_on", depends_on, DependsOn, std::nullopt, kCustom, kLocal)            \
  X("trigger", trigger, Trigger, std::nullopt, kCustom, kLocal)                    \
  X("retry", retry, Retry, std::nullopt, kCustom, kLocal)                          \
  X("timeout", timeout, Timeout, std::nullopt, kCustom, kLocal)                    \
  X("group", group, Group, std::nullopt, kValue, kLocal)                           \
  X("labels", labels, Labels, std::nullopt, kValue, kLocal)                        \
  X("priority", priority, Priority, std::nullopt, kValue, kLocal)                  \
  X("idempotency_key", idempotency_key, KeyTemplate, std::nullopt, kValue, kLocal) \
  X("precheck", precheck, Text, std::nullopt, kValue, kWire)                       \
  X("env", env, EnvMap, std::nullopt, kValue, kWire)                               \
  X("foreach", foreach, Foreach, std::nullopt, kValue, kLocal)                     \
  X("max_parallel", max_parallel, MaxParallel, std::nullopt, kValue, kLocal)       \
  X("params", sql_params, TextList, TaskType::kDb, kValue, kWire)                  \
  X("password_env", db_password_env, EnvName, TaskType::kDb, kValue, kWire)        \
  X("secrets", secrets, SecretMap, std::nullopt, kValue, kWire)                    \
  X("extends", extends, Extends, std::nullopt, kNone, kLocal)

// Expands `code` only for the given snapshot or wire tag (token pasting on
// the tag), so a consumer of the list can skip the fields it does not handle.
#define APOLLO11_TASK_FIELD_IF_kValue(code) code
#define APOLLO11_TASK_FIELD_IF_kCustom(code)
#define APOLLO11_TASK_FIELD_IF_kNone(code)
#define APOLLO11_TASK_FIELD_IF_kWire(code) code
#define APOLLO11_TASK_FIELD_IF_kLocal(code)

enum class TaskFieldSnapshot { kValue, kCustom, kNone };

// What the list says of one key, for code that needs no member.
struct TaskFieldInfo {
  std::string_view key;
  std::optional<TaskType> owner;  // nullopt: a field of every task type
  TaskFieldSnapshot snapshot;
  bool on_wire;
};

#define APOLLO11_TASK_FIELD_INFO(key, member, reader, owner, snapshot, wire) \
  TaskFieldInfo{key, owner, TaskFieldSnapshot::snapshot, std::string_view(#wire) == "kWire"},
inline constexpr TaskFieldInfo kTaskFields[] = {APOLLO11_TASK_FIELDS(APOLLO11_TASK_FIELD_INFO)};
#undef APOLLO11_TASK_FIELD_INFO

// Every task key, in the list's order.
const std::vector<std::string>& TaskKeys();

// The entry for `key`, or nullptr when no task has that key.
const TaskFieldInfo* FindTaskField(std::string_view key);

// Copies the kWire fields from `from` to `to` by member name: TaskSpec to
// transport::TaskPayload on the coordinator, TaskPayload to
// executor::ExecRequest on the worker. The type, timeout and the values the
// scheduler derives (env additions, kill grace, precheck flag) are set by the
// caller.
template <class From, class To>
void CopyWireFields(const From& from, To* to) {
#define APOLLO11_TASK_FIELD_COPY(key, member, reader, owner, snapshot, wire) \
  APOLLO11_TASK_FIELD_IF_##wire(to->member = from.member;)
  APOLLO11_TASK_FIELDS(APOLLO11_TASK_FIELD_COPY)
#undef APOLLO11_TASK_FIELD_COPY
}

}  // namespace apollo11::dsl

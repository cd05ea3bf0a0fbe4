#pragma once
// The sizes every message carrying user data is built to: the worker link's
// decoder enforces the kWire* limits (transport::DecodeLimits defaults and the
// socket's ZMQ_MAXMSGSIZE), and every sender on that link checks the same
// constants before encoding. The kMaxTask*/kMaxParam* limits are what
// validation allows, chosen so that a task's DISPATCH fits a frame by
// construction; docs/dsl.md ("Limits") lists them for pipeline authors.

#include <cstddef>

namespace apollo11 {

// One frame on the worker link (DISPATCH, RESULT, LOG_REPLY, ...).
inline constexpr size_t kWireMaxFrameBytes = size_t{16} << 20;
// One msgpack string or bin in such a frame.
inline constexpr size_t kWireMaxStringBytes = size_t{1} << 20;
// Pairs in one msgpack map, elements in one array.
inline constexpr size_t kWireMaxMapPairs = 10'000;
inline constexpr size_t kWireMaxArrayItems = 100'000;

// Dependencies of one task: each sends its output (or a share of the
// budget below) to the task.
inline constexpr size_t kMaxTaskDependencies = 50'000;
// The source of one task's code: a python task's script or inline code, a db
// task's SQL script. One msgpack string, so the DISPATCH carries it whole.
inline constexpr size_t kMaxTaskCodeBytes = kWireMaxStringBytes;
// The bytes of a task's own fields (command, script, args, env, headers,
// body, precheck, ...) plus the names of its dependencies.
inline constexpr size_t kMaxTaskBytes = size_t{4} << 20;
// Entries in a task's env or headers map, and arguments of a python task.
inline constexpr size_t kMaxTaskMapEntries = 1'000;
inline constexpr size_t kMaxTaskArgs = 10'000;
// Parameters of a run: how many, and their names and values together. One
// value is at most kWireMaxStringBytes.
inline constexpr size_t kMaxParams = 1'000;
inline constexpr size_t kMaxParamsBytes = size_t{2} << 20;
// Upstream outputs in one DISPATCH, all dependencies together: each upstream
// gets the tail of its output up to min(per-upstream cap, this / count).
inline constexpr size_t kMaxDispatchOutputsBytes = size_t{8} << 20;

// What `${...}` placeholders may expand a task's fields to at dispatch
// (docs/dsl.md, "Templating"): one field at most kWireMaxStringBytes (a
// longer one could not be sent), the expanded fields of a task together at
// most kMaxTaskBytes. Upstream outputs read for `${tasks.ID.output...}` are
// parsed once per task; their text together may be parsed at most
// kMaxExpandedParseBytes times over for one task.
inline constexpr size_t kMaxExpandedFieldBytes = kWireMaxStringBytes;
inline constexpr size_t kMaxExpandedTaskBytes = kMaxTaskBytes;
inline constexpr size_t kMaxExpandedParseBytes = size_t{16} << 20;

}  // namespace apollo11

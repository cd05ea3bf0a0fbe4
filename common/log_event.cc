#include "common/log_event.h"

namespace apollo11 {
namespace {

thread_local std::string t_actor = "node";
thread_local std::string t_node;
thread_local std::string_view t_event;
thread_local const std::initializer_list<LogField>* t_fields = nullptr;

// Written once by main before actor threads start, read afterwards only.
std::string& ProcessNode() {
  static std::string node;
  return node;
}

}  // namespace

void SetLogActor(std::string_view actor) { t_actor = std::string(actor); }
const std::string& LogActor() { return t_actor; }

void SetProcessLogNode(std::string_view node) { ProcessNode() = std::string(node); }
void SetLogNode(std::string_view node) { t_node = std::string(node); }
const std::string& LogNode() { return t_node.empty() ? ProcessNode() : t_node; }

std::string_view CurrentLogEvent() { return t_event; }
const std::initializer_list<LogField>* CurrentLogFields() { return t_fields; }

namespace internal {
LogEventScope::LogEventScope(std::string_view event, const std::initializer_list<LogField>* fields)
    : saved_event_(t_event), saved_fields_(t_fields) {
  t_event = event;
  t_fields = fields;
}
LogEventScope::~LogEventScope() {
  t_event = saved_event_;
  t_fields = saved_fields_;
}
}  // namespace internal

}  // namespace apollo11

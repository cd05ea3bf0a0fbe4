// The task type list (dsl/task_types.h) against the JSON Schema and the task
// field list: a type added to one and not the others fails here.

#include "dsl/task_types.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "dsl/task_fields.h"

namespace apollo11::dsl {
namespace {

nlohmann::json TaskFieldsSchema() {
  std::ifstream in(std::string(APOLLO11_SOURCE_DIR) + "/schema/pipeline.schema.json");
  REQUIRE(in.good());
  return nlohmann::json::parse(in).at("definitions").at("task_fields").at("properties");
}

}  // namespace

TEST_CASE("the schema's task types are the type list's, in its order", "[dsl][schema]") {
  const nlohmann::json properties = TaskFieldsSchema();
  std::vector<std::string> schema_types;
  for (const auto& name : properties.at("type").at("enum")) {
    schema_types.push_back(name.get<std::string>());
  }
  CHECK(schema_types == TaskTypeNames());
}

TEST_CASE("each type's required key is a field of that type, described for it in the schema",
          "[dsl][schema]") {
  const nlohmann::json properties = TaskFieldsSchema();
  for (const TaskTypeInfo& type : kTaskTypes) {
    std::string_view rest = type.required;  // keys separated by '|': one of them
    while (!rest.empty()) {
      const std::string key(rest.substr(0, std::min(rest.find('|'), rest.size())));
      rest.remove_prefix(std::min(key.size() + 1, rest.size()));
      INFO(type.name << " requires " << type.required << ": " << key);
      const TaskFieldInfo* field = FindTaskField(key);
      REQUIRE(field != nullptr);
      CHECK(field->owner == type.type);
      const std::string description = properties.at(key).at("description");
      CHECK(description.rfind(std::string(type.name) + ": ", 0) == 0);
    }
  }
}

TEST_CASE("a type's name, wire value and entry lead back to the same type", "[dsl]") {
  std::set<std::string> names;
  for (size_t i = 0; i < std::size(kTaskTypes); ++i) {
    const TaskTypeInfo& info = kTaskTypes[i];
    CHECK(static_cast<size_t>(info.type) == i);
    CHECK(ToString(info.type) == info.name);
    CHECK(ParseTaskType(info.name) == info.type);
    CHECK(TaskTypeFromWire(static_cast<unsigned>(i)) == info.type);
    CHECK(&InfoOf(info.type) == &info);
    names.emplace(info.name);
  }
  CHECK(names.size() == std::size(kTaskTypes));
  CHECK(TaskTypeNameList() == "shell, python, http, db, noop");
  // The wire values are the enum's: what older workers and journals hold.
  CHECK(static_cast<int>(TaskType::kShell) == 0);
  CHECK(static_cast<int>(TaskType::kNoop) == 4);
}

TEST_CASE("a name or wire value outside the list is no type", "[dsl]") {
  CHECK_FALSE(ParseTaskType("shel").has_value());
  CHECK_FALSE(ParseTaskType("").has_value());
  CHECK_FALSE(ParseTaskType("Shell").has_value());
  CHECK_FALSE(TaskTypeFromWire(static_cast<unsigned>(std::size(kTaskTypes))).has_value());
  CHECK_FALSE(TaskTypeFromWire(9).has_value());
  CHECK_FALSE(TaskTypeFromWire(255).has_value());
  CHECK(std::string(ToString(static_cast<TaskType>(9))) == "unknown");
}

}  // namespace apollo11::dsl

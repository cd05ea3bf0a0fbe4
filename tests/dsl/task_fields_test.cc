// The task field list (dsl/task_fields.h) against the JSON Schema: the two
// must name the same keys, so a field added to one and not the other fails here.

#include "dsl/task_fields.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

namespace apollo11::dsl {
namespace {

nlohmann::json Schema() {
  std::ifstream in(std::string(APOLLO11_SOURCE_DIR) + "/schema/pipeline.schema.json");
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

std::set<std::string> Names(const nlohmann::json& list) {
  std::set<std::string> out;
  for (const auto& name : list) out.insert(name.get<std::string>());
  return out;
}

std::set<std::string> TableKeys(bool with_id_and_extends) {
  std::set<std::string> out;
  for (const TaskFieldInfo& f : kTaskFields) {
    if (!with_id_and_extends && (f.key == "id" || f.key == "extends")) continue;
    out.emplace(f.key);
  }
  return out;
}

}  // namespace

TEST_CASE("every task key of the schema is in the field list and vice versa", "[dsl][schema]") {
  const nlohmann::json defs = Schema().at("definitions");
  CHECK(Names(defs.at("task").at("propertyNames").at("enum")) == TableKeys(true));
  CHECK(Names(defs.at("template").at("propertyNames").at("enum")) == TableKeys(false));
  std::set<std::string> described;
  for (const auto& [key, unused] : defs.at("task_fields").at("properties").items()) {
    described.insert(key);
  }
  for (const auto& [key, unused] : defs.at("task").at("properties").items()) described.insert(key);
  CHECK(described == TableKeys(true));
}

TEST_CASE("the field list's keys are unique and in the documented order", "[dsl][schema]") {
  CHECK(TaskKeys().size() == std::size(kTaskFields));
  CHECK(std::set<std::string>(TaskKeys().begin(), TaskKeys().end()).size() == TaskKeys().size());
  CHECK(TaskKeys().front() == "id");
  CHECK(TaskKeys().back() == "extends");
  REQUIRE(FindTaskField("host") != nullptr);
  CHECK(FindTaskField("host")->owner == TaskType::kDb);
  CHECK_FALSE(FindTaskField("group")->owner.has_value());
  CHECK(FindTaskField("comand") == nullptr);
}

TEST_CASE("the wire copy carries exactly the fields marked for the worker", "[dsl]") {
  struct Wire {
    std::string command, workdir, script, url, method, body, precheck;
    std::vector<std::string> args;
    std::map<std::string, std::string> headers, env, secrets;
    std::vector<int> expect_status;
    std::string db_host, sql, db_password_env;
    std::vector<std::string> sql_params;
    std::string code;
  };
  TaskSpec spec;
  spec.command = "echo hi";
  spec.args = {"a"};
  spec.method = "POST";
  spec.expect_status = {200};
  spec.env = std::map<std::string, std::string>{{"A", "1"}};
  spec.precheck = "true";
  spec.sql = "select 1";  // db fields travel too: the worker runs the SQL
  spec.sql_params = {"x"};
  spec.code = "print('hi')";  // a python task's source travels with it
  Wire wire;
  CopyWireFields(spec, &wire);
  CHECK(wire.command == "echo hi");
  CHECK(wire.args == std::vector<std::string>{"a"});
  CHECK(wire.method == "POST");
  CHECK(wire.expect_status == std::vector<int>{200});
  CHECK(wire.env.at("A") == "1");
  CHECK(wire.precheck == "true");
  CHECK(wire.sql == "select 1");
  CHECK(wire.sql_params == std::vector<std::string>{"x"});
  CHECK(wire.code == "print('hi')");
}

}  // namespace apollo11::dsl

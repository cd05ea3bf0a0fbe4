// db tasks through the Executor against real servers: PostgreSQL and MariaDB
// started once for the suite by tests/db/db_servers.sh (CTest fixture
// db_servers), SQLite on a file.

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/clock.h"
#include "executor/executor.h"
#include "tests/executor/executor_test_util.h"

namespace {

using apollo11::Millis;
using apollo11::SystemClock;
using apollo11::dsl::TaskType;
using apollo11::executor::ExecOutcome;
using apollo11::executor::ExecOutcomeKind;
using apollo11::executor::ExecRequest;
using apollo11::executor::Executor;
using apollo11::executor::ExecutorOptions;
using apollo11::executor::TaskInput;
using apollo11::executor::testing::RunToCompletion;
using apollo11::executor::testing::TempDir;
using std::chrono::milliseconds;
using Json = nlohmann::json;

// The KEY=VALUE lines db_servers.sh wrote.
const std::map<std::string, std::string>& Servers() {
  static const std::map<std::string, std::string> servers = [] {
    std::map<std::string, std::string> out;
    std::ifstream in(APOLLO11_DB_STATE);
    std::string line;
    while (std::getline(in, line)) {
      const size_t eq = line.find('=');
      if (eq != std::string::npos) out[line.substr(0, eq)] = line.substr(eq + 1);
    }
    return out;
  }();
  return servers;
}

std::string Server(const std::string& key) {
  auto it = Servers().find(key);
  INFO("the db_servers fixture (tests/db/db_servers.sh) must have run: " APOLLO11_DB_STATE);
  REQUIRE(it != Servers().end());
  return it->second;
}

int attempt_counter = 0;

ExecRequest Db(const std::string& host, const std::string& sql,
               std::vector<std::string> params = {}) {
  ExecRequest r;
  r.exec_id = "run1.db" + std::to_string(::getpid());
  r.attempt = static_cast<uint32_t>(++attempt_counter);
  r.type = TaskType::kDb;
  r.db_host = host;
  r.sql = sql;
  r.sql_params = std::move(params);
  if (host.rfind("sqlite", 0) != 0) {
    r.db_password_env = "APOLLO11_TEST_DB_PASSWORD";
    r.env["APOLLO11_TEST_DB_PASSWORD"] = Server("DB_PASSWORD");
  }
  return r;
}

ExecOutcome RunOne(Executor& ex, const ExecRequest& r, milliseconds limit = milliseconds(20000)) {
  SystemClock clock;
  REQUIRE(ex.Launch(r).ok());
  std::vector<ExecOutcome> out = RunToCompletion(ex, clock, limit);
  REQUIRE(out.size() == 1);
  INFO(out[0].error);
  return out[0];
}

ExecOutcome RunOne(const ExecRequest& r) {
  SystemClock clock;
  Executor ex(ExecutorOptions{}, clock);
  return RunOne(ex, r);
}

Json Rows(const ExecOutcome& o) {
  INFO(o.error << " " << o.task_output);
  REQUIRE(o.kind == ExecOutcomeKind::kSuccess);
  return Json::parse(o.task_output);
}

// A loopback port nothing listens on.
std::string ClosedPortUrl(const std::string& scheme) {
  return scheme + "://apollo@127.0.0.1:1/apollo";
}

const char* const kInjection = "x'); DROP TABLE notes; --";

}  // namespace

TEST_CASE("postgres: params are bound, so an SQL-injection-looking value is stored verbatim",
          "[db][postgres]") {
  const std::string url = Server("PG_URL");
  REQUIRE(
      RunOne(Db(url, "DROP TABLE IF EXISTS notes; CREATE TABLE notes (id int, body text)")).kind ==
      ExecOutcomeKind::kSuccess);
  ExecOutcome ins = RunOne(Db(url, "INSERT INTO notes VALUES ($1, $2)", {"7", kInjection}));
  CHECK(Rows(ins) == Json::parse(R"({"rows_affected": 1})"));
  CHECK(ins.output == "1 row affected\n");
  ExecOutcome q = RunOne(Db(url, "SELECT id, body, NULL AS nothing, true AS yes FROM notes"));
  Json rows = Rows(q);
  CHECK(rows["columns"] == Json::parse(R"(["id", "body", "nothing", "yes"])"));
  REQUIRE(rows["rows"].size() == 1);
  CHECK(rows["rows"][0]["id"] == 7);
  CHECK(rows["rows"][0]["body"] == kInjection);
  CHECK(rows["rows"][0]["nothing"].is_null());
  CHECK(rows["rows"][0]["yes"] == true);
  CHECK(rows["row_count"] == 1);
  CHECK(rows["truncated"] == false);
  CHECK(q.output == "1 row returned\n");
}

TEST_CASE("mysql: params are bound, so an SQL-injection-looking value is stored verbatim",
          "[db][mysql]") {
  const std::string url = Server("MY_URL");
  REQUIRE(
      RunOne(Db(url, "DROP TABLE IF EXISTS notes; CREATE TABLE notes (id int, body text)")).kind ==
      ExecOutcomeKind::kSuccess);
  ExecOutcome ins = RunOne(Db(url, "INSERT INTO notes VALUES (?, ?)", {"7", kInjection}));
  CHECK(Rows(ins) == Json::parse(R"({"rows_affected": 1})"));
  // Bound (prepared) and plain (text protocol) reads give the same JSON.
  for (const auto& [sql, params] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"SELECT id, body, NULL AS nothing, 1.5 AS half FROM notes WHERE id = ?", {"7"}},
           {"SELECT id, body, NULL AS nothing, 1.5 AS half FROM notes", {}}}) {
    Json rows = Rows(RunOne(Db(url, sql, params)));
    REQUIRE(rows["rows"].size() == 1);
    CHECK(rows["rows"][0]["id"] == 7);
    CHECK(rows["rows"][0]["body"] == kInjection);
    CHECK(rows["rows"][0]["nothing"].is_null());
    CHECK(rows["columns"] == Json::parse(R"(["id", "body", "nothing", "half"])"));
  }
}

TEST_CASE("sqlite: bound params, query rows as JSON, capped at 100 rows", "[db][sqlite]") {
  TempDir dir;
  const std::string url = "sqlite://" + dir.path() + "/t.db";
  REQUIRE(RunOne(Db(url, "CREATE TABLE notes (id integer, body text, w real)")).kind ==
          ExecOutcomeKind::kSuccess);
  CHECK(Rows(RunOne(Db(url, "INSERT INTO notes VALUES (?, ?, 0.5)", {"1", kInjection}))) ==
        Json::parse(R"({"rows_affected": 1})"));
  Json rows = Rows(RunOne(Db(url, "SELECT * FROM notes")));
  CHECK(rows["rows"] == Json::parse(std::string(R"([{"id": 1, "body": )") +
                                    Json(kInjection).dump() + R"(, "w": 0.5}])"));
  ExecOutcome many = RunOne(Db(url,
                               "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n "
                               "WHERE i < 250) SELECT i FROM n"));
  Json capped = Rows(many);
  CHECK(capped["rows"].size() == 100);
  CHECK(capped["row_count"] == 250);
  CHECK(capped["truncated"] == true);
  CHECK(many.output == "250 rows returned, first 100 kept\n");
  ExecOutcome wide = RunOne(Db(url,
                               "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n "
                               "WHERE i < 90) SELECT i, printf('%.2000c', 'x') AS pad FROM n"));
  Json bytes_capped = Rows(wide);
  CHECK(wide.task_output.size() <= 64 * 1024);
  CHECK(bytes_capped["rows"].size() >= 30);
  CHECK(bytes_capped["rows"].size() < 33);
  CHECK(bytes_capped["row_count"] == 90);
  CHECK(bytes_capped["truncated"] == true);
}

TEST_CASE("a syntax error fails for good with the server's message and code", "[db]") {
  ExecOutcome pg = RunOne(Db(Server("PG_URL"), "SELEC 1"));
  CHECK(pg.kind == ExecOutcomeKind::kFailed);
  CHECK_FALSE(pg.retryable);
  CHECK(pg.error.find("postgres error 42601") != std::string::npos);
  CHECK(pg.error.find("syntax error at or near \"SELEC\"") != std::string::npos);

  ExecOutcome my = RunOne(Db(Server("MY_URL"), "SELEC 1"));
  CHECK(my.kind == ExecOutcomeKind::kFailed);
  CHECK_FALSE(my.retryable);
  CHECK(my.exit_code == 1064);
  CHECK(my.error.find("mysql error 1064 (42000)") != std::string::npos);
  CHECK(my.error.find("You have an error in your SQL syntax") != std::string::npos);

  TempDir dir;
  ExecOutcome lite = RunOne(Db("sqlite://" + dir.path() + "/t.db", "SELEC 1"));
  CHECK(lite.kind == ExecOutcomeKind::kFailed);
  CHECK_FALSE(lite.retryable);
  CHECK(lite.error.find("sqlite error 1 (SQL logic error): near \"SELEC\": syntax error") !=
        std::string::npos);
}

TEST_CASE("a refused database connection is a retryable failure", "[db]") {
  for (const char* scheme : {"postgres", "mysql"}) {
    ExecOutcome o = RunOne(Db(ClosedPortUrl(scheme), "SELECT 1"));
    INFO(scheme << ": " << o.error);
    CHECK(o.kind == ExecOutcomeKind::kFailed);
    CHECK(o.retryable);
    CHECK(o.error.find("could not connect") != std::string::npos);
  }
}

TEST_CASE("a wrong password or a missing password variable fails for good", "[db]") {
  ExecRequest wrong = Db(Server("PG_URL"), "SELECT 1");
  wrong.env["APOLLO11_TEST_DB_PASSWORD"] = "not-it";
  ExecOutcome pg = RunOne(wrong);
  CHECK(pg.kind == ExecOutcomeKind::kFailed);
  CHECK_FALSE(pg.retryable);
  CHECK(pg.error.find("password authentication failed") != std::string::npos);

  ExecRequest missing = Db(Server("MY_URL"), "SELECT 1");
  missing.env.clear();
  missing.db_password_env = "APOLLO11_TEST_NO_SUCH_VARIABLE";
  ExecOutcome my = RunOne(missing);
  CHECK(my.kind == ExecOutcomeKind::kFailed);
  CHECK_FALSE(my.retryable);
  CHECK(my.error.find("password_env APOLLO11_TEST_NO_SUCH_VARIABLE is set neither") !=
        std::string::npos);
  CHECK(my.error.find(Server("DB_PASSWORD")) == std::string::npos);
}

namespace {

// Sessions other than the asking one still running `marker` on the server.
int64_t RunningOnServer(const std::string& url, bool postgres, const std::string& marker) {
  const std::string sql =
      postgres ? "SELECT count(*) AS n FROM pg_stat_activity WHERE state = 'active' AND "
                 "pid <> pg_backend_pid() AND position($1 in query) > 0"
               : "SELECT count(*) AS n FROM information_schema.PROCESSLIST WHERE "
                 "ID <> CONNECTION_ID() AND COMMAND = 'Query' AND INSTR(INFO, ?) > 0";
  Json rows = Rows(RunOne(Db(url, sql, {marker})));
  return rows["rows"][0]["n"].get<int64_t>();
}

// Runs a 30 s sleep tagged with `marker`, stopped by a timeout (`cancel`
// false) or by Executor::Cancel after 700 ms.
void StopsOnServer(const std::string& url, bool postgres, bool cancel) {
  const std::string marker = "apollo11-sleep-" + std::to_string(::getpid()) +
                             (postgres ? "-pg" : "-my") + (cancel ? "-cancel" : "-timeout");
  const std::string sql = postgres ? "SELECT pg_sleep(30) /* " + marker + " */"
                                   : "SELECT SLEEP(30) /* " + marker + " */";
  SystemClock clock;
  Executor ex(ExecutorOptions{}, clock);
  ExecRequest r = Db(url, sql);
  if (!cancel) r.timeout = Millis(1500);
  const auto start = std::chrono::steady_clock::now();
  REQUIRE(ex.Launch(r).ok());
  std::vector<ExecOutcome> out = RunToCompletion(ex, clock, milliseconds(700));
  REQUIRE(out.empty());
  CHECK(RunningOnServer(url, postgres, marker) == 1);  // it is running there
  if (cancel) ex.Cancel(r.exec_id, r.attempt);
  out = RunToCompletion(ex, clock, milliseconds(15000));
  const auto took = std::chrono::steady_clock::now() - start;
  REQUIRE(out.size() == 1);
  INFO(out[0].error);
  CHECK(out[0].kind == (cancel ? ExecOutcomeKind::kCanceled : ExecOutcomeKind::kTimeout));
  CHECK(out[0].error.find("statement canceled on the server") != std::string::npos);
  CHECK(took < std::chrono::seconds(10));
  CHECK(RunningOnServer(url, postgres, marker) == 0);
}

}  // namespace

TEST_CASE("postgres: a timeout stops pg_sleep on the server", "[db][postgres]") {
  StopsOnServer(Server("PG_URL"), true, false);
}

TEST_CASE("postgres: a cancel stops pg_sleep on the server", "[db][postgres]") {
  StopsOnServer(Server("PG_URL"), true, true);
}

TEST_CASE("mysql: a timeout stops SLEEP on the server with KILL QUERY", "[db][mysql]") {
  StopsOnServer(Server("MY_URL"), false, false);
}

TEST_CASE("mysql: a cancel stops SLEEP on the server with KILL QUERY", "[db][mysql]") {
  StopsOnServer(Server("MY_URL"), false, true);
}

TEST_CASE("sqlite: a timeout interrupts a long statement", "[db][sqlite]") {
  TempDir dir;
  ExecRequest r = Db("sqlite://" + dir.path() + "/t.db",
                     "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) "
                     "SELECT count(*) FROM n");
  r.timeout = Millis(500);
  ExecOutcome o = RunOne(r);
  CHECK(o.kind == ExecOutcomeKind::kTimeout);
  CHECK(o.error.find("statement canceled on the server") != std::string::npos);
}

TEST_CASE("the idempotency key bound as a param lets a unique index stop a duplicate write",
          "[db]") {
  const std::string pg = Server("PG_URL");
  REQUIRE(RunOne(Db(pg,
                    "DROP TABLE IF EXISTS orders; CREATE TABLE orders (key text UNIQUE, "
                    "total int)"))
              .kind == ExecOutcomeKind::kSuccess);
  const std::string pg_insert = "INSERT INTO orders VALUES ($1, $2) ON CONFLICT (key) DO NOTHING";
  CHECK(Rows(RunOne(Db(pg, pg_insert, {"run-42.store", "10"}))) ==
        Json::parse(R"({"rows_affected": 1})"));
  // The second attempt of the same execution writes nothing.
  CHECK(Rows(RunOne(Db(pg, pg_insert, {"run-42.store", "10"}))) ==
        Json::parse(R"({"rows_affected": 0})"));
  CHECK(Rows(RunOne(Db(pg, "SELECT key FROM orders")))["rows"] ==
        Json::parse(R"([{"key": "run-42.store"}])"));

  const std::string my = Server("MY_URL");
  REQUIRE(RunOne(Db(my,
                    "DROP TABLE IF EXISTS orders; CREATE TABLE orders (k varchar(64) "
                    "UNIQUE, total int)"))
              .kind == ExecOutcomeKind::kSuccess);
  const std::string my_insert = "INSERT INTO orders VALUES (?, ?)";
  CHECK(RunOne(Db(my, my_insert, {"run-42.store", "10"})).kind == ExecOutcomeKind::kSuccess);
  ExecOutcome dup = RunOne(Db(my, my_insert, {"run-42.store", "10"}));
  CHECK(dup.kind == ExecOutcomeKind::kFailed);
  CHECK_FALSE(dup.retryable);
  CHECK(dup.exit_code == 1062);
  CHECK(dup.error.find("Duplicate entry 'run-42.store'") != std::string::npos);
}

TEST_CASE("params are bound as the coordinator expanded them, placeholders and all", "[db]") {
  TempDir dir;
  // Templates are expanded once, by the coordinator (dsl/templated_fields.h):
  // text that looks like a placeholder in a value it produced is data.
  ExecRequest r = Db("sqlite://" + dir.path() + "/t.db", "SELECT ? AS a, ? AS b",
                     {"2026-12-01", "${params.day}'; DROP TABLE t; --"});
  Json rows = Rows(RunOne(r));
  CHECK(rows["rows"][0] ==
        Json::parse(R"({"a": "2026-12-01", "b": "${params.day}'; DROP TABLE t; --"})"));
}

TEST_CASE("db tasks run on pool threads: a slow one does not hold up the executor", "[db]") {
  SystemClock clock;
  Executor ex(ExecutorOptions{}, clock);
  ExecRequest slow = Db(Server("PG_URL"), "SELECT pg_sleep(2)");
  ExecRequest quick = Db(Server("PG_URL"), "SELECT 1 AS one");
  REQUIRE(ex.Launch(slow).ok());
  REQUIRE(ex.Launch(quick).ok());
  const auto start = std::chrono::steady_clock::now();
  std::vector<ExecOutcome> out = RunToCompletion(
      ex, clock, milliseconds(10000), [](const std::vector<ExecOutcome>& o) { return !o.empty(); });
  REQUIRE(out.size() == 1);
  CHECK(out[0].attempt == quick.attempt);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::milliseconds(1500));
  out = RunToCompletion(ex, clock, milliseconds(10000));
  REQUIRE(out.size() == 1);
  CHECK(out[0].kind == ExecOutcomeKind::kSuccess);
}

namespace {

// A loopback port whose listen backlog completes TCP connects and then says
// nothing: a server that hangs before its greeting.
class SilentServer {
 public:
  SilentServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) == 0);
    REQUIRE(::listen(fd_, 16) == 0);
    REQUIRE(::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    port_ = ntohs(addr.sin_port);
  }
  ~SilentServer() { ::close(fd_); }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

}  // namespace

TEST_CASE("a server that never answers still ends the task at its timeout", "[db]") {
  SilentServer silent;
  for (const char* scheme : {"postgres", "mysql"}) {
    ExecRequest r =
        Db(std::string(scheme) + "://apollo@127.0.0.1:" + std::to_string(silent.port()) + "/apollo",
           "SELECT 1");
    r.timeout = Millis(1000);
    r.kill_grace = Millis(500);
    const auto start = std::chrono::steady_clock::now();
    SystemClock clock;
    std::vector<ExecOutcome> out;
    {
      Executor ex(ExecutorOptions{}, clock);
      REQUIRE(ex.Launch(r).ok());
      out = RunToCompletion(ex, clock, milliseconds(8000));
      REQUIRE(out.size() == 1);
      CHECK(std::chrono::steady_clock::now() - start < std::chrono::milliseconds(3000));
    }  // the pool thread's connect gives up after min(10 s, timeout) = 1 s
    INFO(scheme << ": " << out[0].error);
    CHECK(out[0].kind == ExecOutcomeKind::kTimeout);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::milliseconds(6000));
  }
}

TEST_CASE("a db task asked to run its precheck runs it first: 0 runs the statement, 3 skips it",
          "[db][sqlite][precheck]") {
  TempDir dir;
  const std::string url = "sqlite://" + dir.path() + "/t.db";
  REQUIRE(RunOne(Db(url, "CREATE TABLE t (x integer)")).kind == ExecOutcomeKind::kSuccess);
  auto insert = [&](const std::string& precheck) {
    ExecRequest r = Db(url, "INSERT INTO t VALUES (1)");
    r.precheck = precheck;
    r.run_precheck = true;
    return r;
  };
  ExecOutcome done = RunOne(insert("echo loaded already; exit 3"));
  CHECK(done.kind == ExecOutcomeKind::kAlreadyDone);
  ExecOutcome refused = RunOne(insert("exit 2"));
  CHECK(refused.kind == ExecOutcomeKind::kFailed);
  CHECK_FALSE(refused.retryable);
  CHECK(refused.error == "precheck exited 2: refusing to rerun");
  ExecOutcome ran = RunOne(insert("echo checked"));
  CHECK(Rows(ran) == Json::parse(R"({"rows_affected": 1})"));
  CHECK(ran.output.find("checked") == std::string::npos);  // the precheck's is in stderr
  CHECK(Rows(RunOne(Db(url, "SELECT count(*) AS n FROM t")))["rows"][0]["n"] == 1);
}

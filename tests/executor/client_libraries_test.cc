// The client libraries' tables (common/libcurl_api.h, executor/db_client_api.h)
// against the libraries installed: every function is found, and a table is
// loaded once per process.

#include <catch2/catch.hpp>
#include <string>

#include "common/libcurl_api.h"
#include "executor/db_client_api.h"

namespace apollo11::executor {
namespace {

#define APOLLO11_CHECK_FOUND(fn) CHECK(table->fn != nullptr);

TEST_CASE("each client library loads once, with every function its table names",
          "[executor][client_libraries]") {
  {
    auto first = LoadLibPq();
    REQUIRE(first.ok());
    const LibPq* table = *first;
    APOLLO11_LIBPQ_FUNCTIONS(APOLLO11_CHECK_FOUND)
    CHECK(*LoadLibPq() == table);
  }
  {
    auto first = LoadLibMariaDb();
    REQUIRE(first.ok());
    const LibMariaDb* table = *first;
    APOLLO11_LIBMARIADB_FUNCTIONS(APOLLO11_CHECK_FOUND)
    CHECK(*LoadLibMariaDb() == table);
  }
  {
    auto first = LoadLibSqlite3();
    REQUIRE(first.ok());
    const LibSqlite3* table = *first;
    APOLLO11_LIBSQLITE3_FUNCTIONS(APOLLO11_CHECK_FOUND)
    CHECK(*LoadLibSqlite3() == table);
    CHECK(std::string(table->sqlite3_errstr(SQLITE_BUSY)) == "database is locked");
  }
  {
    auto first = LoadLibCurl();
    REQUIRE(first.ok());
    const LibCurl* table = *first;
    APOLLO11_LIBCURL_FUNCTIONS(APOLLO11_CHECK_FOUND)
    CHECK(*LoadLibCurl() == table);
    CHECK(std::string(table->curl_easy_strerror(CURLE_OK)) == "No error");
  }
}

#undef APOLLO11_CHECK_FOUND

}  // namespace
}  // namespace apollo11::executor

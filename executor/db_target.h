#pragma once
// DbTarget: a db task's `host:` URL taken apart, without a password.
//   postgres://USER@HOST:PORT/DB?OPTIONS   (postgresql:// too; passed to libpq)
//   mysql://USER@HOST:PORT/DB?socket=PATH  (mariadb:// too)
//   sqlite:///ABSOLUTE/PATH

#include <string>

#include "common/status.h"

namespace apollo11::executor {

struct DbTarget {
  enum class Kind { kPostgres, kMariadb, kSqlite };
  Kind kind = Kind::kSqlite;
  std::string url;  // as given (postgres: handed to libpq as is)
  std::string user;
  std::string host;   // mysql: empty = localhost
  unsigned port = 0;  // 0 = the library's default
  std::string database;
  std::string socket;  // mysql: ?socket=PATH, a unix socket instead of TCP
  std::string path;    // sqlite: the database file

  // Parses `url`; InvalidInput with the reason when it is not one of the
  // forms above or holds a password.
  static Result<DbTarget> Parse(const std::string& url);
};

}  // namespace apollo11::executor

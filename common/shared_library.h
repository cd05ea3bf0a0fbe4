#pragma once
// Client libraries opened on first use (dlopen) rather than at process start.
//
// libpq, libmariadb, SQLite and libcurl (with GnuTLS, LDAP, SSH and more
// behind them) were 21 of the 52 shared objects `apollo11` mapped at start,
// and 5 of its 11 ms to start: a `status`, a `validate` and an embedded
// `run` paid for them although only db tasks, http tasks, webhooks and the
// etcd client call them. Each of those parts declares a table of the
// functions it calls (executor/db_client_api.h, common/libcurl_api.h) and
// fills it from here the first time it needs one.
//
// A library opened here is never closed: libcurl and OpenSSL keep global
// state that must outlive every handle, and a table's pointers stay valid
// for the life of the process.

#include <string>

#include "common/status.h"

namespace apollo11 {

class SharedLibrary {
 public:
  // Opens `soname` (RTLD_NOW | RTLD_GLOBAL: every symbol bound now and
  // visible to what the library loads in turn, such as libmariadb's
  // authentication plugins, as when it was linked). `what` names the
  // library for the error, which also carries dlerror()'s text: "libpq
  // (libpq.so.5) cannot be loaded: ...".
  static Result<SharedLibrary> Open(const char* soname, const char* what);

  // Sets *fn to the function `name`, or returns an error naming the library
  // and the missing symbol (a library older than the one built against).
  template <typename Fn>
  Status Resolve(const char* name, Fn* fn) const {
    void* address = Lookup(name);
    if (address == nullptr) return Missing(name);
    *fn = reinterpret_cast<Fn>(address);
    return Status::Ok();
  }

 private:
  SharedLibrary(void* handle, std::string label) : handle_(handle), label_(std::move(label)) {}
  void* Lookup(const char* name) const;
  Status Missing(const char* name) const;

  void* handle_ = nullptr;
  std::string label_;  // "libpq (libpq.so.5)"
};

}  // namespace apollo11

// Declares one member per function of an X-macro list, typed as the
// function itself (so a call through the table is checked like a direct one).
#define APOLLO11_SHARED_FN_MEMBER(fn) decltype(&::fn) fn = nullptr;
// Resolves one member; stops at the first missing function.
#define APOLLO11_SHARED_FN_RESOLVE(fn) \
  if (status.ok()) status = library.Resolve(#fn, &table.fn);
// An expression of type Result<const Table*>: opens `soname` and fills a
// static Table through the X-macro `list`, or the error that stopped it.
// Evaluate it once (in a function-local static's initializer).
#define APOLLO11_LOAD_SHARED_TABLE(Table, soname, what, list)    \
  []() -> ::apollo11::Result<const Table*> {                     \
    auto opened = ::apollo11::SharedLibrary::Open(soname, what); \
    if (!opened.ok()) return opened.status();                    \
    const ::apollo11::SharedLibrary& library = *opened;          \
    static Table table;                                          \
    ::apollo11::Status status;                                   \
    list(APOLLO11_SHARED_FN_RESOLVE);                            \
    if (!status.ok()) return status;                             \
    return &table;                                               \
  }()

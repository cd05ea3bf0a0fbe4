#include "common/shared_library.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <string>

namespace apollo11 {
namespace {

TEST_CASE("a library that cannot be opened is refused with the loader's reason",
          "[common][shared_library]") {
  auto opened = SharedLibrary::Open("libapollo11-absent.so.9", "the absent library");
  REQUIRE_FALSE(opened.ok());
  const std::string& why = opened.status().message();
  CHECK(why.find("the absent library (libapollo11-absent.so.9) cannot be loaded: ") == 0);
  CHECK(why.find("No such file") != std::string::npos);  // dlerror()'s text
}

TEST_CASE("a function is resolved with its own type, and a missing one is named",
          "[common][shared_library]") {
  auto libc = SharedLibrary::Open("libc.so.6", "libc");
  REQUIRE(libc.ok());
  decltype(&::strlen) length = nullptr;
  REQUIRE(libc->Resolve("strlen", &length).ok());
  CHECK(length("apollo") == 6);

  decltype(&::strlen) absent = &::strlen;
  Status missing = libc->Resolve("apollo11_no_such_function", &absent);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.message() ==
        "libc (libc.so.6) has no function apollo11_no_such_function: older than the library "
        "Apollo-11 was built against");
  CHECK(absent == &::strlen);  // left as it was
}

}  // namespace
}  // namespace apollo11

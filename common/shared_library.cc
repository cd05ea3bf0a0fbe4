#include "common/shared_library.h"

#include <dlfcn.h>

namespace apollo11 {

Result<SharedLibrary> SharedLibrary::Open(const char* soname, const char* what) {
  std::string label = std::string(what) + " (" + soname + ")";
  void* handle = ::dlopen(soname, RTLD_NOW | RTLD_GLOBAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    return Status::Unsupported(
        label + " cannot be loaded: " + (why != nullptr ? why : "unknown dlopen error"));
  }
  return SharedLibrary(handle, std::move(label));
}

void* SharedLibrary::Lookup(const char* name) const {
  ::dlerror();  // clear a stale error
  return ::dlsym(handle_, name);
}

Status SharedLibrary::Missing(const char* name) const {
  return Status::Unsupported(label_ + " has no function " + name +
                             ": older than the library Apollo-11 was built against");
}

}  // namespace apollo11

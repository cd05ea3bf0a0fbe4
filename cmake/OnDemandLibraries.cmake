# Client libraries opened on first use (common/shared_library.h): libpq,
# libmariadb, SQLite and libcurl. Apollo-11 compiles against their headers
# but does not link them; it dlopens each by the SONAME of the library found
# here, so the build and the run agree on the ABI. The Debian package then
# depends on their packages by name (dpkg-shlibdeps cannot see a dlopen):
# APOLLO11_ON_DEMAND_DEBS collects them.

# apollo11_on_demand_library(<PREFIX> <library file> <include dirs...>):
# defines <PREFIX>_SONAME (libpq.so.5) and the interface target
# apollo11_<prefix>_headers (lower case) that gives its headers and its SONAME as
# the compile definition APOLLO11_<PREFIX>_SONAME.
function(apollo11_on_demand_library prefix library)
  get_filename_component(real "${library}" REALPATH)
  execute_process(COMMAND ${CMAKE_OBJDUMP} -p "${real}"
                  OUTPUT_VARIABLE dump RESULT_VARIABLE rc ERROR_QUIET)
  string(REGEX MATCH "SONAME +([^ \n]+)" found "${dump}")
  if(NOT rc EQUAL 0 OR NOT CMAKE_MATCH_1)
    message(FATAL_ERROR "no SONAME in ${real} (objdump -p): cannot open it on demand")
  endif()
  set(soname "${CMAKE_MATCH_1}")
  string(TOLOWER "${prefix}" lower)
  add_library(apollo11_${lower}_headers INTERFACE)
  target_include_directories(apollo11_${lower}_headers INTERFACE ${ARGN})
  target_compile_definitions(apollo11_${lower}_headers INTERFACE APOLLO11_${prefix}_SONAME="${soname}")
  set(${prefix}_SONAME "${soname}" PARENT_SCOPE)
  # The Debian package that ships the file the SONAME names.
  get_filename_component(dir "${real}" DIRECTORY)
  execute_process(COMMAND dpkg-query -S "${dir}/${soname}"
                  OUTPUT_VARIABLE owner RESULT_VARIABLE rc ERROR_QUIET)
  if(rc EQUAL 0)
    string(REGEX REPLACE "[:,].*" "" deb "${owner}")
    set(debs ${APOLLO11_ON_DEMAND_DEBS} ${deb})
    set(APOLLO11_ON_DEMAND_DEBS "${debs}" CACHE INTERNAL "packages of on-demand libraries")
  endif()
endfunction()

set(APOLLO11_ON_DEMAND_DEBS "" CACHE INTERNAL "packages of on-demand libraries")
apollo11_on_demand_library(LIBPQ "${PostgreSQL_LIBRARY_RELEASE}" ${PostgreSQL_INCLUDE_DIRS})
apollo11_on_demand_library(LIBMARIADB "${pkgcfg_lib_MARIADB_mariadb}" ${MARIADB_INCLUDE_DIRS})
apollo11_on_demand_library(LIBSQLITE3 "${SQLite3_LIBRARY}" ${SQLite3_INCLUDE_DIRS})
apollo11_on_demand_library(LIBCURL "${CURL_LIBRARY_RELEASE}" ${CURL_INCLUDE_DIRS})

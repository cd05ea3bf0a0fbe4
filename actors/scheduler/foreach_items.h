#pragma once
// The items a foreach task fans out over, read from its upstream's result:
// the lines of its stdout, or a JSON array in its $APOLLO11_OUTPUT output
// (docs/dsl.md, "foreach"). Pure: the scheduler calls it when the task goes
// READY and journals what it returns.

#include <cstddef>
#include <string>
#include <vector>

#include "common/status.h"

namespace apollo11::actors {

class ForeachItems {
 public:
  // One item per line of `stdout_text` ("\n" or "\r\n" ends a line), blank
  // lines skipped. Never more than `cap` + 1 items: one more than the cap is
  // enough to refuse the expansion.
  static std::vector<std::string> FromLines(const std::string& stdout_text, size_t cap);

  // The elements of the JSON array at `items` ("output" or "output.PATH",
  // object keys and array indexes separated by '.') of `output_json`; a
  // string element is its text, any other its compact JSON. At most `cap` +
  // 1 items. InvalidInput with a sentence when the output is empty or not
  // JSON, or the path is missing or not an array.
  static Result<std::vector<std::string>> FromJson(const std::string& output_json,
                                                   const std::string& items, size_t cap);
};

}  // namespace apollo11::actors

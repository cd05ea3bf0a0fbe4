#pragma once
// Configuration files in YAML (a node's --config, its alert rules) read
// through the same guard as pipelines (dsl/yaml_guard.h, docs/dsl.md): a
// size limit, UTF-8 text, bounded nesting, the inputs on which yaml-cpp 0.7
// loops allocating without end refused first, one document, aliases bounded.
// yaml-cpp alone would take an 8-byte file to all of the machine's memory.

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"
#include "dsl/yaml_tree.h"

namespace apollo11::dsl {

// The one document of the file at `path` (its root undefined or null when the
// file is empty or only comments), or InvalidInput "PATH:LINE:COL: why" when
// the file is missing, larger than `max_bytes` (its aliases written out
// included) or refused by the guard. Never throws.
Result<std::shared_ptr<const YamlTree>> LoadYamlFile(const std::string& path,
                                                     size_t max_bytes = size_t{1} << 20);

// The same for `text`, named `name` in errors: for configuration held in memory.
Result<std::shared_ptr<const YamlTree>> ParseYamlText(std::string_view text,
                                                      const std::string& name,
                                                      size_t max_bytes = size_t{1} << 20);

}  // namespace apollo11::dsl

#pragma once
// Configuration files in YAML (a node's --config, its alert rules) read
// through the same guard as pipelines (dsl/yaml_guard.h, docs/dsl.md): a
// size limit, UTF-8 text, bounded nesting, the inputs on which yaml-cpp 0.7
// loops allocating without end refused first, one document, aliases bounded.
// yaml-cpp alone would take an 8-byte file to all of the machine's memory.

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <string>

#include "common/status.h"

namespace apollo11::dsl {

// The one document of the file at `path` (a null node when the file is empty
// or only comments), or InvalidInput "PATH:LINE:COL: why" when the file is
// missing, larger than `max_bytes` (its aliases written out included) or
// refused by the guard. Never throws.
Result<YAML::Node> LoadYamlFile(const std::string& path, size_t max_bytes = size_t{1} << 20);

}  // namespace apollo11::dsl

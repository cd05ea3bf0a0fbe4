#pragma once
// registry: a run's parameters from the pipeline's declared ones and the
// values a caller gives (`-p key=value`, a trigger's params). A declared
// param's type is the one its default reads as: an integer ("3"), a number
// ("0.5"), a boolean ("true"/"false"), else a string. A given value must be
// declared and read as that type.

#include <map>
#include <string>

#include "common/status.h"

namespace apollo11::dsl {

// The type a default value reads as: "integer", "number", "boolean" or
// "string".
const char* ParamType(const std::string& default_value);

// `declared` (the defaults) overridden by `given`. InvalidInput naming the
// param, and the declared ones, when `given` has an undeclared key, or a
// value that does not read as its default's type; also when the result is
// over the parameter limits (CheckParamLimits).
Result<std::map<std::string, std::string>> ResolveParams(
    const std::string& pipeline, const std::map<std::string, std::string>& declared,
    const std::map<std::string, std::string>& given);

// "key=value" split at the first '='; InvalidInput when there is no '=' or
// the key is empty.
Status ParseParamArg(const std::string& arg, std::map<std::string, std::string>* out);

}  // namespace apollo11::dsl

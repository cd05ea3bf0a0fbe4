#pragma once
// registry: a pipeline file as a registry request, shared by `apollo11
// pipelines add` and POST /api/pipelines: a valid pipeline is registered
// (kAdd, its resolved snapshot and content hash); one that fails validation
// is reported (kReject, its positioned errors) so that the coordinator
// raises pipeline_rejected and keeps the active version.

#include <string>
#include <string_view>

#include "actors/client_protocol.h"
#include "dsl/parser.h"

namespace apollo11::cli {

// The request for `parsed`, the result of checking `yaml` read from `path`;
// `actor` names who registers ("cli", "http"). A pipeline that parsed has
// its source forgotten (dsl::ForgetSource) before its snapshot is made.
actors::RegistryRequest RegistrationOf(dsl::ParseResult* parsed, std::string_view yaml,
                                       const std::string& path, const std::string& actor);

// The pipeline name of `yaml` as far as a file that does not validate tells
// it: its top-level `name:`, else the file's stem (the DSL's default).
std::string PipelineNameOf(std::string_view yaml, const std::string& path);

}  // namespace apollo11::cli

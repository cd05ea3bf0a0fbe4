#pragma once
// The pipeline model as JSON: the run's immutable snapshot in the journal,
// the API's pipeline view, and the content hash that names a version.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/status.h"
#include "dsl/pipeline.h"

namespace apollo11::dsl {

// Every field of `spec`, source locations included, durations in
// milliseconds ("delay_ms"), enums as their DSL words.
nlohmann::json ToJson(const PipelineSpec& spec);

// The inverse of ToJson: PipelineFromJson(ToJson(s)) == s exactly. Missing
// optional fields take the model's defaults; wrong types give kCorrupt.
Result<PipelineSpec> PipelineFromJson(const nlohmann::json& j);

// PipelineFromJson of JSON text, without ever holding the whole document's
// DOM: tasks written as PlainTaskJson writes them are read without one
// (dsl/snapshot_text.h), any other task through a DOM of its own. For the
// journal's snapshots and submissions. InvalidInput when `text` is not JSON,
// kCorrupt when it does not decode.
//
// kCheckAndDrop reads every task's and dependency's location as kKeep does
// (a malformed one is still kCorrupt) but leaves `where` empty: the
// scheduler never shows a location, and in a 100k-task run their copies of
// the file name alone took 9 MB.
enum class Locations { kKeep, kCheckAndDrop };
Result<PipelineSpec> PipelineFromJsonText(std::string_view text,
                                          Locations locations = Locations::kKeep);
// Empties every task's and dependency's location in `spec`: a model parsed
// from YAML then equals what kCheckAndDrop decodes from its snapshot.
void DropLocations(PipelineSpec* spec);

// Forgets where the pipeline's text came from: every location and the
// source file's name. A snapshot records what a pipeline does, so every
// submission and registration forgets its source first: the same content
// read from any path or directory, with other comments or line numbers,
// makes the same snapshot, hash and registered version.
void ForgetSource(PipelineSpec* spec);

// About how many tasks the snapshot `text` holds (its "id" keys, and ids in
// env maps too), for PipelineFromJsonText's reserve(): never more than a
// valid snapshot of text.size() bytes could hold, whatever the text is.
size_t EstimateTaskCount(std::string_view text);

// Replaces each task's "env" object in a snapshot by the list of its
// variable names, for answers that must not show env values (the API).
// Secret references stay: they hold no value.
void HideEnvValues(nlohmann::json* snapshot);

// ToJson serialised compactly with keys in sorted order: byte-identical for
// equal specs, so it can be hashed and compared.
std::string CanonicalJson(const PipelineSpec& spec);
// CanonicalJson(spec), for a caller done with the model: each task is
// freed once written, so the text and the whole model are never held at
// once (a 100k-task model is some 65 MB). `spec` keeps its other fields and
// no tasks.
std::string TakeCanonicalJson(PipelineSpec&& spec);

// 16 hex digits of the 64-bit FNV-1a hash of CanonicalJson(spec). Locations
// are part of it unless ForgetSource removed them.
std::string ContentHash(const PipelineSpec& spec);
// The same hash of a CanonicalJson result the caller already holds (building
// the canonical JSON of a large pipeline twice costs as much as parsing it).
std::string HashCanonicalJson(std::string_view canonical);

}  // namespace apollo11::dsl

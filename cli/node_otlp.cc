// Node: the span exporter (--otlp-endpoint, observability/otlp_exporter.h):
// the spans of each run that ends, read from this node's coordinator on a
// link of the exporter's own and sent to the collector. With HA only the
// leader sends: a standby's queries would be answered by the leader, whose
// own exporter sends the same runs.

#include <spdlog/spdlog.h>

#include "cli/node.h"
#include "cli/version.h"

namespace apollo11::cli {

Status Node::StartOtlp() {
  if (!config_.otlp || !coordinator_) return Status::Ok();
  const auto& curve = config_.coordinator_config.curve;
  // Its long polls wait up to a second: a timeout well above that.
  otlp_api_ = std::make_unique<CoordinatorApi>(coordinator_->client_endpoint(), curve,
                                               curve ? curve->public_z85 : "", Millis(10000));
  observability::OtlpExporterOptions o;
  o.endpoint = *config_.otlp;
  o.backend = otlp_api_.get();
  o.registry = &registry_;
  o.resource.service_instance_id = config_.otlp_instance;
  o.resource.service_version = kVersion;
  if (const ha::RoleBoard* board = ha_board_.get()) {
    o.leading = [this, board] {
      return board->role() == ha::Role::kLeader && serving_leader_.load();
    };
  }
  auto exporter = observability::OtlpExporter::Start(std::move(o));
  if (!exporter.ok()) return exporter.status();
  otlp_ = std::move(*exporter);
  listening_["otlp"] = config_.otlp->url();
  spdlog::info("otlp: the spans of every run that ends are sent to {}{}", config_.otlp->url(),
               ha_board_ ? " while this coordinator leads" : "");
  return Status::Ok();
}

}  // namespace apollo11::cli

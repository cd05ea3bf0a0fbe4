// libFuzzer target for every frame that arrives from outside the process:
// worker <-> coordinator wire messages (default DecodeLimits) and client <->
// coordinator messages (ClientLimits). Any bytes must decode to a value or a
// Status: never a crash, a hang, an exception or an allocation past the
// limits. What decodes must re-encode to bytes that decode to the same value.

#include <cstddef>
#include <cstdint>
#include <string>

#include "actors/actor_loop.h"
#include "actors/client_protocol.h"
#include "actors/internal_messages.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/heap_budget.h"
#include "transport/codec.h"
#include "transport/messages.h"

namespace apollo11::fuzz {
namespace {

using transport::DecodeLimits;
using transport::Envelope;

// Converts the body to T; when that works, checks that encoding the value and
// decoding it again gives the same bytes on a second encode (no field is
// lost, clamped or invented by a round trip).
template <class T>
void CheckBody(const Envelope& env, const DecodeLimits& limits) {
  auto body = transport::BodyAs<T>(env);
  if (!body.ok()) {
    Require(!body.status().message().empty(), "a refused body says why");
    return;
  }
  std::string once;
  transport::Encode(env.type, *body, &once);
  if (once.size() > limits.max_frame) return;  // defaults filled in made it larger
  auto again = transport::DecodeEnvelope(once.data(), once.size(), limits);
  Require(again.ok(), "a frame we encoded decodes");
  auto body_again = transport::BodyAs<T>(*again);
  Require(body_again.ok(), "a body we encoded converts back");
  std::string twice;
  transport::Encode(again->type, *body_again, &twice);
  Require(once == twice, "re-encoding a decoded body is stable");
}

// What a worker or coordinator reads from the network.
void WireMessages(const uint8_t* data, size_t size) {
  const DecodeLimits limits;
  auto env = transport::DecodeEnvelope(data, size, limits);
  if (!env.ok()) {
    Require(!env.status().message().empty(), "a refused frame says why");
    return;
  }
  CheckBody<transport::Hello>(*env, limits);
  CheckBody<transport::Credit>(*env, limits);
  CheckBody<transport::Dispatch>(*env, limits);
  CheckBody<transport::Started>(*env, limits);
  CheckBody<transport::ResultMsg>(*env, limits);
  CheckBody<transport::Ack>(*env, limits);
  CheckBody<transport::Heartbeat>(*env, limits);
  CheckBody<transport::Probe>(*env, limits);
  CheckBody<transport::ProbeReply>(*env, limits);
  CheckBody<transport::Cancel>(*env, limits);
  CheckBody<transport::Bye>(*env, limits);
  CheckBody<transport::LogRequest>(*env, limits);
  CheckBody<transport::LogReply>(*env, limits);
}

// What the coordinator's client ROUTER reads (submit, cancel, query) and what
// the CLI reads back (replies, progress).
void ClientMessages(const uint8_t* data, size_t size) {
  const DecodeLimits limits = actors::ClientLimits();
  auto env = transport::DecodeEnvelope(data, size, limits);
  if (!env.ok()) return;
  CheckBody<actors::SubmitRun>(*env, limits);
  CheckBody<actors::CancelRun>(*env, limits);
  CheckBody<actors::Query>(*env, limits);
  CheckBody<actors::SubmitReply>(*env, limits);
  CheckBody<actors::QueryReply>(*env, limits);
  CheckBody<actors::RunProgress>(*env, limits);
  CheckBody<actors::RunFinished>(*env, limits);
}

}  // namespace
}  // namespace apollo11::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  apollo11::fuzz::HeapBudget budget;
  apollo11::fuzz::WireMessages(data, size);
  apollo11::fuzz::ClientMessages(data, size);
  return 0;
}

// libFuzzer entry point for the frame decoder: any bytes must decode to a
// value or a Status, never crash, hang or allocate past DecodeLimits.

#include <cstddef>
#include <cstdint>

#include "transport/codec.h"
#include "transport/messages.h"

namespace apollo11::transport {

// Decodes `data` as a frame and converts its body to every wire message type.
int FuzzDecode(const uint8_t* data, size_t size) {
  auto env = DecodeEnvelope(data, size);
  if (!env.ok()) return 0;
  (void)BodyAs<Hello>(*env);
  (void)BodyAs<Credit>(*env);
  (void)BodyAs<Dispatch>(*env);
  (void)BodyAs<Started>(*env);
  (void)BodyAs<ResultMsg>(*env);
  (void)BodyAs<Ack>(*env);
  (void)BodyAs<Heartbeat>(*env);
  (void)BodyAs<Probe>(*env);
  (void)BodyAs<ProbeReply>(*env);
  (void)BodyAs<Cancel>(*env);
  (void)BodyAs<Bye>(*env);
  return 0;
}

}  // namespace apollo11::transport

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return apollo11::transport::FuzzDecode(data, size);
}

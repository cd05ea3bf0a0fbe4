#pragma once
// The input format of fuzz_dispatcher_frames, shared by the target and the
// seed writer: a byte program of steps, each an opcode byte and an argument
// byte; kFrame steps carry a length byte and that many frame bytes. Worker
// frames are the outside input; the other steps are what the scheduler,
// reconciler and clock do between them.

#include <cstdint>
#include <string>

namespace apollo11::fuzz {

enum class DispatcherStep : uint8_t {
  kFrame = 0,   // arg: worker index; then length, then the frame
  kEnqueue,     // arg: execution index (attempt and group from it)
  kPlace,       //
  kHeartbeat,   //
  kProbe,       //
  kCancel,      // arg: execution index
  kAck,         // arg: worker index, execution index
  kWorkerLost,  // arg: worker index
  kAdopt,       // arg: worker index, execution index
  kAdvance,     // arg: milliseconds / 4
  kStepCount,
};

// Appends one step to `program`.
inline void AppendStep(std::string* program, DispatcherStep step, uint8_t arg,
                       const std::string& frame = {}) {
  program->push_back(static_cast<char>(step));
  program->push_back(static_cast<char>(arg));
  if (step == DispatcherStep::kFrame) {
    program->push_back(static_cast<char>(frame.size() > 255 ? 255 : frame.size()));
    program->append(frame, 0, 255);
  }
}

}  // namespace apollo11::fuzz

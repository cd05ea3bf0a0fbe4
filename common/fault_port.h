#pragma once
// Named points where a test may make the coordinator fail on purpose, after
// LevelDB's Env: production code says where it is (`faults->At(point)`) and
// the port it was given decides what happens there. The default port does
// nothing. Process tests start apollo11-node with $APOLLO11_TEST_FAULT, and
// the node wires a port that kills the process or throws at the named point
// (cli/test_faults.h); unit tests and the simulator pass their own.
//
// Threads: a port is called from whichever actor thread reaches the point;
// an implementation that keeps state must guard it.

#include <cstdint>

namespace apollo11 {

enum class FaultPoint : uint8_t {
  // A client's query was decoded and is about to be answered.
  kQueryAnswering,
  // A schedule's fire started a run that is staged and not yet committed.
  kFireStaged,
  // The commit that holds a fire's run succeeded; its effects are not sent yet.
  kFireCommitted,
};

// The name a test uses for `point` ("query-answering", ...).
const char* FaultPointName(FaultPoint point);

class FaultPort {
 public:
  virtual ~FaultPort() = default;
  // Called each time the code reaches `point`. May throw, end the process,
  // or return (the code goes on as if nothing happened).
  virtual void At(FaultPoint point) = 0;
};

// A port that does nothing: the default everywhere. Never null, never freed.
FaultPort* NoFaults();

}  // namespace apollo11

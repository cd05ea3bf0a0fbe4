#include "common/fault_port.h"

namespace apollo11 {
namespace {

class NoFaultPort final : public FaultPort {
 public:
  void At(FaultPoint) override {}
};

}  // namespace

const char* FaultPointName(FaultPoint point) {
  switch (point) {
    case FaultPoint::kQueryAnswering:
      return "query-answering";
    case FaultPoint::kFireStaged:
      return "fire-staged";
    case FaultPoint::kFireCommitted:
      return "fire-committed";
  }
  return "?";
}

FaultPort* NoFaults() {
  static NoFaultPort port;
  return &port;
}

}  // namespace apollo11

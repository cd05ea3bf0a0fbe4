#include "cli/test_faults.h"

#include <spdlog/spdlog.h>

#include <array>
#include <csignal>
#include <stdexcept>
#include <utility>

namespace apollo11::cli {
namespace {

enum class Act : uint8_t { kThrow, kKill };

struct Known {
  const char* name;
  FaultPoint point;
  Act act;
};
constexpr std::array<Known, 3> kKnown = {{
    {"scheduler-query", FaultPoint::kQueryAnswering, Act::kThrow},
    {"sched-before-commit", FaultPoint::kFireStaged, Act::kKill},
    {"sched-after-commit", FaultPoint::kFireCommitted, Act::kKill},
}};

// Fails at one point, every time the code reaches it.
class OnePointFault final : public FaultPort {
 public:
  explicit OnePointFault(Known fault) : fault_(fault) {}

  void At(FaultPoint point) override {
    if (point != fault_.point) return;
    if (fault_.act == Act::kThrow) {
      throw std::runtime_error(std::string("test fault APOLLO11_TEST_FAULT=") + fault_.name);
    }
    spdlog::warn("test fault: killed at {} ({})", FaultPointName(point), fault_.name);
    spdlog::default_logger()->flush();
    std::raise(SIGKILL);
  }

 private:
  Known fault_;
};

}  // namespace

Result<std::unique_ptr<FaultPort>> TestFaultPort(const std::string& name) {
  if (name.empty()) return std::unique_ptr<FaultPort>();
  std::string known;
  for (const Known& k : kKnown) {
    if (name == k.name) return std::unique_ptr<FaultPort>(std::make_unique<OnePointFault>(k));
    known += known.empty() ? k.name : std::string(", ") + k.name;
  }
  return Status::InvalidInput("APOLLO11_TEST_FAULT=" + name +
                              ": no such test fault (known: " + known + ")");
}

}  // namespace apollo11::cli

#include "opweave/cancellation.h"

namespace opweave {
namespace {

thread_local const std::atomic<bool>* t_cancellation = nullptr;

}  // namespace

const std::atomic<bool>* current_cancellation() noexcept { return t_cancellation; }

ScopedCancellation::ScopedCancellation(const std::atomic<bool>* flag) noexcept
    : previous_(t_cancellation) {
  t_cancellation = flag;
}

ScopedCancellation::~ScopedCancellation() { t_cancellation = previous_; }

}  // namespace opweave

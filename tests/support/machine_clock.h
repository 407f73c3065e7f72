// MachineClock: one simulated machine's clock, for the deterministic
// simulations: the true (simulated) time, plus a wall offset that NTP may
// move and a monotonic origin of its own. Not thread-safe beyond what the
// SimulatedClock below it is; one simulation thread drives it.
#pragma once

#include "leasehold/clock.h"

namespace leasehold::testing {

class MachineClock final : public Clock {
 public:
  // REQUIRES: truth outlives this clock.
  MachineClock(SimulatedClock& truth, Duration wall_offset, Duration mono_offset)
      : truth_(truth), wall_offset_(wall_offset), mono_offset_(mono_offset) {}
  WallTime wall_now() override {
    return truth_.wall_now() + std::chrono::duration_cast<WallTime::duration>(wall_offset_);
  }
  MonoTime mono_now() override { return truth_.mono_now() + mono_offset_; }
  void set_wall_offset(Duration d) { wall_offset_ = d; }

 private:
  SimulatedClock& truth_;
  Duration wall_offset_;
  Duration mono_offset_;
};

}  // namespace leasehold::testing

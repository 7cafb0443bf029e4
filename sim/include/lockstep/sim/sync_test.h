// Sync test: every tick, roll a copy of the world back a few ticks and simulate them again with
// the same inputs and commands; the hashes must come out the same. What it catches is state a
// step reads that a snapshot does not restore (a rollback client would desync on it) and state
// the hash does not cover (the re-simulated snapshot differs while the hashes agree).
//
// Usage: make a SyncTester when the world is where the test starts; each tick call its step()
// with the tick's commands and inputs instead of World::step(TickInput) (it applies them to the
// world and records what the world accepted). Every change to the world between ticks must go
// through it: an edit it does not see is exactly the kind of state it reports. All memory is
// taken at creation (rollback_ticks + 1 snapshots and input records, and two scratch worlds),
// except that a tick carrying more commands or inputs than the world's per-tick capacities
// grows the tester's list of their errors.
#pragma once

#include <cstdint>
#include <memory>

#include "lockstep/sim/types.h"
#include "lockstep/sim/world.h"

namespace lockstep::sim {

/// The first disagreement a sync test found.
struct SyncTestFailure {
  uint64_t tick = 0;  // the tick whose re-simulation differs
  uint64_t hash = 0;  // the hash the world had after that tick
  uint64_t resimulated_hash = 0;
  // The hashes agree but the snapshot bytes do not: the hash misses part of the state.
  bool hash_misses_state = false;
};

class SyncTester final {
 public:
  static constexpr uint32_t kMaxRollbackTicks = 64;

  /// A tester for `world` as it is now, re-simulating the last `rollback_ticks` (1 … 64) after
  /// every step. Null (and *error = invalid_argument) outside that range.
  static std::unique_ptr<SyncTester> create(const World& world, uint32_t rollback_ticks,
                                            Error* error = nullptr);
  ~SyncTester();
  SyncTester(const SyncTester&) = delete;
  SyncTester& operator=(const SyncTester&) = delete;

  /// World::step(tick, errors) on `world`, recording the commands and inputs it accepted; then
  /// restores the copy to the state rollback_ticks back (or the start) and steps it again to the
  /// present with the recorded ticks, comparing every tick's hash with the world's, and the final
  /// snapshot's bytes. Returns the world's StepStatus. After the first failure nothing more is
  /// checked (failed() stays true); the world itself keeps stepping.
  StepStatus step(World& world, const TickInput& tick = {}, const TickErrors& errors = {});

  bool failed() const;
  const SyncTestFailure& failure() const;
  /// The world as it was after the failing tick, and the re-simulated copy at that tick (both
  /// valid once failed(); for diff_state).
  const World& recorded_at_failure() const;
  const World& resimulated_at_failure() const;
  /// Ticks re-simulated and compared so far (a step rolled back K ticks counts K).
  uint64_t ticks_compared() const;

 private:
  struct Data;
  explicit SyncTester(std::unique_ptr<Data> data);
  std::unique_ptr<Data> data_;
};

}  // namespace lockstep::sim

// Prediction and rollback over two plain sim Worlds, without sockets (the Client drives it; tests
// drive it directly).
//
// The confirmed world belongs to the caller: it steps only TickFrames, exactly as a lockstep
// client does, so its hashes are the server's. This class owns the predicted world, which runs
// ahead of the confirmed one by at most max_prediction_ticks with the local player's own inputs
// (known at once) and predicted inputs for everyone else (their last confirmed inputs repeated,
// or what a game-supplied predictor says). Commands are never guessed.
//
// After each confirmed tick the caller hands over what the server applied (on_confirmed). When
// it is not what the predicted world simulated for that tick (other inputs, any command, another
// hash), the prediction is marked wrong; reconcile() then copies the confirmed state into the
// predicted world and simulates again up to where the prediction had got. Comparing the hash as
// well as the inputs means any divergence — a command, a perturbed body, state the inputs do not
// explain — is corrected at the first confirmation that sees it.
//
// Every buffer (the snapshot used to copy a world, one input record per tick of a ring, the last
// inputs of the other players) is sized at creation: predicting, confirming and rolling back do
// not allocate. Inputs beyond a record's capacity are dropped from the prediction (counted), never
// grown into.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "lockstep/sim/types.h"
#include "lockstep/sim/world.h"

namespace lockstep::client_sdk {

/// Another player's input for a tick we have no confirmation of yet. Given that player's input in
/// the latest confirmed tick (`last`, of `last_tick`), write the guess for `tick` into *out and
/// return true, or return false to predict no input. Called on the polling thread; it must not
/// touch the worlds.
using InputPredictor =
    std::function<bool(const sim::Input& last, uint64_t last_tick, uint64_t tick, sim::Input* out)>;

struct PredictionConfig {
  /// How far the predicted world may run ahead of the confirmed one; beyond it the prediction
  /// waits for confirmations (1 … kMaxPredictionTicks).
  uint32_t max_prediction_ticks = 8;
  /// Inputs one predicted tick may hold (the local player's plus the predicted ones).
  uint32_t max_inputs_per_tick = 256;
  /// Null: repeat every other player's last confirmed inputs.
  InputPredictor predictor;
};

/// What one reconcile() did.
struct RollbackReport {
  uint64_t from_tick = 0;            // the confirmed tick the predicted world restarted from
  uint32_t ticks_resimulated = 0;    // steps taken to get back to where the prediction was
  std::chrono::nanoseconds cost{0};  // restore + re-simulation, wall clock
};

/// A body's pose for rendering.
struct Pose {
  sim::Vec3 position{};
  sim::Quat orientation{};
};

/// The pose `alpha` (0 … 1, clamped) of the way from `from` to `to`: positions lerped,
/// orientations nlerped along the shorter arc. For drawing between two ticks; no allocation.
Pose interpolate_pose(const Pose& from, const Pose& to, float alpha);
/// interpolate_pose for `body` as it is in two worlds (say the previous and the current predicted
/// tick, or two copies a game keeps); false when the body is not alive in both.
bool interpolate_body(const sim::World& from, const sim::World& to, sim::BodyId body, float alpha,
                      Pose* out);

class Prediction final {
 public:
  static constexpr uint32_t kMaxPredictionTicks = 60;
  /// Ticks of local inputs remembered ahead of the confirmed tick (an input delay must fit).
  static constexpr uint32_t kInputRingTicks = 128;

  /// A prediction starting from `confirmed` as it is now, for `local_player`. Null (and
  /// *error = invalid_argument or the world's error) on a bad config.
  static std::unique_ptr<Prediction> create(const sim::World& confirmed, uint32_t local_player,
                                            PredictionConfig config, sim::Error* error = nullptr);
  ~Prediction();
  Prediction(const Prediction&) = delete;
  Prediction& operator=(const Prediction&) = delete;

  /// Records the local player's inputs for `tick` (applied when the predicted world steps that
  /// tick, or at once in the next re-simulation if it already has). invalid_argument for a tick
  /// already confirmed or more than kInputRingTicks ahead; capacity_inputs past
  /// max_inputs_per_tick.
  sim::Error add_local_inputs(uint64_t tick, std::span<const sim::Input> inputs);

  /// The confirmed world has just stepped `confirmed.tick()` with these inputs and commands.
  /// invalid_argument when that tick is not after the last confirmed one (nothing changes). A
  /// tick more than one ahead (a snapshot was restored in between) restarts the prediction.
  sim::Error on_confirmed(const sim::World& confirmed, std::span<const sim::Input> inputs,
                          std::span<const sim::Command> commands);
  /// A snapshot replaced the confirmed world: the prediction restarts from it.
  void reset(const sim::World& confirmed);

  /// True when a confirmation disagreed with the prediction and reconcile() has work to do.
  bool rollback_pending() const;
  /// When a rollback is pending: restore the confirmed state and re-simulate up to the tick the
  /// prediction had reached (never past the bound). Returns whether it rolled back.
  bool reconcile(const sim::World& confirmed, RollbackReport* report);

  /// Steps the predicted world towards `target_tick`, never past confirmed + max_prediction_ticks;
  /// `on_tick` (may be null) runs after each step. Returns the steps taken.
  uint32_t advance(uint64_t target_tick, const std::function<void(uint64_t tick)>& on_tick);

  const sim::World& world() const;
  uint64_t confirmed_tick() const;
  uint32_t max_prediction_ticks() const;
  /// Test hook: moves a body of the predicted world outside the tick
  /// (sim::debug_perturb_position, lockstep/sim/testing.h); the next confirmation sees the
  /// difference and rolls back.
  sim::Error debug_perturb(sim::BodyId body, sim::Vec3 delta);

  struct Counters {
    uint64_t ticks_predicted = 0;  // steps of the predicted world ahead of confirmation
    uint64_t rollbacks = 0;
    uint64_t ticks_resimulated = 0;  // over all rollbacks
    uint32_t max_ticks_resimulated = 0;
    uint64_t inputs_dropped = 0;  // predicted inputs over max_inputs_per_tick
    uint64_t waits = 0;           // advance() calls held back by the bound
  };
  const Counters& counters() const;

 private:
  struct Data;
  explicit Prediction(std::unique_ptr<Data> data);
  std::unique_ptr<Data> data_;
};

}  // namespace lockstep::client_sdk

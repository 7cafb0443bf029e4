// Game rules on the server: a RoomRules reads the world after each step and answers only with
// commands for the next tick. Whatever it does therefore travels in the TickFrame and the replay
// like any join or leave; clients never run rules, they apply the commands (docs/server.md,
// "Game rules").
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "lockstep/sim/scene.h"
#include "lockstep/sim/types.h"
#include "lockstep/sim/world.h"

namespace lockstep::server {

/// Where rules put their answer: commands queued for the step after this one. The room gives
/// each its sequence (issue order), so `sequence` need not be set. Commands beyond the tick's
/// capacity (WorldDef::max_commands_per_tick, shared with joins and leaves) are refused:
/// push returns false, and the room logs one line and counts them.
class RulesOutput {
 public:
  virtual ~RulesOutput() = default;
  virtual bool push(const sim::Command& command) = 0;
};

/// One room's game rules, made when the room opens.
class RoomRules {
 public:
  virtual ~RoomRules() = default;
  /// Called once per tick, after the step, with the world as the step left it and the step's
  /// sensor events (world.events() has its contact events). Read-only: answer through `out`.
  virtual void after_step(const sim::World& world, std::span<const sim::SensorEvent> sensor_events,
                          RulesOutput& out) = 0;
};

/// Names of the built-in rules ("sumo").
std::span<const std::string_view> builtin_rules_names();

/// The built-in rules `name` for a room running `scene`; null and *error (one line) for an
/// unknown name or a scene the rules cannot play (e.g. sumo without a `fall` body).
std::unique_ptr<RoomRules> make_builtin_rules(std::string_view name, const sim::Scene& scene,
                                              std::string* error);

}  // namespace lockstep::server

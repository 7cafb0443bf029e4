// Game rules on the server: a RoomRules reads the world at fixed points of each tick and answers
// only with commands. Whatever it does therefore travels in the TickFrame and the replay like any
// join or leave; clients never run rules, they apply the commands (docs/server.md, "Game rules").
//
// The hooks of one tick, in the order the room calls them (tick t = the one the step makes):
//
//   on_room_start      once, before the first step (the world at tick 0)    → commands for t
//   before_step        every tick, before its step                         → commands for t
//   (the step: commands, inputs, physics)
//   on_player_leave    players who left since the last tick, in leave order → commands for t+1
//   on_player_join     players whose join is complete (their bodies exist),
//                      in join order                                       → commands for t+1
//   on_message         clients' game messages that arrived before the step,
//                      in arrival order                                    → commands for t+1
//   after_step         every tick, with the step's sensor events           → commands for t+1
//   on_match_end       once, when the room stops (no commands: no step follows)
//
// A join or a leave that arrives between two ticks is therefore seen by the rules at one tick,
// the same for every hook, and RoomInfo::players changes only at those two hooks. A scene that
// spawns players' bodies (a `player` line) completes a join after the step that spawned the body
// (or at once when the player takes over bodies left in the leave grace).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lockstep/sim/scene.h"
#include "lockstep/sim/types.h"
#include "lockstep/sim/world.h"

namespace lockstep::server {

/// Where rules put their answer: commands queued for the step the hook names (see above). The
/// room gives each its sequence (issue order), so `sequence` need not be set. Commands beyond the
/// tick's capacity (WorldDef::max_commands_per_tick, shared with joins and leaves) are refused:
/// push returns false, and the room logs one line and counts them.
class RulesOutput {
 public:
  virtual ~RulesOutput() = default;
  virtual bool push(const sim::Command& command) = 0;
};

/// The commands rules issue most, filled in (the room sets `sequence`). Game state fields are
/// found by name once (World::find_state_field); a field the world lacks is refused when pushed
/// (unknown_state_field, counted in RoomStats::commands_refused).
inline sim::Command set_state_command(uint32_t field, uint32_t player, int32_t value) {
  sim::Command c;
  c.type = sim::CommandType::set_state;
  c.template_index = field;
  c.owner_player = player;
  c.score_delta = value;
  return c;
}
inline sim::Command add_state_command(uint32_t field, uint32_t player, int32_t delta) {
  sim::Command c = set_state_command(field, player, delta);
  c.type = sim::CommandType::add_state;
  return c;
}
/// A game event every client sees in the TickFrame of the tick that applies it
/// (World::game_events), and every replay.
inline sim::Command event_command(uint32_t type, uint32_t player, int32_t value) {
  sim::Command c = set_state_command(type, player, value);
  c.type = sim::CommandType::emit_event;
  return c;
}
/// Moves a body back to `position` at rest, keeping its handle.
inline sim::Command respawn_command(sim::BodyId body, sim::Vec3 position,
                                    sim::Quat orientation = {}) {
  sim::Command c;
  c.type = sim::CommandType::respawn;
  c.body = body;
  c.position = position;
  c.orientation = orientation;
  return c;
}

/// A player of the room as the rules know it.
struct RoomPlayer {
  uint32_t id = 0;                  // 1..max_players
  std::string name;                 // as its Hello gave it
  std::vector<sim::BodyId> bodies;  // the bodies it owns when its join completed
};

/// What the rules may know about their room. Owned by the room; valid for the rules' life.
struct RoomInfo {
  std::string room;                   // the room's name
  std::string scene_name;             // as Hellos name it
  const sim::Scene* scene = nullptr;  // the scene as served (never null in a hook)
  uint32_t tick_rate_hz = 0;
  uint32_t max_players = 0;
  /// The players in the room, by ascending id; changed only just before on_player_join and
  /// on_player_leave.
  std::vector<RoomPlayer> players;
};

/// One room's game rules, made when the room opens. Every hook runs on the room's thread.
class RoomRules {
 public:
  virtual ~RoomRules() = default;
  /// Once, before the first step (the world at tick 0); commands go into tick 1.
  virtual void on_room_start(const RoomInfo& /*info*/, const sim::World& /*world*/,
                             RulesOutput& /*out*/) {}
  /// Every tick, before its step; commands go into that step.
  virtual void before_step(const RoomInfo& /*info*/, const sim::World& /*world*/,
                           RulesOutput& /*out*/) {}
  /// After the step of the tick that completed the join: `player` is in info.players, its bodies
  /// exist in `world`. Commands go into the next tick.
  virtual void on_player_join(const RoomInfo& /*info*/, const sim::World& /*world*/,
                              const RoomPlayer& /*player*/, RulesOutput& /*out*/) {}
  /// After the step following the leave: `player` is no longer in info.players (its bodies stay
  /// for the leave grace). Commands go into the next tick.
  virtual void on_player_leave(const RoomInfo& /*info*/, const sim::World& /*world*/,
                               const RoomPlayer& /*player*/, RulesOutput& /*out*/) {}
  /// After the step of tick `tick` (== world.tick()), after the joins and leaves: one client game
  /// message that arrived before that step (in arrival order), `data` its bytes as sent (within
  /// the server's size limit; valid during the call only). The match recording keeps it at this
  /// tick, so a re-run of the rules over the recording sees it at the same point. A message may
  /// come from a player whose join the rules have not seen yet (its body spawn still pending) or
  /// who has left since. Commands go into the next tick.
  virtual void on_message(const RoomInfo& /*info*/, const sim::World& /*world*/,
                          uint32_t /*player*/, uint64_t /*tick*/, std::span<const uint8_t> /*data*/,
                          RulesOutput& /*out*/) {}
  /// Called once per tick, after the step, with the world as the step left it and the step's
  /// sensor events (world.events() has its contact events). Read-only: answer through `out`.
  virtual void after_step(const sim::World& world, std::span<const sim::SensorEvent> sensor_events,
                          RulesOutput& out) = 0;
  /// Once, when the room stops (closing empty, or the server shutting down), with its last state.
  virtual void on_match_end(const RoomInfo& /*info*/, const sim::World& /*world*/) {}
};

/// Names of the built-in rules ("sumo").
std::span<const std::string_view> builtin_rules_names();

/// The built-in rules `name` for a room running `scene`; null and *error (one line) for an
/// unknown name or a scene the rules cannot play (e.g. sumo without a `fall` body).
std::unique_ptr<RoomRules> make_builtin_rules(std::string_view name, const sim::Scene& scene,
                                              std::string* error);

}  // namespace lockstep::server

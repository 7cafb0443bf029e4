// Hooks for tests, tools and benchmarks, not for game code: the input script that drives the
// bodies players own in demos and benchmarks, the query probe of the query golden, and an edit
// that injects a desync. None of them is how a game changes a world (that is the tick:
// World::step(TickInput)); they live apart so the public headers hold only that.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "lockstep/sim/types.h"
#include "lockstep/sim/world.h"

namespace lockstep::sim {

/// The bodies the input script pushes, collected once from a world (allocates: call it before
/// stepping). Bodies are in slot order; owner_players[i] owns bodies[i].
struct InputScript {
  std::vector<BodyId> bodies;
  std::vector<uint32_t> owner_players;
  // Tuning, in fixed-point input units (N·s · 2^kInputScaleLog2) and ticks.
  int32_t max_push = 24 << kInputScaleLog2;  // per horizontal axis, per tick
  int32_t jump = 600 << kInputScaleLog2;     // upward impulse of a jump
  uint32_t jump_one_in = 120;                // a body jumps with probability 1/jump_one_in
  float jump_below_height_m = 0.4f;          // ... when its centre is below this (on the floor)
  uint32_t heading_period_ticks = 30;        // how long a body keeps its preferred heading
  float arena_half_extent_m = 5.0f;          // beyond |x| or |z| of this, push back inwards
};

/// Collects the player-owned bodies of `world` (owner_player != 0) in slot order.
InputScript make_input_script(const World& world);

/// Writes the inputs of `tick` into `out` (sorted by player, then sequence) and returns how many
/// were written (at most out.size()). Pure function of (seed, tick, script, body positions):
/// SplitMix64 and integer arithmetic make the impulses; positions are only compared.
uint32_t scripted_inputs(uint64_t seed, uint64_t tick, const InputScript& script,
                         const World& world, std::span<Input> out);

/// XXH3-64 of the results of a fixed set of queries over |x|, |z| ≤ 10 m, 0 ≤ y ≤ 20 m (rays
/// down a grid and across at several heights, all-hit rays, sphere casts and overlaps), for
/// checking that queries give the same bits on every platform (the query golden).
uint64_t query_probe_hash(const World& world);

/// Adds `delta` to a body's position without any checks beyond finiteness, outside the tick
/// (to inject a desync in tests and tools). Updates the state hash.
Error debug_perturb_position(World& world, BodyId id, Vec3 delta);

}  // namespace lockstep::sim

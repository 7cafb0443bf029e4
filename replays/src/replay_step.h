// What the reader (verify, diff, dump, export) and the viewer share: one recorded tick applied to
// a world, and the names they print.
#pragma once

#include <cstdint>
#include <string>

#include "lockstep/replays/replay_reader.h"

namespace lockstep::replays::detail {

/// Queues a tick record's commands and inputs and steps; returns how many the world refused.
uint32_t step_replay_tick(sim::World& world, const ReplayTick& tick);

/// The replay's keyframe at exactly `tick`, or null.
const ReplayKeyframe* keyframe_at(const LoadedReplay& replay, uint64_t tick);

/// "static", "kinematic", "dynamic".
const char* body_type_name(sim::BodyType type);
/// "sphere", "box", "capsule", "plane".
const char* shape_type_name(sim::ShapeType type);
/// 16 lower-case hex digits.
std::string hex64(uint64_t value);

}  // namespace lockstep::replays::detail

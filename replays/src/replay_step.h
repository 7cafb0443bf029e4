// One recorded tick applied to a world: its commands and inputs queued in the recorded order,
// then a step. Shared by the reader (verify, diff, export) and the viewer.
#pragma once

#include <cstdint>

#include "lockstep/replays/replay_reader.h"

namespace lockstep::replays::detail {

/// Queues a tick record's commands and inputs and steps; returns how many the world refused.
uint32_t step_replay_tick(sim::World& world, const ReplayTick& tick);

}  // namespace lockstep::replays::detail

// wire::PlayerInput → sim::Input: the FlatBuffers struct that carried a player's input on the
// wire up to protocol 3 and in replay files up to format 5 (Tick.inputs). Only the reader of
// those replay files uses it now; protocol 4 and format 6 use compact inputs (compact_codec.h).
//
// Internal to the FlatBuffers side of schema and replays: it lives beside the generated headers
// (the lockstep_schema_flatbuffers target) and is not installed; the public headers of both
// libraries stay free of FlatBuffers.
#pragma once

#include <flatbuffers/flatbuffers.h>

#include <vector>

#include "lockstep/schema/protocol_generated.h"
#include "lockstep/sim/types.h"

namespace lockstep::schema {

// 11 four-byte fields: the size and alignment both formats were written with.
static_assert(sizeof(wire::PlayerInput) == 44 && alignof(wire::PlayerInput) == 4);
static_assert(sizeof(wire::PlayerInputVelocity) == 28 && alignof(wire::PlayerInputVelocity) == 4);

inline sim::Input from_player_input(const wire::PlayerInput& in) {
  sim::Input input;
  input.player = in.player();
  input.sequence = in.sequence();
  input.body = sim::BodyId{in.body_index1(), in.body_generation()};
  input.linear_impulse[0] = in.linear_x();
  input.linear_impulse[1] = in.linear_y();
  input.linear_impulse[2] = in.linear_z();
  input.angular_impulse[0] = in.angular_x();
  input.angular_impulse[1] = in.angular_y();
  input.angular_impulse[2] = in.angular_z();
  input.buttons = in.buttons();
  return input;
}

/// The target-velocity fields of `in` from the struct beside it.
inline void apply_player_input_velocity(const wire::PlayerInputVelocity& v, sim::Input* in) {
  in->flags = v.flags();
  in->linear_velocity[0] = v.linear_x();
  in->linear_velocity[1] = v.linear_y();
  in->linear_velocity[2] = v.linear_z();
  in->angular_velocity[0] = v.angular_x();
  in->angular_velocity[1] = v.angular_y();
  in->angular_velocity[2] = v.angular_z();
}

/// Fills the target velocities of *inputs (already read) from a verified parallel vector;
/// nullptr leaves them zero. False when the vector's length differs from the inputs'.
inline bool read_player_input_velocities(
    const flatbuffers::Vector<const wire::PlayerInputVelocity*>* velocities,
    std::vector<sim::Input>* inputs) {
  if (velocities == nullptr) return true;
  if (velocities->size() != inputs->size()) return false;
  for (flatbuffers::uoffset_t i = 0; i < velocities->size(); ++i)
    apply_player_input_velocity(*velocities->Get(i), &(*inputs)[i]);
  return true;
}

/// Replaces *out with the inputs of a verified vector (nullptr: an absent field, no inputs).
inline void read_player_inputs(const flatbuffers::Vector<const wire::PlayerInput*>* inputs,
                               std::vector<sim::Input>* out) {
  out->clear();
  if (inputs == nullptr) return;
  out->reserve(inputs->size());
  for (const wire::PlayerInput* in : *inputs)
    out->push_back(from_player_input(*in));
}

}  // namespace lockstep::schema

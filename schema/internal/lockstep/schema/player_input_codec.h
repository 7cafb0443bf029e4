// sim::Input ⇄ wire::PlayerInput: the one FlatBuffers struct that carries a player's input, on
// the wire (protocol.fbs: InputFrame, TickFrame) and in replay files (replay.fbs includes it for
// Tick.inputs), so the schema codec and the replay codec convert it here, once.
//
// Internal to the FlatBuffers side of schema and replays: it lives beside the generated headers
// (the lockstep_schema_flatbuffers target) and is not installed; the public headers of both
// libraries stay free of FlatBuffers.
#pragma once

#include <flatbuffers/flatbuffers.h>

#include <cstddef>
#include <span>
#include <vector>

#include "lockstep/schema/protocol_generated.h"
#include "lockstep/sim/types.h"

namespace lockstep::schema {

// 11 four-byte fields: the size and alignment both formats were written with.
static_assert(sizeof(wire::PlayerInput) == 44 && alignof(wire::PlayerInput) == 4);
static_assert(sizeof(wire::PlayerInputVelocity) == 28 && alignof(wire::PlayerInputVelocity) == 4);

inline wire::PlayerInput to_player_input(const sim::Input& in) {
  return wire::PlayerInput(in.player, in.sequence, in.body.index1, in.body.generation,
                           in.linear_impulse[0], in.linear_impulse[1], in.linear_impulse[2],
                           in.angular_impulse[0], in.angular_impulse[1], in.angular_impulse[2],
                           in.buttons);
}

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

inline wire::PlayerInputVelocity to_player_input_velocity(const sim::Input& in) {
  return wire::PlayerInputVelocity(in.flags, in.linear_velocity[0], in.linear_velocity[1],
                                   in.linear_velocity[2], in.angular_velocity[0],
                                   in.angular_velocity[1], in.angular_velocity[2]);
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

/// True when some input carries target-velocity fields (then a frame needs the parallel vector).
inline bool any_input_velocity(std::span<const sim::Input> inputs) {
  for (const sim::Input& in : inputs) {
    if (in.flags != 0) return true;
    for (int i = 0; i < 3; ++i) {
      if (in.linear_velocity[i] != 0 || in.angular_velocity[i] != 0) return true;
    }
  }
  return false;
}

/// The inputs as a vector of PlayerInput structs, written into the builder in place.
// Not CreateUninitializedVectorOfStructs: in FlatBuffers 2.0.8 it aligns to sizeof(T), and a
// 44-byte struct is not a power of two, which corrupts the buffer's alignment. This is what
// CreateVectorOfStructs(const T*, len) does, with the structs built one by one (the builder
// grows downwards, so the last input is pushed first) instead of from a temporary array.
inline flatbuffers::Offset<flatbuffers::Vector<const wire::PlayerInput*>> create_player_inputs(
    flatbuffers::FlatBufferBuilder& builder, std::span<const sim::Input> inputs) {
  constexpr size_t kAlign = alignof(wire::PlayerInput);
  builder.StartVector(inputs.size() * sizeof(wire::PlayerInput) / kAlign, kAlign);
  for (size_t i = inputs.size(); i-- > 0;) {
    const wire::PlayerInput packed = to_player_input(inputs[i]);
    builder.PushBytes(reinterpret_cast<const uint8_t*>(&packed), sizeof(packed));
  }
  return flatbuffers::Offset<flatbuffers::Vector<const wire::PlayerInput*>>(
      builder.EndVector(static_cast<flatbuffers::uoffset_t>(inputs.size())));
}

/// The inputs' target velocities as a vector parallel to create_player_inputs' (same layout
/// rules), or a null offset (field left out) when no input carries one, so frames and replay
/// files without velocity inputs keep their bytes.
inline flatbuffers::Offset<flatbuffers::Vector<const wire::PlayerInputVelocity*>>
create_player_input_velocities(flatbuffers::FlatBufferBuilder& builder,
                               std::span<const sim::Input> inputs) {
  if (!any_input_velocity(inputs)) return 0;
  constexpr size_t kAlign = alignof(wire::PlayerInputVelocity);
  builder.StartVector(inputs.size() * sizeof(wire::PlayerInputVelocity) / kAlign, kAlign);
  for (size_t i = inputs.size(); i-- > 0;) {
    const wire::PlayerInputVelocity packed = to_player_input_velocity(inputs[i]);
    builder.PushBytes(reinterpret_cast<const uint8_t*>(&packed), sizeof(packed));
  }
  return flatbuffers::Offset<flatbuffers::Vector<const wire::PlayerInputVelocity*>>(
      builder.EndVector(static_cast<flatbuffers::uoffset_t>(inputs.size())));
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

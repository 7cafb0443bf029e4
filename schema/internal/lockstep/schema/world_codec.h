// sim::WorldDef ⇄ wire::WorldDef and sim::Command ⇄ wire::WorldCommand (world.fbs): the one
// codec of a world's definition and of the tick's commands, used by the wire protocol (Welcome,
// TickFrame) and by replay files (Header, Tick), so both mean the same bytes.
//
// Internal to the FlatBuffers side of schema and replays (beside player_input_codec.h); not
// installed.
#pragma once

#include <flatbuffers/flatbuffers.h>

#include <span>
#include <string>
#include <vector>

#include "lockstep/schema/world_generated.h"
#include "lockstep/sim/scene.h"
#include "lockstep/sim/types.h"

namespace lockstep::schema {

static_assert(sizeof(wire::WorldCommand) == 80 && alignof(wire::WorldCommand) == 4);

/// Every field of `def`, templates included (at most sim::kMaxBodyTemplates).
flatbuffers::Offset<wire::WorldDef> encode_world_def(flatbuffers::FlatBufferBuilder& builder,
                                                     const sim::WorldDef& def);

/// Reads a verified WorldDef table. Absent fields read as 0 (what an older writer meant), except
/// max_commands_per_tick (0 is no capacity: the default). False with *error (one line, e.g.
/// "WorldDef template 2 has a bad name, body type or shape type") for too many templates or a
/// bad template; the def is not validated further (sim::validate_world_def does that).
bool decode_world_def(const wire::WorldDef& in, sim::WorldDef* out, std::string* error);

/// False with *error for an unknown type or a non-finite float.
bool from_world_command(const wire::WorldCommand& in, sim::Command* out, std::string* error);

/// Replaces *out with the commands of a verified vector (nullptr: none). False with *error
/// naming the first bad command ("command 3: ...").
bool read_world_commands(const flatbuffers::Vector<const wire::WorldCommand*>* commands,
                         std::vector<sim::Command>* out, std::string* error);

/// A level table (world.fbs, Level): the digest, whether the geometry is carried, and the meshes
/// and heightfields when it is. Shared by the Welcome and the replay file header.
flatbuffers::Offset<wire::Level> encode_level_table(
    flatbuffers::FlatBufferBuilder& builder, uint64_t digest, bool carried,
    const std::vector<sim::SceneMesh>& meshes,
    const std::vector<sim::SceneHeightfield>& heightfields);

/// Reads a verified level table. The shapes are checked here (counts, sizes, finite values,
/// indices within their mesh, the triangle capacity) and a carried level's content against its
/// digest; what the sim checks beyond that (coordinate ranges, the tree) World::create does.
/// False with *why (one line) for the first problem.
bool decode_level_table(const wire::Level& in, uint64_t* digest, bool* carried,
                        std::vector<sim::SceneMesh>* meshes,
                        std::vector<sim::SceneHeightfield>* heightfields, std::string* why);

}  // namespace lockstep::schema

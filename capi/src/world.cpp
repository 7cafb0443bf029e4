// The C API's worlds: creation from scenes and Welcome frames, the step, snapshots, bodies,
// queries, events and game state. Every entry point checks its pointers and sizes first, then
// runs inside guarded() so that nothing thrown reaches the C caller.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <span>
#include <string>
#include <variant>

#include "capi_internal.h"
#include "lockstep/client_sdk/client.h"
#include "lockstep/schema/frame.h"
#include "lockstep/schema/level_file.h"
#include "lockstep/schema/messages.h"
#include "lockstep/schema/scene_file.h"
#include "lockstep/sim/query.h"
#include "lockstep/sim/version.h"

using lockstep::capi::fail;
using lockstep::capi::fail_sim;
using lockstep::capi::guarded;
using lockstep::capi::to_c;
using lockstep::capi::to_sim;
namespace sim = lockstep::sim;
namespace schema = lockstep::schema;

const sim::World* lockstep_world::view() const {
  if (owned) return owned.get();
  if (client == nullptr) return nullptr;
  return which == LOCKSTEP_WORLD_PREDICTED ? client->predicted_world() : client->world();
}

namespace {

// A world's memory is taken at creation from numbers in the scene or the Welcome: a short text
// can ask for gigabytes, so it is checked against this before anything is allocated.
constexpr uint64_t kMaxWorldBytes = 1ull << 30;

// Hits one lockstep_world_ray_cast_all call returns at most (its found says how many exist).
constexpr uint32_t kMaxRayHits = 64;

char* error_of(const lockstep_world* world) {
  return world == nullptr ? nullptr : const_cast<char*>(world->error);
}

/// The world behind a handle for reading, or a status saying why there is none.
lockstep_status readable(const lockstep_world* world, const sim::World** out) {
  if (world == nullptr) return fail(nullptr, LOCKSTEP_ERR_NULL_ARGUMENT, "world is null");
  *out = world->view();
  if (*out == nullptr) {
    return fail(error_of(world), LOCKSTEP_ERR_NOT_READY, "the client has no such world yet");
  }
  return LOCKSTEP_OK;
}

/// The world behind a handle for changing it: only a world the caller made.
lockstep_status writable(lockstep_world* world, sim::World** out) {
  if (world == nullptr) return fail(nullptr, LOCKSTEP_ERR_NULL_ARGUMENT, "world is null");
  if (!world->owned) {
    return fail(world->error, LOCKSTEP_ERR_READ_ONLY, "a client's world may only be read");
  }
  *out = world->owned.get();
  return LOCKSTEP_OK;
}

/// The buffers that stepping and reading need, sized by the world's capacities.
void reserve_buffers(lockstep_world* handle) {
  const sim::WorldDef& def = handle->owned->def();
  handle->body_ids.resize(def.max_bodies);
  handle->tick_commands.resize(def.max_commands_per_tick);
  handle->tick_inputs.resize(def.max_inputs_per_tick);
  handle->command_errors.resize(def.max_commands_per_tick);
  handle->input_errors.resize(def.max_inputs_per_tick);
}

lockstep_status world_from_scene(sim::Scene&& scene, lockstep_world** out) {
  if (sim::world_memory_bytes(scene.def) > kMaxWorldBytes) {
    return fail(nullptr, LOCKSTEP_ERR_SCENE_REFUSED, "the scene's world needs more than 1 GiB");
  }
  sim::Error error = sim::Error::none;
  size_t failed_body = SIZE_MAX;
  auto handle = std::make_unique<lockstep_world>();
  handle->owned = sim::build_world(scene, &error, &failed_body);
  if (!handle->owned) {
    const std::string what = failed_body == SIZE_MAX
                                 ? std::string("the world refused the scene")
                                 : "the world refused body " + std::to_string(failed_body);
    fail_sim(nullptr, error, what);
    return LOCKSTEP_ERR_SCENE_REFUSED;
  }
  handle->actions = std::move(scene.actions);
  handle->named_bodies = std::move(scene.named_bodies);
  reserve_buffers(handle.get());
  *out = handle.release();
  return LOCKSTEP_OK;
}

/// Checks a frame's length header and decodes its body.
lockstep_status decode_frame(char* error, const void* frame, size_t size, schema::Message* out) {
  if (frame == nullptr) return fail(error, LOCKSTEP_ERR_NULL_ARGUMENT, "frame is null");
  if (size <= schema::kFrameHeaderBytes) {
    return fail(error, LOCKSTEP_ERR_BAD_FRAME, "a frame is a 4-byte length and a body");
  }
  const auto* bytes = static_cast<const uint8_t*>(frame);
  const uint32_t body_bytes = schema::decode_frame_header(
      std::span<const uint8_t, schema::kFrameHeaderBytes>(bytes, schema::kFrameHeaderBytes));
  if (body_bytes != size - schema::kFrameHeaderBytes) {
    return fail(error, LOCKSTEP_ERR_BAD_FRAME, "the frame's length header does not match size");
  }
  const schema::DecodeResult decoded =
      schema::decode_body({bytes + schema::kFrameHeaderBytes, body_bytes}, out);
  if (!decoded.ok()) {
    return fail(error, LOCKSTEP_ERR_BAD_FRAME,
                std::string(schema::decode_error_name(decoded.error)) + ": " + decoded.detail);
  }
  return LOCKSTEP_OK;
}

/// Writes up to `capacity` items of `items` through `convert`; the counts as the header says.
template <class T, class C, class Convert>
lockstep_status copy_out(const lockstep_world* world, std::span<const T> items, C* out,
                         uint32_t capacity, uint32_t* count, uint32_t* found, Convert convert) {
  if (count == nullptr) return fail(error_of(world), LOCKSTEP_ERR_NULL_ARGUMENT, "count is null");
  if (out == nullptr && capacity != 0) {
    return fail(error_of(world), LOCKSTEP_ERR_NULL_ARGUMENT, "out is null with a capacity");
  }
  const size_t n = items.size() < capacity ? items.size() : capacity;
  for (size_t i = 0; i < n; ++i)
    out[i] = convert(items[i]);
  *count = static_cast<uint32_t>(n);
  if (found != nullptr) *found = static_cast<uint32_t>(items.size());
  return LOCKSTEP_OK;
}

sim::QueryFilter filter_of(const lockstep_query_filter* filter) {
  sim::QueryFilter out;
  if (filter != nullptr) {
    out.category_bits = filter->category_bits;
    out.mask_bits = filter->mask_bits;
    out.exclude = to_sim(filter->exclude);
  }
  return out;
}

lockstep_ray_hit hit_of(const sim::RayHit& hit) {
  lockstep_ray_hit out{};
  out.body = to_c(hit.body);
  out.point[0] = hit.point.x;
  out.point[1] = hit.point.y;
  out.point[2] = hit.point.z;
  out.normal[0] = hit.normal.x;
  out.normal[1] = hit.normal.y;
  out.normal[2] = hit.normal.z;
  out.fraction = hit.fraction;
  return out;
}

/// A query's result as a status (its error's), its counts written when given.
lockstep_status query_status(const lockstep_world* world, const sim::QueryResult& result,
                             uint32_t* count, uint32_t* found) {
  if (!result.ok()) return fail_sim(error_of(world), result.error, "query");
  if (count != nullptr) *count = result.count;
  if (found != nullptr) *found = result.found;
  return LOCKSTEP_OK;
}

lockstep_body body_of(const sim::BodyView& view) {
  lockstep_body out{};
  out.id = to_c(view.id);
  out.type = static_cast<int32_t>(view.type);
  out.shape_type = static_cast<int32_t>(view.shape.type);
  const float position[3] = {view.position.x, view.position.y, view.position.z};
  const float orientation[4] = {view.orientation.x, view.orientation.y, view.orientation.z,
                                view.orientation.w};
  const float linear[3] = {view.linear_velocity.x, view.linear_velocity.y, view.linear_velocity.z};
  const float angular[3] = {view.angular_velocity.x, view.angular_velocity.y,
                            view.angular_velocity.z};
  std::memcpy(out.position, position, sizeof(position));
  std::memcpy(out.orientation, orientation, sizeof(orientation));
  std::memcpy(out.linear_velocity, linear, sizeof(linear));
  std::memcpy(out.angular_velocity, angular, sizeof(angular));
  out.mass_kg = view.mass_kg;
  out.owner_player = view.owner_player;
  out.asleep = view.asleep ? 1 : 0;
  out.sensor = view.shape.sensor ? 1 : 0;
  return out;
}

}  // namespace

extern "C" {

LOCKSTEP_API lockstep_status lockstep_world_create_from_scene_text(const char* text, size_t size,
                                                                   lockstep_world** out) {
  return guarded(nullptr, [&]() -> lockstep_status {
    if (text == nullptr || out == nullptr) {
      return fail(nullptr, LOCKSTEP_ERR_NULL_ARGUMENT, "text and out must not be null");
    }
    *out = nullptr;
    sim::Scene scene;
    std::string error;
    if (!schema::load_scene_text(std::string_view(text, size), "scene text", &scene, &error)) {
      return fail(nullptr, LOCKSTEP_ERR_PARSE, error);
    }
    return world_from_scene(std::move(scene), out);
  });
}

LOCKSTEP_API lockstep_status lockstep_world_create_from_scene_file(const char* path,
                                                                   lockstep_world** out) {
  return guarded(nullptr, [&]() -> lockstep_status {
    if (path == nullptr || out == nullptr) {
      return fail(nullptr, LOCKSTEP_ERR_NULL_ARGUMENT, "path and out must not be null");
    }
    *out = nullptr;
    if (!std::ifstream(path, std::ios::binary)) {
      return fail(nullptr, LOCKSTEP_ERR_IO, std::string(path) + ": cannot be opened");
    }
    sim::Scene scene;
    std::string error;
    if (!schema::load_scene_file(path, &scene, &error)) {
      return fail(nullptr, LOCKSTEP_ERR_PARSE, error);
    }
    return world_from_scene(std::move(scene), out);
  });
}

LOCKSTEP_API lockstep_status lockstep_world_create_builtin(const char* name, lockstep_world** out) {
  return guarded(nullptr, [&]() -> lockstep_status {
    if (name == nullptr || out == nullptr) {
      return fail(nullptr, LOCKSTEP_ERR_NULL_ARGUMENT, "name and out must not be null");
    }
    *out = nullptr;
    sim::Scene scene;
    if (!sim::make_builtin_scene(name, &scene)) {
      return fail(nullptr, LOCKSTEP_ERR_NOT_FOUND, std::string("no built-in scene '") + name + "'");
    }
    return world_from_scene(std::move(scene), out);
  });
}

LOCKSTEP_API lockstep_status lockstep_world_create_from_welcome(const void* frame, size_t size,
                                                                lockstep_welcome_info* info,
                                                                lockstep_world** out) {
  return guarded(nullptr, [&]() -> lockstep_status {
    if (out == nullptr) return fail(nullptr, LOCKSTEP_ERR_NULL_ARGUMENT, "out is null");
    *out = nullptr;
    schema::Message message;
    if (lockstep_status s = decode_frame(nullptr, frame, size, &message); s != LOCKSTEP_OK) {
      return s;
    }
    const auto* welcome = std::get_if<schema::Welcome>(&message);
    if (welcome == nullptr) {
      return fail(nullptr, LOCKSTEP_ERR_BAD_FRAME,
                  std::string("a ") + schema::message_name(message) + ", not a Welcome");
    }
    if (welcome->physics_revision != 0 && welcome->physics_revision != sim::kPhysicsRevision) {
      return fail(nullptr, LOCKSTEP_ERR_VERSION,
                  "the server simulates physics revision " +
                      std::to_string(welcome->physics_revision) + ", this library " +
                      std::to_string(sim::kPhysicsRevision));
    }
    if (!welcome->world_def) {
      return fail(nullptr, LOCKSTEP_ERR_VERSION, "the Welcome carries no WorldDef");
    }
    // The room's level rides in the Welcome up to the server's cap; above it the Welcome has
    // only its digest, and a world without it would refuse the room's snapshots.
    if (welcome->level_digest != 0 && !welcome->level_carried) {
      char digest[17];
      std::snprintf(digest, sizeof digest, "%016llx",
                    static_cast<unsigned long long>(welcome->level_digest));
      return fail(nullptr, LOCKSTEP_ERR_SCENE_REFUSED,
                  std::string("the Welcome carries the level's digest (") + digest +
                      ") only: make the world from the scene file with its level files");
    }
    const schema::LevelView level =
        schema::view_level(welcome->level_meshes, welcome->level_heightfields);
    if (sim::world_memory_bytes(*welcome->world_def) +
            schema::level_content_bytes(welcome->level_meshes, welcome->level_heightfields) +
            sim::level_memory_bytes(level.def()) >
        kMaxWorldBytes) {
      return fail(nullptr, LOCKSTEP_ERR_SCENE_REFUSED, "the Welcome's world needs more than 1 GiB");
    }
    auto handle = std::make_unique<lockstep_world>();
    sim::Error error = sim::Error::none;
    handle->owned = sim::World::create(*welcome->world_def, level.def(), &error);
    if (!handle->owned) {
      fail_sim(nullptr, error, "the Welcome's WorldDef");
      return LOCKSTEP_ERR_SCENE_REFUSED;
    }
    reserve_buffers(handle.get());
    if (info != nullptr) {
      *info = {};
      info->current_tick = welcome->current_tick;
      info->world_def_fingerprint = welcome->world_def_fingerprint;
      info->player_id = welcome->player_id;
      info->physics_revision = welcome->physics_revision;
      info->tick_rate_hz = welcome->tick_rate_hz;
      info->input_delay_ticks = welcome->input_delay_ticks;
    }
    *out = handle.release();
    return LOCKSTEP_OK;
  });
}

LOCKSTEP_API lockstep_status lockstep_world_destroy(lockstep_world* world) {
  if (world == nullptr) return LOCKSTEP_OK;
  if (!world->owned) {
    return fail(world->error, LOCKSTEP_ERR_READ_ONLY, "a client's world is released with it");
  }
  delete world;
  return LOCKSTEP_OK;
}

LOCKSTEP_API const char* lockstep_world_last_error(const lockstep_world* world) {
  return world == nullptr ? "" : world->error;
}

LOCKSTEP_API lockstep_status lockstep_world_apply_frame(lockstep_world* world, const void* frame,
                                                        size_t size, uint64_t* tick,
                                                        uint64_t* state_hash) {
  return guarded(error_of(world), [&]() -> lockstep_status {
    sim::World* w = nullptr;
    if (lockstep_status s = writable(world, &w); s != LOCKSTEP_OK) return s;
    schema::Message message;
    if (lockstep_status s = decode_frame(world->error, frame, size, &message); s != LOCKSTEP_OK) {
      return s;
    }
    lockstep_status result = LOCKSTEP_OK;
    if (const auto* snapshot = std::get_if<schema::Snapshot>(&message)) {
      if (sim::Error e = w->restore_snapshot(snapshot->state); e != sim::Error::none) {
        return fail_sim(world->error, e, "Snapshot");
      }
    } else if (const auto* frame_msg = std::get_if<schema::TickFrame>(&message)) {
      if (frame_msg->tick != w->tick() + 1) {
        return fail(world->error, LOCKSTEP_ERR_INVALID_ARGUMENT,
                    "TickFrame " + std::to_string(frame_msg->tick) + " does not follow tick " +
                        std::to_string(w->tick()));
      }
      w->step(sim::TickInput{frame_msg->commands, frame_msg->inputs});
      if (w->state_hash() != frame_msg->state_hash) {
        result = fail(world->error, LOCKSTEP_ERR_DESYNC,
                      "tick " + std::to_string(w->tick()) +
                          ": the local hash differs from the "
                          "server's");
      }
    } else {
      return fail(
          world->error, LOCKSTEP_ERR_BAD_FRAME,
          std::string("a ") + schema::message_name(message) + ", not a Snapshot or a TickFrame");
    }
    if (tick != nullptr) *tick = w->tick();
    if (state_hash != nullptr) *state_hash = w->state_hash();
    return result;
  });
}

LOCKSTEP_API lockstep_status lockstep_world_step(lockstep_world* world,
                                                 const lockstep_command* commands,
                                                 size_t command_count, const lockstep_input* inputs,
                                                 size_t input_count, lockstep_step_result* result) {
  return guarded(error_of(world), [&]() -> lockstep_status {
    sim::World* w = nullptr;
    if (lockstep_status s = writable(world, &w); s != LOCKSTEP_OK) return s;
    if ((commands == nullptr && command_count != 0) || (inputs == nullptr && input_count != 0)) {
      return fail(world->error, LOCKSTEP_ERR_NULL_ARGUMENT, "a null array with a count");
    }
    lockstep_step_result out{};
    auto refuse = [&](lockstep_status why) {
      if (out.first_error == LOCKSTEP_OK) out.first_error = why;
    };
    // The tick's lists in the buffers made at creation; beyond their capacity the world would
    // refuse them anyway (capacity_commands, capacity_inputs), so they are refused here alike.
    size_t n_commands = 0;
    for (size_t i = 0; i < command_count; ++i) {
      if (n_commands == world->tick_commands.size()) {
        ++out.commands_rejected;
        refuse(LOCKSTEP_ERR_CAPACITY);
      } else if (!to_sim(commands[i], &world->tick_commands[n_commands])) {
        ++out.commands_rejected;
        refuse(LOCKSTEP_ERR_INVALID_ARGUMENT);
      } else {
        ++n_commands;
      }
    }
    const size_t n_inputs =
        input_count < world->tick_inputs.size() ? input_count : world->tick_inputs.size();
    for (size_t i = 0; i < n_inputs; ++i)
      world->tick_inputs[i] = to_sim(inputs[i]);
    for (size_t i = n_inputs; i < input_count; ++i) {
      ++out.inputs_rejected;
      refuse(LOCKSTEP_ERR_CAPACITY);
    }
    const std::span<sim::Error> command_errors(world->command_errors.data(), n_commands);
    const std::span<sim::Error> input_errors(world->input_errors.data(), n_inputs);
    const sim::StepStatus status = w->step(sim::TickInput{{world->tick_commands.data(), n_commands},
                                                          {world->tick_inputs.data(), n_inputs}},
                                           sim::TickErrors{command_errors, input_errors});
    for (sim::Error e : command_errors) {
      if (e == sim::Error::none) continue;
      ++out.commands_rejected;
      refuse(lockstep::capi::status_of(e));
    }
    for (sim::Error e : input_errors) {
      if (e == sim::Error::none) continue;
      ++out.inputs_rejected;
      refuse(lockstep::capi::status_of(e));
    }
    out.tick = w->tick();
    out.state_hash = w->state_hash();
    out.overflow = status.overflow;
    if (result != nullptr) *result = out;
    return LOCKSTEP_OK;
  });
}

LOCKSTEP_API lockstep_status lockstep_world_scene_actions(
    const lockstep_world* world, uint64_t tick, lockstep_command* commands,
    uint32_t command_capacity, uint32_t* command_count, lockstep_input* inputs,
    uint32_t input_capacity, uint32_t* input_count) {
  return guarded(error_of(world), [&]() -> lockstep_status {
    if (world == nullptr || command_count == nullptr || input_count == nullptr) {
      return fail(error_of(world), LOCKSTEP_ERR_NULL_ARGUMENT,
                  "world and the counts must not be null");
    }
    if ((commands == nullptr && command_capacity != 0) ||
        (inputs == nullptr && input_capacity != 0)) {
      return fail(error_of(world), LOCKSTEP_ERR_NULL_ARGUMENT, "a null array with a capacity");
    }
    uint32_t n_commands = 0, n_inputs = 0;
    for (const sim::ScriptedAction& action : world->actions) {
      if (action.tick != tick) continue;
      if (action.is_command) {
        if (n_commands < command_capacity) commands[n_commands] = to_c(action.command);
        ++n_commands;
      } else {
        if (n_inputs < input_capacity) inputs[n_inputs] = to_c(action.input);
        ++n_inputs;
      }
    }
    *command_count = n_commands;
    *input_count = n_inputs;
    if (n_commands > command_capacity || n_inputs > input_capacity) {
      return fail(error_of(world), LOCKSTEP_ERR_BUFFER_TOO_SMALL,
                  "the tick has more scripted actions than the buffers hold (counts say how many)");
    }
    return LOCKSTEP_OK;
  });
}

LOCKSTEP_API lockstep_status lockstep_world_tick(const lockstep_world* world, uint64_t* tick) {
  const sim::World* w = nullptr;
  if (lockstep_status s = readable(world, &w); s != LOCKSTEP_OK) return s;
  if (tick == nullptr) return fail(error_of(world), LOCKSTEP_ERR_NULL_ARGUMENT, "tick is null");
  *tick = w->tick();
  return LOCKSTEP_OK;
}

LOCKSTEP_API lockstep_status lockstep_world_state_hash(const lockstep_world* world,
                                                       uint64_t* hash) {
  const sim::World* w = nullptr;
  if (lockstep_status s = readable(world, &w); s != LOCKSTEP_OK) return s;
  if (hash == nullptr) return fail(error_of(world), LOCKSTEP_ERR_NULL_ARGUMENT, "hash is null");
  *hash = w->state_hash();
  return LOCKSTEP_OK;
}

LOCKSTEP_API lockstep_status lockstep_world_snapshot_size(const lockstep_world* world,
                                                          size_t* bytes) {
  const sim::World* w = nullptr;
  if (lockstep_status s = readable(world, &w); s != LOCKSTEP_OK) return s;
  if (bytes == nullptr) return fail(error_of(world), LOCKSTEP_ERR_NULL_ARGUMENT, "bytes is null");
  *bytes = w->snapshot_size();
  return LOCKSTEP_OK;
}

LOCKSTEP_API lockstep_status lockstep_world_max_snapshot_size(const lockstep_world* world,
                                                              size_t* bytes) {
  const sim::World* w = nullptr;
  if (lockstep_status s = readable(world, &w); s != LOCKSTEP_OK) return s;
  if (bytes == nullptr) return fail(error_of(world), LOCKSTEP_ERR_NULL_ARGUMENT, "bytes is null");
  *bytes = w->max_snapshot_size();
  return LOCKSTEP_OK;
}

LOCKSTEP_API lockstep_status lockstep_world_save_snapshot(const lockstep_world* world, void* buffer,
                                                          size_t capacity, size_t* written) {
  return guarded(error_of(world), [&]() -> lockstep_status {
    const sim::World* w = nullptr;
    if (lockstep_status s = readable(world, &w); s != LOCKSTEP_OK) return s;
    if (written == nullptr || (buffer == nullptr && capacity != 0)) {
      return fail(error_of(world), LOCKSTEP_ERR_NULL_ARGUMENT, "buffer or written is null");
    }
    *written = 0;
    const sim::Error e = w->save_snapshot({static_cast<uint8_t*>(buffer), capacity}, written);
    if (e != sim::Error::none) return fail_sim(error_of(world), e, "save_snapshot");
    return LOCKSTEP_OK;
  });
}

LOCKSTEP_API lockstep_status lockstep_world_restore_snapshot(lockstep_world* world,
                                                             const void* bytes, size_t size) {
  return guarded(error_of(world), [&]() -> lockstep_status {
    sim::World* w = nullptr;
    if (lockstep_status s = writable(world, &w); s != LOCKSTEP_OK) return s;
    if (bytes == nullptr) return fail(world->error, LOCKSTEP_ERR_NULL_ARGUMENT, "bytes is null");
    const sim::Error e = w->restore_snapshot({static_cast<const uint8_t*>(bytes), size});
    if (e != sim::Error::none) return fail_sim(world->error, e, "restore_snapshot");
    return LOCKSTEP_OK;
  });
}

LOCKSTEP_API lockstep_status lockstep_world_body_count(const lockstep_world* world,
                                                       uint32_t* count) {
  const sim::World* w = nullptr;
  if (lockstep_status s = readable(world, &w); s != LOCKSTEP_OK) return s;
  if (count == nullptr) return fail(error_of(world), LOCKSTEP_ERR_NULL_ARGUMENT, "count is null");
  *count = w->body_count();
  return LOCKSTEP_OK;
}

LOCKSTEP_API lockstep_status lockstep_world_get_body(const lockstep_world* world,
                                                     lockstep_body_id id, lockstep_body* out) {
  const sim::World* w = nullptr;
  if (lockstep_status s = readable(world, &w); s != LOCKSTEP_OK) return s;
  if (out == nullptr) return fail(error_of(world), LOCKSTEP_ERR_NULL_ARGUMENT, "out is null");
  sim::BodyView view;
  if (sim::Error e = w->get_body(to_sim(id), &view); e != sim::Error::none) {
    return fail_sim(error_of(world), e, "get_body");
  }
  *out = body_of(view);
  return LOCKSTEP_OK;
}

LOCKSTEP_API lockstep_status lockstep_world_get_bodies(const lockstep_world* world,
                                                       lockstep_body* out, uint32_t capacity,
                                                       uint32_t* count, uint32_t* found) {
  return guarded(error_of(world), [&]() -> lockstep_status {
    const sim::World* w = nullptr;
    if (lockstep_status s = readable(world, &w); s != LOCKSTEP_OK) return s;
    if (count == nullptr || (out == nullptr && capacity != 0)) {
      return fail(error_of(world), LOCKSTEP_ERR_NULL_ARGUMENT, "out or count is null");
    }
    // A client's world is made at its join: its id buffer is sized on the first read (once).
    auto& ids = const_cast<lockstep_world*>(world)->body_ids;
    if (ids.size() < w->def().max_bodies) ids.resize(w->def().max_bodies);
    const uint32_t live = w->list_bodies(ids);
    const uint32_t n = live < capacity ? live : capacity;
    for (uint32_t i = 0; i < n; ++i) {
      sim::BodyView view;
      w->get_body(ids[i], &view);
      out[i] = body_of(view);
    }
    *count = n;
    if (found != nullptr) *found = live;
    return LOCKSTEP_OK;
  });
}

LOCKSTEP_API lockstep_status lockstep_world_find_body(const lockstep_world* world, const char* name,
                                                      lockstep_body_id* out) {
  if (world == nullptr || name == nullptr || out == nullptr) {
    return fail(error_of(world), LOCKSTEP_ERR_NULL_ARGUMENT,
                "world, name and out must not be null");
  }
  for (const sim::NamedBody& named : world->named_bodies) {
    if (named.name == name) {
      *out = {named.index + 1, 0};
      return LOCKSTEP_OK;
    }
  }
  return fail(error_of(world), LOCKSTEP_ERR_NOT_FOUND, "no scene body of that name");
}

LOCKSTEP_API lockstep_status lockstep_world_ray_cast(const lockstep_world* world,
                                                     const float origin[3],
                                                     const float translation[3],
                                                     const lockstep_query_filter* filter,
                                                     lockstep_ray_hit* hit, int32_t* has_hit) {
  return guarded(error_of(world), [&]() -> lockstep_status {
    const sim::World* w = nullptr;
    if (lockstep_status s = readable(world, &w); s != LOCKSTEP_OK) return s;
    if (origin == nullptr || translation == nullptr || hit == nullptr || has_hit == nullptr) {
      return fail(error_of(world), LOCKSTEP_ERR_NULL_ARGUMENT,
                  "origin, translation, hit and has_hit must not be null");
    }
    sim::RayHit found;
    const sim::QueryResult r =
        sim::ray_cast(*w, {origin[0], origin[1], origin[2]},
                      {translation[0], translation[1], translation[2]}, filter_of(filter), &found);
    if (lockstep_status s = query_status(world, r, nullptr, nullptr); s != LOCKSTEP_OK) return s;
    *has_hit = r.count > 0 ? 1 : 0;
    if (r.count > 0) *hit = hit_of(found);
    return LOCKSTEP_OK;
  });
}

LOCKSTEP_API lockstep_status lockstep_world_ray_cast_all(const lockstep_world* world,
                                                         const float origin[3],
                                                         const float translation[3],
                                                         const lockstep_query_filter* filter,
                                                         lockstep_ray_hit* hits, uint32_t capacity,
                                                         uint32_t* count, uint32_t* found) {
  return guarded(error_of(world), [&]() -> lockstep_status {
    const sim::World* w = nullptr;
    if (lockstep_status s = readable(world, &w); s != LOCKSTEP_OK) return s;
    if (origin == nullptr || translation == nullptr || hits == nullptr || count == nullptr) {
      return fail(error_of(world), LOCKSTEP_ERR_NULL_ARGUMENT,
                  "origin, translation, hits and count must not be null");
    }
    // lockstep_ray_hit and sim::RayHit differ in layout: the hits go through a stack batch.
    sim::RayHit batch[kMaxRayHits];
    const uint32_t n = capacity < kMaxRayHits ? capacity : kMaxRayHits;
    const sim::QueryResult r = sim::ray_cast_all(
        *w, {origin[0], origin[1], origin[2]}, {translation[0], translation[1], translation[2]},
        filter_of(filter), std::span<sim::RayHit>(batch, n));
    if (lockstep_status s = query_status(world, r, count, found); s != LOCKSTEP_OK) return s;
    for (uint32_t i = 0; i < r.count; ++i)
      hits[i] = hit_of(batch[i]);
    return LOCKSTEP_OK;
  });
}

LOCKSTEP_API lockstep_status lockstep_world_overlap(
    const lockstep_world* world, const lockstep_query_shape* shape, const float position[3],
    const float orientation[4], const lockstep_query_filter* filter, lockstep_body_id* bodies,
    uint32_t capacity, uint32_t* count, uint32_t* found) {
  return guarded(error_of(world), [&]() -> lockstep_status {
    const sim::World* w = nullptr;
    if (lockstep_status s = readable(world, &w); s != LOCKSTEP_OK) return s;
    if (shape == nullptr || position == nullptr || orientation == nullptr || bodies == nullptr ||
        count == nullptr) {
      return fail(error_of(world), LOCKSTEP_ERR_NULL_ARGUMENT,
                  "shape, position, orientation, bodies and count must not be null");
    }
    if (shape->type != LOCKSTEP_SHAPE_SPHERE && shape->type != LOCKSTEP_SHAPE_BOX &&
        shape->type != LOCKSTEP_SHAPE_CAPSULE) {
      return fail(error_of(world), LOCKSTEP_ERR_INVALID_ARGUMENT,
                  "an overlap shape is a sphere, a box or a capsule");
    }
    sim::ShapeDef def;
    def.type = static_cast<sim::ShapeType>(shape->type);
    def.radius = shape->radius;
    def.half_extents = {shape->half_extents[0], shape->half_extents[1], shape->half_extents[2]};
    def.half_height = shape->half_height;
    const sim::Transform pose{{position[0], position[1], position[2]},
                              {orientation[0], orientation[1], orientation[2], orientation[3]}};
    // sim::BodyId and lockstep_body_id are both two uint32 (checked below), so the caller's
    // array takes the results directly.
    static_assert(sizeof(sim::BodyId) == sizeof(lockstep_body_id));
    std::span<sim::BodyId> out(reinterpret_cast<sim::BodyId*>(bodies), capacity);
    const sim::QueryResult r = sim::overlap(*w, def, pose, filter_of(filter), out);
    return query_status(world, r, count, found);
  });
}

LOCKSTEP_API lockstep_status lockstep_world_contact_events(const lockstep_world* world,
                                                           lockstep_contact_event* out,
                                                           uint32_t capacity, uint32_t* count,
                                                           uint32_t* found) {
  const sim::World* w = nullptr;
  if (lockstep_status s = readable(world, &w); s != LOCKSTEP_OK) return s;
  return copy_out(world, w->events(), out, capacity, count, found, [](const sim::ContactEvent& e) {
    return lockstep_contact_event{static_cast<int32_t>(e.type), to_c(e.a), to_c(e.b)};
  });
}

LOCKSTEP_API lockstep_status lockstep_world_sensor_events(const lockstep_world* world,
                                                          lockstep_sensor_event* out,
                                                          uint32_t capacity, uint32_t* count,
                                                          uint32_t* found) {
  const sim::World* w = nullptr;
  if (lockstep_status s = readable(world, &w); s != LOCKSTEP_OK) return s;
  return copy_out(
      world, w->sensor_events(), out, capacity, count, found, [](const sim::SensorEvent& e) {
        return lockstep_sensor_event{static_cast<int32_t>(e.type), to_c(e.sensor), to_c(e.visitor)};
      });
}

LOCKSTEP_API lockstep_status lockstep_world_game_events(const lockstep_world* world,
                                                        lockstep_game_event* out, uint32_t capacity,
                                                        uint32_t* count, uint32_t* found) {
  const sim::World* w = nullptr;
  if (lockstep_status s = readable(world, &w); s != LOCKSTEP_OK) return s;
  return copy_out(world, w->game_events(), out, capacity, count, found,
                  [](const sim::GameEvent& e) {
                    return lockstep_game_event{e.type, e.player, e.value, e.sequence};
                  });
}

LOCKSTEP_API lockstep_status lockstep_world_state_field_count(const lockstep_world* world,
                                                              uint32_t* count) {
  const sim::World* w = nullptr;
  if (lockstep_status s = readable(world, &w); s != LOCKSTEP_OK) return s;
  if (count == nullptr) return fail(error_of(world), LOCKSTEP_ERR_NULL_ARGUMENT, "count is null");
  *count = static_cast<uint32_t>(w->state_fields().size());
  return LOCKSTEP_OK;
}

LOCKSTEP_API lockstep_status lockstep_world_state_field(const lockstep_world* world, uint32_t index,
                                                        lockstep_state_field* out) {
  const sim::World* w = nullptr;
  if (lockstep_status s = readable(world, &w); s != LOCKSTEP_OK) return s;
  if (out == nullptr) return fail(error_of(world), LOCKSTEP_ERR_NULL_ARGUMENT, "out is null");
  const std::span<const sim::StateFieldDef> fields = w->state_fields();
  if (index >= fields.size()) {
    return fail(error_of(world), LOCKSTEP_ERR_INVALID_ARGUMENT, "no state field at that index");
  }
  const sim::StateFieldDef& f = fields[index];
  *out = {};
  static_assert(sizeof(out->name) == sizeof(f.name));
  std::memcpy(out->name, f.name, sizeof(out->name));
  out->name[sizeof(out->name) - 1] = '\0';
  out->scope = static_cast<int32_t>(f.scope);
  out->type = static_cast<int32_t>(f.type);
  out->default_value = f.default_value;
  return LOCKSTEP_OK;
}

LOCKSTEP_API lockstep_status lockstep_world_find_state_field(const lockstep_world* world,
                                                             const char* name, uint32_t* index) {
  const sim::World* w = nullptr;
  if (lockstep_status s = readable(world, &w); s != LOCKSTEP_OK) return s;
  if (name == nullptr || index == nullptr) {
    return fail(error_of(world), LOCKSTEP_ERR_NULL_ARGUMENT, "name and index must not be null");
  }
  const uint32_t found = w->find_state_field(name);
  if (found == sim::kNoStateField) {
    return fail(error_of(world), LOCKSTEP_ERR_NOT_FOUND, "no state field of that name");
  }
  *index = found;
  return LOCKSTEP_OK;
}

LOCKSTEP_API lockstep_status lockstep_world_state_value(const lockstep_world* world, uint32_t field,
                                                        uint32_t player, int32_t* value) {
  const sim::World* w = nullptr;
  if (lockstep_status s = readable(world, &w); s != LOCKSTEP_OK) return s;
  if (value == nullptr) return fail(error_of(world), LOCKSTEP_ERR_NULL_ARGUMENT, "value is null");
  const std::span<const sim::StateFieldDef> fields = w->state_fields();
  bool per_player = true;
  uint32_t max_player = sim::kMaxPlayers;  // the score
  if (field < fields.size()) {
    per_player = fields[field].scope == sim::StateScope::player;
    max_player = sim::kMaxStatePlayers;
  } else if (field != sim::kScoreStateField) {
    return fail(error_of(world), LOCKSTEP_ERR_NOT_FOUND, "no state field at that index");
  }
  if (per_player && (player == 0 || player > max_player)) {
    return fail(error_of(world), LOCKSTEP_ERR_INVALID_ARGUMENT,
                "a player field takes a player from 1 (64 for game state, 1024 for the score)");
  }
  *value = w->state(field, player);
  return LOCKSTEP_OK;
}

}  // extern "C"

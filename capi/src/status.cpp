// Status codes, last-error messages and the conversions of the C API's plain structs.
#include <cmath>
#include <cstdio>
#include <cstring>

#include "capi_internal.h"
#include "lockstep/sim/version.h"

namespace lockstep::capi {
namespace {

// The header's numbers are the library's own: a change on either side fails to compile here.
static_assert(LOCKSTEP_BODY_STATIC == static_cast<int>(sim::BodyType::static_body) &&
              LOCKSTEP_BODY_KINEMATIC == static_cast<int>(sim::BodyType::kinematic) &&
              LOCKSTEP_BODY_DYNAMIC == static_cast<int>(sim::BodyType::dynamic));
static_assert(LOCKSTEP_SHAPE_SPHERE == static_cast<int>(sim::ShapeType::sphere) &&
              LOCKSTEP_SHAPE_BOX == static_cast<int>(sim::ShapeType::box) &&
              LOCKSTEP_SHAPE_CAPSULE == static_cast<int>(sim::ShapeType::capsule) &&
              LOCKSTEP_SHAPE_PLANE == static_cast<int>(sim::ShapeType::plane) &&
              LOCKSTEP_SHAPE_HULL == static_cast<int>(sim::ShapeType::hull) &&
              LOCKSTEP_SHAPE_COMPOUND == static_cast<int>(sim::ShapeType::compound) &&
              LOCKSTEP_SHAPE_MESH == static_cast<int>(sim::ShapeType::mesh) &&
              LOCKSTEP_SHAPE_HEIGHTFIELD == static_cast<int>(sim::ShapeType::heightfield));
static_assert(LOCKSTEP_COMMAND_EMIT_EVENT == static_cast<int>(sim::kLastCommandType) &&
              LOCKSTEP_COMMAND_SET_STATE == static_cast<int>(sim::CommandType::set_state) &&
              LOCKSTEP_COMMAND_RESPAWN == static_cast<int>(sim::CommandType::respawn));
static_assert(LOCKSTEP_INPUT_SCALE_LOG2 == sim::kInputScaleLog2 &&
              LOCKSTEP_INPUT_SETS_LINEAR_VELOCITY == sim::input_sets_linear_velocity &&
              LOCKSTEP_INPUT_SETS_ANGULAR_VELOCITY == sim::input_sets_angular_velocity);
static_assert(LOCKSTEP_SCORE_STATE_FIELD == sim::kScoreStateField &&
              LOCKSTEP_STATE_PLAYER == static_cast<int>(sim::StateScope::player) &&
              LOCKSTEP_STATE_FIXED == static_cast<int>(sim::StateType::fixed));
static_assert(LOCKSTEP_EVENT_BEGIN == static_cast<int>(sim::ContactEventType::begin) &&
              LOCKSTEP_EVENT_END == static_cast<int>(sim::ContactEventType::end));
static_assert(sizeof(lockstep_state_field{}.name) == sim::kMaxStateNameBytes + 1);

// The thread's last error: calls that fail before a handle exists (creation) report here too.
thread_local char thread_error[kErrorBytes] = {};

}  // namespace

const char* last_thread_error() {
  return thread_error;
}

bool copy_text(std::string_view text, char* out, size_t capacity) {
  if (out == nullptr || capacity == 0) return !text.empty();
  const size_t n = text.size() < capacity - 1 ? text.size() : capacity - 1;
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
  return n < text.size();
}

lockstep_status fail(char* handle_error, lockstep_status status, std::string_view message) {
  copy_text(message, thread_error, kErrorBytes);
  if (handle_error != nullptr) copy_text(message, handle_error, kErrorBytes);
  return status;
}

lockstep_status status_of(sim::Error error) {
  using sim::Error;
  switch (error) {
    case Error::none:
      return LOCKSTEP_OK;
    case Error::non_finite:
      return LOCKSTEP_ERR_NON_FINITE;
    case Error::capacity_bodies:
    case Error::capacity_inputs:
    case Error::capacity_commands:
    case Error::capacity_state_fields:
      return LOCKSTEP_ERR_CAPACITY;
    case Error::null_handle:
    case Error::stale_handle:
      return LOCKSTEP_ERR_BAD_BODY;
    case Error::wrong_body_type:
      return LOCKSTEP_ERR_WRONG_BODY_TYPE;
    case Error::buffer_too_small:
      return LOCKSTEP_ERR_BUFFER_TOO_SMALL;
    case Error::snapshot_truncated:
    case Error::snapshot_bad_magic:
    case Error::snapshot_version:
    case Error::snapshot_mismatch:
    case Error::snapshot_corrupt:
      return LOCKSTEP_ERR_BAD_SNAPSHOT;
    case Error::unknown_template:
    case Error::unknown_state_field:
      return LOCKSTEP_ERR_NOT_FOUND;
    case Error::invalid_argument:
    case Error::input_out_of_range:
    case Error::unknown_player:
    case Error::degenerate_hull:
    case Error::unknown_hull:
    case Error::invalid_compound:
    case Error::unknown_compound:
    case Error::invalid_mesh:
    case Error::unknown_mesh:
      return LOCKSTEP_ERR_INVALID_ARGUMENT;
    case Error::capacity_mesh:
      return LOCKSTEP_ERR_CAPACITY;
  }
  return LOCKSTEP_ERR_INTERNAL;
}

lockstep_status fail_sim(char* handle_error, sim::Error error, std::string_view context) {
  char message[kErrorBytes];
  const size_t n = context.size() < 120 ? context.size() : 120;
  std::memcpy(message, context.data(), n);
  std::snprintf(message + n, sizeof(message) - n, ": %s", sim::error_message(error));
  return fail(handle_error, status_of(error), message);
}

sim::BodyId to_sim(lockstep_body_id id) {
  return {id.index1, id.generation};
}
lockstep_body_id to_c(sim::BodyId id) {
  return {id.index1, id.generation};
}

sim::Input to_sim(const lockstep_input& input) {
  sim::Input out;
  out.player = input.player;
  out.sequence = input.sequence;
  out.body = to_sim(input.body);
  for (int i = 0; i < 3; ++i) {
    out.linear_impulse[i] = input.linear_impulse[i];
    out.angular_impulse[i] = input.angular_impulse[i];
    out.linear_velocity[i] = input.linear_velocity[i];
    out.angular_velocity[i] = input.angular_velocity[i];
  }
  out.buttons = input.buttons;
  out.flags = input.flags;
  return out;
}

lockstep_input to_c(const sim::Input& input) {
  lockstep_input out{};
  out.player = input.player;
  out.sequence = input.sequence;
  out.body = to_c(input.body);
  for (int i = 0; i < 3; ++i) {
    out.linear_impulse[i] = input.linear_impulse[i];
    out.angular_impulse[i] = input.angular_impulse[i];
    out.linear_velocity[i] = input.linear_velocity[i];
    out.angular_velocity[i] = input.angular_velocity[i];
  }
  out.buttons = input.buttons;
  out.flags = input.flags;
  return out;
}

bool to_sim(const lockstep_command& command, sim::Command* out) {
  if (command.type < 0 || command.type > static_cast<int32_t>(sim::kLastCommandType)) return false;
  out->type = static_cast<sim::CommandType>(command.type);
  out->sequence = command.sequence;
  out->template_index = command.template_index;
  out->position = {command.position[0], command.position[1], command.position[2]};
  out->orientation = {command.orientation[0], command.orientation[1], command.orientation[2],
                      command.orientation[3]};
  out->linear_velocity = {command.linear_velocity[0], command.linear_velocity[1],
                          command.linear_velocity[2]};
  out->angular_velocity = {command.angular_velocity[0], command.angular_velocity[1],
                           command.angular_velocity[2]};
  out->owner_player = command.owner_player;
  out->body = to_sim(command.body);
  out->score_delta = command.score_delta;
  return true;
}

lockstep_command to_c(const sim::Command& command) {
  lockstep_command out{};
  out.type = static_cast<int32_t>(command.type);
  out.sequence = command.sequence;
  out.template_index = command.template_index;
  const sim::Vec3 p = command.position, v = command.linear_velocity, w = command.angular_velocity;
  const sim::Quat q = command.orientation;
  const float position[3] = {p.x, p.y, p.z}, orientation[4] = {q.x, q.y, q.z, q.w};
  const float linear[3] = {v.x, v.y, v.z}, angular[3] = {w.x, w.y, w.z};
  std::memcpy(out.position, position, sizeof(position));
  std::memcpy(out.orientation, orientation, sizeof(orientation));
  std::memcpy(out.linear_velocity, linear, sizeof(linear));
  std::memcpy(out.angular_velocity, angular, sizeof(angular));
  out.owner_player = command.owner_player;
  out.body = to_c(command.body);
  out.score_delta = command.score_delta;
  return out;
}

bool finite3(const float v[3]) {
  return std::isfinite(v[0]) && std::isfinite(v[1]) && std::isfinite(v[2]);
}

}  // namespace lockstep::capi

extern "C" {

LOCKSTEP_API const char* lockstep_status_message(lockstep_status status) {
  switch (status) {
    case LOCKSTEP_OK:
      return "ok";
    case LOCKSTEP_ERR_NULL_ARGUMENT:
      return "a required pointer was null";
    case LOCKSTEP_ERR_INVALID_ARGUMENT:
      return "a value out of its documented range";
    case LOCKSTEP_ERR_NON_FINITE:
      return "NaN or infinity passed in";
    case LOCKSTEP_ERR_BUFFER_TOO_SMALL:
      return "the buffer cannot hold the result";
    case LOCKSTEP_ERR_PARSE:
      return "the scene text does not parse";
    case LOCKSTEP_ERR_IO:
      return "the file cannot be read";
    case LOCKSTEP_ERR_SCENE_REFUSED:
      return "the world refused the scene";
    case LOCKSTEP_ERR_BAD_BODY:
      return "a null, destroyed or unknown body handle";
    case LOCKSTEP_ERR_WRONG_BODY_TYPE:
      return "the body is of the wrong type for this call";
    case LOCKSTEP_ERR_CAPACITY:
      return "a capacity fixed at creation is full";
    case LOCKSTEP_ERR_BAD_SNAPSHOT:
      return "the snapshot is truncated, corrupt or of another world";
    case LOCKSTEP_ERR_NOT_FOUND:
      return "nothing of that name";
    case LOCKSTEP_ERR_READ_ONLY:
      return "a client's world may only be read";
    case LOCKSTEP_ERR_NOT_READY:
      return "the client does not have that yet";
    case LOCKSTEP_ERR_BAD_STATE:
      return "the call does not fit the handle's state";
    case LOCKSTEP_ERR_BAD_FRAME:
      return "the frame does not decode or is another message";
    case LOCKSTEP_ERR_VERSION:
      return "another physics revision or protocol version";
    case LOCKSTEP_ERR_DESYNC:
      return "the local state hash differs from the server's";
    case LOCKSTEP_ERR_OUT_OF_MEMORY:
      return "out of memory";
    case LOCKSTEP_ERR_INTERNAL:
      return "internal error";
    default:
      return "unknown status";
  }
}

LOCKSTEP_API const char* lockstep_last_error(void) {
  return lockstep::capi::last_thread_error();
}

LOCKSTEP_API uint32_t lockstep_api_version(void) {
  return LOCKSTEP_C_API_VERSION;
}

LOCKSTEP_API uint32_t lockstep_physics_revision(void) {
  return lockstep::sim::kPhysicsRevision;
}

}  // extern "C"

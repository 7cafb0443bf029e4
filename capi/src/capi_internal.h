// What the C API's translation units share: the handle structs, the boundary guard that turns
// every C++ failure into a status code, and the conversions between the C structs and the sim's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <new>
#include <string_view>
#include <vector>

#include "lockstep.h"
#include "lockstep/sim/scene.h"
#include "lockstep/sim/types.h"
#include "lockstep/sim/world.h"

namespace lockstep::client_sdk {
class Client;
}

namespace lockstep::capi {

/// Room for one error message (a handle's or a thread's), NUL-terminated, cut to fit.
inline constexpr size_t kErrorBytes = 256;

/// The last error message recorded on this thread ("" when none).
const char* last_thread_error();

/// Records `message` as the last error of this thread and, when given, of a handle's buffer;
/// returns `status` so a failing path reads `return fail(...)`.
lockstep_status fail(char* handle_error, lockstep_status status, std::string_view message);

/// The sim's error as a status, with the sim's one-line message recorded.
lockstep_status fail_sim(char* handle_error, sim::Error error, std::string_view context);
lockstep_status status_of(sim::Error error);

/// Runs `body` so that no exception leaves it: allocation failures and anything else thrown
/// become status codes with a message.
template <class Body>
lockstep_status guarded(char* handle_error, Body&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return fail(handle_error, LOCKSTEP_ERR_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    return fail(handle_error, LOCKSTEP_ERR_INTERNAL, e.what());
  } catch (...) {
    return fail(handle_error, LOCKSTEP_ERR_INTERNAL, "unknown exception");
  }
}

/// Copies `text` into a fixed C buffer, NUL-terminated; true when it had to be cut.
bool copy_text(std::string_view text, char* out, size_t capacity);

sim::BodyId to_sim(lockstep_body_id id);
lockstep_body_id to_c(sim::BodyId id);
sim::Input to_sim(const lockstep_input& input);
lockstep_input to_c(const sim::Input& input);
/// False when the type is not a command type this build knows.
bool to_sim(const lockstep_command& command, sim::Command* out);
lockstep_command to_c(const sim::Command& command);
/// All three floats finite.
bool finite3(const float v[3]);

}  // namespace lockstep::capi

/// A world: owned (made by a *_create call), or a read-only view of a client's world.
struct lockstep_world {
  std::unique_ptr<lockstep::sim::World> owned;
  const lockstep::client_sdk::Client* client = nullptr;  // views only
  int32_t which = LOCKSTEP_WORLD_CONFIRMED;              // views only
  std::vector<lockstep::sim::ScriptedAction> actions;    // the scene's `at tick=N` lines
  std::vector<lockstep::sim::NamedBody> named_bodies;
  // Made at creation, so that stepping and reading bodies never allocate.
  std::vector<lockstep::sim::BodyId> body_ids;
  std::vector<lockstep::sim::Command> tick_commands;
  std::vector<lockstep::sim::Input> tick_inputs;
  std::vector<lockstep::sim::Error> command_errors;
  std::vector<lockstep::sim::Error> input_errors;
  char error[lockstep::capi::kErrorBytes] = {};

  /// The world read through this handle; null for a client view without its world yet.
  const lockstep::sim::World* view() const;
};

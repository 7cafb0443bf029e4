// The browser client's core, compiled to WebAssembly: the sim, the protocol codec, time sync and
// prediction, behind a flat C surface for lockstep.js. It owns no socket: the page's WebSocket
// hands each received binary message (one frame: 4-byte length, then the body) to lsw_receive,
// and sends the frames lsw_hello / lsw_input / lsw_ping leave in the out buffer.
//
// The confirmed world steps only what TickFrames carry and compares its hash with the server's on
// every tick, exactly as a native lockstep client does; the predicted world (optional) runs ahead
// with the local inputs and is rolled back by the SDK's Prediction when a confirmation differs.
//
// Numbers that JavaScript cannot hold exactly (64-bit ticks and hashes) cross the boundary as
// doubles (ticks stay far below 2^53) and hashes as 16 hexadecimal digits.
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/client_sdk/prediction.h"
#include "lockstep/client_sdk/time_sync.h"
#include "lockstep/schema/frame.h"
#include "lockstep/schema/level_file.h"
#include "lockstep/schema/limits.h"
#include "lockstep/schema/messages.h"
#include "lockstep/sim/scene.h"
#include "lockstep/sim/testing.h"
#include "lockstep/sim/version.h"
#include "lockstep/sim/world.h"

#ifdef __EMSCRIPTEN__
#include <emscripten/emscripten.h>
#define LSW_EXPORT extern "C" EMSCRIPTEN_KEEPALIVE
#else
#define LSW_EXPORT extern "C"
#endif

namespace {

using namespace lockstep;
using Clock = std::chrono::steady_clock;

/// What lsw_receive reports (lockstep.js names them).
enum EventKind : int32_t {
  event_none = 0,         // a message with nothing to report (handled or ignored)
  event_joined = 1,       // Welcome: the world is made; the join Snapshot follows
  event_snapshot = 2,     // a Snapshot restored the confirmed world
  event_tick = 3,         // a TickFrame stepped and its hash equals the local one
  event_desync = 4,       // a TickFrame's hash differs (the world has stepped)
  event_error = 5,        // an Error the server sent, not fatal
  event_closed = 6,       // a fatal Error or a Disconnect: the server closes the connection
  event_pong = 7,         // a Pong: the round trip is updated
  event_game_message = 8  // a GameMessage relayed by the room
};

/// Floats per body in lsw_bodies' array.
constexpr int kBodyFloats = 18;

/// The most memory a Welcome's world (its level included) may take in a page: a wasm32 heap
/// grows to 2 GiB at most, and a hostile or mistaken server must not make the page try.
constexpr uint64_t kMaxWorldBytes = uint64_t{512} << 20;

struct WebClient {
  std::unique_ptr<sim::World> world;  // confirmed
  std::unique_ptr<client_sdk::Prediction> prediction;
  uint32_t max_prediction_ticks = 0;  // 0: no predicted world
  std::optional<client_sdk::TimeSync> time_sync;
  schema::Welcome welcome;
  bool joined = false;
  bool have_state = false;  // a Snapshot has been restored
  uint64_t newest_room_tick = 0;
  uint64_t announced_input_tick = 0;
  uint32_t input_sequence = 0;
  Clock::time_point hello_sent{};

  uint64_t ticks_verified = 0, desyncs = 0, snapshots = 0;
  uint64_t own_inputs_applied = 0;  // this player's inputs in the TickFrames applied
  uint64_t last_server_hash = 0, last_local_hash = 0;
  int32_t last_code = 0;
  std::string text;
  std::vector<uint8_t> in;   // the frame lsw_receive reads
  std::vector<uint8_t> out;  // the frame the last lsw_* builder made
  std::vector<float> bodies;
  std::vector<float> level_triangles;  // lsw_level_triangles: 9 floats a triangle
  std::vector<sim::BodyId> body_ids;
  std::vector<int32_t> game_events;
  std::vector<uint8_t> game_message;
  bool desynced = false;  // since the last snapshot
  // After a desync, the resync Snapshot compared with the local world at the same tick: the
  // bodies whose state differs (index1, then local and server position and linear velocity).
  std::vector<float> diff;
  double diff_tick = -1;
  char hex[17] = {};

  uint32_t emit(const schema::Message& message) {
    out = schema::encode_frame(message);
    return static_cast<uint32_t>(out.size());
  }
  const sim::World* view(int32_t which) const {
    if (which == 1 && prediction) return &prediction->world();
    return world.get();
  }
};

const char* to_hex(WebClient* c, uint64_t v) {
  std::snprintf(c->hex, sizeof c->hex, "%016" PRIx64, v);
  return c->hex;
}

int32_t on_welcome(WebClient* c, schema::Welcome welcome) {
  if (c->joined) {
    c->text = "a second Welcome";
    return event_none;
  }
  if (welcome.physics_revision != 0 && welcome.physics_revision != sim::kPhysicsRevision) {
    c->text = "the server simulates physics revision " + std::to_string(welcome.physics_revision) +
              ", this page's build " + std::to_string(sim::kPhysicsRevision);
    c->last_code = static_cast<int32_t>(schema::ErrorCode::version_mismatch);
    return event_closed;
  }
  if (!welcome.world_def) {
    c->text = "the Welcome carries no WorldDef";
    return event_closed;
  }
  // The level: a page has no level files of its own, so the Welcome must carry it (the server's
  // --max-welcome-level-bytes decides; docs/web.md).
  if (welcome.level_digest != 0 && !welcome.level_carried) {
    char digest[17];
    std::snprintf(digest, sizeof digest, "%016" PRIx64, welcome.level_digest);
    c->text = std::string("the server sends its level (digest ") + digest +
              ") as its digest only, and a page has no level files: raise the server's "
              "Welcome level cap to send it whole";
    return event_closed;
  }
  const uint64_t level_bytes =
      schema::level_content_bytes(welcome.level_meshes, welcome.level_heightfields) +
      sim::level_memory_bytes(
          schema::view_level(welcome.level_meshes, welcome.level_heightfields).def());
  const uint64_t need = sim::world_memory_bytes(*welcome.world_def) + level_bytes;
  if (need > kMaxWorldBytes) {
    c->text = "the Welcome's world needs " + std::to_string(need) + " bytes (level " +
              std::to_string(level_bytes) + "), over the page's budget of " +
              std::to_string(kMaxWorldBytes);
    return event_closed;
  }
  sim::Error error = sim::Error::none;
  // Stage timings read the clock a dozen times a step, and each read leaves wasm for JavaScript:
  // most of a small step's time in a page. They are never part of the state or the hash.
  sim::WorldDef def = *welcome.world_def;
  def.measure_stage_times = false;
  const schema::LevelView level =
      schema::view_level(welcome.level_meshes, welcome.level_heightfields);
  c->world = sim::World::create(def, level.def(), &error);
  if (!c->world) {
    c->text = std::string("cannot make the Welcome's world: ") + sim::error_message(error);
    return event_closed;
  }
  client_sdk::TimeSyncConfig config;
  config.tick_rate_hz = welcome.tick_rate_hz;
  c->time_sync.emplace(config);
  client_sdk::TimeSample sample;
  // Hello → Welcome is a round trip too: the estimate exists from the first moment on.
  sample.client_send = c->hello_sent;
  sample.server_tick = welcome.current_tick;
  sample.server_since_due = std::chrono::nanoseconds(welcome.ns_into_tick);
  sample.server_schedule_moved = std::chrono::nanoseconds(welcome.schedule_moved_ns);
  sample.client_receive = Clock::now();
  c->time_sync->add_sample(sample);
  c->newest_room_tick = welcome.current_tick;
  c->welcome = std::move(welcome);
  c->joined = true;
  c->text = c->welcome.scene;
  return event_joined;
}

/// Floats per differing body in lsw_diff_data: index1, local x y z, server x y z, local vx vy vz,
/// server vx vy vz.
constexpr int kDiffFloats = 13;

/// The local world (desynced) against the server's Snapshot of the same tick: what the replay
/// viewer's diff names, for the bodies of both worlds, in slot order.
void diff_with_snapshot(WebClient* c, const schema::Snapshot& snapshot) {
  c->diff.clear();
  c->diff_tick = -1;
  if (!c->desynced || snapshot.tick != c->world->tick()) return;
  std::unique_ptr<sim::World> server = sim::World::create_like(*c->world);
  if (!server || server->restore_snapshot(snapshot.state) != sim::Error::none) return;
  c->diff_tick = static_cast<double>(snapshot.tick);
  std::vector<sim::BodyId> ids(c->world->body_count());
  ids.resize(c->world->list_bodies(ids));
  for (sim::BodyId id : ids) {
    sim::BodyView mine, theirs;
    if (c->world->get_body(id, &mine) != sim::Error::none ||
        server->get_body(id, &theirs) != sim::Error::none) {
      continue;
    }
    const bool same =
        mine.position.x == theirs.position.x && mine.position.y == theirs.position.y &&
        mine.position.z == theirs.position.z && mine.orientation.x == theirs.orientation.x &&
        mine.orientation.y == theirs.orientation.y && mine.orientation.z == theirs.orientation.z &&
        mine.orientation.w == theirs.orientation.w &&
        mine.linear_velocity.x == theirs.linear_velocity.x &&
        mine.linear_velocity.y == theirs.linear_velocity.y &&
        mine.linear_velocity.z == theirs.linear_velocity.z &&
        mine.angular_velocity.x == theirs.angular_velocity.x &&
        mine.angular_velocity.y == theirs.angular_velocity.y &&
        mine.angular_velocity.z == theirs.angular_velocity.z;
    if (same) continue;
    const float row[kDiffFloats] = {static_cast<float>(id.index1),
                                    mine.position.x,
                                    mine.position.y,
                                    mine.position.z,
                                    theirs.position.x,
                                    theirs.position.y,
                                    theirs.position.z,
                                    mine.linear_velocity.x,
                                    mine.linear_velocity.y,
                                    mine.linear_velocity.z,
                                    theirs.linear_velocity.x,
                                    theirs.linear_velocity.y,
                                    theirs.linear_velocity.z};
    c->diff.insert(c->diff.end(), row, row + kDiffFloats);
  }
}

int32_t on_snapshot(WebClient* c, const schema::Snapshot& snapshot) {
  if (!c->world) return event_none;
  diff_with_snapshot(c, snapshot);
  c->desynced = false;
  if (sim::Error e = c->world->restore_snapshot(snapshot.state); e != sim::Error::none) {
    c->text = std::string("Snapshot: ") + sim::error_message(e);
    return event_closed;
  }
  c->have_state = true;
  ++c->snapshots;
  c->newest_room_tick = std::max(c->newest_room_tick, snapshot.tick);
  c->last_server_hash = snapshot.state_hash;
  c->last_local_hash = c->world->state_hash();
  if (c->max_prediction_ticks != 0) {
    if (c->prediction) {
      c->prediction->reset(*c->world);
    } else {
      client_sdk::PredictionConfig config;
      config.max_prediction_ticks = c->max_prediction_ticks;
      c->prediction = client_sdk::Prediction::create(*c->world, c->welcome.player_id, config);
    }
  }
  return event_snapshot;
}

int32_t on_tick_frame(WebClient* c, const schema::TickFrame& frame) {
  if (!c->world || !c->have_state) return event_none;
  if (frame.tick != c->world->tick() + 1) {
    c->text = "TickFrame " + std::to_string(frame.tick) + " after tick " +
              std::to_string(c->world->tick());
    return event_closed;
  }
  c->world->step(sim::TickInput{frame.commands, frame.inputs});
  for (const sim::Input& input : frame.inputs)
    c->own_inputs_applied += input.player == c->welcome.player_id ? 1 : 0;
  c->newest_room_tick = std::max(c->newest_room_tick, frame.tick);
  c->last_server_hash = frame.state_hash;
  c->last_local_hash = c->world->state_hash();
  if (c->prediction) c->prediction->on_confirmed(*c->world, frame.inputs, frame.commands);
  if (c->last_local_hash != frame.state_hash) {
    // One desync per divergence: the ticks after it differ too until a Snapshot restores the
    // room's state, and are neither verified nor reported again.
    if (c->desynced) return event_none;
    ++c->desyncs;
    c->desynced = true;
    c->text = "tick " + std::to_string(frame.tick) + ": local hash differs from the server's";
    return event_desync;
  }
  ++c->ticks_verified;
  return event_tick;
}

}  // namespace

/// A client; max_prediction_ticks 0 = no predicted world (1..60 otherwise).
LSW_EXPORT WebClient* lsw_create(uint32_t max_prediction_ticks) {
  auto* c = new WebClient();
  c->max_prediction_ticks = std::min<uint32_t>(max_prediction_ticks, 60);
  return c;
}

LSW_EXPORT void lsw_destroy(WebClient* c) {
  delete c;
}

/// The buffer for a received message of `size` bytes; null for one longer than any server frame
/// may be (the 4-byte length and kMaxServerFrameBytes): a hostile server must not make the page
/// grow its heap until the wasm aborts. lsw_text then says why. The page copies the message there.
LSW_EXPORT uint8_t* lsw_in_buffer(WebClient* c, uint32_t size) {
  if (size > schema::kFrameHeaderBytes + schema::kMaxServerFrameBytes) {
    c->in.clear();
    c->text = "a message of " + std::to_string(size) + " bytes, over the " +
              std::to_string(schema::kMaxServerFrameBytes) + "-byte frame limit";
    return nullptr;
  }
  c->in.resize(size);
  return c->in.data();
}

LSW_EXPORT const uint8_t* lsw_out_data(WebClient* c) {
  return c->out.data();
}

LSW_EXPORT const char* lsw_text(WebClient* c) {
  return c->text.c_str();
}

LSW_EXPORT int32_t lsw_code(WebClient* c) {
  return c->last_code;
}

/// The Hello frame (size returned; bytes at lsw_out_data). Empty strings: none / the default.
LSW_EXPORT uint32_t lsw_hello(WebClient* c, const char* room, const char* name, const char* token,
                              const char* scene, int32_t thin) {
  schema::Hello hello;
  hello.room = room;
  hello.player_name = name;
  hello.auth_token = token;
  hello.scene = scene;
  hello.mode = thin != 0 ? schema::ClientMode::thin : schema::ClientMode::lockstep;
  c->hello_sent = Clock::now();
  return c->emit(hello);
}

/// Decodes and applies the frame in lsw_in_buffer; returns an EventKind, -1 for bytes that are
/// not a valid server frame (lsw_text says why).
LSW_EXPORT int32_t lsw_receive(WebClient* c) {
  c->text.clear();
  c->last_code = 0;
  const std::span<const uint8_t> frame(c->in);
  if (frame.size() < schema::kFrameHeaderBytes) {
    c->text = "a message shorter than a frame header";
    return -1;
  }
  const uint32_t length = schema::decode_frame_header(frame.first<schema::kFrameHeaderBytes>());
  if (length > schema::kMaxServerFrameBytes || length != frame.size() - schema::kFrameHeaderBytes) {
    c->text = "a message that is not one frame";
    return -1;
  }
  schema::Message message;
  const schema::DecodeResult decoded =
      schema::decode_body(frame.subspan(schema::kFrameHeaderBytes), &message);
  if (decoded.error != schema::DecodeError::none) {
    c->text = decoded.detail;
    return -1;
  }
  if (auto* welcome = std::get_if<schema::Welcome>(&message)) {
    return on_welcome(c, std::move(*welcome));
  }
  if (const auto* snapshot = std::get_if<schema::Snapshot>(&message))
    return on_snapshot(c, *snapshot);
  if (const auto* frame_msg = std::get_if<schema::TickFrame>(&message)) {
    return on_tick_frame(c, *frame_msg);
  }
  if (const auto* pong = std::get_if<schema::Pong>(&message)) {
    if (!c->time_sync) return event_none;
    client_sdk::TimeSample sample;
    sample.client_send = Clock::time_point(std::chrono::nanoseconds(pong->client_time_ns));
    sample.server_tick = pong->server_tick;
    sample.server_since_due = std::chrono::nanoseconds(pong->ns_into_tick);
    sample.server_schedule_moved = std::chrono::nanoseconds(pong->schedule_moved_ns);
    sample.client_receive = Clock::now();
    c->time_sync->add_sample(sample);
    return event_pong;
  }
  if (const auto* error = std::get_if<schema::ErrorMessage>(&message)) {
    c->last_code = static_cast<int32_t>(error->code);
    c->text = std::string(schema::error_code_name(error->code)) + ": " + error->reason;
    return error->fatal ? event_closed : event_error;
  }
  if (const auto* bye = std::get_if<schema::Disconnect>(&message)) {
    c->last_code = static_cast<int32_t>(bye->code);
    c->text = std::string(schema::error_code_name(bye->code)) + ": " + bye->reason;
    return event_closed;
  }
  if (auto* game = std::get_if<schema::GameMessage>(&message)) {
    c->game_message = std::move(game->data);
    return event_game_message;
  }
  c->text = std::string("ignored ") + schema::message_name(message);
  return event_none;
}

/// A Ping frame stamped with the local clock (its Pong updates the round trip).
LSW_EXPORT uint32_t lsw_ping(WebClient* c) {
  schema::Ping ping;
  ping.client_time_ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
          .count());
  return c->emit(ping);
}

/// The tick the next input is for: where the server will be input_delay ticks from now, never
/// past what the room accepts, never before an input already sent. -1 before the join Snapshot.
LSW_EXPORT double lsw_next_input_tick(WebClient* c) {
  if (!c->world || !c->have_state) return -1;
  const uint16_t delay = c->welcome.input_delay_ticks;
  std::optional<uint64_t> target;
  if (c->time_sync) target = c->time_sync->target_tick(Clock::now(), delay);
  if (!target) target = c->world->tick() + delay;
  // The room takes inputs for next..next + window - 1 of its own tick.
  const uint64_t window = std::max<uint32_t>(c->welcome.input_window_ticks, 2);
  const uint64_t lowest = c->newest_room_tick + 1;
  const uint64_t highest = c->newest_room_tick + window - 1;
  const uint64_t tick = std::clamp(*target, lowest, highest);
  c->announced_input_tick = std::max(c->announced_input_tick, tick);
  return static_cast<double>(c->announced_input_tick);
}

/// An InputFrame for `tick` (lsw_next_input_tick) with one input for the body (index1,
/// generation): with `velocity` 0, x y z are an impulse in N·s · 2^10; else the linear velocity
/// to set, in m/s · 2^10. Also recorded for the predicted world. 0 when not joined.
LSW_EXPORT uint32_t lsw_input(WebClient* c, double tick, uint32_t body_index1,
                              uint32_t body_generation, int32_t velocity, int32_t ix, int32_t iy,
                              int32_t iz, uint32_t buttons) {
  if (!c->joined || tick < 1) return 0;
  schema::InputFrame frame;
  frame.target_tick = static_cast<uint64_t>(tick);
  frame.sequence = ++c->input_sequence;
  sim::Input input;
  input.player = c->welcome.player_id;
  input.sequence = frame.sequence;
  input.body = sim::BodyId{body_index1, body_generation};
  int32_t* target = velocity != 0 ? input.linear_velocity : input.linear_impulse;
  target[0] = ix;
  target[1] = iy;
  target[2] = iz;
  if (velocity != 0) input.flags = sim::input_sets_linear_velocity;
  input.buttons = buttons;
  frame.inputs.push_back(input);
  if (c->prediction && frame.target_tick > c->prediction->confirmed_tick()) {
    c->prediction->add_local_inputs(frame.target_tick, frame.inputs);
  }
  return c->emit(frame);
}

/// A DesyncReport for the last tick (the server writes its replay window), then the page may ask
/// for a snapshot with lsw_resync_request.
LSW_EXPORT uint32_t lsw_desync_report(WebClient* c) {
  schema::DesyncReport report;
  report.tick = c->world ? c->world->tick() : 0;
  report.client_hash = c->last_local_hash;
  report.server_hash = c->last_server_hash;
  return c->emit(report);
}

LSW_EXPORT uint32_t lsw_resync_request(WebClient* c, const char* reason) {
  schema::ResyncRequest request;
  request.reason = reason;
  return c->emit(request);
}

/// Steps the predicted world towards the next input tick (rolling back first when a
/// confirmation disagreed); returns its tick, or -1 without prediction.
LSW_EXPORT double lsw_predict(WebClient* c) {
  if (!c->prediction) return -1;
  c->prediction->reconcile(*c->world, nullptr);
  const double next = lsw_next_input_tick(c);
  if (next >= 1) c->prediction->advance(static_cast<uint64_t>(next) - 1, nullptr);
  return static_cast<double>(c->prediction->world().tick());
}

LSW_EXPORT double lsw_tick(WebClient* c, int32_t which) {
  const sim::World* w = c->view(which);
  return w ? static_cast<double>(w->tick()) : -1;
}

LSW_EXPORT const char* lsw_hash(WebClient* c, int32_t which) {
  const sim::World* w = c->view(which);
  return to_hex(c, w ? w->state_hash() : 0);
}

LSW_EXPORT const char* lsw_server_hash(WebClient* c) {
  return to_hex(c, c->last_server_hash);
}

LSW_EXPORT double lsw_ticks_verified(WebClient* c) {
  return static_cast<double>(c->ticks_verified);
}

/// This player's inputs the server applied (as the TickFrames list them).
LSW_EXPORT double lsw_own_inputs_applied(WebClient* c) {
  return static_cast<double>(c->own_inputs_applied);
}

LSW_EXPORT double lsw_desyncs(WebClient* c) {
  return static_cast<double>(c->desyncs);
}

/// The smoothed round trip in ms (0 before the first Pong).
LSW_EXPORT double lsw_rtt_ms(WebClient* c) {
  if (!c->time_sync) return 0;
  return static_cast<double>(c->time_sync->smoothed_rtt().count()) / 1e6;
}

LSW_EXPORT uint32_t lsw_player_id(WebClient* c) {
  return c->welcome.player_id;
}

LSW_EXPORT uint32_t lsw_tick_rate_hz(WebClient* c) {
  return c->welcome.tick_rate_hz;
}

LSW_EXPORT uint32_t lsw_input_delay_ticks(WebClient* c) {
  return c->welcome.input_delay_ticks;
}

/// Bodies this player may push: index1 and generation interleaved, `count` of them.
LSW_EXPORT uint32_t lsw_owned_count(WebClient* c) {
  return static_cast<uint32_t>(c->welcome.owned_bodies.size());
}

LSW_EXPORT uint32_t lsw_owned_body(WebClient* c, uint32_t i, int32_t generation) {
  if (i >= c->welcome.owned_bodies.size()) return 0;
  const sim::BodyId id = c->welcome.owned_bodies[i];
  return generation != 0 ? id.generation : id.index1;
}

/// The level's triangles as the confirmed world places them, for drawing: every static mesh and
/// heightfield body's geometry (from the Welcome) moved by the body's pose, 9 floats a triangle
/// (three corners x y z, m, world). Returns the count; the floats are at lsw_level_data. A
/// heightfield cell gives two triangles, split along the diagonal from (c, r) to (c + 1, r + 1)
/// as the sim splits it.
LSW_EXPORT uint32_t lsw_level_triangles(WebClient* c) {
  c->level_triangles.clear();
  if (!c->world) return 0;
  std::vector<sim::BodyId> ids(c->world->body_count());
  ids.resize(c->world->list_bodies(ids));
  for (const sim::BodyId id : ids) {
    sim::BodyView b;
    if (c->world->get_body(id, &b) != sim::Error::none) continue;
    auto corner = [&](sim::Vec3 local) {
      const sim::Vec3 p = b.position + sim::rotate(b.orientation, local);
      c->level_triangles.insert(c->level_triangles.end(), {p.x, p.y, p.z});
    };
    const uint32_t index = b.shape.mesh;
    if (b.shape.type == sim::ShapeType::mesh && index < c->welcome.level_meshes.size()) {
      const sim::SceneMesh& mesh = c->welcome.level_meshes[index];
      for (size_t t = 0; t + 2 < mesh.indices.size(); t += 3) {
        for (size_t k = 0; k < 3; ++k) {
          const uint32_t v = mesh.indices[t + k];
          corner(v < mesh.vertices.size() ? mesh.vertices[v] : sim::Vec3{});
        }
      }
    } else if (b.shape.type == sim::ShapeType::heightfield &&
               index < c->welcome.level_heightfields.size()) {
      const sim::SceneHeightfield& field = c->welcome.level_heightfields[index];
      if (field.heights.size() < size_t{field.columns} * field.rows) continue;
      auto at = [&](uint32_t col, uint32_t row) {
        return sim::Vec3{static_cast<float>(col) * field.spacing_x,
                         field.heights[size_t{row} * field.columns + col],
                         static_cast<float>(row) * field.spacing_z};
      };
      for (uint32_t row = 0; row + 1 < field.rows; ++row) {
        for (uint32_t col = 0; col + 1 < field.columns; ++col) {
          corner(at(col, row));
          corner(at(col, row + 1));
          corner(at(col + 1, row + 1));
          corner(at(col, row));
          corner(at(col + 1, row + 1));
          corner(at(col + 1, row));
        }
      }
    }
  }
  return static_cast<uint32_t>(c->level_triangles.size() / 9);
}

LSW_EXPORT const float* lsw_level_data(WebClient* c) {
  return c->level_triangles.data();
}

/// The live bodies of a world (0 confirmed, 1 predicted) as kBodyFloats floats each: index1,
/// generation, type, shape type, position xyz, orientation xyzw, radius, half extents xyz,
/// half height, owner, asleep. Returns the count; the floats are at lsw_bodies_data.
LSW_EXPORT uint32_t lsw_bodies(WebClient* c, int32_t which) {
  const sim::World* w = c->view(which);
  c->bodies.clear();
  if (!w) return 0;
  c->body_ids.resize(w->body_count());
  const uint32_t n = w->list_bodies(c->body_ids);
  c->bodies.reserve(size_t{n} * kBodyFloats);
  for (uint32_t i = 0; i < n; ++i) {
    sim::BodyView b;
    if (w->get_body(c->body_ids[i], &b) != sim::Error::none) continue;
    const float row[kBodyFloats] = {static_cast<float>(b.id.index1),
                                    static_cast<float>(b.id.generation),
                                    static_cast<float>(b.type),
                                    static_cast<float>(b.shape.type),
                                    b.position.x,
                                    b.position.y,
                                    b.position.z,
                                    b.orientation.x,
                                    b.orientation.y,
                                    b.orientation.z,
                                    b.orientation.w,
                                    b.shape.radius,
                                    b.shape.half_extents.x,
                                    b.shape.half_extents.y,
                                    b.shape.half_extents.z,
                                    b.shape.half_height,
                                    static_cast<float>(b.owner_player),
                                    b.asleep ? 1.0f : 0.0f};
    c->bodies.insert(c->bodies.end(), row, row + kBodyFloats);
  }
  return static_cast<uint32_t>(c->bodies.size() / kBodyFloats);
}

LSW_EXPORT const float* lsw_bodies_data(WebClient* c) {
  return c->bodies.data();
}

/// Moves a body of the confirmed world by (dx, 0, dz) m outside the tick: the next TickFrame is a
/// desync (to see how the page shows one). 0 when done.
LSW_EXPORT int32_t lsw_debug_perturb(WebClient* c, uint32_t body_index1, uint32_t generation,
                                     float dx, float dz) {
  if (!c->world) return -1;
  return static_cast<int32_t>(sim::debug_perturb_position(
      *c->world, sim::BodyId{body_index1, generation}, sim::Vec3{dx, 0, dz}));
}

/// After a desync, the bodies the resync Snapshot showed differing (kDiffFloats each), at the
/// tick lsw_diff_tick says (-1: no comparison was possible: the snapshot was of another tick).
LSW_EXPORT uint32_t lsw_diff_count(WebClient* c) {
  return static_cast<uint32_t>(c->diff.size() / kDiffFloats);
}

LSW_EXPORT const float* lsw_diff_data(WebClient* c) {
  return c->diff.data();
}

LSW_EXPORT double lsw_diff_tick(WebClient* c) {
  return c->diff_tick;
}

/// Replicated game state: fields of the confirmed world (scene `state` lines).
LSW_EXPORT uint32_t lsw_state_field_count(WebClient* c) {
  return c->world ? static_cast<uint32_t>(c->world->state_fields().size()) : 0;
}

LSW_EXPORT const char* lsw_state_field_name(WebClient* c, uint32_t field) {
  if (!c->world || field >= c->world->state_fields().size()) return "";
  return c->world->state_fields()[field].name;
}

/// 1 for a per-player field, 0 for a room field.
LSW_EXPORT int32_t lsw_state_field_per_player(WebClient* c, uint32_t field) {
  if (!c->world || field >= c->world->state_fields().size()) return 0;
  return c->world->state_fields()[field].scope == sim::StateScope::player ? 1 : 0;
}

LSW_EXPORT int32_t lsw_state_value(WebClient* c, uint32_t field, uint32_t player) {
  return c->world ? c->world->state(field, player) : 0;
}

/// The score of a player (the built-in "score" field).
LSW_EXPORT int32_t lsw_score(WebClient* c, uint32_t player) {
  return c->world ? c->world->score(player) : 0;
}

/// Game events of the confirmed world's last step: type, player, value, sequence each.
LSW_EXPORT uint32_t lsw_game_events(WebClient* c) {
  c->game_events.clear();
  if (!c->world) return 0;
  for (const sim::GameEvent& e : c->world->game_events()) {
    c->game_events.insert(c->game_events.end(),
                          {static_cast<int32_t>(e.type), static_cast<int32_t>(e.player), e.value,
                           static_cast<int32_t>(e.sequence)});
  }
  return static_cast<uint32_t>(c->game_events.size() / 4);
}

LSW_EXPORT const int32_t* lsw_game_events_data(WebClient* c) {
  return c->game_events.data();
}

/// The last GameMessage's bytes (event_game_message).
LSW_EXPORT uint32_t lsw_game_message_size(WebClient* c) {
  return static_cast<uint32_t>(c->game_message.size());
}

LSW_EXPORT const uint8_t* lsw_game_message_data(WebClient* c) {
  return c->game_message.data();
}

namespace {

char bench_hash_hex[17] = {};
double bench_first_ms = -1;  // lsw_bench_first

/// One round of the page's benchmark: the run from a fresh world, steps 1..warmup untimed and
/// the rest timed. Returns the timed ms per step, or -1 when the world cannot be built.
double bench_round(const sim::Scene& scene, uint32_t ticks, uint32_t warmup) {
  std::unique_ptr<sim::World> world = sim::build_world(scene);
  if (!world) return -1;
  const sim::InputScript script = sim::make_input_script(*world);
  std::vector<sim::Input> inputs(scene.def.max_inputs_per_tick);
  size_t next_action = 0;
  Clock::time_point start{};
  for (uint64_t t = 1; t <= ticks; ++t) {
    if (t == warmup + 1) start = Clock::now();
    for (; next_action < scene.actions.size() && scene.actions[next_action].tick <= t;
         ++next_action) {
      const sim::ScriptedAction& action = scene.actions[next_action];
      if (action.tick != t) continue;
      if (action.is_command) {
        world->queue_command(action.command);
      } else {
        world->queue_input(action.input);
      }
    }
    if (!script.bodies.empty()) {
      const uint32_t count =
          sim::scripted_inputs(sim::kDefaultInputSeed, world->tick(), script, *world, inputs);
      for (uint32_t i = 0; i < count; ++i)
        world->queue_input(inputs[i]);
    }
    world->step();
  }
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  std::snprintf(bench_hash_hex, sizeof bench_hash_hex, "%016" PRIx64, world->state_hash());
  return ms / static_cast<double>(ticks - warmup);
}

}  // namespace

/// The page's benchmark, the same run as `lockstep-sim --scene NAME --ticks N` (the scene's own
/// scripted lines and its players' seeded input script), `rounds` times from a fresh world: in
/// each, steps 1..warmup untimed, then the rest to `ticks` timed. Returns the fastest round's ms
/// per step (-1 for an unknown scene or no round); lsw_bench_first gives the first round's, which
/// includes the engine compiling the wasm's hot functions (browsers compile a quick baseline
/// first and optimise the busy functions later, in the background), and lsw_bench_hash the hash
/// at `ticks`, to compare with the native tool's.
LSW_EXPORT double lsw_bench_builtin(const char* scene_name, uint32_t ticks, uint32_t warmup,
                                    uint32_t rounds) {
  bench_first_ms = -1;
  sim::Scene scene;
  if (!sim::make_builtin_scene(scene_name, &scene) || warmup >= ticks || rounds == 0) return -1;
  scene.def.measure_stage_times = false;  // as the client's worlds (on_welcome)
  double best = -1;
  for (uint32_t r = 0; r < rounds; ++r) {
    const double ms = bench_round(scene, ticks, warmup);
    if (ms < 0) return -1;
    if (r == 0) bench_first_ms = ms;
    if (best < 0 || ms < best) best = ms;
  }
  return best;
}

LSW_EXPORT double lsw_bench_first() {
  return bench_first_ms;
}

LSW_EXPORT const char* lsw_bench_hash() {
  return bench_hash_hex;
}

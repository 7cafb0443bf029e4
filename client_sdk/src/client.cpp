// The client session: join, the local world, per-tick verification, resync, events. Runs on the
// caller's thread inside poll(); the transport (connection.h) feeds it decoded messages.
#include "lockstep/client_sdk/client.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <utility>

#include "connection.h"
#include "lockstep/replays/file_name.h"
#include "lockstep/replays/recorder.h"
#include "lockstep/schema/scene_file.h"

namespace lockstep::client_sdk {

struct Client::Impl {
  ClientOptions options;
  EventHandler handler;
  std::unique_ptr<detail::Connection> connection;
  std::string last_error;

  // Caller-thread state.
  std::unique_ptr<sim::World> world;
  uint32_t player_id = 0;
  std::vector<sim::BodyId> owned_bodies;
  uint16_t tick_rate_hz = 0;
  uint16_t input_delay_ticks = 0;
  bool joined = false;
  bool have_snapshot = false;
  bool awaiting_snapshot = false;  // after a desync: frames are skipped until a snapshot arrives
  bool resync_requested = false;   // the awaited snapshot answers our ResyncRequest
  bool fatal_error = false;        // a local failure closed the connection
  std::atomic<ClientState> state{ClientState::idle};
  std::optional<std::pair<sim::BodyId, sim::Vec3>> perturb_next_tick;
  uint64_t last_stamped_tick = 0;
  uint32_t input_frame_sequence = 0;

  // Replay window (options.replay_dir): made at the join snapshot, fed every stepped tick.
  std::string room;
  std::string scene_name;  // "" for a custom ClientOptions::scene
  replays::ReplayHeader replay_header;
  std::unique_ptr<replays::ReplayWindow> replay_window;

  // Session counters, readable from any thread.
  std::atomic<uint64_t> ticks_applied{0}, ticks_verified{0}, desyncs{0}, snapshots{0}, resyncs{0},
      errors{0}, input_frames_sent{0}, inputs_sent{0};

  // Delivery of one poll() call.
  const EventHandler* current = nullptr;
  size_t delivered = 0;

  void deliver(const Event& event) {
    ++delivered;
    if (current != nullptr && *current) (*current)(event);
  }
  void send(const schema::Message& message) {
    if (connection) connection->send(schema::encode_shared_frame(message));
  }
  void fail(ErrorCode code, std::string message, bool fatal);
  void start_resync(std::string reason);
  void handle(schema::Message& message);
  void handle_end(detail::ConnectionEnd& end);
  void on_welcome(const schema::Welcome& welcome);
  void on_snapshot(const schema::Snapshot& snapshot);
  void on_tick_frame(const schema::TickFrame& frame);
  /// A snapshot was restored: the window starts (join) or restarts (resync) from it.
  void replay_keyframe();
  /// Writes the window for a desync at `tick`; the path, or "" and *error.
  std::string write_desync_replay(uint64_t tick, std::string* error);
};

void Client::Impl::replay_keyframe() {
  if (options.replay_dir.empty() || options.mode != ClientMode::lockstep || !world) return;
  if (!replay_window) {
    replays::ReplayWindowConfig config;
    config.window_ticks = std::max<uint32_t>(1, options.replay_window_seconds) * tick_rate_hz;
    config.keyframe_interval_ticks = std::max<uint32_t>(1, options.replay_keyframe_interval_ticks);
    replay_window = std::make_unique<replays::ReplayWindow>(*world, config);
    replay_header = replays::make_replay_header(*world, scene_name, tick_rate_hz,
                                                replays::ReplayWriterKind::client, player_id);
    replay_header.room = room;
    return;
  }
  replay_window->record_keyframe(*world);
}

std::string Client::Impl::write_desync_replay(uint64_t tick, std::string* error) {
  if (!replay_window) {
    *error = "no replay window (not joined with a snapshot yet)";
    return {};
  }
  const std::string path = replays::replay_file_path(
      options.replay_dir, "desync-client-p" + std::to_string(player_id), room, tick);
  std::error_code ec;
  std::filesystem::create_directories(options.replay_dir, ec);
  if (ec) {
    *error = "cannot create replay directory " + options.replay_dir + ": " + ec.message();
    return {};
  }
  // With the live world the file ends with a keyframe of our (divergent) state at `tick`.
  const replays::WriteResult written = replay_window->write_file(path, replay_header, world.get());
  if (!written.ok) {
    *error = written.error;
    return {};
  }
  return path;
}

void Client::Impl::fail(ErrorCode code, std::string message, bool fatal) {
  errors.fetch_add(1, std::memory_order_relaxed);
  last_error = message;
  deliver(ErrorEvent{code, message, fatal});
  if (fatal && connection && !fatal_error) {
    fatal_error = true;
    connection->close(code, std::move(message));
  }
}

void Client::Impl::start_resync(std::string reason) {
  awaiting_snapshot = true;
  resync_requested = true;
  schema::ResyncRequest request;
  request.reason = std::move(reason);
  send(request);
}

void Client::Impl::handle(schema::Message& message) {
  if (const auto* welcome = std::get_if<schema::Welcome>(&message)) {
    on_welcome(*welcome);
  } else if (const auto* snapshot = std::get_if<schema::Snapshot>(&message)) {
    on_snapshot(*snapshot);
  } else if (const auto* frame = std::get_if<schema::TickFrame>(&message)) {
    on_tick_frame(*frame);
  } else if (const auto* error = std::get_if<schema::ErrorMessage>(&message)) {
    errors.fetch_add(1, std::memory_order_relaxed);
    std::string text = std::string(schema::error_code_name(error->code)) + ": " + error->reason;
    if (error->code == ErrorCode::version_mismatch) {
      text += " (server speaks " + std::to_string(error->server_min_protocol_version) + ".." +
              std::to_string(error->server_protocol_version) + ", we speak " +
              std::to_string(schema::kMinProtocolVersion) + ".." +
              std::to_string(schema::kProtocolVersion) + ")";
    }
    last_error = text;
    deliver(ErrorEvent{error->code, std::move(text), error->fatal});
  } else if (auto* disconnect = std::get_if<schema::Disconnect>(&message)) {
    if (state == ClientState::disconnected) return;
    state = ClientState::disconnected;
    deliver(DisconnectedEvent{disconnect->code, std::move(disconnect->reason)});
  } else {
    // Hello, InputFrame, … are client → server only; a server that sends them is broken.
    fail(ErrorCode::unknown_message,
         std::string("unexpected message from the server: ") + schema::message_name(message),
         false);
  }
}

void Client::Impl::handle_end(detail::ConnectionEnd& end) {
  if (state == ClientState::disconnected) return;
  state = ClientState::disconnected;
  deliver(DisconnectedEvent{end.code, std::move(end.reason)});
}

void Client::Impl::on_welcome(const schema::Welcome& welcome) {
  if (joined) {
    fail(ErrorCode::bad_request, "a second Welcome from the server", true);
    return;
  }
  joined = true;
  state = ClientState::joined;
  player_id = welcome.player_id;
  owned_bodies = welcome.owned_bodies;
  tick_rate_hz = welcome.tick_rate_hz;
  input_delay_ticks = welcome.input_delay_ticks;

  // The local world. Since protocol 3 the Welcome carries the room's WorldDef (checked against
  // its fingerprint by the decoder), and the join Snapshot brings every body: no file needed.
  // A scene the client was given (scene_name, scene_file, scene) is a check: a different one is
  // an error naming both.
  std::string problem;
  if (!options.scene_name.empty() && welcome.scene != options.scene_name) {
    problem = "the server welcomed us into scene '" + welcome.scene + "', not the '" +
              options.scene_name + "' we asked for";
  } else if (options.scene &&
             sim::world_def_fingerprint(options.scene->def) != welcome.world_def_fingerprint) {
    problem = "WorldDef fingerprint of our scene '" + options.scene->name +
              "' differs from the server's '" + welcome.scene +
              "': a different scene file or library version";
  }
  if (problem.empty() && welcome.world_def) {
    sim::Error error = sim::Error::none;
    world = sim::World::create(*welcome.world_def, &error);
    if (!world) {
      problem = std::string("cannot make the Welcome's world: ") + sim::error_message(error);
    }
    // Replay files name built-in scenes only (the tool checks them); others carry the WorldDef.
    sim::Scene builtin;
    scene_name = sim::make_builtin_scene(welcome.scene, &builtin) &&
                         sim::world_def_fingerprint(builtin.def) == welcome.world_def_fingerprint
                     ? welcome.scene
                     : std::string();
  } else if (problem.empty()) {
    problem = "the Welcome carries no WorldDef (a server older than protocol 3?)";
  }
  JoinedEvent joined_event;
  joined_event.player_id = welcome.player_id;
  joined_event.owned_bodies = welcome.owned_bodies;
  joined_event.tick = welcome.current_tick;
  joined_event.tick_rate_hz = welcome.tick_rate_hz;
  joined_event.input_delay_ticks = welcome.input_delay_ticks;
  joined_event.snapshot_rate_hz = welcome.snapshot_rate_hz;
  joined_event.snapshot_interval_ticks = welcome.snapshot_interval_ticks;
  joined_event.scene = welcome.scene;
  deliver(joined_event);
  if (!problem.empty()) {
    // A thin client can live without a view of the world; a lockstep client cannot verify.
    if (options.mode == ClientMode::lockstep) {
      fail(ErrorCode::bad_request, problem, true);
    } else {
      world.reset();
    }
  }
}

void Client::Impl::on_snapshot(const schema::Snapshot& snapshot) {
  if (!joined) {
    fail(ErrorCode::not_joined, "a Snapshot before the Welcome", true);
    return;
  }
  SnapshotEvent event;
  event.tick = snapshot.tick;
  event.state_hash = snapshot.state_hash;
  event.state_bytes = snapshot.state.size();
  event.resync = resync_requested;
  if (world) {
    const sim::Error error = world->restore_snapshot(snapshot.state);
    std::string problem;
    if (error != sim::Error::none) {
      problem = std::string("cannot restore the server's snapshot: ") + sim::error_message(error);
    } else if (world->tick() != snapshot.tick || world->state_hash() != snapshot.state_hash) {
      problem = "the restored snapshot's tick " + std::to_string(world->tick()) + " / hash " +
                std::to_string(world->state_hash()) + " differ from the server's " +
                std::to_string(snapshot.tick) + " / " + std::to_string(snapshot.state_hash);
    }
    if (!problem.empty()) {
      fail(ErrorCode::desync, problem, options.mode == ClientMode::lockstep);
      return;
    }
    event.world_view = world.get();
    // Owned bodies as the restored state has them: gone ones dropped, ours (by owner) added.
    std::erase_if(owned_bodies, [this](sim::BodyId id) { return !world->is_alive(id); });
    if (player_id != 0) {
      std::vector<sim::BodyId> ids(world->body_count());
      ids.resize(world->list_bodies(ids));
      for (const sim::BodyId id : ids) {
        sim::BodyView view;
        if (world->get_body(id, &view) == sim::Error::none && view.owner_player == player_id &&
            std::find(owned_bodies.begin(), owned_bodies.end(), id) == owned_bodies.end()) {
          owned_bodies.push_back(id);
        }
      }
    }
  } else if (options.mode == ClientMode::lockstep) {
    return;  // fail() has already closed the connection
  }
  have_snapshot = true;
  awaiting_snapshot = false;
  replay_keyframe();
  if (resync_requested) resyncs.fetch_add(1, std::memory_order_relaxed);
  resync_requested = false;
  snapshots.fetch_add(1, std::memory_order_relaxed);
  deliver(event);
}

void Client::Impl::on_tick_frame(const schema::TickFrame& frame) {
  if (options.mode == ClientMode::thin) {
    ticks_applied.fetch_add(1, std::memory_order_relaxed);  // counted; a thin client never steps
    return;
  }
  if (!world || !have_snapshot || awaiting_snapshot) return;
  if (frame.tick <= world->tick()) return;  // already inside the snapshot we restored
  if (frame.tick != world->tick() + 1) {
    const std::string problem = "TickFrame " + std::to_string(frame.tick) + " after tick " +
                                std::to_string(world->tick()) + ": frames are missing";
    if (options.auto_resync) {
      fail(ErrorCode::desync, problem, false);
      start_resync(problem);
    } else {
      fail(ErrorCode::desync, problem, true);
    }
    return;
  }
  // The frame's commands and inputs as the server applied them (commands first, as the step
  // does); a refusal here that the server accepted shows up as a hash mismatch below, which is
  // the check that matters.
  for (const sim::Command& command : frame.commands)
    world->queue_command(command);
  for (const sim::Input& input : frame.inputs)
    world->queue_input(input);
  if (perturb_next_tick) {
    world->debug_perturb_position(perturb_next_tick->first, perturb_next_tick->second);
    perturb_next_tick.reset();
  }
  world->step();
  ticks_applied.fetch_add(1, std::memory_order_relaxed);
  // Our bodies follow the spawns (owned by us) and destroys the commands made.
  for (const sim::CommandResult& result : world->command_results()) {
    if (result.error != sim::Error::none || result.body.is_null()) continue;
    if (result.type == sim::CommandType::destroy) {
      std::erase(owned_bodies, result.body);
    } else if (result.type == sim::CommandType::spawn) {
      sim::BodyView view;
      if (world->get_body(result.body, &view) == sim::Error::none &&
          view.owner_player == player_id && player_id != 0) {
        owned_bodies.push_back(result.body);
      }
    }
  }
  const uint64_t local_hash = world->state_hash();
  if (replay_window) {
    replay_window->record_step(*world, frame.inputs, frame.state_hash, local_hash, frame.commands);
  }
  if (local_hash != frame.state_hash) {
    desyncs.fetch_add(1, std::memory_order_relaxed);
    schema::DesyncReport report;
    report.tick = frame.tick;
    report.client_hash = local_hash;
    report.server_hash = frame.state_hash;
    send(report);
    // Until a snapshot arrives every later hash differs too: stop stepping.
    awaiting_snapshot = true;
    if (options.auto_resync) start_resync("desync at tick " + std::to_string(frame.tick));
    DesyncEvent event;
    event.tick = frame.tick;
    event.local_hash = local_hash;
    event.server_hash = frame.state_hash;
    if (!options.replay_dir.empty()) {
      event.replay_path = write_desync_replay(frame.tick, &event.replay_error);
      if (event.replay_path.empty()) last_error = "replay not written: " + event.replay_error;
    }
    deliver(event);
    return;
  }
  ticks_verified.fetch_add(1, std::memory_order_relaxed);
  TickAppliedEvent event;
  event.tick = frame.tick;
  event.state_hash = local_hash;
  event.input_count = static_cast<uint32_t>(frame.inputs.size());
  event.world_view = world.get();
  deliver(event);
}

// ---- Client ---------------------------------------------------------------------------------

Client::Client() : impl_(std::make_unique<Impl>()) {}

Client::~Client() = default;

bool Client::connect(const std::string& host, uint16_t port, const std::string& room,
                     const std::string& name, const std::string& token,
                     const ClientOptions& options) {
  Impl& s = *impl_;
  if (s.connection) {
    s.last_error = "connect() called twice: one Client is one connection";
    return false;
  }
  if (host.empty() || port == 0) {
    s.last_error = "connect() needs a host and a non-zero port";
    return false;
  }
  if (options.max_frame_bytes == 0 || options.max_pending_messages == 0 ||
      options.max_send_queue_bytes < schema::kMaxClientFrameBytes ||
      options.ping_interval.count() <= 0 || options.read_timeout.count() <= 0 ||
      options.connect_timeout.count() <= 0) {
    s.last_error =
        "invalid ClientOptions: caps and intervals must be positive (send queue at "
        "least one client frame)";
    return false;
  }
  if (!options.scene_name.empty() && !schema::valid_scene_name(options.scene_name)) {
    s.last_error = "invalid ClientOptions::scene_name '" + options.scene_name +
                   "': 1..64 letters, digits, '_', '-' or '.'";
    return false;
  }
  s.options = options;
  if (!options.scene_file.empty()) {
    // Read now, never on the tick path; the same loader the server uses, so the same name.
    sim::Scene scene;
    if (!schema::load_scene_file(options.scene_file, &scene, &s.last_error)) return false;
    if (s.options.scene_name.empty()) s.options.scene_name = scene.name;
    s.options.scene = std::move(scene);
  }
  s.room = room;
  detail::ConnectionConfig config;
  config.ping_interval = options.ping_interval;
  config.connect_timeout = options.connect_timeout;
  config.read_timeout = options.read_timeout;
  config.max_frame_bytes = options.max_frame_bytes;
  config.max_send_queue_bytes = options.max_send_queue_bytes;
  config.max_pending_messages = options.max_pending_messages;
  s.connection = std::make_unique<detail::Connection>(config);

  schema::Hello hello;
  hello.room = room;
  hello.player_name = name;
  hello.auth_token = token;
  hello.mode = options.mode;
  hello.snapshot_rate_hz = options.snapshot_rate_hz;
  hello.scene = s.options.scene_name;
  s.connection->start(host, port, hello);
  s.state = ClientState::connecting;
  return true;
}

void Client::run_thread() {
  if (impl_->connection) impl_->connection->run_thread();
}

size_t Client::poll(std::chrono::milliseconds wait, const EventHandler& handler) {
  Impl& s = *impl_;
  if (!s.connection) return 0;
  if (s.connection->threaded()) {
    s.connection->wait_inbound(wait);
  } else {
    s.connection->poll_io(wait);
  }
  s.current = handler ? &handler : &s.handler;
  s.delivered = 0;
  // Bounded, so a server that sends faster than we step cannot keep poll() from returning.
  detail::Inbound item;
  for (size_t taken = 0; taken < s.options.max_pending_messages && s.connection->pop(&item);
       ++taken) {
    if (auto* message = std::get_if<schema::Message>(&item)) {
      if (s.state != ClientState::disconnected) s.handle(*message);
    } else {
      s.handle_end(std::get<detail::ConnectionEnd>(item));
    }
  }
  s.current = nullptr;
  return s.delivered;
}

std::vector<Event> Client::poll_events(std::chrono::milliseconds wait) {
  std::vector<Event> events;
  poll(wait, [&events](const Event& event) { events.push_back(event); });
  return events;
}

void Client::set_event_handler(EventHandler handler) {
  impl_->handler = std::move(handler);
}

std::optional<uint64_t> Client::next_input_tick() const {
  const Impl& s = *impl_;
  if (!s.connection || !s.joined || s.state == ClientState::disconnected) return std::nullopt;
  // Time sync puts the input where the server will be input_delay ticks from now; never
  // earlier than an input already sent, so a player's inputs reach the sim in order.
  std::optional<uint64_t> target =
      s.connection->target_tick(std::chrono::steady_clock::now(), s.input_delay_ticks);
  if (!target && s.world) target = s.world->tick() + s.input_delay_ticks;
  if (!target) return std::nullopt;
  return std::max(s.last_stamped_tick, *target);
}

std::optional<uint64_t> Client::send_input(std::span<const sim::Input> inputs) {
  Impl& s = *impl_;
  const std::optional<uint64_t> next = next_input_tick();
  if (!next) return std::nullopt;
  const uint64_t stamped = *next;

  schema::InputFrame frame;
  frame.target_tick = stamped;
  frame.sequence = ++s.input_frame_sequence;
  frame.inputs.assign(inputs.begin(), inputs.end());
  for (sim::Input& input : frame.inputs)
    input.player = s.player_id;
  schema::SharedFrame encoded = schema::encode_shared_frame(frame);
  if (encoded->size() > schema::kFrameHeaderBytes + schema::kMaxClientFrameBytes) {
    s.last_error = "send_input: " + std::to_string(inputs.size()) +
                   " inputs make a frame over the server's client-frame cap";
    return std::nullopt;
  }
  s.last_stamped_tick = stamped;
  s.connection->send(std::move(encoded));
  s.input_frames_sent.fetch_add(1, std::memory_order_relaxed);
  s.inputs_sent.fetch_add(inputs.size(), std::memory_order_relaxed);
  return stamped;
}

void Client::request_resync(const std::string& reason) {
  Impl& s = *impl_;
  if (!s.connection || !s.joined || s.state == ClientState::disconnected) return;
  s.start_resync(reason);
}

void Client::close() {
  if (impl_->connection) impl_->connection->close(ErrorCode::none, "closed by the client");
}

void Client::debug_perturb_next_tick(sim::BodyId body, sim::Vec3 delta) {
  impl_->perturb_next_tick = std::make_pair(body, delta);
}

ClientState Client::state() const {
  return impl_->state;
}
uint32_t Client::player_id() const {
  return impl_->player_id;
}
const std::vector<sim::BodyId>& Client::owned_bodies() const {
  return impl_->owned_bodies;
}
uint16_t Client::tick_rate_hz() const {
  return impl_->tick_rate_hz;
}
uint16_t Client::input_delay_ticks() const {
  return impl_->input_delay_ticks;
}
const sim::World* Client::world() const {
  return impl_->world.get();
}
std::string Client::last_error() const {
  return impl_->last_error;
}

std::optional<uint64_t> Client::estimated_server_tick() const {
  if (!impl_->connection) return std::nullopt;
  return impl_->connection->estimated_server_tick(std::chrono::steady_clock::now());
}

ClientStats Client::stats() const {
  const Impl& s = *impl_;
  ClientStats out;
  auto load = [](const std::atomic<uint64_t>& v) { return v.load(std::memory_order_relaxed); };
  out.ticks_applied = load(s.ticks_applied);
  out.ticks_verified = load(s.ticks_verified);
  out.desyncs = load(s.desyncs);
  out.snapshots = load(s.snapshots);
  out.resyncs = load(s.resyncs);
  out.errors = load(s.errors);
  out.input_frames_sent = load(s.input_frames_sent);
  out.inputs_sent = load(s.inputs_sent);
  if (s.connection) {
    const detail::TransportCounters& t = s.connection->counters();
    out.bytes_in = load(t.bytes_in);
    out.bytes_out = load(t.bytes_out);
    out.frames_in = load(t.frames_in);
    out.frames_out = load(t.frames_out);
    out.pongs = load(t.pongs);
    const detail::RttFigures rtt = s.connection->rtt();
    out.rtt_last = rtt.last;
    out.rtt_min = rtt.min;
    out.rtt_smoothed = rtt.smoothed;
  }
  return out;
}

std::chrono::nanoseconds Client::rtt_quantile(double q) const {
  if (!impl_->connection) return std::chrono::nanoseconds(0);
  return impl_->connection->rtt_quantile(q);
}

}  // namespace lockstep::client_sdk

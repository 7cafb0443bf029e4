// Server: start (scene check, bind), the accept loop, rooms by name, shutdown, stats.
#include "lockstep/server/server.h"

#include <algorithm>
#include <csignal>
#ifdef __linux__
#include <pthread.h>
#endif
#include <filesystem>
#include <future>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/dispatch.hpp>
#include <asio/experimental/as_tuple.hpp>
#include <asio/post.hpp>
#include <asio/use_awaitable.hpp>

#include "lockstep/auth/join_token.h"
#include "lockstep/schema/level_file.h"
#include "lockstep/schema/limits.h"
#include "lockstep/schema/scene_file.h"
#include "lockstep/sim/world.h"
#include "room.h"
#include "server_core.h"
#include "session.h"
#include "websocket_listener.h"

namespace lockstep::server {
namespace {

constexpr auto use_nothrow = asio::experimental::as_tuple(asio::use_awaitable);

// Envelope, table and vector headers around a snapshot's state bytes (generous).
constexpr uint64_t kSnapshotEnvelopeBytes = 256;
constexpr uint64_t kAutoQueueLimitMinBytes = 1u << 20;
constexpr uint64_t kAutoQueueLimitHeadroomBytes = 64u << 10;

// Client-chosen text in an error reason: printable ASCII only.
std::string sanitized(const std::string& text) {
  std::string out = text;
  for (char& c : out) {
    if (c < 0x20 || c > 0x7e) c = '?';
  }
  return out;
}

// The served scene: its world built once to check it and to size its snapshots.
bool serve_scene(sim::Scene scene, std::string source, bool builtin, ServerCore& core,
                 std::string* error) {
  sim::Error world_error = sim::Error::none;
  const std::unique_ptr<sim::World> world = sim::build_world(scene, &world_error);
  if (world == nullptr) {
    *error = fmt::format("{}: scene {} cannot be built: {}", source, scene.name,
                         sim::error_message(world_error));
    return false;
  }
  auto served = std::make_shared<ServedScene>();
  served->world_def_fingerprint = sim::world_def_fingerprint(scene.def);
  served->max_snapshot_frame_bytes = world->max_snapshot_size() + kSnapshotEnvelopeBytes;
  // A level up to the cap rides in the Welcome (which must still fit a frame, with room for the
  // rest of it); a bigger one is named by its digest and each client loads its own copy.
  served->level_digest = world->level_stats().digest;
  const uint64_t level_bytes = schema::level_content_bytes(scene.meshes, scene.heightfields);
  served->level_in_welcome = served->level_digest != 0 &&
                             level_bytes <= core.config.max_welcome_level_bytes &&
                             level_bytes + (uint64_t{1} << 20) <= schema::kMaxServerFrameBytes;
  if (served->max_snapshot_frame_bytes > schema::kMaxServerFrameBytes) {
    *error =
        fmt::format("{}: scene {} snapshots up to {} B, over the {} B frame cap", source,
                    scene.name, served->max_snapshot_frame_bytes, schema::kMaxServerFrameBytes);
    return false;
  }
  if (const auto it = core.scenes.find(scene.name); it != core.scenes.end()) {
    *error = fmt::format("two scenes are named '{}': {} and {} (a name must be unique)", scene.name,
                         it->second->source, source);
    return false;
  }
  // Rules: the server's --rules, else the scene's own line; made once here to check them.
  served->rules = core.config.rules.empty() ? scene.rules : core.config.rules;
  if (served->rules == "none") served->rules.clear();
  if (!served->rules.empty()) {
    std::string why;
    if (core.rules_factory(served->rules, scene, &why) == nullptr) {
      *error = fmt::format("{}: scene {}: {}", source, scene.name, why);
      return false;
    }
  }
  core.max_snapshot_frame_bytes =
      std::max(core.max_snapshot_frame_bytes, served->max_snapshot_frame_bytes);
  served->builtin = builtin;
  served->scene = std::move(scene);
  served->source = std::move(source);
  const std::string name = served->scene.name;
  core.scenes.emplace(name, std::move(served));
  return true;
}

// Loads config.scene (the default) and every *.scene file of config.scene_dir, in name order.
bool load_scenes(ServerCore& core, std::string* error) {
  const ServerConfig& config = core.config;
  sim::Scene scene;
  if (!schema::load_scene(config.scene, &scene, error)) return false;
  const auto builtin_names = sim::builtin_scene_names();
  const bool builtin = std::find(builtin_names.begin(), builtin_names.end(),
                                 std::string_view(config.scene)) != builtin_names.end();
  std::error_code ec;
  // The default scene may be one of scene_dir's files: served once, under its stem.
  std::filesystem::path default_file;
  if (!builtin) default_file = std::filesystem::weakly_canonical(config.scene, ec);
  if (!serve_scene(std::move(scene), builtin ? std::string("built-in") : config.scene, builtin,
                   core, error)) {
    return false;
  }
  core.default_scene = core.scenes.begin()->second;
  if (config.scene_dir.empty()) return true;

  std::vector<std::filesystem::path> paths;
  std::filesystem::directory_iterator it(config.scene_dir, ec);
  if (ec) {
    *error = fmt::format("{}: cannot read the scene directory: {}", config.scene_dir, ec.message());
    return false;
  }
  for (const std::filesystem::directory_entry& entry : it) {
    if (entry.path().extension() == schema::kSceneFileExtension) paths.push_back(entry.path());
  }
  std::sort(paths.begin(), paths.end());  // the directory's order is the file system's
  for (const std::filesystem::path& path : paths) {
    if (!default_file.empty() && std::filesystem::weakly_canonical(path, ec) == default_file) {
      continue;
    }
    sim::Scene file_scene;
    if (!schema::load_scene_file(path.string(), &file_scene, error) ||
        !serve_scene(std::move(file_scene), path.string(), false, core, error)) {
      return false;
    }
  }
  if (paths.empty()) {
    spdlog::warn("scene directory {} has no {} files", config.scene_dir,
                 schema::kSceneFileExtension);
  }
  return true;
}

}  // namespace

ServerCore::ServerCore(const ServerConfig& config_in)
    : config(config_in),
      rules_factory([](const std::string& name, const sim::Scene& scene, std::string* error) {
        return make_builtin_rules(name, scene, error);
      }) {}

ServerCore::~ServerCore() = default;

void ServerCore::make_workers(uint32_t count) {
  workers.clear();
  for (uint32_t i = 0; i < count; ++i) {
    auto worker = std::make_unique<Worker>();
    if (count == 1) {
      worker->io = &io;  // one thread in all: the rooms run beside the acceptor, as before
    } else {
      worker->own_io = std::make_unique<asio::io_context>(1);
      worker->io = worker->own_io.get();
      worker->work.emplace(worker->own_io->get_executor());
    }
    workers.push_back(std::move(worker));
  }
}

void ServerCore::start_workers() {
  for (size_t i = 0; i < workers.size(); ++i) {
    Worker& worker = *workers[i];
    if (worker.own_io == nullptr || worker.thread.joinable()) continue;
    worker.own_io->restart();
    worker.thread = std::thread([&worker, i] {
#ifdef __linux__
      // Named for /metrics' per-thread CPU (and top -H): at most 15 characters.
      pthread_setname_np(pthread_self(), fmt::format("ls-worker-{}", i).c_str());
#endif
      spdlog::debug("worker {} running", i);
      worker.own_io->run();
    });
  }
}

void ServerCore::join_workers() {
  for (auto& worker : workers) {
    worker->work.reset();  // run() returns once the rooms and sessions there have ended
    if (worker->thread.joinable()) worker->thread.join();
  }
}

size_t ServerCore::pick_worker() const {
  size_t best = 0;
  for (size_t i = 1; i < workers.size(); ++i) {
    if (workers[i]->rooms < workers[best]->rooms) best = i;
  }
  return best;
}

std::string ServerCore::served_scene_list() const {
  std::string names;
  for (const auto& [name, scene] : scenes) {
    if (names.size() > 200) {
      names += ", ...";
      break;
    }
    names += (names.empty() ? "" : ", ") + name;
  }
  return names;
}

asio::awaitable<void> ServerCore::accept_loop() {
  // Connections accepted per wake at most: a burst of joins is taken in one go (each async
  // completion waits its turn behind every due room), without holding the rooms up for long.
  constexpr int kMaxAcceptBatch = 64;
  std::error_code ignored;
  acceptor.non_blocking(true, ignored);
  for (;;) {
    auto [ec, socket] = co_await acceptor.async_accept(use_nothrow);
    if (shutting_down || !acceptor.is_open()) co_return;
    if (ec) {
      if (ec == asio::error::operation_aborted) co_return;
      // E.g. out of file descriptors: back off instead of spinning.
      spdlog::warn("accept failed: {}", ec.message());
      asio::steady_timer backoff(io, std::chrono::milliseconds(50));
      co_await backoff.async_wait(use_nothrow);
      continue;
    }
    admit(std::move(socket));
    for (int i = 1; i < kMaxAcceptBatch; ++i) {
      asio::ip::tcp::socket more(io);
      acceptor.accept(more, ec);  // non-blocking: would_block once the backlog is empty
      if (ec) break;
      admit(std::move(more));
    }
  }
}

bool ServerCore::admit(asio::ip::tcp::socket socket, std::string remote) {
  if (sessions.size() >= config.max_connections) {
    ++connections_refused;
    if (connections_refused == 1) {
      spdlog::warn("refusing connections over max_connections = {} (logged once)",
                   config.max_connections);
    }
    std::error_code ignored;
    socket.close(ignored);
    return false;
  }
  std::error_code option_error;
  socket.set_option(asio::ip::tcp::no_delay(true), option_error);
  if (config.socket_send_buffer_bytes != 0) {
    socket.set_option(
        asio::socket_base::send_buffer_size(static_cast<int>(config.socket_send_buffer_bytes)),
        option_error);
  }
  if (remote.empty()) {
    std::error_code endpoint_error;
    const auto endpoint = socket.remote_endpoint(endpoint_error);
    remote = endpoint_error
                 ? std::string("?")
                 : endpoint.address().to_string() + ":" + std::to_string(endpoint.port());
  }
  if (!guard.connection_opened(address_of(remote))) {
    if (guard.stats().refused_per_ip_connections == 1) {
      spdlog::warn("refusing connections over max_connections_per_ip = {} (logged once)",
                   config.max_connections_per_ip);
    }
    std::error_code ignored;
    socket.close(ignored);
    return false;
  }
  ++connections_accepted;
  const uint64_t id = next_session_id++;
  auto session = std::make_shared<Session>(*this, std::move(socket), id, remote);
  sessions.emplace(id, session);
  session->start();
  return true;
}

asio::awaitable<void> ServerCore::publish_loop() {
  while (!shutting_down) {
    publish(stats());
    publish_timer.expires_after(publish_interval);
    auto [ec] = co_await publish_timer.async_wait(use_nothrow);
    if (ec) co_return;
  }
}

asio::awaitable<void> ServerCore::stats_loop() {
  while (!shutting_down) {
    stats_timer.expires_after(config.stats_log_interval);
    auto [ec] = co_await stats_timer.async_wait(use_nothrow);
    if (ec || shutting_down) co_return;
    for (const auto& [name, room] : rooms) {
      spdlog::info(
          "{}", room_summary_line(room->on_own_thread() ? room->stats() : room->published_stats()));
    }
  }
}

std::shared_ptr<Room> ServerCore::find_or_create_room(const std::string& name,
                                                      const std::string& scene_name,
                                                      schema::ErrorCode* code,
                                                      std::string* reason) {
  std::shared_ptr<const ServedScene> scene = default_scene;
  if (!scene_name.empty()) {
    const auto found = scenes.find(scene_name);
    if (found == scenes.end()) {
      *code = schema::ErrorCode::unknown_scene;
      *reason = fmt::format("scene '{}' is not served here (served: {})", sanitized(scene_name),
                            served_scene_list());
      return nullptr;
    }
    scene = found->second;
  }
  if (auto it = rooms.find(name); it != rooms.end()) {
    if (it->second->reserve_join()) {
      if (!scene_name.empty() && it->second->scene_name() != scene_name) {
        it->second->release_join();
        *code = schema::ErrorCode::scene_mismatch;
        *reason = fmt::format("room {} runs scene '{}', not '{}'", name, it->second->scene_name(),
                              sanitized(scene_name));
        return nullptr;
      }
      return it->second;
    }
    // Closing on its worker (empty past its grace); its room_closed is on its way here. The name
    // is free from now on: this Hello gets a new room of that name.
    spdlog::debug("room {} is closing on its worker: a new room takes its name", name);
    const Room* key = it->second.get();
    closing_rooms.emplace(key, std::move(it->second));
    rooms.erase(it);
  }
  if (shutting_down) {
    *code = schema::ErrorCode::server_shutdown;
    *reason = "the server is shutting down";
    return nullptr;
  }
  if (rooms.size() >= config.max_rooms) {
    *code = schema::ErrorCode::too_many_rooms;
    *reason = fmt::format("room {} does not exist and the server already hosts {} rooms", name,
                          rooms.size());
    return nullptr;
  }
  std::string error;
  const size_t worker = pick_worker();
  std::shared_ptr<Room> room = Room::create(*this, name, std::move(scene), worker, &error);
  if (room == nullptr) {
    spdlog::error("room {}: {}", name, error);
    *code = schema::ErrorCode::bad_request;
    *reason = error;
    return nullptr;
  }
  rooms.emplace(name, room);
  ++workers[worker]->rooms;
  if (workers.size() > 1) spdlog::debug("room {} runs on worker {}", name, worker);
  room->reserve_join();  // before start(): the room cannot close before this join is made
  room->start();
  return room;
}

void ServerCore::room_closed(const Room* room, RoomStats summary) {
  std::shared_ptr<Room> closed;  // kept until the end: `room` points into it
  if (auto it = rooms.find(summary.name); it != rooms.end() && it->second.get() == room) {
    closed = std::move(it->second);
    rooms.erase(it);
  } else if (auto set_aside = closing_rooms.find(room); set_aside != closing_rooms.end()) {
    closed = std::move(set_aside->second);
    closing_rooms.erase(set_aside);
  } else {
    return;
  }
  --workers[room->worker()]->rooms;
  spdlog::info("room closed (empty for {} ms): {}", config.empty_room_grace.count(),
               room_summary_line(summary));
  add_room_counters(&closed_rooms_total, summary);
  ++rooms_closed;
  if (config.summary_closed_rooms > 0) {
    if (closed_rooms.size() >= config.summary_closed_rooms) closed_rooms.pop_front();
    closed_rooms.push_back(std::move(summary));
  }
}

void ServerCore::session_closed(uint64_t id) {
  asio::dispatch(io, [this, id] { on_session_closed(id); });
}

void ServerCore::on_session_closed(uint64_t id) {
  if (auto it = sessions.find(id); it != sessions.end())
    guard.connection_closed(address_of(it->second->remote()));
  sessions.erase(id);
  if (shutting_down && sessions.empty()) {
    // Nothing left to flush: let io_context::run() return.
    shutdown_timer.cancel();
    signals.cancel();
  }
}

void ServerCore::begin_shutdown() {
  if (shutting_down) return;
  shutting_down = true;
  spdlog::info("shutting down: {} sessions, {} rooms", sessions.size(), rooms.size());
  std::error_code ignored;
  acceptor.close(ignored);
  if (websocket) websocket->stop();
  stats_timer.cancel();
  publish_timer.cancel();
  // Each room on its own thread (inline for those on this one).
  for (auto& entry : rooms) {
    // A named copy: clang 14 cannot capture a structured binding.
    std::shared_ptr<Room> room = entry.second;
    asio::dispatch(room->io(),
                   [room, dump = config.dump_replays_on_shutdown] { room->shut_down(dump); });
  }
  if (publish) publish(stats());  // readiness drops at once
  // Each session flushes what it has queued, then the Disconnect; bounded by flush_timeout.
  const schema::SharedFrame bye = schema::encode_shared_frame(
      schema::Disconnect{schema::ErrorCode::server_shutdown, "the server is shutting down"});
  std::vector<std::shared_ptr<Session>> open;
  for (auto& [id, session] : sessions)
    open.push_back(session);
  for (auto& session : open) {
    asio::dispatch(session->executor(),
                   [session, bye] { session->begin_close(bye, true, "server shutdown"); });
  }
  if (sessions.empty()) {
    signals.cancel();
    return;
  }
  shutdown_timer.expires_after(config.flush_timeout);
  shutdown_timer.async_wait([this](std::error_code ec) {
    if (ec) return;
    std::vector<std::shared_ptr<Session>> left;
    for (auto& [id, session] : sessions)
      left.push_back(session);
    if (!left.empty()) {
      spdlog::warn("{} sessions did not flush within {} ms; closing them", left.size(),
                   config.flush_timeout.count());
    }
    for (auto& session : left) {
      asio::dispatch(session->executor(),
                     [session] { session->close_now("shutdown flush timed out"); });
    }
    signals.cancel();
  });
}

ServerStats ServerCore::stats() const {
  ServerStats s;
  s.port = port;
  s.uptime_s = std::chrono::duration<double>(Clock::now() - start_time).count();
  s.connections_accepted = connections_accepted;
  s.connections_refused = connections_refused;
  s.sessions_open = static_cast<uint32_t>(sessions.size());
  constexpr auto relaxed = std::memory_order_relaxed;
  s.protocol_errors = protocol_errors.load(relaxed);
  s.input_errors = input_errors.load(relaxed);
  s.slow_consumer_disconnects = slow_consumer_disconnects.load(relaxed);
  s.timeouts = timeouts.load(relaxed);
  s.max_session_queued_bytes = max_session_queued_bytes.load(relaxed);
  s.queue_limit_bytes = queue_limit_bytes;
  s.desync_reports = desync_reports.load(relaxed);
  for (size_t i = 0; i < errors_by_code.size(); ++i)
    s.errors_by_code[i] = errors_by_code[i].load(relaxed);
  s.file_writes = file_writer.written();
  s.file_writes_failed = file_writer.failed();
  s.file_writes_dropped = file_writer.dropped();
  s.file_writes_abandoned = file_writer.abandoned();
  s.live_rooms = rooms.size() + closing_rooms.size();
  s.accepting = started && !shutting_down;
  s.rooms_closed = rooms_closed;
  s.closed_rooms_total = closed_rooms_total;
  s.admission = guard.stats();
  s.threads = static_cast<uint32_t>(workers.size());
  s.thread_list.resize(workers.size());
  for (size_t i = 0; i < workers.size(); ++i) {
    ThreadStats& t = s.thread_list[i];
    t.rooms = workers[i]->rooms;
    t.busy_s = static_cast<double>(workers[i]->busy_ns.load(relaxed)) / 1e9;
    t.busy_ratio = s.uptime_s > 0 ? t.busy_s / s.uptime_s : 0.0;
  }
  // A room on another thread is read through the copy it publishes (room.h); while run() is not
  // running (no worker either) it is read directly.
  const bool workers_idle = !running.load();
  const auto add_live = [&](const Room& room) {
    s.rooms.push_back(workers_idle || room.on_own_thread() ? room.stats() : room.published_stats());
    if (room.worker() < s.thread_list.size()) {
      s.thread_list[room.worker()].clients += s.rooms.back().clients;
    }
  };
  for (const auto& entry : rooms)
    add_live(*entry.second);
  for (const auto& entry : closing_rooms)  // their name taken by a new room; gone soon
    add_live(*entry.second);
  for (const RoomStats& closed : closed_rooms)
    s.rooms.push_back(closed);
  return s;
}

// ---- Server --------------------------------------------------------------------------------

Server::Server(const ServerConfig& config) : core_(std::make_unique<ServerCore>(config)) {}

Server::~Server() {
  // Sessions and rooms hold references into the core: destroy them while it is intact, then the
  // workers' io_contexts (with whatever handlers they still hold) before the control one.
  core_->join_workers();
  core_->sessions.clear();
  core_->rooms.clear();
  core_->workers.clear();
  core_->file_writer.stop();
}

bool Server::start(std::string* error) {
  ServerCore& core = *core_;
  if (core.started) {
    *error = "start() was already called";
    return false;
  }
  if (std::string problem = server_config_error(core.config); !problem.empty()) {
    *error = problem;
    return false;
  }
  if (!load_scenes(core, error)) return false;
  core.make_workers(effective_threads(core.config));
  if (!core.guard.init(core.config, error)) return false;
  if (core.config.record_matches ||
      (core.config.dump_replays_on_shutdown && !core.config.replay_dir.empty())) {
    // Found out now rather than at the first room (desync dumps create it when needed).
    std::error_code dir_error;
    std::filesystem::create_directories(core.config.replay_dir, dir_error);
    if (dir_error) {
      *error = fmt::format("cannot create replay directory {}: {}", core.config.replay_dir,
                           dir_error.message());
      return false;
    }
  }
  const uint64_t needed = core.max_snapshot_frame_bytes + kControlReserveBytes;
  if (core.config.queue_limit_bytes == 0) {
    core.queue_limit_bytes = std::max(kAutoQueueLimitMinBytes,
                                      core.max_snapshot_frame_bytes + kAutoQueueLimitHeadroomBytes);
  } else if (core.config.queue_limit_bytes < needed) {
    *error = fmt::format(
        "queue limit {} B cannot hold the largest snapshot frame of the served scenes: use "
        "at least {} B",
        core.config.queue_limit_bytes, needed);
    return false;
  } else {
    core.queue_limit_bytes = core.config.queue_limit_bytes;
  }

  std::error_code ec;
  const asio::ip::address address = asio::ip::make_address(core.config.bind_address, ec);
  if (ec) {
    *error = fmt::format("bad bind address '{}': {}", core.config.bind_address, ec.message());
    return false;
  }
  const asio::ip::tcp::endpoint endpoint(address, core.config.port);
  core.acceptor.open(endpoint.protocol(), ec);
  if (!ec) core.acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) core.acceptor.bind(endpoint, ec);
  if (!ec) core.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    *error = fmt::format("cannot listen on {}:{}: {}", core.config.bind_address, core.config.port,
                         ec.message());
    std::error_code ignored;
    core.acceptor.close(ignored);
    return false;
  }
  core.port = core.acceptor.local_endpoint(ec).port();
  if (core.config.ws_port >= 0) {
    core.websocket = std::make_unique<WebSocketListener>(core);
    if (!core.websocket->listen(error)) {
      core.websocket.reset();
      std::error_code ignored;
      core.acceptor.close(ignored);
      return false;
    }
    spdlog::info("WebSocket clients on {}:{} ({})", core.config.bind_address,
                 core.websocket->port(),
                 core.config.ws_allowed_origins.empty()
                     ? std::string("any Origin")
                     : fmt::format("Origin {}", fmt::join(core.config.ws_allowed_origins, ", ")));
  }
  core.file_writer.start();
  core.started = true;
  core.start_time = ServerCore::Clock::now();
  spdlog::info(
      "listening on {}:{}: default scene {}, serving {}, {} Hz, input delay {}, late inputs {}, "
      "queue limit {} B, up to {} rooms x {} players, {} threads",
      core.config.bind_address, core.port, core.default_scene->scene.name, core.served_scene_list(),
      core.config.tick_rate_hz, core.config.input_delay_ticks,
      late_input_policy_name(core.config.late_input_policy), core.queue_limit_bytes,
      core.config.max_rooms, core.config.max_players_per_room, core.workers.size());
  return true;
}

uint16_t Server::port() const {
  return core_->port;
}

uint16_t Server::ws_port() const {
  return core_->websocket ? core_->websocket->port() : 0;
}

void Server::run() {
  ServerCore& core = *core_;
  if (!core.started) return;
  core.running = true;
  if (core.config.handle_signals) {
    core.signals.add(SIGINT);
    core.signals.add(SIGTERM);
    core.signals.async_wait([&core](std::error_code ec, int signal_number) {
      if (ec) return;
      spdlog::info("signal {}: graceful shutdown (a second signal stops at once)", signal_number);
      // Armed before begin_shutdown, which cancels it once nothing is left to flush.
      core.signals.async_wait([&core](std::error_code ec2, int) {
        if (ec2) return;
        spdlog::warn("second signal: stopping now");
        core.io.stop();
        for (auto& worker : core.workers) {
          if (worker->own_io != nullptr) worker->own_io->stop();
        }
      });
      core.begin_shutdown();
    });
  }
  if (core.config.stats_log_interval.count() > 0) {
    asio::co_spawn(
        core.io, [&core] { return core.stats_loop(); }, asio::detached);
  }
  if (core.publish) {
    asio::co_spawn(
        core.io, [&core] { return core.publish_loop(); }, asio::detached);
  }
  asio::co_spawn(
      core.io, [&core] { return core.accept_loop(); }, asio::detached);
  core.start_workers();
  core.io.run();
  // The workers end once their rooms have stopped and their sessions have closed (bounded by
  // flush_timeout); what they dispatched back here meanwhile runs after them.
  core.join_workers();
  core.io.restart();
  core.io.poll();
  // The shutdown dumps are on disk before run() returns.
  core.file_writer.stop();
  core.running = false;
}

void Server::request_shutdown() {
  ServerCore* core = core_.get();
  asio::post(core->io, [core] { core->begin_shutdown(); });
}

namespace {

// Waits for `future` until `deadline`, giving up early (false) once run() has returned: work
// posted to a finished io_context never runs.
template <class T>
bool wait_while_running(std::future<T>& future, const ServerCore& core,
                        std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    const auto step =
        std::min(deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(20));
    if (future.wait_until(step) == std::future_status::ready) return true;
    if (!core.running || std::chrono::steady_clock::now() >= deadline) return false;
  }
}

}  // namespace

std::optional<ServerStats> Server::collect_stats(std::chrono::milliseconds timeout) const {
  if (!core_->running) return core_->stats();
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  ServerCore* core = core_.get();
  if (core->workers.size() > 1) {
    // Every room on a worker publishes its stats afresh first (posted to its thread, waited for
    // here, on the caller's): the answer then holds everything the rooms did before this call,
    // as it does with one thread.
    auto listed = std::make_shared<std::promise<std::vector<std::shared_ptr<Room>>>>();
    std::future<std::vector<std::shared_ptr<Room>>> rooms_future = listed->get_future();
    asio::post(core->io, [core, listed] {
      std::vector<std::shared_ptr<Room>> live;
      for (const auto& [name, room] : core->rooms)
        live.push_back(room);
      listed->set_value(std::move(live));
    });
    if (!wait_while_running(rooms_future, *core, deadline)) {
      if (!core->running) return core->stats();
      return std::nullopt;
    }
    const std::vector<std::shared_ptr<Room>> rooms = rooms_future.get();
    if (!rooms.empty()) {
      auto left = std::make_shared<std::atomic<size_t>>(rooms.size());
      auto published = std::make_shared<std::promise<void>>();
      std::future<void> published_future = published->get_future();
      for (const std::shared_ptr<Room>& room : rooms) {
        asio::post(room->io(), [room, left, published] {
          room->publish_stats(true);
          if (left->fetch_sub(1) == 1) published->set_value();
        });
      }
      if (!wait_while_running(published_future, *core, deadline)) {
        if (!core->running) return core->stats();
        return std::nullopt;
      }
    }
  }
  auto promise = std::make_shared<std::promise<ServerStats>>();
  std::future<ServerStats> future = promise->get_future();
  asio::post(core->io, [core, promise] { promise->set_value(core->stats()); });
  if (!wait_while_running(future, *core, deadline)) {
    if (!core->running) return core->stats();
    return std::nullopt;
  }
  return future.get();
}

ServerStats Server::stats() const {
  return core_->stats();
}

void Server::set_desync_hook(DesyncHook hook) {
  core_->desync_hook = std::move(hook);
}

void Server::set_room_close_hook(RoomCloseHook hook) {
  core_->room_close_hook = std::move(hook);
}

void Server::set_rules_factory(RulesFactory factory) {
  core_->rules_factory = std::move(factory);
}

void Server::set_stats_publisher(std::chrono::milliseconds interval,
                                 std::function<void(const ServerStats&)> publish) {
  core_->publish_interval = std::max(interval, std::chrono::milliseconds(1));
  core_->publish = std::move(publish);
}

const ServerConfig& Server::config() const {
  return core_->config;
}

// ---- summaries -----------------------------------------------------------------------------

namespace {

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned char>(c));
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
  return out;
}

double us(std::chrono::nanoseconds d) {
  return static_cast<double>(d.count()) / 1000.0;
}

}  // namespace

std::string summary_json(const ServerStats& stats) {
  std::string out = fmt::format(
      "{{\"port\":{},\"uptime_s\":{:.3f},\"connections_accepted\":{},\"connections_refused\":{},"
      "\"sessions_open\":{},\"protocol_errors\":{},\"input_errors\":{},"
      "\"slow_consumer_disconnects\":{},\"timeouts\":{},\"max_session_queued_bytes\":{},"
      "\"queue_limit_bytes\":{},\"desync_reports\":{},\"live_rooms\":{},\"rooms_closed\":{},",
      stats.port, stats.uptime_s, stats.connections_accepted, stats.connections_refused,
      stats.sessions_open, stats.protocol_errors, stats.input_errors,
      stats.slow_consumer_disconnects, stats.timeouts, stats.max_session_queued_bytes,
      stats.queue_limit_bytes, stats.desync_reports, stats.live_rooms, stats.rooms_closed);
  // Every tick of every room the server ran (closed rooms included, listed or not): the
  // server's own lateness, which a room-by-room median can hide.
  LatenessHistogram all_ticks = stats.closed_rooms_total.lateness;
  for (size_t r = 0; r < stats.live_rooms && r < stats.rooms.size(); ++r)
    all_ticks.merge(stats.rooms[r].lateness);
  out += fmt::format(
      "\"ticks_all_rooms\":{},\"lateness_p50_us_all_rooms\":{:.1f},"
      "\"lateness_p99_us_all_rooms\":{:.1f},",
      all_ticks.count(), us(all_ticks.quantile(0.50)), us(all_ticks.quantile(0.99)));
  out += "\"errors_by_code\":{";
  bool first = true;
  for (size_t i = 0; i < stats.errors_by_code.size(); ++i) {
    if (stats.errors_by_code[i] == 0) continue;
    out += fmt::format("{}\"{}\":{}", first ? "" : ",",
                       schema::error_code_name(static_cast<schema::ErrorCode>(i)),
                       stats.errors_by_code[i]);
    first = false;
  }
  const AdmissionStats& a = stats.admission;
  out += "},\"admission\":{\"token_refusals\":{";
  first = true;
  for (size_t i = 1; i < a.token_refusals.size(); ++i) {  // [0] counts tokens accepted
    if (a.token_refusals[i] == 0) continue;
    out +=
        fmt::format("{}\"{}\":{}", first ? "" : ",",
                    auth::token_error_name(static_cast<auth::TokenError>(i)), a.token_refusals[i]);
    first = false;
  }
  out += fmt::format(
      "}},\"tokens_accepted\":{},\"refused_per_ip_connections\":{},\"refused_room_rate\":{},"
      "\"over_frame_rate\":{},\"over_byte_rate\":{},\"hello_timeouts\":{},"
      "\"over_resync_budget\":{}}}",
      a.token_refusals[0], a.refused_per_ip_connections, a.refused_room_rate, a.over_frame_rate,
      a.over_byte_rate, a.hello_timeouts, a.over_resync_budget);
  out += fmt::format(
      ",\"file_writes\":{},\"file_writes_failed\":{},\"file_writes_dropped\":{},"
      "\"file_writes_abandoned\":{},\"threads\":{},\"thread_list\":[",
      stats.file_writes, stats.file_writes_failed, stats.file_writes_dropped,
      stats.file_writes_abandoned, stats.threads);
  for (size_t t = 0; t < stats.thread_list.size(); ++t) {
    const ThreadStats& thread = stats.thread_list[t];
    out += fmt::format(
        "{}{{\"thread\":{},\"rooms\":{},\"clients\":{},\"busy_s\":{:.3f},"
        "\"busy_ratio\":{:.4f}}}",
        t == 0 ? "" : ",", t, thread.rooms, thread.clients, thread.busy_s, thread.busy_ratio);
  }
  out += "],\"rooms\":[";
  for (size_t r = 0; r < stats.rooms.size(); ++r) {
    const RoomStats& room = stats.rooms[r];
    const double step_mean_us = room.tick > 0 ? static_cast<double>(room.step_time_total_ns) /
                                                    1000.0 / static_cast<double>(room.tick)
                                              : 0.0;
    const double step_cpu_mean_us = room.tick > 0 ? static_cast<double>(room.step_cpu_total_ns) /
                                                        1000.0 / static_cast<double>(room.tick)
                                                  : 0.0;
    out += fmt::format(
        "{}{{\"name\":{},\"scene\":{},\"thread\":{},\"open\":{},\"ticks\":{},\"late_ticks\":{},"
        "\"capped_wakes\":{"
        "},\"schedule_slips\":{},\"schedule_slipped_ms\":{:.1f},"
        "\"lateness_p50_us\":{:.1f},\"lateness_p99_us\":{:.1f},\"lateness_max_us\":{:.1f},"
        "\"step_mean_us\":{:.1f},\"step_cpu_mean_us\":{:.1f},\"step_max_us\":{:.1f},\"inputs_"
        "accepted\":{},"
        "\"inputs_rejected\":{},\"inputs_late\":{},\"inputs_late_dropped\":{},\"inputs_duplicate\":"
        "{},"
        "\"inputs_behind_schedule\":{},\"bytes_in\":{},"
        "\"bytes_out\":{},\"clients\":{},\"clients_peak\":{},\"clients_joined\":{},"
        "\"snapshots_sent\":{},\"desync_reports\":{},\"protocol_errors\":{},\"input_errors\":{},"
        "\"slow_consumers\":{},\"commands_applied\":{},\"commands_refused\":{},"
        "\"commands_failed\":{},\"game_messages_delivered\":{},\"game_messages_oversize\":{},"
        "\"game_messages_over_rate\":{},\"game_messages_refused\":{},\"client_list\":[",
        r == 0 ? "" : ",", json_string(room.name), json_string(room.scene), room.thread,
        room.open ? "true" : "false", room.tick, room.late_ticks, room.capped_wakes,
        room.schedule_slips, us(room.schedule_slipped) / 1000.0, us(room.lateness_p50),
        us(room.lateness_p99), us(room.lateness_max), step_mean_us, step_cpu_mean_us,
        us(room.step_time_max), room.inputs_accepted, room.inputs_rejected, room.inputs_late,
        room.inputs_late_dropped, room.inputs_duplicate, room.inputs_behind_schedule, room.bytes_in,
        room.bytes_out, room.clients, room.clients_peak, room.clients_joined, room.snapshots_sent,
        room.desync_reports, room.protocol_errors, room.input_errors, room.slow_consumers,
        room.commands_applied, room.commands_refused, room.commands_failed,
        room.game_messages_delivered, room.game_messages_oversize, room.game_messages_over_rate,
        room.game_messages_other);
    for (size_t c = 0; c < room.client_list.size(); ++c) {
      const ClientSummary& client = room.client_list[c];
      const double per_s =
          client.connected_s > 0 ? static_cast<double>(client.bytes_out) / client.connected_s : 0.0;
      out += fmt::format(
          "{}{{\"player\":{},\"name\":{},\"mode\":\"{}\",\"connected\":{},\"seconds\":{:.3f},"
          "\"bytes_in\":{},\"bytes_out\":{},\"bytes_out_per_s\":{:.0f},\"frames_out\":{},"
          "\"max_queued_bytes\":{},\"errors\":{},\"end_reason\":{}}}",
          c == 0 ? "" : ",", client.player_id, json_string(client.name),
          client.mode == schema::ClientMode::thin ? "thin" : "lockstep",
          client.connected ? "true" : "false", client.connected_s, client.bytes_in,
          client.bytes_out, per_s, client.frames_out, client.max_queued_bytes, client.errors,
          json_string(client.end_reason));
    }
    out += "]}";
  }
  out += "]}";
  return out;
}

std::string room_summary_line(const RoomStats& room) {
  return fmt::format(
      "room {} (scene {}): tick {}, late ticks {}, schedule slips {} ({:.1f} ms), lateness p50 "
      "{:.3f} ms p99 {:.3f} ms max {:.3f} "
      "ms, "
      "inputs {} accepted {} rejected {} late ({} dropped), bytes in {} out {}, clients {} "
      "(peak {}, joined {}), desync reports {}, errors {} fatal {} input, slow consumers {}, "
      "commands {} applied {} refused {} failed",
      room.name, room.scene, room.tick, room.late_ticks, room.schedule_slips,
      us(room.schedule_slipped) / 1000.0, us(room.lateness_p50) / 1000.0,
      us(room.lateness_p99) / 1000.0, us(room.lateness_max) / 1000.0, room.inputs_accepted,
      room.inputs_rejected, room.inputs_late, room.inputs_late_dropped, room.bytes_in,
      room.bytes_out, room.clients, room.clients_peak, room.clients_joined, room.desync_reports,
      room.protocol_errors, room.input_errors, room.slow_consumers, room.commands_applied,
      room.commands_refused, room.commands_failed);
}

}  // namespace lockstep::server

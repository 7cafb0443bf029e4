// Room: the tick loop, joins, the input window and the per-tick broadcast.
#include "room.h"

#include <algorithm>
#include <atomic>
#include <ctime>
#include <functional>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/experimental/as_tuple.hpp>
#include <asio/use_awaitable.hpp>

#include <asio/dispatch.hpp>

#include "server_core.h"
#include "session.h"

namespace lockstep::server {
namespace {

constexpr auto use_nothrow = asio::experimental::as_tuple(asio::use_awaitable);
constexpr size_t kMaxDeparted = 64;
// Repeated inputs: how long, and how many per player, accepted sequences are remembered.
constexpr uint32_t kInputDedupSeconds = 10;
constexpr uint32_t kInputDedupEntries = 1024;
// A tick that starts more than this after its due time counts as late (see TickClockConfig).
constexpr std::chrono::nanoseconds kLateThreshold{2'000'000};
// How often a ticking room copies its stats for other threads (published_stats()).
constexpr std::chrono::milliseconds kPublishInterval{100};

// Sorted as the world applies them (sim::input_less), so a TickFrame lists its inputs
// canonically. Insertion sort: a tick holds at most a few hundred inputs, nearly sorted.
template <class T, class Less>
void insertion_sort(std::vector<T>& items, Less less) {
  for (size_t i = 1; i < items.size(); ++i) {
    const T value = items[i];
    size_t j = i;
    while (j > 0 && less(value, items[j - 1])) {
      items[j] = items[j - 1];
      --j;
    }
    items[j] = value;
  }
}

// CPU time of the calling thread in ns; 0 where there is no per-thread CPU clock. The step's
// cost to its core is this difference, not the wall time: on a shared machine the thread can
// wait for the core in the middle of a step. One system call each (about 0.1–0.5 µs here).
uint64_t thread_cpu_ns() {
#if defined(CLOCK_THREAD_CPUTIME_ID)
  timespec now{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now) != 0) return 0;
  return static_cast<uint64_t>(now.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(now.tv_nsec);
#else
  return 0;
#endif
}

void sort_inputs(std::vector<sim::Input>& inputs) {
  for (size_t i = 1; i < inputs.size(); ++i) {
    const sim::Input value = inputs[i];
    size_t j = i;
    while (j > 0 && sim::input_less(value, inputs[j - 1])) {
      inputs[j] = inputs[j - 1];
      --j;
    }
    inputs[j] = value;
  }
}

}  // namespace

Room::Room(ServerCore& core, std::string name, std::shared_ptr<const ServedScene> scene,
           size_t worker)
    : core_(core),
      worker_(worker),
      io_(*core.workers[worker]->io),
      name_(std::move(name)),
      scene_(std::move(scene)),
      clock_(TickClockConfig{core.config.tick_rate_hz, core.config.max_catch_up_ticks,
                             effective_schedule_lag_ticks(core.config), kLateThreshold},
             Clock::now()),
      tick_timer_(io_),
      grace_timer_(io_) {}

const std::string& Room::scene_name() const {
  return scene_->scene.name;
}

Room::~Room() {
  spdlog::trace("room {} destroyed", name_);
}

std::shared_ptr<Room> Room::create(ServerCore& core, std::string name,
                                   std::shared_ptr<const ServedScene> scene, size_t worker,
                                   std::string* error) {
  // The world and the replay recorders are made before the room (whose constructor starts the
  // tick clock), so their cost — tens of MB zeroed for a long window — does not put the room
  // behind its own schedule before it begins.
  sim::Error world_error = sim::Error::none;
  size_t failed_body = 0;
  std::unique_ptr<sim::World> world = sim::build_world(scene->scene, &world_error, &failed_body);
  if (world == nullptr) {
    *error = fmt::format("scene {} cannot be built: {}", scene->scene.name,
                         sim::error_message(world_error));
    return nullptr;
  }
  const ServerConfig& config = core.config;
  const uint32_t max_players = config.max_players_per_room;

  // Replays: the window's memory is all taken here. A file scene is not named in the header (a
  // replay names only built-in scenes, which it checks; the keyframe and WorldDef carry the rest).
  auto replays = std::make_unique<RoomReplays>(config, core.file_writer, name, *world, scene->scene,
                                               scene->builtin ? scene->scene.name : std::string());
  std::shared_ptr<Room> room(new Room(core, std::move(name), std::move(scene), worker));
  room->world_ = std::move(world);
  room->replays_ = std::move(replays);
  room->players_.resize(max_players);
  room->spectators_.resize(config.max_spectators_per_room);

  // Ownership: a player owns the bodies whose owner_player is its id; in a scene where nobody
  // owns a body, every player may push every dynamic body.
  std::vector<sim::BodyId> ids(room->world_->body_count());
  ids.resize(room->world_->list_bodies(ids));
  room->owned_bodies_.resize(max_players);
  std::vector<sim::BodyId> dynamic_bodies;
  for (const sim::BodyId id : ids) {
    sim::BodyView view;
    if (room->world_->get_body(id, &view) != sim::Error::none) continue;
    if (view.owner_player != 0) room->scene_has_owners_ = true;
    if (view.type != sim::BodyType::dynamic) continue;
    dynamic_bodies.push_back(id);
    if (view.owner_player >= 1 && view.owner_player <= max_players) {
      room->owned_bodies_[view.owner_player - 1].push_back(id);
    }
  }
  if (!room->scene_has_owners_) {
    for (auto& owned : room->owned_bodies_)
      owned = dynamic_bodies;
  }

  // Sequences are remembered for kInputDedupSeconds (a reconnect and resend fit in it) or the
  // input window, whichever is longer, in a ring of kInputDedupEntries per player.
  InputWindowConfig window;
  window.window_ticks = config.input_window_ticks;
  window.max_players = max_players;
  window.max_inputs_per_player_per_tick = config.max_inputs_per_player_per_tick;
  window.late_policy = config.late_input_policy;
  window.dedup_entries_per_player = kInputDedupEntries;
  window.dedup_memory_ticks = std::max<uint64_t>(uint64_t{kInputDedupSeconds} * config.tick_rate_hz,
                                                 config.input_window_ticks);
  room->input_window_ = std::make_unique<InputWindow>(window);
  GameMessageLimits message_limits;
  message_limits.max_bytes = config.max_game_message_bytes;
  message_limits.max_per_s = config.max_game_messages_per_s;
  message_limits.tick_rate_hz = config.tick_rate_hz;
  message_limits.max_players = max_players;
  room->game_messages_ = std::make_unique<GameMessageInbox>(message_limits);
  room->applied_.reserve(room->input_window_->slot_capacity());
  const uint32_t max_commands = room->world_->def().max_commands_per_tick;
  room->pending_commands_.reserve(max_commands);
  room->applied_commands_.reserve(max_commands);
  room->command_errors_.reserve(max_commands);
  room->world_input_errors_.reserve(room->input_window_->slot_capacity());
  room->spawns_players_ = room->scene_->scene.player_template >= 0;
  if (room->spawns_players_) room->scene_has_owners_ = true;  // players own what they spawn
  room->leave_destroy_tick_.assign(max_players, 0);
  room->spawn_pending_.assign(max_players, 0);
  // Whole ticks, rounded up.
  room->leave_grace_ticks_ = static_cast<uint64_t>(
      (config.player_leave_grace.count() * int64_t{config.tick_rate_hz} + 999) / 1000);
  if (!room->scene_->rules.empty()) {
    std::string why;
    room->rules_ = core.rules_factory(room->scene_->rules, room->scene_->scene, &why);
    if (room->rules_ == nullptr) {
      *error = fmt::format("rules {} for scene {}: {}", room->scene_->rules,
                           room->scene_->scene.name, why);
      return nullptr;
    }
  }
  room->rules_info_.room = room->name_;
  room->rules_info_.scene_name = room->scene_->scene.name;
  room->rules_info_.scene = &room->scene_->scene;
  room->rules_info_.tick_rate_hz = config.tick_rate_hz;
  room->rules_info_.max_players = max_players;
  room->join_spawn_sequence_.assign(max_players, 0);
  room->snapshot_buffer_.resize(room->world_->max_snapshot_size());
  room->departed_.reserve(kMaxDeparted);
  room->publish_stats(true);
  return room;
}

void Room::start() {
  // Inline when the room lives on the calling thread (one thread in all), else posted. The
  // clock starts at the first join (start_ticking), not here: the Hello that made the room
  // reaches the room's thread after a hop, which on a busy machine can take longer than a tick,
  // and its client must still find the scene as built, tick 0.
  asio::dispatch(io_, [self = shared_from_this()] {
    self->start_grace_timer();  // closes the room if its first join fails
  });
  spdlog::info("room {} opened: scene {}, {} Hz, input delay {} ticks, {} players", name_,
               scene_->scene.name, core_.config.tick_rate_hz, core_.config.input_delay_ticks,
               players_.size());
}

void Room::stop() {
  if (rules_ != nullptr && rules_started_ && !rules_ended_) {
    rules_ended_ = true;
    rules_->on_match_end(rules_info_, *world_);
  }
  stopped_ = true;
  tick_timer_.cancel();
  grace_timer_.cancel();
  replays_->finish();
  publish_stats(true);
}

void Room::shut_down(bool dump) {
  if (dump) write_shutdown_replay();
  stop();  // also publishes its match recording
}

void Room::start_ticking() {
  // Tick 0 is the scene as built, due now: start it at once, so the loop's first wake steps
  // tick 1.
  clock_ = TickClock(clock_.config(), Clock::now());
  clock_.advance(clock_.start());
  ticking_ = true;
  asio::co_spawn(
      io_, [self = shared_from_this()] { return self->tick_loop(); }, asio::detached);
}

asio::awaitable<void> Room::tick_loop() {
  while (!stopped_) {
    tick_timer_.expires_at(clock_.next_deadline());
    co_await tick_timer_.async_wait(use_nothrow);
    if (stopped_) co_return;
    // A deadline already past (catching up) completes at once, after other ready handlers.
    const uint64_t epoch = clock_.epoch();
    const uint32_t due = clock_.advance(Clock::now());
    if (clock_.epoch() != epoch && (epoch == 0 || clock_.epoch() % 1000 == 0)) {
      spdlog::warn(
          "room {}: cannot keep up with {} Hz: over {} ticks behind, its schedule moved "
          "later ({} times, {:.1f} ms in all)",
          name_, core_.config.tick_rate_hz, clock_.config().max_backlog_ticks, clock_.epoch(),
          std::chrono::duration<double, std::milli>(clock_.counters().slipped).count());
    }
    const Clock::time_point busy_from = Clock::now();
    for (uint32_t n = due; n > 0 && !stopped_; --n)
      run_tick();
    const Clock::time_point busy_to = Clock::now();
    bump(core_.workers[worker_]->busy_ns, static_cast<uint64_t>((busy_to - busy_from).count()));
    publish_stats(false);
  }
}

template <class Fn>
void Room::for_each_member(Fn&& fn) {
  // By index over fixed slots: a send may close a session, which empties its slot mid-loop.
  for (Member& m : players_) {
    if (m.session != nullptr) fn(m);
  }
  for (Member& m : spectators_) {
    if (m.session != nullptr) fn(m);
  }
}

Room::Member* Room::find_member(const Session& session) {
  const uint32_t player = session.player_id();
  if (player >= 1 && player <= players_.size() && players_[player - 1].session.get() == &session) {
    return &players_[player - 1];
  }
  for (Member& m : spectators_) {
    if (m.session.get() == &session) return &m;
  }
  return nullptr;
}

// ---- the tick ------------------------------------------------------------------------------

void Room::run_tick() {
  const uint64_t tick = world_->tick() + 1;
  queue_pending_commands(tick);
  run_rules_before_step();
  const std::span<const sim::Input> inputs = input_window_->take(tick);
  command_errors_.resize(pending_commands_.size());
  world_input_errors_.resize(inputs.size());

  const Clock::time_point step_start = Clock::now();
  const uint64_t step_cpu_start_ns = thread_cpu_ns();
  const sim::StepStatus status =
      world_->step(sim::TickInput{pending_commands_, inputs},
                   sim::TickErrors{command_errors_, world_input_errors_});
  step_cpu_total_ns_ += thread_cpu_ns() - step_cpu_start_ns;
  const std::chrono::nanoseconds step_time = Clock::now() - step_start;
  take_applied_commands(tick);
  applied_.clear();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const sim::Error e = world_input_errors_[i];
    if (e == sim::Error::none) {
      applied_.push_back(inputs[i]);
      continue;
    }
    // Out of range, or the world's per-tick input capacity: refused by the world.
    ++inputs_rejected_;
    const uint32_t player = inputs[i].player;
    if (player >= 1 && player <= players_.size()) {
      ++players_[player - 1].world_rejects;
      players_[player - 1].last_world_reject = e;
    }
  }
  sort_inputs(applied_);
  inputs_accepted_ += applied_.size();
  step_time_max_ = std::max(step_time_max_, step_time);
  step_time_total_ns_ += static_cast<uint64_t>(step_time.count());
  if (!status.ok() && !overflow_logged_) {
    overflow_logged_ = true;
    spdlog::warn(
        "room {}: a world capacity ran out at tick {} (overflow bits {:#x}); the step "
        "degraded deterministically (logged once per room)",
        name_, world_->tick(), status.overflow);
  }
  apply_command_results();

  // One TickFrame, encoded once, shared by every lockstep member.
  schema::TickFrame frame;
  frame.tick = world_->tick();
  frame.inputs = std::move(applied_);
  frame.commands = std::move(applied_commands_);
  frame.state_hash = world_->state_hash();
  const schema::SharedFrame encoded = schema::encode_shared_frame(frame);
  applied_ = std::move(frame.inputs);  // keep the capacity
  applied_commands_ = std::move(frame.commands);
  replays_->record_step(*world_, applied_, frame.state_hash, applied_commands_);
  for (const PendingGameMessage& m : game_messages_->pending())
    replays_->record_game_message(frame.tick, m.player, m.data);

  // Game rules: read the world as the step left it, answer with commands for the next tick.
  run_rules_after_step();

  for (size_t i = 0; i < players_.size(); ++i) {
    const std::shared_ptr<Session> session = players_[i].session;
    if (session == nullptr) continue;
    session->send(encoded);
    if (players_[i].world_rejects > 0 && players_[i].session != nullptr) {
      session->input_error(
          schema::ErrorCode::input_rejected,
          fmt::format("{} inputs refused by the world at tick {}: {}", players_[i].world_rejects,
                      frame.tick, sim::error_message(players_[i].last_world_reject)));
    }
    players_[i].world_rejects = 0;
  }

  // Snapshots: thin members at their rate, resync requests of anyone.
  for_each_member([&](Member& m) {
    const bool thin_due = m.snapshot_interval_ticks > 0 && frame.tick >= m.next_snapshot_tick;
    if (!thin_due && !m.resync_pending) return;
    if (thin_due) m.next_snapshot_tick = frame.tick + m.snapshot_interval_ticks;
    const bool resync = m.resync_pending && !thin_due;
    m.resync_pending = false;
    const std::shared_ptr<Session> session = m.session;
    const schema::SharedFrame snapshot = snapshot_frame();
    if (resync ? session->send_resync_snapshot(snapshot) : session->send(snapshot)) {
      ++snapshots_sent_;
    }
  });
}

namespace {
// The rules' answer goes into the room's pending commands.
struct RoomRulesOutput final : RulesOutput {
  explicit RoomRulesOutput(std::function<bool(const sim::Command&)> push_fn)
      : push_(std::move(push_fn)) {}
  bool push(const sim::Command& command) override { return push_(command); }
  std::function<bool(const sim::Command&)> push_;
};
}  // namespace

void Room::run_rules_before_step() {
  if (rules_ == nullptr) return;
  RoomRulesOutput output([this](const sim::Command& c) { return push_command(c, "rules"); });
  if (!rules_started_) {
    rules_started_ = true;
    rules_->on_room_start(rules_info_, *world_, output);
  }
  rules_->before_step(rules_info_, *world_, output);
}

void Room::run_rules_after_step() {
  game_messages_delivered_ += game_messages_->pending().size();
  if (rules_ == nullptr) {
    membership_changes_.clear();
    game_messages_->clear();
    return;
  }
  RoomRulesOutput output([this](const sim::Command& c) { return push_command(c, "rules"); });
  // Leaves and completed joins in arrival order; a join whose body is not spawned yet holds
  // back everything after it until the step that spawns it (or fails to).
  size_t done = 0;
  for (; done < membership_changes_.size(); ++done) {
    const MembershipChange& change = membership_changes_[done];
    const size_t p = change.player - 1;
    std::vector<RoomPlayer>& players = rules_info_.players;
    auto at =
        std::lower_bound(players.begin(), players.end(), change.player,
                         [](const RoomPlayer& player, uint32_t id) { return player.id < id; });
    if (change.join) {
      if (spawn_pending_[p] != 0) break;
      RoomPlayer player;
      player.id = change.player;
      player.name = change.name;
      player.bodies = owned_bodies_[p];
      if (at != players.end() && at->id == change.player) {
        *at = player;  // cannot happen (a leave comes first); keep one entry per id
      } else {
        at = players.insert(at, player);
      }
      rules_->on_player_join(rules_info_, *world_, *at, output);
    } else {
      if (at == players.end() || at->id != change.player) continue;
      const RoomPlayer player = *at;
      players.erase(at);
      rules_->on_player_leave(rules_info_, *world_, player, output);
    }
  }
  membership_changes_.erase(membership_changes_.begin(),
                            membership_changes_.begin() + static_cast<std::ptrdiff_t>(done));
  // Game messages that arrived before this step, in arrival order (recorded at this tick).
  for (const PendingGameMessage& m : game_messages_->pending())
    rules_->on_message(rules_info_, *world_, m.player, world_->tick(), m.data, output);
  game_messages_->clear();
  rules_->after_step(*world_, world_->sensor_events(), output);
}

bool Room::push_command(sim::Command command, const char* issuer) {
  if (pending_commands_.size() >= world_->def().max_commands_per_tick) {
    ++commands_refused_;
    if (!command_refusal_logged_) {
      command_refusal_logged_ = true;
      spdlog::error(
          "room {}: a {} command for tick {} was refused: the tick already holds "
          "max_commands_per_tick = {} commands (counted in commands_refused; logged once per room)",
          name_, issuer, world_->tick() + 1, world_->def().max_commands_per_tick);
    }
    return false;
  }
  command.sequence = next_command_sequence_++;
  pending_commands_.push_back(command);
  return true;
}

void Room::queue_pending_commands(uint64_t tick) {
  // Departed players whose grace has run out: their bodies go in this step.
  for (size_t i = 0; i < leave_destroy_tick_.size(); ++i) {
    if (leave_destroy_tick_[i] == 0 || leave_destroy_tick_[i] > tick) continue;
    leave_destroy_tick_[i] = 0;
    for (const sim::BodyId body : owned_bodies_[i]) {
      sim::Command destroy;
      destroy.type = sim::CommandType::destroy;
      destroy.body = body;
      push_command(destroy, "leave");
    }
  }
}

void Room::take_applied_commands(uint64_t tick) {
  applied_commands_.clear();
  for (size_t i = 0; i < pending_commands_.size(); ++i) {
    const sim::Error e = command_errors_[i];
    if (e == sim::Error::none) {
      applied_commands_.push_back(pending_commands_[i]);
      continue;
    }
    for (size_t p = 0; p < join_spawn_sequence_.size(); ++p) {
      if (join_spawn_sequence_[p] != pending_commands_[i].sequence) continue;
      join_spawn_sequence_[p] = 0;  // the join completes without a body
      spawn_pending_[p] = 0;
    }
    ++commands_refused_;
    if (!command_refusal_logged_) {
      command_refusal_logged_ = true;
      spdlog::error(
          "room {}: a command for tick {} was refused by the world: {} (counted in "
          "commands_refused; logged once per room)",
          name_, tick, sim::error_message(e));
    }
  }
  pending_commands_.clear();
  insertion_sort(applied_commands_, sim::command_less);
  commands_applied_ += applied_commands_.size();
}

void Room::apply_command_results() {
  for (const sim::CommandResult& result : world_->command_results()) {
    if (result.type == sim::CommandType::spawn) {
      // A join's spawn applied or failed: the join is complete either way.
      for (size_t p = 0; p < join_spawn_sequence_.size(); ++p) {
        if (join_spawn_sequence_[p] != result.sequence || spawn_pending_[p] == 0) continue;
        join_spawn_sequence_[p] = 0;
        spawn_pending_[p] = 0;
      }
    }
    if (result.error != sim::Error::none) {
      ++commands_failed_;
      if (!command_failure_logged_) {
        command_failure_logged_ = true;
        spdlog::error(
            "room {}: a {} command failed at tick {}: {} (counted in commands_failed; "
            "logged once per room)",
            name_, sim::command_type_name(result.type), world_->tick(),
            sim::error_message(result.error));
      }
      continue;
    }
    if (!scene_has_owners_) continue;
    if (result.type == sim::CommandType::spawn) {
      sim::BodyView view;
      if (world_->get_body(result.body, &view) != sim::Error::none) continue;
      if (view.owner_player >= 1 && view.owner_player <= owned_bodies_.size() &&
          view.type == sim::BodyType::dynamic) {
        owned_bodies_[view.owner_player - 1].push_back(result.body);
        spawn_pending_[view.owner_player - 1] = 0;
      }
    } else if (result.type == sim::CommandType::destroy) {
      for (auto& owned : owned_bodies_) {
        owned.erase(std::remove(owned.begin(), owned.end(), result.body), owned.end());
      }
    }
  }
}

schema::SharedFrame Room::snapshot_frame() {
  if (cached_snapshot_ != nullptr && cached_snapshot_tick_ == world_->tick()) {
    return cached_snapshot_;
  }
  size_t written = 0;
  const sim::Error e = world_->save_snapshot(snapshot_buffer_, &written);
  if (e != sim::Error::none) {
    // Cannot happen: the buffer holds max_snapshot_size(). Send an empty state rather than stop.
    spdlog::error("room {}: save_snapshot failed: {}", name_, sim::error_message(e));
    written = 0;
  }
  schema::Snapshot snapshot;
  snapshot.tick = world_->tick();
  snapshot.state.assign(snapshot_buffer_.begin(),
                        snapshot_buffer_.begin() + static_cast<std::ptrdiff_t>(written));
  snapshot.state_hash = world_->state_hash();
  cached_snapshot_ = schema::encode_shared_frame(snapshot);
  cached_snapshot_tick_ = world_->tick();
  return cached_snapshot_;
}

// ---- members -------------------------------------------------------------------------------

schema::ErrorCode Room::join(const std::shared_ptr<Session>& session, const schema::Hello& hello,
                             uint16_t protocol_version, std::string* reason, uint32_t player) {
  if (stopped_) {
    *reason = fmt::format("room {} is closing", name_);
    return schema::ErrorCode::server_shutdown;
  }
  const ServerConfig& config = core_.config;
  const bool thin = hello.mode == schema::ClientMode::thin;
  Member* member = nullptr;
  uint32_t player_id = 0;
  if (thin) {
    for (Member& m : spectators_) {
      if (m.session == nullptr) {
        member = &m;
        break;
      }
    }
    if (member == nullptr) {
      *reason = fmt::format("room {} has all {} spectator places taken", name_, spectators_.size());
      return schema::ErrorCode::room_full;
    }
  } else if (player != 0) {
    if (player > players_.size() || players_[player - 1].session != nullptr) {
      *reason = fmt::format("room {}: the token's player {} place is taken or does not exist",
                            name_, player);
      return schema::ErrorCode::room_full;
    }
    member = &players_[player - 1];
    player_id = player;
  } else {
    for (size_t i = 0; i < players_.size(); ++i) {
      if (players_[i].session == nullptr) {
        member = &players_[i];
        player_id = static_cast<uint32_t>(i + 1);
        break;
      }
    }
    if (member == nullptr) {
      *reason = fmt::format("room {} is full ({} players)", name_, players_.size());
      return schema::ErrorCode::room_full;
    }
  }
  if (!thin) input_window_->claim(player_id, session->player_name());
  *member = Member{};
  member->session = session;
  uint16_t granted_rate_hz = 0;
  if (thin) {
    // Whole ticks between snapshots, so the granted rate is at most the one asked for.
    uint32_t wanted =
        hello.snapshot_rate_hz != 0 ? hello.snapshot_rate_hz : config.default_snapshot_rate_hz;
    wanted =
        std::clamp<uint32_t>(wanted, 1, std::min(config.max_snapshot_rate_hz, config.tick_rate_hz));
    member->snapshot_interval_ticks = (config.tick_rate_hz + wanted - 1) / wanted;
    member->next_snapshot_tick = world_->tick() + member->snapshot_interval_ticks;
    granted_rate_hz = static_cast<uint16_t>(
        std::max<uint32_t>(1, config.tick_rate_hz / member->snapshot_interval_ticks));
  }
  if (player_id != 0 && spawns_players_) {
    // The player's body: taken over from a departed player of the same id still in its leave
    // grace, or spawned by the next step (its TickFrame lists the spawn, owner = player_id).
    const size_t p = player_id - 1;
    const bool has_bodies = !owned_bodies_[p].empty() || spawn_pending_[p] != 0;
    leave_destroy_tick_[p] = 0;
    if (!has_bodies) {
      const sim::Scene& scene = scene_->scene;
      const sim::SpawnPoint& point = scene.spawn_points[p % scene.spawn_points.size()];
      sim::Command spawn;
      spawn.type = sim::CommandType::spawn;
      spawn.template_index = static_cast<uint32_t>(scene.player_template);
      spawn.position = point.position;
      spawn.orientation = point.orientation;
      spawn.owner_player = player_id;
      if (push_command(spawn, "join")) {
        spawn_pending_[p] = 1;
        join_spawn_sequence_[p] = next_command_sequence_ - 1;
      }
    }
  }
  if (player_id != 0) {
    membership_changes_.push_back(MembershipChange{true, player_id, session->player_name()});
  }
  session->set_room(shared_from_this(), player_id);
  ++client_count_;
  ++clients_joined_;
  clients_peak_ = std::max(clients_peak_, client_count_);
  grace_timer_.cancel();
  if (!ticking_) start_ticking();

  const SchedulePosition position = clock_.position(Clock::now());
  schema::Welcome welcome;
  welcome.protocol_version = protocol_version;
  welcome.player_id = player_id;
  welcome.tick_rate_hz = static_cast<uint16_t>(config.tick_rate_hz);
  welcome.input_delay_ticks = static_cast<uint16_t>(config.input_delay_ticks);
  welcome.scene = scene_->scene.name;
  welcome.world_def_fingerprint = scene_->world_def_fingerprint;
  welcome.world_def = world_->def();
  welcome.current_tick = position.tick;
  welcome.ns_into_tick = static_cast<uint64_t>(std::max<int64_t>(0, position.since_due.count()));
  if (player_id != 0) welcome.owned_bodies = owned_bodies_[player_id - 1];
  welcome.snapshot_rate_hz = granted_rate_hz;
  welcome.snapshot_interval_ticks = member->snapshot_interval_ticks;
  welcome.input_window_ticks = input_window_->window_ticks();
  welcome.schedule_moved_ns = static_cast<uint64_t>(clock_.counters().slipped.count());
  welcome.level_digest = scene_->level_digest;
  if (scene_->level_in_welcome) {
    welcome.level_carried = true;
    welcome.level_meshes = scene_->scene.meshes;
    welcome.level_heightfields = scene_->scene.heightfields;
  }
  spdlog::info("room {}: '{}' joined as {} {} from {} (tick {}, protocol {})", name_,
               session->player_name(), thin ? "thin spectator" : "player", player_id,
               session->remote(), world_->tick(), protocol_version);
  // Welcome, then the state of the current tick; every TickFrame after it follows.
  if (session->send(schema::encode_shared_frame(welcome)) && session->send(snapshot_frame())) {
    ++snapshots_sent_;
  }
  publish_stats(true);
  return schema::ErrorCode::none;
}

void Room::leave(Session& session, const std::string& reason) {
  Member* member = find_member(session);
  if (member == nullptr) return;
  auto self = shared_from_this();  // the session may hold the last reference
  ClientSummary summary = session.summary();
  summary.connected = false;
  summary.end_reason = reason;
  departed_bytes_in_ += summary.bytes_in;
  departed_bytes_out_ += summary.bytes_out;
  if (departed_.size() == kMaxDeparted) departed_.erase(departed_.begin());
  departed_.push_back(std::move(summary));
  member->session.reset();
  --client_count_;
  if (session.player_id() != 0) {
    membership_changes_.push_back(MembershipChange{false, session.player_id(), {}});
  }
  if (spawns_players_ && session.player_id() >= 1 && session.player_id() <= players_.size()) {
    // Its bodies stay for the leave grace (a reconnect with the same id takes them over).
    leave_destroy_tick_[session.player_id() - 1] = world_->tick() + 1 + leave_grace_ticks_;
  }
  spdlog::info("room {}: player {} '{}' left at tick {}: {}", name_, session.player_id(),
               session.player_name(), world_->tick(), reason);
  session.clear_room();
  if (client_count_ == 0 && !stopped_) start_grace_timer();
  publish_stats(true);
}

void Room::start_grace_timer() {
  grace_timer_.expires_after(core_.config.empty_room_grace);
  grace_timer_.async_wait([self = shared_from_this()](std::error_code ec) {
    if (ec || self->stopped_ || self->client_count_ > 0) return;
    // A join on its way keeps the room for another grace period (if that member stays, the
    // room is not empty then; if it was refused, the room closes then).
    if (!self->begin_close()) {
      self->start_grace_timer();
      return;
    }
    self->stop();
    // The control thread forgets it (inline when that is this thread).
    std::function<void()> report = [self, summary = self->stats()]() mutable {
      asio::dispatch(self->core_.io, [self, summary = std::move(summary)]() mutable {
        self->core_.room_closed(self.get(), std::move(summary));
      });
    };
    if (self->core_.room_close_hook) {
      self->core_.room_close_hook(self->name_, std::move(report));
    } else {
      report();
    }
  });
}

bool Room::reserve_join() {
  uint32_t seen = joins_on_the_way_.load(std::memory_order_acquire);
  do {
    if (seen == kClosing) return false;
  } while (!joins_on_the_way_.compare_exchange_weak(seen, seen + 1, std::memory_order_acq_rel));
  return true;
}

void Room::release_join() {
  joins_on_the_way_.fetch_sub(1, std::memory_order_acq_rel);
}

bool Room::begin_close() {
  uint32_t none = 0;
  return joins_on_the_way_.compare_exchange_strong(none, kClosing, std::memory_order_acq_rel);
}

// ---- inputs and requests -------------------------------------------------------------------

std::string Room::check_input(uint32_t player_id, const sim::Input& input) const {
  if (input.player != player_id) {
    return fmt::format("an input names player {}, but this is player {}", input.player, player_id);
  }
  sim::BodyView view;
  if (world_->get_body(input.body, &view) != sim::Error::none) {
    return fmt::format("body {}:{} does not exist", input.body.index1, input.body.generation);
  }
  if (view.type != sim::BodyType::dynamic) {
    return fmt::format("body {}:{} is not dynamic", input.body.index1, input.body.generation);
  }
  if (scene_has_owners_ && view.owner_player != player_id) {
    return fmt::format("body {}:{} is not owned by player {} (owner: {})", input.body.index1,
                       input.body.generation, player_id, view.owner_player);
  }
  return {};
}

void Room::on_input(Session& session, const schema::InputFrame& frame) {
  if (find_member(session) == nullptr) return;
  const uint32_t player = session.player_id();
  const uint64_t count = frame.inputs.size();
  if (player == 0) {
    inputs_rejected_ += count;
    session.input_error(schema::ErrorCode::input_rejected,
                        "thin clients (spectators) cannot send inputs");
    return;
  }
  const InputOffer offer = input_window_->offer(
      player, frame, world_->tick() + 1, clock_.backlog_ticks(Clock::now()),
      [this, player](const sim::Input& input) { return check_input(player, input); });
  if (offer.error != schema::ErrorCode::none) session.input_error(offer.error, offer.reason);
}

void Room::on_game_message(Session& session, const schema::GameMessage& message) {
  if (find_member(session) == nullptr) return;
  std::string reason;
  const GameMessageVerdict verdict =
      game_messages_->offer(session.player_id(), world_->tick(), message.data, &reason);
  switch (verdict) {
    case GameMessageVerdict::accepted:
      return;
    case GameMessageVerdict::empty:
    case GameMessageVerdict::oversize:
      ++game_messages_oversize_;
      break;
    case GameMessageVerdict::over_rate:
      ++game_messages_over_rate_;
      break;
    case GameMessageVerdict::bad_player:
      ++game_messages_other_;
      break;
  }
  session.input_error(schema::ErrorCode::message_rejected, reason);
}

void Room::on_resync_request(Session& session) {
  // Served after the next step, so a flood of requests costs one snapshot per tick at most.
  if (Member* m = find_member(session)) m->resync_pending = true;
}

void Room::on_desync_report(Session& session, const schema::DesyncReport& report) {
  Member* member = find_member(session);
  if (member == nullptr) return;
  ++desync_reports_;
  bump(core_.desync_reports);
  if (!member->desync_logged) {
    member->desync_logged = true;
    spdlog::warn(
        "room {}: player {} '{}' reports a desync at tick {}: client hash {:016x}, "
        "server hash {:016x} (logged once per connection)",
        name_, session.player_id(), session.player_name(), report.tick, report.client_hash,
        report.server_hash);
  }
  replays_->on_desync_report(
      *world_, report, fmt::format("player {} '{}'", session.player_id(), session.player_name()),
      Clock::now());
  // The hook lets the embedding application (and tests) see every report.
  if (core_.desync_hook) {
    DesyncEvent event;
    event.room = name_;
    event.player_id = session.player_id();
    event.player_name = session.player_name();
    event.report = report;
    event.room_tick = world_->tick();
    core_.desync_hook(event);
  }
}

schema::Pong Room::make_pong(uint64_t client_time_ns) const {
  const SchedulePosition position = clock_.position(Clock::now());
  schema::Pong pong;
  pong.client_time_ns = client_time_ns;
  pong.server_tick = position.tick;
  pong.ns_into_tick = static_cast<uint64_t>(std::max<int64_t>(0, position.since_due.count()));
  pong.schedule_moved_ns = static_cast<uint64_t>(clock_.counters().slipped.count());
  return pong;
}

std::string Room::write_shutdown_replay() {
  return replays_->write_window("shutdown", *world_);
}

// ---- stats ---------------------------------------------------------------------------------

void Room::publish_stats(bool force) {
  const Clock::time_point now = Clock::now();
  if (!force && now - last_published_ < kPublishInterval) return;
  last_published_ = now;
  RoomStats fresh = stats();
  std::lock_guard<std::mutex> lock(published_mutex_);
  std::swap(published_, fresh);  // the old copy is freed outside the lock
}

RoomStats Room::published_stats() const {
  std::lock_guard<std::mutex> lock(published_mutex_);
  return published_;
}

RoomStats Room::stats() const {
  RoomStats s;
  s.name = name_;
  s.scene = scene_->scene.name;
  s.thread = static_cast<uint32_t>(worker_);
  s.open = !stopped_;
  s.tick = world_->tick();
  const TickClockCounters& clock = clock_.counters();
  s.late_ticks = clock.late_ticks;
  s.capped_wakes = clock.capped_wakes;
  s.schedule_slips = clock.slips;
  s.schedule_slipped = clock.slipped;
  s.lateness_p50 = clock_.lateness().quantile(0.50);
  s.lateness_p99 = clock_.lateness().quantile(0.99);
  s.lateness_max = clock.max_lateness;
  s.lateness = clock_.lateness();
  s.step_time_max = step_time_max_;
  s.step_time_total_ns = step_time_total_ns_;
  s.step_cpu_total_ns = step_cpu_total_ns_;
  const InputWindowCounters& window = input_window_->counters();
  s.inputs_accepted = inputs_accepted_;
  s.inputs_rejected = inputs_rejected_ + window.rejected;
  s.inputs_late = window.late;
  s.inputs_late_dropped = window.late_dropped;
  s.inputs_duplicate = window.duplicate;
  s.inputs_behind_schedule = window.behind_schedule;
  s.bytes_in = departed_bytes_in_;
  s.bytes_out = departed_bytes_out_;
  s.clients = client_count_;
  s.clients_peak = clients_peak_;
  s.clients_joined = clients_joined_;
  s.snapshots_sent = snapshots_sent_;
  s.desync_reports = desync_reports_;
  s.protocol_errors = protocol_errors_;
  s.input_errors = input_errors_;
  s.slow_consumers = slow_consumers_;
  s.commands_applied = commands_applied_;
  s.commands_refused = commands_refused_;
  s.commands_failed = commands_failed_;
  s.game_messages_delivered = game_messages_delivered_;
  s.game_messages_oversize = game_messages_oversize_;
  s.game_messages_over_rate = game_messages_over_rate_;
  s.game_messages_other = game_messages_other_;
  s.client_list = departed_;
  auto add_live = [&s](const Member& m) {
    if (m.session == nullptr) return;
    ClientSummary c = m.session->summary();
    s.bytes_in += c.bytes_in;
    s.bytes_out += c.bytes_out;
    s.client_list.push_back(std::move(c));
  };
  for (const Member& m : players_)
    add_live(m);
  for (const Member& m : spectators_)
    add_live(m);
  return s;
}

}  // namespace lockstep::server

// A room: one sim::World stepped on a fixed-rate schedule, its members, and the input window.
//
// Tick numbering (docs/server.md): the world's tick counts its steps. TickFrame{t} carries the
// inputs applied by the step that made tick t and the state hash of tick t; a Snapshot{t} is the
// state of tick t; an input stamped target_tick = t is applied by the step that makes tick t.
// Tick t is due at start + floor(t·1e9/rate) (TickClock); tick 0 is the scene as built, at
// room creation.
//
// Inputs wait in the InputWindow (input_window.h: the window policy, repeats, and a slot per
// tick ahead with all its capacity taken at creation). Per step: the tick's inputs are queued into
// the world in arrival order (the world keeps them in its total input order and refuses bad ones),
// the accepted ones are sorted the same way for the TickFrame, the world steps, and one TickFrame
// is encoded and shared by every lockstep member.
//
// Commands (spawns, destroys, body moves, game state, game events) are issued by the room itself
// (a joining player's body, a departed player's bodies after the leave grace) and by its
// RoomRules at the points of the tick room_rules.h lists; they
// wait in pending_commands_ (at most the WorldDef's max_commands_per_tick) and go into the
// world with the next step's inputs (World::step(TickInput)), listed in its TickFrame and
// recorded like inputs.
//
// Replays (room_replays.h): every room keeps a window of its last replay_window_seconds, fed
// after each step, written on a DesyncReport (rate-limited) or at shutdown; with record_matches
// the whole match is also recorded.
//
// Closing: a room left empty for empty_room_grace closes (stops; the control thread is told and
// forgets it). A Hello the control thread sends here reserves a join first (reserve_join), and
// the grace never closes a room with a join on its way; a room already closing refuses the
// reservation, and the control thread sets it aside and makes a new room of that name. So a
// Hello never meets a room that closed under it. A grace that runs out while a join is on its
// way starts again.
//
// Threads: a room lives on one worker (ServerCore::workers) for its whole life: its timers,
// its step, its members' sessions and its replay window are touched only there, with no lock.
// The control thread reads it only through published_stats(): the room copies its RoomStats
// under its own mutex a few times a second (and at every join, leave and stop); that mutex is
// taken by the tick thread at most once a tick, uncontended but for a stats reader. Replay
// dumps and match recordings are encoded here and written by ServerCore::file_writer.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <asio/awaitable.hpp>
#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>

#include "game_messages.h"
#include "input_window.h"
#include "lockstep/schema/messages.h"
#include "lockstep/server/room_rules.h"
#include "lockstep/server/server.h"
#include "lockstep/server/tick_clock.h"
#include "lockstep/sim/scene.h"
#include "lockstep/sim/world.h"
#include "room_replays.h"

namespace lockstep::server {

struct ServerCore;
struct ServedScene;
class Session;

class Room final : public std::enable_shared_from_this<Room> {
 public:
  using Clock = std::chrono::steady_clock;

  /// Builds the world from `scene` (one the server serves) for worker `worker`; null (and
  /// *error) when the world refuses it. On the control thread.
  static std::shared_ptr<Room> create(ServerCore& core, std::string name,
                                      std::shared_ptr<const ServedScene> scene, size_t worker,
                                      std::string* error);
  ~Room();

  /// Readies the room on its worker (the grace timer that closes it if its first join fails);
  /// the first join starts its clock and tick loop. From the control thread.
  void start();
  /// Stops ticking for good (shutdown or close) and publishes the match recording; the members
  /// are not touched.
  void stop();
  /// Hands the replay window to the file writer (graceful shutdown); "" when there is no
  /// window or it could not be queued (logged).
  std::string write_shutdown_replay();
  /// Graceful shutdown, on the room's thread: the shutdown dump (when `dump`), stop, publish.
  void shut_down(bool dump);

  /// The worker it lives on, and that worker's io_context.
  size_t worker() const { return worker_; }
  asio::io_context& io() const { return io_; }
  /// True on the room's own thread (then stats() may be called).
  bool on_own_thread() const { return io_.get_executor().running_in_this_thread(); }
  /// The last RoomStats the room published; any thread.
  RoomStats published_stats() const;
  /// Copies stats() for published_stats(); `force` = now, else at most every kPublishInterval.
  /// On the room's thread.
  void publish_stats(bool force);

  /// Joins on their way (closing, see the top of this file). The control thread reserves one
  /// for every Hello it sends here; false once the room has begun to close (then it takes no
  /// join, and the caller makes a new room of the name).
  bool reserve_join();
  /// Any thread, once the reserved join was made or given up.
  void release_join();

  /// Adds a member and sends Welcome + Snapshot; on refusal returns the error code (the session
  /// sends the fatal Error).
  /// `player` ≠ 0: the player id a join token admits as (refused with room_full when taken).
  schema::ErrorCode join(const std::shared_ptr<Session>& session, const schema::Hello& hello,
                         uint16_t protocol_version, std::string* reason, uint32_t player = 0);
  /// Removes a member (idempotent); records its summary.
  void leave(Session& session, const std::string& reason);

  void on_input(Session& session, const schema::InputFrame& frame);
  /// A client's game message: checked (size, rate) and held for the rules at the next tick, or
  /// refused with a message_rejected Error (the session stays open).
  void on_game_message(Session& session, const schema::GameMessage& message);
  void on_resync_request(Session& session);
  void on_desync_report(Session& session, const schema::DesyncReport& report);
  schema::Pong make_pong(uint64_t client_time_ns) const;

  /// Queues a command for the next step (its sequence assigned here); false, logged once and
  /// counted when the tick's command capacity is full.
  bool push_command(sim::Command command, const char* issuer);

  void count_error(bool fatal) { ++(fatal ? protocol_errors_ : input_errors_); }
  void count_slow_consumer() { ++slow_consumers_; }

  const std::string& name() const { return name_; }
  /// The name of the scene the room runs (as Hellos ask for it and Welcomes give it).
  const std::string& scene_name() const;
  bool stopped() const { return stopped_; }
  uint32_t client_count() const { return client_count_; }
  uint64_t tick() const { return world_->tick(); }
  RoomStats stats() const;

 private:
  struct Member {
    std::shared_ptr<Session> session;      // null = free slot
    uint32_t snapshot_interval_ticks = 0;  // thin members
    uint64_t next_snapshot_tick = 0;
    bool resync_pending = false;
    bool desync_logged = false;
    uint32_t world_rejects = 0;  // inputs the world refused in the current step
    sim::Error last_world_reject = sim::Error::none;
  };

  Room(ServerCore& core, std::string name, std::shared_ptr<const ServedScene> scene, size_t worker);
  void start_ticking();
  asio::awaitable<void> tick_loop();
  void run_tick();
  /// The Snapshot frame of the current tick (encoded once per tick, shared).
  schema::SharedFrame snapshot_frame();
  Member* find_member(const Session& session);
  /// Members' slots: players_[p − 1] is player p; spectators_ hold thin clients.
  template <class Fn>
  void for_each_member(Fn&& fn);
  void start_grace_timer();
  /// The room's thread, its grace run out: true (closing from now on) when no join is on its way.
  bool begin_close();
  /// Checks one input; empty when it may be buffered, else why not.
  std::string check_input(uint32_t player_id, const sim::Input& input) const;
  /// Adds the due leave destroys to the pending commands, which the step then takes.
  void queue_pending_commands(uint64_t tick);
  /// After the step: the pending commands the world accepted into applied_commands_ (refusals
  /// counted and logged), then the pending list emptied.
  void take_applied_commands(uint64_t tick);
  /// After the step: owned bodies follow the spawns and destroys; failures are counted.
  void apply_command_results();
  /// The rules' hooks (room_rules.h gives their order in the tick): before the step, and after
  /// it (leaves and completed joins, then after_step).
  void run_rules_before_step();
  void run_rules_after_step();

  ServerCore& core_;
  const size_t worker_;
  asio::io_context& io_;
  std::string name_;
  std::shared_ptr<const ServedScene> scene_;
  std::unique_ptr<sim::World> world_;
  TickClock clock_;
  asio::steady_timer tick_timer_;
  asio::steady_timer grace_timer_;
  bool stopped_ = false;
  // Joins reserved and not yet released, or kClosing once the grace has closed the room. Any
  // thread (compare-exchange: a reservation and the close cannot both succeed).
  static constexpr uint32_t kClosing = UINT32_MAX;
  std::atomic<uint32_t> joins_on_the_way_{0};
  bool scene_has_owners_ = false;
  bool overflow_logged_ = false;
  bool ticking_ = false;  // the clock and the tick loop run from the first join on

  std::vector<Member> players_;
  std::vector<Member> spectators_;
  uint32_t client_count_ = 0;
  std::vector<std::vector<sim::BodyId>> owned_bodies_;  // [player − 1]

  // Inputs for the ticks ahead (input_window.h) and this step's accepted ones.
  std::unique_ptr<InputWindow> input_window_;
  std::vector<sim::Input> applied_;
  // Clients' game messages waiting for the rules (game_messages.h).
  std::unique_ptr<GameMessageInbox> game_messages_;
  uint64_t game_messages_delivered_ = 0, game_messages_oversize_ = 0, game_messages_over_rate_ = 0,
           game_messages_other_ = 0;

  // Commands (see the top of this file) and players' bodies.
  std::unique_ptr<RoomRules> rules_;
  RoomInfo rules_info_;         // what the rules know of the room (players as of their hooks)
  bool rules_started_ = false;  // on_room_start has run
  bool rules_ended_ = false;    // on_match_end has run
  // Joins and leaves in arrival order, handed to the rules after the next step; a join waits
  // (with everything behind it) until its player's body spawn has been applied.
  struct MembershipChange {
    bool join = false;
    uint32_t player = 0;
    std::string name;
  };
  std::vector<MembershipChange> membership_changes_;
  std::vector<uint32_t> join_spawn_sequence_;   // [player − 1]: its pending spawn's sequence
  std::vector<sim::Command> pending_commands_;  // for the next step
  std::vector<sim::Command> applied_commands_;  // this step's, in command_less order
  std::vector<sim::Error> command_errors_;      // what the world said to each pending command
  std::vector<sim::Error> world_input_errors_;  // and to each input of the tick's slot
  uint32_t next_command_sequence_ = 1;
  bool spawns_players_ = false;  // the scene has a player template
  uint64_t leave_grace_ticks_ = 0;
  std::vector<uint64_t> leave_destroy_tick_;  // [player − 1]: destroy its bodies then (0: no)
  std::vector<uint8_t> spawn_pending_;        // [player − 1]: its body's spawn is pending
  uint64_t commands_applied_ = 0, commands_refused_ = 0, commands_failed_ = 0;
  bool command_refusal_logged_ = false, command_failure_logged_ = false;

  std::unique_ptr<RoomReplays> replays_;  // room_replays.h

  std::vector<uint8_t> snapshot_buffer_;  // max_snapshot_size bytes
  schema::SharedFrame cached_snapshot_;
  uint64_t cached_snapshot_tick_ = UINT64_MAX;

  // Counters.
  uint64_t inputs_accepted_ = 0;
  uint64_t inputs_rejected_ = 0;  // by the world or from spectators; the window counts its own
  uint64_t snapshots_sent_ = 0, desync_reports_ = 0;
  uint64_t protocol_errors_ = 0, input_errors_ = 0, slow_consumers_ = 0;
  uint64_t clients_joined_ = 0;
  uint32_t clients_peak_ = 0;
  uint64_t departed_bytes_in_ = 0, departed_bytes_out_ = 0;
  std::chrono::nanoseconds step_time_max_{0};
  uint64_t step_time_total_ns_ = 0;
  uint64_t step_cpu_total_ns_ = 0;       // RoomStats::step_cpu_total_ns
  std::vector<ClientSummary> departed_;  // the last kMaxDeparted that left

  // What other threads read (see the top of this file).
  mutable std::mutex published_mutex_;
  RoomStats published_;  // under published_mutex_
  Clock::time_point last_published_{};
};

}  // namespace lockstep::server

// lockstep-bot: a lockstep client that joins a room, pushes its bodies around with seeded
// pseudo-random inputs every tick, verifies every tick's hash, and prints one summary line:
//
//   ticks_verified=N desyncs=N rtt_ms_p50=… bytes_in_per_s=… bytes_out_per_s=… errors=N …
//
// It exits 0 only when it verified at least one tick and saw no desync, error or unexpected
// disconnect. `lockstep-bot --port 7777 --seconds 10` joins room "default" on 127.0.0.1;
// `--scene-file arena.scene` plays a scene the server serves from --scene-dir (asked for by the
// file's stem, the local world built from the same file), `--scene NAME` asks for one by name.
//
// `--game koth` plays king of the hill the same way, charging only opponents on the hill (within
// 2 m of the platform's centre) and otherwise heading for the centre.
//
// `--game sumo` plays the sumo example game instead of the scene's input script. Every tick it
// steers its ball (a target velocity input) towards the nearest opponent still on the platform,
// or to the platform's centre when there is none, and never over the edge itself. It charges at a
// speed between 3 and 10 m/s drawn from the seed and backs off for 2/3 s of every 2 s (the phase
// drawn from the seed too), so clumps break up and the faster ball pushes the slower one back;
// touching an opponent from the centre's side, it pushes straight outwards. The summary line
// gains `score=` (its own) and `scores=` (every player in its world view).
//
// In a scene whose script gives this player nothing to push (its bodies are spawned by the
// server when it joins, a `player` line, or nobody owns anything), `--game script` runs the same
// seeded script over the bodies the server gives it (Welcome, then the spawns of later ticks). A
// player that sent no input in the whole run fails (`error="sent no inputs ..."`, exit 1): a bot
// that plays nothing must not pass for one that played. The summary line always ends its fixed
// part with `state_tick=T state=...`: the game state (scores, then every field of the scene's
// `state` lines) as the verified world had it at tick T (`--state-tick T`, else the last tick),
// so bots of one room can be compared at the same tick.
//
// `--replay-dir DIR` keeps the SDK's replay window (what this client simulated: the inputs as
// applied, its own hashes beside the server's, keyframes) and writes it to DIR on a desync, so
// `lockstep-replay diff SERVER_FILE CLIENT_FILE` can name where the two runs part. A client whose
// hashes diverge again soon after every resync gives up after a few (ClientOptions::
// max_recurring_desyncs) and exits 1 with the diagnosis in the summary line's `error="…"`.
//
// `--predict` runs a predicted world ahead of the confirmed one (client_sdk prediction mode,
// with `--input-delay` and `--max-prediction`); `--latency-ms L --jitter-ms J` holds back what
// the bot receives and the inputs it sends (L/2 each way, ±J, seeded by --seed) inside the SDK,
// so rollback shows up on loopback. The summary line then gains `rollbacks=`,
// `max_resimulated=`, `ticks_predicted=` and `max_rollback_us=`. `--sync-test K` re-simulates
// the last K ticks after every confirmed one and counts failures as errors.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lockstep/client_sdk/client.h"
#include "lockstep/replays/replay_reader.h"
#include "lockstep/sim/query.h"
#include "lockstep/sim/scene.h"
#include "lockstep/sim/testing.h"

namespace {

using namespace lockstep;
using Clock = std::chrono::steady_clock;

std::atomic<bool> g_stop{false};

void on_signal(int) {
  g_stop = true;
}

double per_second(uint64_t count, double seconds) {
  return seconds > 0 ? static_cast<double>(count) / seconds : 0.0;
}

double to_ms(std::chrono::nanoseconds d) {
  return static_cast<double>(d.count()) / 1e6;
}

// ---- sumo ---------------------------------------------------------------------------------------

uint64_t split_mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// A value in [lo, hi) drawn from `bits`.
float unit_range(uint64_t bits, float lo, float hi) {
  return lo + (hi - lo) * static_cast<float>(bits >> 40) / static_cast<float>(1ull << 24);
}

bool is_ground(const sim::BodyView& v) {
  return v.type == sim::BodyType::static_body && !v.shape.sensor &&
         v.shape.type != sim::ShapeType::plane;
}

/// True when solid static ground (not a sensor) lies within `depth` m straight below `from`.
bool ground_below(const sim::World& world, sim::Vec3 from, float depth, sim::BodyId exclude) {
  std::array<sim::RayHit, 8> hits{};
  sim::QueryFilter filter;
  filter.category_bits = 0xffffffffu;
  filter.exclude = exclude;
  const sim::QueryResult r = sim::ray_cast_all(world, from, sim::Vec3{0, -depth, 0}, filter, hits);
  if (!r.ok()) return false;
  for (uint32_t i = 0; i < r.count; ++i) {
    sim::BodyView v;
    if (world.get_body(hits[i].body, &v) == sim::Error::none && is_ground(v)) return true;
  }
  return false;
}

/// The sumo player: deterministic given its seed and the verified world it reads.
class SumoPlayer final {
 public:
  /// `hill_radius_m` > 0 plays king of the hill: only opponents within that distance of the
  /// platform's centre are charged, and with none there the ball heads for the centre.
  explicit SumoPlayer(uint64_t seed, float hill_radius_m = 0)
      : hill_radius_m_(hill_radius_m),
        seed_(seed),
        speed_mps_(unit_range(split_mix64(seed), 3.0f, 10.0f)),
        phase_ticks_(split_mix64(seed + 1) % 120) {}

  /// Inputs for `player`'s balls after the tick `world` shows: the dynamic bodies it owns (the
  /// rules spawn them after the Welcome, so the world lists them, not the Welcome).
  void steer(const sim::World& world, uint32_t player, std::vector<sim::Input>* out) {
    out->clear();
    if (!have_centre_) find_centre(world);
    bodies_.resize(world.body_count());
    bodies_.resize(world.list_bodies(bodies_));
    const float limit = world.def().max_input_linear_velocity;
    for (sim::BodyId mine : bodies_) {
      sim::BodyView me;
      if (world.get_body(mine, &me) != sim::Error::none || me.type != sim::BodyType::dynamic ||
          me.owner_player != player || player == 0)
        continue;
      // Off the platform (falling): no input, gravity decides; the rules respawn us.
      if (!ground_below(world, me.position, me.shape.radius + 0.25f, mine)) continue;
      // The nearest opponent that still stands on the platform (ties: the lower body slot).
      float best = 0;
      bool found = false;
      sim::Vec3 target = centre_;
      for (sim::BodyId id : bodies_) {
        sim::BodyView other;
        if (world.get_body(id, &other) != sim::Error::none) continue;
        if (other.type != sim::BodyType::dynamic || other.owner_player == 0 ||
            other.owner_player == player)
          continue;
        if (!ground_below(world, other.position, other.shape.radius + 0.25f, id)) continue;
        if (hill_radius_m_ > 0) {
          const float hx = other.position.x - centre_.x, hz = other.position.z - centre_.z;
          if (hx * hx + hz * hz > hill_radius_m_ * hill_radius_m_) continue;
        }
        const float dx = other.position.x - me.position.x, dz = other.position.z - me.position.z;
        const float d2 = dx * dx + dz * dz;
        if (!found || d2 < best) {
          best = d2;
          target = other.position;
          found = true;
        }
      }
      float dx = target.x - me.position.x, dz = target.z - me.position.z;
      float length = std::sqrt(dx * dx + dz * dz);
      // Touching it from the centre's side: push it straight out, away from the centre.
      if (found && length < 2.2f * me.shape.radius) {
        const float ox = target.x - centre_.x, oz = target.z - centre_.z;
        const float mx = me.position.x - centre_.x, mz = me.position.z - centre_.z;
        const float out_len = std::sqrt(ox * ox + oz * oz);
        if (out_len > 1e-3f && mx * mx + mz * mz < ox * ox + oz * oz) {
          dx = ox;
          dz = oz;
          length = out_len;
        }
      }
      // Charge, then back off: 40 ticks of every 120 (2 s; the phase drawn from the seed) spent
      // retreating from the opponent at 3 m/s, so a clump of balls breaks up and the next charge
      // meets an opponent at another speed (the faster ball pushes the slower one back).
      // King of the hill: the back-off holds with nobody to charge too (away from the hill), so
      // the crowd on it thins out by turns and someone can be alone there.
      const bool backing_off =
          (found || hill_radius_m_ > 0) && (world.tick() + phase_ticks_) % 120 < 40;
      float speed = backing_off ? 3.0f : speed_mps_;
      if (!found && !backing_off) speed = std::min(speed, 2.0f * length);  // settle at the centre
      if (length > 1e-4f) {
        dx /= length;
        dz /= length;
        if (found) {
          // A seeded sideways lean, changed every half second, so bots do not all meet head on.
          const float lean = unit_range(split_mix64(seed_ ^ (world.tick() / 30)), -0.2f, 0.2f);
          const float lx = dx - lean * dz, lz = dz + lean * dx;
          length = std::sqrt(lx * lx + lz * lz);
          dx = lx / length;
          dz = lz / length;
        }
        if (backing_off) {
          dx = -dx;
          dz = -dz;
        }
        // Never drive ourselves over the edge: with no ground a little ahead, head for the centre.
        const sim::Vec3 ahead{me.position.x + dx * 1.2f * me.shape.radius, me.position.y,
                              me.position.z + dz * 1.2f * me.shape.radius};
        if (!ground_below(world, ahead, me.shape.radius + 0.25f, mine)) {
          dx = centre_.x - me.position.x;
          dz = centre_.z - me.position.z;
          length = std::sqrt(dx * dx + dz * dz);
          if (length > 1e-4f) {
            dx /= length;
            dz /= length;
          }
        }
      } else {
        dx = dz = 0;
      }
      sim::Input in;
      in.body = mine;
      in.sequence = sequence_++;
      in.flags = sim::input_sets_linear_velocity;
      in.linear_velocity[0] = to_fixed(dx * speed, limit);
      in.linear_velocity[1] = to_fixed(me.linear_velocity.y, limit);  // gravity keeps acting
      in.linear_velocity[2] = to_fixed(dz * speed, limit);
      out->push_back(in);
    }
  }

  /// "1:3,2:0": every player who has a body in the world or a score, with the score.
  static std::string scores(const sim::World& world) {
    std::string out;
    for (uint32_t p : players_of(world)) {
      if (!out.empty()) out += ',';
      out += std::to_string(p) + ":" + std::to_string(world.score(p));
    }
    return out.empty() ? "-" : out;
  }

  /// Every player who has a body in the world or a score, ascending.
  static std::vector<uint32_t> players_of(const sim::World& world) {
    std::vector<sim::BodyId> ids(world.body_count());
    ids.resize(world.list_bodies(ids));
    std::vector<uint32_t> players;
    for (sim::BodyId id : ids) {
      sim::BodyView v;
      if (world.get_body(id, &v) == sim::Error::none && v.owner_player != 0 &&
          std::find(players.begin(), players.end(), v.owner_player) == players.end())
        players.push_back(v.owner_player);
    }
    for (uint32_t p = 1; p <= sim::kMaxPlayers; ++p) {
      if (world.score(p) != 0 && std::find(players.begin(), players.end(), p) == players.end())
        players.push_back(p);
    }
    std::sort(players.begin(), players.end());
    return players;
  }

 private:
  static int32_t to_fixed(float value, float limit) {
    const float clamped = std::clamp(value, -limit, limit);
    return static_cast<int32_t>(std::lround(clamped * (1 << sim::kInputScaleLog2)));
  }

  /// The middle of the solid static bodies' bounds: where to wait when nobody is left to push.
  void find_centre(const sim::World& world) {
    std::vector<sim::BodyId> ids(world.body_count());
    ids.resize(world.list_bodies(ids));
    float lo_x = 1e30f, hi_x = -1e30f, lo_z = 1e30f, hi_z = -1e30f;
    for (sim::BodyId id : ids) {
      sim::BodyView v;
      if (world.get_body(id, &v) != sim::Error::none || !is_ground(v)) continue;
      const float r = v.shape.type == sim::ShapeType::box
                          ? std::max(v.shape.half_extents.x, v.shape.half_extents.z)
                          : v.shape.radius;
      lo_x = std::min(lo_x, v.position.x - r);
      hi_x = std::max(hi_x, v.position.x + r);
      lo_z = std::min(lo_z, v.position.z - r);
      hi_z = std::max(hi_z, v.position.z + r);
    }
    if (lo_x <= hi_x) centre_ = sim::Vec3{0.5f * (lo_x + hi_x), 0, 0.5f * (lo_z + hi_z)};
    have_centre_ = true;
  }

  float hill_radius_m_;
  uint64_t seed_;
  float speed_mps_;
  uint64_t phase_ticks_;
  uint32_t sequence_ = 0;
  bool have_centre_ = false;
  sim::Vec3 centre_{};
  std::vector<sim::BodyId> bodies_;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"lockstep-bot: joins a room, sends seeded inputs, verifies every tick"};
  std::string host = "127.0.0.1";
  uint16_t port = 7777;
  std::string room = "default";
  std::string name = "bot";
  std::string token;
  double seconds = 10;
  uint64_t seed = sim::kDefaultInputSeed;
  bool quiet = false;
  std::string scene_name;
  std::string scene_file;
  std::string game = "script";
  std::string say;
  bool predict = false;
  uint64_t state_tick = 0;
  int input_delay = -1;
  uint32_t max_prediction = 8;
  uint32_t latency_ms = 0;
  uint32_t jitter_ms = 0;
  uint32_t sync_test = 0;
  std::string replay_dir;
  std::string hash_log_path;
  app.add_option("--host", host, "server address")->capture_default_str();
  app.add_option("--port", port, "server port")->capture_default_str();
  app.add_option("--room", room, "room to join")->capture_default_str();
  app.add_option("--name", name, "player name")->capture_default_str();
  app.add_option("--token", token, "auth token sent in Hello");
  app.add_option("--seconds", seconds, "how long to play once joined")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 86400.0));
  app.add_option("--seed", seed, "seed of the input script")->capture_default_str();
  app.add_flag("--quiet", quiet, "no event log on stderr, only the summary line");
  app.add_option("--scene", scene_name, "scene to ask for (a new room runs it)");
  app.add_option("--scene-file", scene_file,
                 "scene file to build the world from; asks for its stem unless --scene is given");
  app.add_option("--game", game,
                 "script: the scene's seeded input script; sumo: push the nearest opponent off "
                 "the platform with velocity inputs; koth: the same, for the hill in the middle")
      ->capture_default_str()
      ->check(CLI::IsMember({"script", "sumo", "koth"}));
  app.add_option("--say", say,
                 "a game message for the room's rules, sent once joined (koth: ready)");
  app.add_option("--state-tick", state_tick,
                 "print the game state (state=) as the verified world has it at this tick; 0: "
                 "at the end");
  app.add_flag("--predict", predict, "predict ahead of the server and roll back on corrections");
  app.add_option("--input-delay", input_delay,
                 "input delay in ticks for our inputs (default: the server's)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--max-prediction", max_prediction, "ticks the prediction may run ahead")
      ->capture_default_str()
      ->check(CLI::Range(1, 60));
  app.add_option("--latency-ms", latency_ms, "simulated round trip added in the SDK (ms)")
      ->check(CLI::Range(0, 10000));
  app.add_option("--jitter-ms", jitter_ms, "simulated jitter each way (± ms)")
      ->check(CLI::Range(0, 10000));
  app.add_option("--sync-test", sync_test,
                 "re-simulate the last K ticks after every confirmed tick (1..64)")
      ->check(CLI::Range(0, 64));
  app.add_option("--replay-dir", replay_dir,
                 "write this client's replay window here on a desync (lockstep-replay diff)");
  app.add_option("--hash-log", hash_log_path,
                 "write `tick hash` (16 hex digits) of every verified tick to FILE");
  CLI11_PARSE(app, argc, argv);
  // Every verified tick's hash, for comparing this client with others (the browser test does).
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> hash_log(nullptr, &std::fclose);
  if (!hash_log_path.empty()) {
    hash_log.reset(std::fopen(hash_log_path.c_str(), "w"));
    if (!hash_log) {
      std::fprintf(stderr, "lockstep-bot: cannot write --hash-log %s\n", hash_log_path.c_str());
      return 2;
    }
    // Line by line: a bot stopped by a signal leaves every tick it verified in the file.
    std::setvbuf(hash_log.get(), nullptr, _IOLBF, 0);
  }

  if (!replay_dir.empty()) {
    // Found out now, not at the first desync when the replay is the one thing wanted.
    std::error_code ec;
    std::filesystem::create_directories(replay_dir, ec);
    if (ec || !std::filesystem::is_directory(replay_dir)) {
      std::fprintf(stderr, "lockstep-bot: cannot use --replay-dir %s: %s\n", replay_dir.c_str(),
                   ec ? ec.message().c_str() : "not a directory");
      return 2;
    }
  }
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);

  client_sdk::Client client;
  client_sdk::ClientOptions options;
  options.mode = client_sdk::ClientMode::lockstep;
  options.auto_resync = true;
  options.scene_name = scene_name;
  options.scene_file = scene_file;
  options.prediction = predict;
  options.max_prediction_ticks = max_prediction;
  if (input_delay >= 0) options.input_delay_ticks = static_cast<uint16_t>(input_delay);
  options.simulated_latency = std::chrono::milliseconds(latency_ms);
  options.simulated_jitter = std::chrono::milliseconds(jitter_ms);
  options.simulated_latency_seed = seed;
  options.sync_test = sync_test;
  options.replay_dir = replay_dir;
  if (!client.connect(host, port, room, name, token, options)) {
    std::fprintf(stderr, "lockstep-bot: %s\n", client.last_error().c_str());
    return 2;
  }
  client.run_thread();

  // Inputs: the scene's input script restricted to our bodies, seeded per run.
  sim::InputScript script;
  bool have_script = false;
  std::vector<sim::Input> scripted(256);
  std::vector<sim::Input> mine;
  const bool sumo = game == "sumo" || game == "koth";
  SumoPlayer sumo_player(seed, game == "koth" ? 2.0f : 0.0f);
  std::string final_scores = "-";
  std::string state_at_tick;  // game state at --state-tick ("" until then)
  std::string final_score = "-";
  uint64_t last_tick = 0;
  uint64_t disconnects = 0;
  uint64_t send_failures = 0;
  std::optional<uint64_t> last_sent_tick;
  bool said = false;  // --say was sent
  bool joined = false;
  bool finished = false;    // we closed on purpose: the disconnect that follows is expected
  std::string fatal_error;  // the first fatal error, quoted in the summary line
  Clock::time_point joined_at{};
  const Clock::time_point started = Clock::now();
  const auto join_timeout = std::chrono::seconds(15);

  auto log = [quiet](const std::string& line) {
    if (!quiet) std::fprintf(stderr, "lockstep-bot: %s\n", line.c_str());
  };

  auto handler = [&](const client_sdk::Event& event) {
    if (const auto* e = std::get_if<client_sdk::JoinedEvent>(&event)) {
      joined = true;
      joined_at = Clock::now();
      log("joined room '" + room + "' as player " + std::to_string(e->player_id) + " at tick " +
          std::to_string(e->tick) + " (" + std::to_string(e->owned_bodies.size()) +
          " bodies, scene " + e->scene + ", " + std::to_string(e->tick_rate_hz) + " Hz, delay " +
          std::to_string(e->input_delay_ticks) + " ticks)");
    } else if (const auto* s = std::get_if<client_sdk::SnapshotEvent>(&event)) {
      if (!have_script) {
        script = sim::make_input_script(s->world());
        have_script = true;
      }
      if (s->resync) log("resynced at tick " + std::to_string(s->tick));
    } else if (const auto* t = std::get_if<client_sdk::TickAppliedEvent>(&event)) {
      if (hash_log) {
        std::fprintf(hash_log.get(), "%" PRIu64 " %016" PRIx64 "\n", t->tick, t->state_hash);
      }
      if (state_tick != 0 && t->tick == state_tick) {
        state_at_tick = replays::game_state_text(t->world());
      }
      if (!have_script || finished) return;
      last_tick = t->tick;
      if (!say.empty() && !said) {
        said = true;
        if (!client.send_game_message(say)) {
          ++send_failures;
          log(client.last_error());
        }
      }
      // One input frame per server tick: after a poll that applied several ticks at once, the
      // next stamp is still the one we sent for.
      const std::optional<uint64_t> next_tick = client.next_input_tick();
      if (!next_tick || (last_sent_tick && *next_tick <= *last_sent_tick)) return;
      if (sumo) {
        sumo_player.steer(t->world(), client.player_id(), &mine);
      } else {
        const uint32_t n = sim::scripted_inputs(seed, t->tick, script, t->world(), scripted);
        mine.clear();
        for (uint32_t i = 0; i < n; ++i) {
          if (scripted[i].player == client.player_id()) mine.push_back(scripted[i]);
        }
        // Nothing scripted for us (the scene owns nothing to us: our bodies came from the server
        // when we joined, or every player may push every body): the same script over the bodies
        // the server gives us now (at most 8, chosen by the seed).
        if (mine.empty() && !client.owned_bodies().empty()) {
          const std::vector<sim::BodyId>& owned = client.owned_bodies();
          sim::InputScript given = script;
          given.bodies.clear();
          given.owner_players.clear();
          for (size_t k = 0; k < owned.size() && given.bodies.size() < 8; ++k) {
            const sim::BodyId id = owned[(k + seed) % owned.size()];
            sim::BodyView v;
            if (t->world().get_body(id, &v) != sim::Error::none || v.type != sim::BodyType::dynamic)
              continue;
            given.bodies.push_back(id);
            given.owner_players.push_back(client.player_id());
          }
          const uint32_t m = sim::scripted_inputs(seed, t->tick, given, t->world(), scripted);
          mine.assign(scripted.begin(), scripted.begin() + m);
        }
      }
      if (mine.empty()) return;
      last_sent_tick = client.send_input(mine);
      if (!last_sent_tick) ++send_failures;
    } else if (const auto* d = std::get_if<client_sdk::DesyncEvent>(&event)) {
      std::string replay;
      if (!d->replay_path.empty()) replay = "; replay written to " + d->replay_path;
      if (!d->replay_error.empty()) replay = "; replay not written: " + d->replay_error;
      log("DESYNC at tick " + std::to_string(d->tick) + ": local hash " +
          std::to_string(d->local_hash) + ", server hash " + std::to_string(d->server_hash) +
          replay);
    } else if (const auto* x = std::get_if<client_sdk::ErrorEvent>(&event)) {
      log(std::string("error") + (x->fatal ? " (fatal)" : "") + ": " + x->message);
      if (x->fatal && fatal_error.empty()) fatal_error = x->message;
    } else if (const auto* c = std::get_if<client_sdk::DisconnectedEvent>(&event)) {
      if (!finished) {
        ++disconnects;
        std::string code;
        if (c->code != schema::ErrorCode::none)
          code = schema::error_code_name(c->code) + std::string(": ");
        log("disconnected: " + code + c->reason);
      }
    }
  };

  const auto play_time =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  while (!g_stop && client.state() != client_sdk::ClientState::disconnected) {
    client.poll(std::chrono::milliseconds(5), handler);
    const Clock::time_point now = Clock::now();
    if (joined && now - joined_at >= play_time) break;
    if (!joined && now - started >= join_timeout) {
      log("no Welcome within " + std::to_string(join_timeout.count()) + " s");
      ++disconnects;
      break;
    }
  }
  const double played_s =
      joined ? std::chrono::duration<double>(Clock::now() - joined_at).count() : 0.0;
  // Take the figures before closing, so the goodbye does not count as play.
  const client_sdk::ClientStats stats = client.stats();
  const std::chrono::nanoseconds rtt_p50 = client.rtt_quantile(0.50);
  const std::chrono::nanoseconds rtt_p99 = client.rtt_quantile(0.99);
  if (state_tick == 0 && client.world() != nullptr) {
    state_at_tick = replays::game_state_text(*client.world());
  }
  if (sumo && client.world() != nullptr) {
    final_scores = SumoPlayer::scores(*client.world());
    if (client.player_id() != 0)
      final_score = std::to_string(client.world()->score(client.player_id()));
  }
  finished = true;
  client.close();
  client.poll(std::chrono::milliseconds(100), handler);

  const bool sent_nothing = client.player_id() != 0 && stats.inputs_sent == 0 && !g_stop;
  if (sent_nothing && fatal_error.empty()) {
    size_t owned = 0;
    if (const sim::World* world = client.world()) {
      std::vector<sim::BodyId> ids(world->body_count());
      ids.resize(world->list_bodies(ids));
      for (sim::BodyId id : ids) {
        sim::BodyView v;
        if (world->get_body(id, &v) == sim::Error::none && v.owner_player == client.player_id())
          ++owned;
      }
    }
    fatal_error = "sent no inputs in " + std::to_string(played_s).substr(0, 5) + " s as player " +
                  std::to_string(client.player_id()) + " (" + std::to_string(owned) +
                  " bodies owned at the end)";
    log(fatal_error);
  }
  const uint64_t errors = stats.errors + disconnects + send_failures + (sent_nothing ? 1 : 0);
  std::printf(
      "ticks_verified=%llu desyncs=%llu rtt_ms_p50=%.3f bytes_in_per_s=%.0f bytes_out_per_s=%.0f "
      "errors=%llu player=%u ticks_applied=%llu resyncs=%llu rtt_ms_p99=%.3f inputs_sent=%llu "
      "seconds=%.2f tick=%llu",
      static_cast<unsigned long long>(stats.ticks_verified),
      static_cast<unsigned long long>(stats.desyncs), to_ms(rtt_p50),
      per_second(stats.bytes_in, played_s), per_second(stats.bytes_out, played_s),
      static_cast<unsigned long long>(errors), client.player_id(),
      static_cast<unsigned long long>(stats.ticks_applied),
      static_cast<unsigned long long>(stats.resyncs), to_ms(rtt_p99),
      static_cast<unsigned long long>(stats.inputs_sent), played_s,
      static_cast<unsigned long long>(last_tick));
  if (sumo) {
    std::printf(" score=%s scores=%s", final_score.c_str(), final_scores.c_str());
  }
  std::printf(" state_tick=%llu state=%s",
              static_cast<unsigned long long>(state_tick != 0 ? state_tick : last_tick),
              state_at_tick.empty() ? "-" : state_at_tick.c_str());
  if (predict) {
    std::printf(" rollbacks=%llu max_resimulated=%llu ticks_predicted=%llu max_rollback_us=%llu",
                static_cast<unsigned long long>(stats.rollbacks),
                static_cast<unsigned long long>(stats.max_ticks_resimulated),
                static_cast<unsigned long long>(stats.ticks_predicted),
                static_cast<unsigned long long>(stats.max_rollback_cost_us));
  }
  if (sync_test > 0) {
    std::printf(" sync_test_ticks=%llu sync_test_failures=%llu",
                static_cast<unsigned long long>(stats.sync_test_ticks),
                static_cast<unsigned long long>(stats.sync_test_failures));
  }
  if (!fatal_error.empty()) {
    std::string quoted;  // one line, no inner quotes, so the summary stays one parseable line
    for (char c : fatal_error)
      quoted.push_back(c == '"' ? '\'' : (c == '\n' ? ' ' : c));
    std::printf(" error=\"%s\"", quoted.c_str());
  }
  std::printf("\n");
  std::fflush(stdout);
  const bool ok = stats.desyncs == 0 && errors == 0 && stats.ticks_verified > 0;
  return ok ? 0 : 1;
}

// lockstep-bot: a lockstep client that joins a room, pushes its bodies around with seeded
// pseudo-random inputs every tick, verifies every tick's hash, and prints one summary line:
//
//   ticks_verified=N desyncs=N rtt_ms_p50=… bytes_in_per_s=… bytes_out_per_s=… errors=N …
//
// It exits 0 only when it verified at least one tick and saw no desync, error or unexpected
// disconnect. `lockstep-bot --port 7777 --seconds 10` joins room "default" on 127.0.0.1;
// `--scene-file arena.scene` plays a scene the server serves from --scene-dir (asked for by the
// file's stem, the local world built from the same file), `--scene NAME` asks for one by name.
#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/client_sdk/client.h"
#include "lockstep/sim/scene.h"

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
  CLI11_PARSE(app, argc, argv);

  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);

  client_sdk::Client client;
  client_sdk::ClientOptions options;
  options.mode = client_sdk::ClientMode::lockstep;
  options.auto_resync = true;
  options.scene_name = scene_name;
  options.scene_file = scene_file;
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
  uint64_t disconnects = 0;
  uint64_t send_failures = 0;
  std::optional<uint64_t> last_sent_tick;
  bool joined = false;
  bool finished = false;  // we closed on purpose: the disconnect that follows is expected
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
      if (!have_script || finished) return;
      // One input frame per server tick: after a poll that applied several ticks at once, the
      // next stamp is still the one we sent for.
      const std::optional<uint64_t> next_tick = client.next_input_tick();
      if (!next_tick || (last_sent_tick && *next_tick <= *last_sent_tick)) return;
      const uint32_t n = sim::scripted_inputs(seed, t->tick, script, t->world(), scripted);
      mine.clear();
      for (uint32_t i = 0; i < n; ++i) {
        if (scripted[i].player == client.player_id()) mine.push_back(scripted[i]);
      }
      if (mine.empty()) return;
      last_sent_tick = client.send_input(mine);
      if (!last_sent_tick) ++send_failures;
    } else if (const auto* d = std::get_if<client_sdk::DesyncEvent>(&event)) {
      log("DESYNC at tick " + std::to_string(d->tick) + ": local hash " +
          std::to_string(d->local_hash) + ", server hash " + std::to_string(d->server_hash));
    } else if (const auto* x = std::get_if<client_sdk::ErrorEvent>(&event)) {
      log(std::string("error") + (x->fatal ? " (fatal)" : "") + ": " + x->message);
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
  finished = true;
  client.close();
  client.poll(std::chrono::milliseconds(100), handler);

  const uint64_t errors = stats.errors + disconnects + send_failures;
  std::printf(
      "ticks_verified=%llu desyncs=%llu rtt_ms_p50=%.3f bytes_in_per_s=%.0f bytes_out_per_s=%.0f "
      "errors=%llu player=%u ticks_applied=%llu resyncs=%llu rtt_ms_p99=%.3f inputs_sent=%llu "
      "seconds=%.2f\n",
      static_cast<unsigned long long>(stats.ticks_verified),
      static_cast<unsigned long long>(stats.desyncs), to_ms(rtt_p50),
      per_second(stats.bytes_in, played_s), per_second(stats.bytes_out, played_s),
      static_cast<unsigned long long>(errors), client.player_id(),
      static_cast<unsigned long long>(stats.ticks_applied),
      static_cast<unsigned long long>(stats.resyncs), to_ms(rtt_p99),
      static_cast<unsigned long long>(stats.inputs_sent), played_s);
  std::fflush(stdout);
  const bool ok = stats.desyncs == 0 && errors == 0 && stats.ticks_verified > 0;
  return ok ? 0 : 1;
}

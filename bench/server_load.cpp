// lockstep-load: load generator for a running lockstep-server (rooms, clients, tick rate and
// latency).
//
// One process, one io_context thread, R rooms × P raw clients. Each client joins room "load-<r>"
// in lockstep mode, decodes every frame it receives with the shared codec (FrameDecoder +
// decode_body), answers every TickFrame{t} with one InputFrame of 4 inputs for its owned bodies
// stamped t + input delay, and Pings every 250 ms. It runs NO world of its own: the figures are
// the server's, not the clients' (lockstep-bot steps a full world per client, which on a small
// machine measures the bots).
//
//   lockstep-load --port 7777 --rooms 100 --players 4 --seconds 20
//
// Prints one `client …` line per client with --per-client, then one `load {json}` line with the
// aggregate (means over clients, RTT quantiles over all samples); exits 1 on any fatal error
// (a non-fatal Error frame, e.g. input_rejected from a server lagging its schedule, is counted as
// input_errors and does not fail the run).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <asio.hpp>
#include <asio/experimental/as_tuple.hpp>

#include "lockstep/schema/frame.h"
#include "lockstep/schema/limits.h"
#include "lockstep/schema/messages.h"
#include "split_mix64.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace schema = lockstep::schema;

constexpr int kInputsPerFrame = 4;
constexpr auto kPingInterval = std::chrono::milliseconds(250);
constexpr int32_t kMaxPush = 8 << lockstep::sim::kInputScaleLog2;  // well inside WorldDef limits

/// The project's SplitMix64 (sim/src/split_mix64.h): cheap, seeded, reproducible input values.
struct SplitMix64 : lockstep::sim::SplitMix64 {
  int32_t push() {
    return static_cast<int32_t>(next() % (2 * static_cast<uint64_t>(kMaxPush) + 1)) - kMaxPush;
  }
};

struct ClientResult {
  int room = 0;
  uint32_t player = 0;
  bool joined = false;
  double seconds = 0.0;  // from the Welcome to the end of the run
  uint64_t bytes_in = 0;
  uint64_t bytes_out = 0;
  uint64_t tick_frames = 0;
  uint64_t input_frames = 0;
  uint64_t errors = 0;        // fatal: decode/frame/socket errors, fatal Errors, disconnects
  uint64_t input_errors = 0;  // non-fatal Errors (input_rejected / input_late): counted apart,
                              // an overloaded server that lags its schedule produces them
  std::string first_error;
  std::vector<int64_t> rtt_ns;
};

void note_error(ClientResult* r, std::string what) {
  if (r->errors++ == 0) r->first_error = std::move(what);
}

uint64_t now_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
          .count());
}

void append(std::vector<uint8_t>* out, const schema::Message& message) {
  std::vector<uint8_t> frame = schema::encode_frame(message);
  out->insert(out->end(), frame.begin(), frame.end());
}

/// One raw client: connect, Hello, then read → answer until the deadline, then Disconnect.
asio::awaitable<void> run_client(asio::ip::tcp::endpoint endpoint, Clock::time_point deadline,
                                 uint64_t seed, ClientResult* r) {
  auto executor = co_await asio::this_coro::executor;
  asio::ip::tcp::socket socket(executor);
  // Cancels the connect or read in progress at the deadline (a server that stopped answering
  // must not hang us).
  asio::steady_timer stop_timer(executor, deadline);
  stop_timer.async_wait([&socket](const asio::error_code& ec) {
    if (!ec) socket.cancel();
  });
  auto [connect_error] =
      co_await socket.async_connect(endpoint, asio::experimental::as_tuple(asio::use_awaitable));
  if (connect_error) {
    note_error(r, "connect: " + connect_error.message());
    co_return;
  }
  asio::error_code option_error;
  socket.set_option(asio::ip::tcp::no_delay(true), option_error);  // best effort

  std::vector<uint8_t> out;
  schema::Hello hello;
  hello.room = "load-" + std::to_string(r->room);
  hello.player_name = "load";
  hello.mode = schema::ClientMode::lockstep;
  append(&out, hello);

  schema::FrameDecoder decoder(schema::kMaxServerFrameBytes);
  std::vector<uint8_t> read_buffer(64 * 1024);
  std::vector<lockstep::sim::BodyId> owned;
  uint16_t input_delay = 2;
  uint32_t sequence = 0;
  SplitMix64 rng{seed};
  Clock::time_point joined_at{};
  Clock::time_point next_ping{};

  bool running = true;
  while (running) {
    if (!out.empty()) {
      auto [write_error, written] = co_await asio::async_write(
          socket, asio::buffer(out), asio::experimental::as_tuple(asio::use_awaitable));
      if (write_error) {
        if (Clock::now() < deadline) note_error(r, "write: " + write_error.message());
        break;
      }
      r->bytes_out += written;
      out.clear();
    }
    if (Clock::now() >= deadline) break;
    auto [read_error, got] = co_await socket.async_read_some(
        asio::buffer(read_buffer), asio::experimental::as_tuple(asio::use_awaitable));
    if (read_error) {
      if (Clock::now() < deadline) note_error(r, "read: " + read_error.message());
      break;
    }
    r->bytes_in += got;
    const Clock::time_point now = Clock::now();
    schema::FrameError frame_error = decoder.feed_all(
        std::span<const uint8_t>(read_buffer.data(), got), [&](std::span<const uint8_t> body) {
          schema::Message message;
          schema::DecodeResult decoded = schema::decode_body(body, &message);
          if (!decoded.ok()) {
            note_error(r, "decode: " + decoded.detail);
            running = false;
            return;
          }
          if (auto* welcome = std::get_if<schema::Welcome>(&message)) {
            r->joined = true;
            r->player = welcome->player_id;
            owned = welcome->owned_bodies;
            input_delay = welcome->input_delay_ticks;
            joined_at = now;
            next_ping = now;
          } else if (auto* tick = std::get_if<schema::TickFrame>(&message)) {
            ++r->tick_frames;
            if (owned.empty()) return;
            schema::InputFrame frame;
            frame.target_tick = tick->tick + input_delay;
            frame.sequence = sequence++;
            for (int i = 0; i < kInputsPerFrame; ++i) {
              lockstep::sim::Input input;
              input.player = r->player;
              input.sequence =
                  static_cast<uint32_t>(frame.target_tick) * 256u + static_cast<uint32_t>(i);
              input.body = owned[static_cast<size_t>(i) % owned.size()];
              input.linear_impulse[0] = rng.push();
              input.linear_impulse[2] = rng.push();
              frame.inputs.push_back(input);
            }
            append(&out, frame);
            ++r->input_frames;
          } else if (auto* pong = std::get_if<schema::Pong>(&message)) {
            r->rtt_ns.push_back(static_cast<int64_t>(now_ns() - pong->client_time_ns));
          } else if (auto* error = std::get_if<schema::ErrorMessage>(&message)) {
            if (!error->fatal) {
              ++r->input_errors;
              return;
            }
            note_error(r, std::string("server error ") + schema::error_code_name(error->code) +
                              ": " + error->reason);
            running = false;
          } else if (auto* disconnect = std::get_if<schema::Disconnect>(&message)) {
            note_error(
                r, std::string("server disconnect ") + schema::error_code_name(disconnect->code));
            running = false;
          }
        });
    if (frame_error != schema::FrameError::none) {
      note_error(r, "frame: " + decoder.error_text());
      break;
    }
    if (r->joined && now >= next_ping) {
      append(&out, schema::Ping{now_ns()});
      next_ping = now + kPingInterval;
    }
  }
  stop_timer.cancel();
  const Clock::time_point end = std::min(Clock::now(), deadline);
  if (r->joined) r->seconds = std::chrono::duration<double>(end - joined_at).count();
  if (!r->joined) note_error(r, "never joined");

  // Leave politely; the server may already be gone.
  if (socket.is_open()) {
    std::vector<uint8_t> bye = schema::encode_frame(schema::Disconnect{});
    auto [bye_error, bye_bytes] = co_await asio::async_write(
        socket, asio::buffer(bye), asio::experimental::as_tuple(asio::use_awaitable));
    if (!bye_error) r->bytes_out += bye_bytes;
    asio::error_code ignored;
    socket.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
    socket.close(ignored);
  }
}

double quantile_ms(std::vector<int64_t> samples, double q) {
  if (samples.empty()) return 0.0;
  std::sort(samples.begin(), samples.end());
  const size_t index = static_cast<size_t>(q * static_cast<double>(samples.size() - 1) + 0.5);
  return static_cast<double>(samples[index]) / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"lockstep-load: R rooms x P raw lockstep clients against a running lockstep-server"};
  std::string host = "127.0.0.1";
  uint16_t port = 7777;
  int rooms = 10;
  int players = 4;
  double seconds = 20.0;
  uint64_t seed = 1;
  bool per_client = false;
  app.add_option("--host", host, "server address")->capture_default_str();
  app.add_option("--port", port, "server port")->capture_default_str();
  app.add_option("--rooms", rooms, "rooms load-0 .. load-(R-1)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_option("--players", players, "lockstep clients per room")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--seconds", seconds, "how long to run from the start")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 3600.0));
  app.add_option("--seed", seed, "seed of the pseudo-random inputs")->capture_default_str();
  app.add_flag("--per-client", per_client, "print one line per client");
  CLI11_PARSE(app, argc, argv);

  asio::io_context io;
  asio::error_code resolve_error;
  asio::ip::tcp::resolver resolver(io);
  auto resolved = resolver.resolve(host, std::to_string(port), resolve_error);
  if (resolve_error || resolved.empty()) {
    std::fprintf(stderr, "lockstep-load: cannot resolve %s: %s\n", host.c_str(),
                 resolve_error.message().c_str());
    return 2;
  }
  const asio::ip::tcp::endpoint endpoint = resolved.begin()->endpoint();

  const size_t clients = static_cast<size_t>(rooms) * static_cast<size_t>(players);
  std::vector<ClientResult> results(clients);
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  SplitMix64 seeds{seed};
  for (size_t i = 0; i < clients; ++i) {
    results[i].room = static_cast<int>(i / static_cast<size_t>(players));
    asio::co_spawn(io, run_client(endpoint, deadline, seeds.next(), &results[i]), asio::detached);
  }
  // Our own CPU over the run, so a reader can tell the generator was not the bottleneck.
  auto cpu_seconds = [] {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
           static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  };
  const double cpu_start_s = cpu_seconds();
  io.run();
  const double cpu_s = cpu_seconds() - cpu_start_s;
  const double wall_s = std::chrono::duration<double>(Clock::now() - start).count();

  uint64_t errors = 0, input_errors = 0, joined = 0;
  double in_per_s = 0, out_per_s = 0, ticks_per_s = 0;
  std::vector<int64_t> all_rtt;
  for (const ClientResult& r : results) {
    errors += r.errors;
    input_errors += r.input_errors;
    const double s = r.seconds > 0 ? r.seconds : 1.0;
    if (r.joined) {
      ++joined;
      in_per_s += static_cast<double>(r.bytes_in) / s;
      out_per_s += static_cast<double>(r.bytes_out) / s;
      ticks_per_s += static_cast<double>(r.tick_frames) / s;
    }
    all_rtt.insert(all_rtt.end(), r.rtt_ns.begin(), r.rtt_ns.end());
    if (per_client)
      std::printf(
          "client room=load-%d player=%u seconds=%.2f bytes_in_per_s=%.0f bytes_out_per_s=%.0f "
          "tick_frames_per_s=%.2f rtt_ms_p50=%.3f rtt_ms_p99=%.3f errors=%llu "
          "input_errors=%llu%s%s\n",
          r.room, r.player, r.seconds, static_cast<double>(r.bytes_in) / s,
          static_cast<double>(r.bytes_out) / s, static_cast<double>(r.tick_frames) / s,
          quantile_ms(r.rtt_ns, 0.50), quantile_ms(r.rtt_ns, 0.99),
          static_cast<unsigned long long>(r.errors),
          static_cast<unsigned long long>(r.input_errors), r.errors ? " first_error=" : "",
          r.first_error.c_str());
    else if (r.errors)
      std::fprintf(stderr, "lockstep-load: load-%d player %u: %llu errors, first: %s\n", r.room,
                   r.player, static_cast<unsigned long long>(r.errors), r.first_error.c_str());
  }
  const double n = joined > 0 ? static_cast<double>(joined) : 1.0;
  std::printf(
      "load {\"rooms\":%d,\"players\":%d,\"clients\":%zu,\"joined\":%llu,\"seconds\":%.2f,"
      "\"bytes_in_per_client_per_s\":%.0f,\"bytes_out_per_client_per_s\":%.0f,"
      "\"tick_frames_per_client_per_s\":%.2f,\"rtt_ms_p50\":%.3f,\"rtt_ms_p99\":%.3f,"
      "\"errors\":%llu,\"input_errors\":%llu,\"load_cpu_percent\":%.1f}\n",
      rooms, players, clients, static_cast<unsigned long long>(joined), seconds, in_per_s / n,
      out_per_s / n, ticks_per_s / n, quantile_ms(all_rtt, 0.50), quantile_ms(all_rtt, 0.99),
      static_cast<unsigned long long>(errors), static_cast<unsigned long long>(input_errors),
      100.0 * cpu_s / wall_s);
  return errors == 0 ? 0 : 1;
}

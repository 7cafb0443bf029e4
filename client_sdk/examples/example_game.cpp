// The smallest lockstep game: join a room, push our own bodies towards the arena's centre every
// tick, and let the SDK verify every tick against the server. Usage:
//   example_game [host] [port] [seconds]        (defaults: 127.0.0.1 7777 5)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "lockstep/client_sdk/client.h"

namespace sdk = lockstep::client_sdk;
namespace sim = lockstep::sim;

int main(int argc, char** argv) {
  const std::string host = argc > 1 ? argv[1] : "127.0.0.1";
  const auto port = static_cast<uint16_t>(argc > 2 ? std::atoi(argv[2]) : 7777);
  const int seconds = argc > 3 ? std::atoi(argv[3]) : 5;

  sdk::Client client;
  if (!client.connect(host, port, "default", "example", "", sdk::ClientOptions{})) {
    std::fprintf(stderr, "example_game: %s\n", client.last_error().c_str());
    return 2;
  }
  // Poll-driven: no extra thread, the socket is serviced inside poll() on this thread.
  bool failed = false;
  std::vector<sim::Input> inputs;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < until && !failed) {
    client.poll(std::chrono::milliseconds(5), [&](const sdk::Event& event) {
      if (const auto* tick = std::get_if<sdk::TickAppliedEvent>(&event)) {
        // Read our bodies from the verified world and push each one back towards the centre.
        inputs.clear();
        for (sim::BodyId body : client.owned_bodies()) {
          sim::BodyView view;
          if (tick->world().get_body(body, &view) != sim::Error::none) continue;
          sim::Input input;
          input.body = body;
          input.linear_impulse[0] = view.position.x > 0 ? -64 : 64;
          input.linear_impulse[2] = view.position.z > 0 ? -64 : 64;
          inputs.push_back(input);
        }
        if (!inputs.empty()) client.send_input(inputs);
        if (tick->tick % 60 == 0) {
          std::printf("tick %llu hash %016llx\n", static_cast<unsigned long long>(tick->tick),
                      static_cast<unsigned long long>(tick->state_hash));
        }
      } else if (const auto* desync = std::get_if<sdk::DesyncEvent>(&event)) {
        std::fprintf(stderr, "desync at tick %llu\n",
                     static_cast<unsigned long long>(desync->tick));
        failed = true;
      } else if (const auto* gone = std::get_if<sdk::DisconnectedEvent>(&event)) {
        std::fprintf(stderr, "disconnected: %s\n", gone->reason.c_str());
        failed = true;
      }
    });
  }
  const sdk::ClientStats stats = client.stats();
  std::printf("ticks_verified=%llu desyncs=%llu\n",
              static_cast<unsigned long long>(stats.ticks_verified),
              static_cast<unsigned long long>(stats.desyncs));
  return failed || stats.ticks_verified == 0 ? 1 : 0;
}

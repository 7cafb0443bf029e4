// The worked client of docs/client.md, which shows this file verbatim (tests/docs_examples_test.cpp
// checks it; tests/net_joins_test.cpp plays it against a koth room; koth_client.cpp is its
// program). It connects, polls, steers its ball to the hill with an input every tick, reads the
// game state and events of each verified tick, and sends the game message "ready" once.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <variant>

#include "lockstep/client_sdk/client.h"

struct KothProgress {
  uint64_t tick = 0;         // the last verified tick
  int32_t hill_seconds = 0;  // our `hill_seconds` game state field
  int32_t score = 0;
  uint32_t events = 0;      // game events seen
  bool said_ready = false;  // the game message went out
  bool ready_seen = false;  // and the rules answered with our "ready" event (type 5)
};

// Plays until `done` says so or the connection ends; 0 when it played.
inline int play_koth(const std::string& host, uint16_t port, const std::string& room,
                     const std::function<bool(const KothProgress&)>& done) {
  namespace sdk = lockstep::client_sdk;
  namespace sim = lockstep::sim;
  sdk::Client client;
  if (!client.connect(host, port, room, "koth-example", "")) {
    std::fprintf(stderr, "cannot connect: %s\n", client.last_error().c_str());
    return 2;
  }
  client.run_thread();  // the socket on its own thread; events still arrive in poll()
  KothProgress progress;
  uint64_t last_stamped = 0;
  while (client.state() != sdk::ClientState::disconnected && !done(progress)) {
    client.poll(std::chrono::milliseconds(5), [&](const sdk::Event& event) {
      if (const auto* error = std::get_if<sdk::ErrorEvent>(&event)) {
        std::fprintf(stderr, "error: %s\n", error->message.c_str());  // refusals are not fatal
        return;
      }
      const auto* applied = std::get_if<sdk::TickAppliedEvent>(&event);
      if (applied == nullptr) return;
      const sim::World& world = applied->world();  // verified against the server's hash
      const uint32_t me = client.player_id();
      progress.tick = applied->tick;

      // Game state and events of this tick: the same on every client.
      const uint32_t hill = world.find_state_field("hill_seconds");
      progress.hill_seconds = hill == sim::kNoStateField ? 0 : world.state(hill, me);
      progress.score = world.score(me);
      for (const sim::GameEvent& e : world.game_events()) {
        std::printf("tick %llu: event %u about player %u (%d)\n",
                    static_cast<unsigned long long>(applied->tick), e.type, e.player, e.value);
        ++progress.events;
        progress.ready_seen |= e.type == 5 && e.player == me;
      }

      // A game message for the rules: they see it at the room's next tick.
      if (!progress.said_ready) progress.said_ready = client.send_game_message("ready");

      // One input per tick: steer our ball towards the hill in the platform's middle.
      const std::optional<uint64_t> next = client.next_input_tick();
      if (client.owned_bodies().empty() || !next || *next <= last_stamped) return;
      sim::BodyView ball;
      if (world.get_body(client.owned_bodies().front(), &ball) != sim::Error::none ||
          ball.position.y < 0.3f)
        return;  // falling: gravity decides, the rules respawn it
      const auto fixed = [](float metres_per_s) {
        return static_cast<int32_t>(metres_per_s * (1 << sim::kInputScaleLog2));
      };
      sim::Input input;
      input.body = client.owned_bodies().front();
      input.flags = sim::input_sets_linear_velocity;
      input.linear_velocity[0] = fixed(std::clamp(-1.5f * ball.position.x, -3.0f, 3.0f));
      input.linear_velocity[1] = fixed(ball.linear_velocity.y);  // keep falling as it falls
      input.linear_velocity[2] = fixed(std::clamp(-1.5f * ball.position.z, -3.0f, 3.0f));
      if (const std::optional<uint64_t> stamped = client.send_input({&input, 1}))
        last_stamped = *stamped;
    });
  }
  client.close();
  return progress.tick > 0 ? 0 : 1;
}

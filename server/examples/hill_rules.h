// The worked RoomRules of docs/server.md ("Game rules"), which shows this file verbatim
// (tests/docs_examples_test.cpp checks it; tests/net_joins_test.cpp runs it in a room).
#pragma once

#include <span>
#include <string_view>

#include "lockstep/server/room_rules.h"

// A point per second to whoever is alone in the sensor `hill`; a player's game message "ready"
// becomes game event 1 (its value: the tick the rules saw it).
class HillRules final : public lockstep::server::RoomRules {
 public:
  explicit HillRules(lockstep::sim::BodyId hill) : hill_(hill) {}

  void on_room_start(const lockstep::server::RoomInfo& info, const lockstep::sim::World&,
                     lockstep::server::RulesOutput&) override {
    ticks_per_point_ = info.tick_rate_hz;  // one point per second
  }

  void on_message(const lockstep::server::RoomInfo&, const lockstep::sim::World&, uint32_t player,
                  uint64_t tick, std::span<const uint8_t> data,
                  lockstep::server::RulesOutput& out) override {
    const std::string_view text(reinterpret_cast<const char*>(data.data()), data.size());
    if (text == "ready") out.push(lockstep::server::event_command(1, player, int32_t(tick)));
  }

  void after_step(const lockstep::sim::World& world,
                  std::span<const lockstep::sim::SensorEvent> events,
                  lockstep::server::RulesOutput& out) override {
    for (const lockstep::sim::SensorEvent& e : events) {
      if (!(e.sensor == hill_)) continue;
      lockstep::sim::BodyView view;
      if (world.get_body(e.visitor, &view) != lockstep::sim::Error::none) continue;
      inside_ += e.type == lockstep::sim::ContactEventType::begin ? 1 : -1;
      if (e.type == lockstep::sim::ContactEventType::begin) king_ = view.owner_player;
    }
    if (inside_ != 1 || king_ == 0 || ++held_ticks_ < ticks_per_point_) return;
    held_ticks_ = 0;
    lockstep::sim::Command score;
    score.type = lockstep::sim::CommandType::add_score;
    score.owner_player = king_;
    score.score_delta = 1;
    out.push(score);  // false: the tick's command capacity is full (counted, logged once)
  }

 private:
  lockstep::sim::BodyId hill_;
  uint32_t ticks_per_point_ = 60, held_ticks_ = 0, king_ = 0;
  int inside_ = 0;
};

// The `koth` rules (king of the hill): players' balls on a square platform with a sensor named
// `hill` in its middle and a sensor named `fall` below it. Every tick a player is alone on the
// hill (only its balls inside) counts towards a second; each full second adds 1 to its
// `hill_seconds` game state field and 1 to its score. The room field `king` holds that player
// (0 when the hill is empty or contested), and each change of king is a game event. A ball that
// falls is respawned at its player's spawn point with its handle; a crate (template `crate`) is
// dropped onto the platform every 5 s while fewer than kMaxCrates are alive, and one that falls is
// destroyed. A player's game message "ready" (Client::send_game_message) becomes a game event,
// once per player. Everything the rules decide travels as commands, so every client and replay sees
// the same state and events.
#include <algorithm>
#include <array>
#include <string_view>
#include <vector>

#include "builtin_rules.h"

namespace lockstep::server {
namespace {

constexpr uint32_t kMaxCrates = 6;
constexpr uint32_t kCrateEverySeconds = 5;

class KothRules final : public RoomRules {
 public:
  KothRules(const sim::Scene& scene, sim::BodyId hill, sim::BodyId fall, int crate)
      : hill_(hill), fall_(fall), crate_(crate), spawn_points_(scene.spawn_points) {}

  void on_room_start(const RoomInfo& info, const sim::World& world, RulesOutput&) override {
    ticks_per_second_ = std::max<uint32_t>(1, info.tick_rate_hz);
    hill_seconds_ = world.find_state_field("hill_seconds");
    king_field_ = world.find_state_field("king");
  }

  void on_player_join(const RoomInfo&, const sim::World&, const RoomPlayer& player,
                      RulesOutput& out) override {
    out.push(event_command(kEventJoined, player.id, 0));
  }

  void on_player_leave(const RoomInfo&, const sim::World&, const RoomPlayer& player,
                       RulesOutput& out) override {
    out.push(event_command(kEventLeft, player.id, 0));
  }

  void on_message(const RoomInfo&, const sim::World&, uint32_t player, uint64_t,
                  std::span<const uint8_t> data, RulesOutput& out) override {
    const std::string_view text(reinterpret_cast<const char*>(data.data()), data.size());
    if (text != "ready" || player == 0) return;  // the game knows no other message
    if (std::find(ready_.begin(), ready_.end(), player) != ready_.end()) return;
    ready_.push_back(player);
    out.push(event_command(kEventReady, player, static_cast<int32_t>(ready_.size())));
  }

  void after_step(const sim::World& world, std::span<const sim::SensorEvent> sensor_events,
                  RulesOutput& out) override {
    std::erase_if(on_hill_, [&world](sim::BodyId id) { return !world.is_alive(id); });
    for (const sim::SensorEvent& e : sensor_events) {
      if (e.sensor == hill_) {
        if (e.type == sim::ContactEventType::begin) {
          if (std::find(on_hill_.begin(), on_hill_.end(), e.visitor) == on_hill_.end())
            on_hill_.push_back(e.visitor);
        } else {
          std::erase(on_hill_, e.visitor);
        }
      } else if (e.sensor == fall_ && e.type == sim::ContactEventType::begin) {
        sim::BodyView view;
        if (world.get_body(e.visitor, &view) != sim::Error::none ||
            view.type != sim::BodyType::dynamic)
          continue;
        if (view.owner_player == 0) {
          sim::Command destroy;
          destroy.type = sim::CommandType::destroy;
          destroy.body = e.visitor;
          out.push(destroy);
        } else {
          const sim::SpawnPoint& point =
              spawn_points_[(view.owner_player - 1) % spawn_points_.size()];
          out.push(respawn_command(e.visitor, point.position, point.orientation));
          out.push(event_command(kEventFell, view.owner_player, 0));
        }
      }
    }
    score_the_hill(world, out);
    drop_crates(world, out);
  }

  // Game events (sim::GameEvent::type) of this game.
  static constexpr uint32_t kEventKing = 1;    // player = the new king (0: empty or contested)
  static constexpr uint32_t kEventJoined = 2;  // player joined
  static constexpr uint32_t kEventLeft = 3;    // player left
  static constexpr uint32_t kEventFell = 4;    // player's ball fell and was respawned
  static constexpr uint32_t kEventReady = 5;   // player said "ready"; value = players ready so far

 private:
  void score_the_hill(const sim::World& world, RulesOutput& out) {
    uint32_t alone = 0;
    bool contested = false;
    for (sim::BodyId id : on_hill_) {
      sim::BodyView view;
      if (world.get_body(id, &view) != sim::Error::none || view.owner_player == 0) continue;
      if (alone == 0) {
        alone = view.owner_player;
      } else if (alone != view.owner_player) {
        contested = true;
      }
    }
    const uint32_t king = contested ? 0 : alone;
    if (king != king_) {
      king_ = king;
      held_ticks_ = 0;
      if (king_field_ != sim::kNoStateField) {
        out.push(set_state_command(king_field_, 0, static_cast<int32_t>(king)));
      }
      out.push(event_command(kEventKing, king, 0));
    }
    if (king == 0 || ++held_ticks_ < ticks_per_second_) return;
    held_ticks_ = 0;
    if (hill_seconds_ != sim::kNoStateField && king <= sim::kMaxStatePlayers) {
      out.push(add_state_command(hill_seconds_, king, 1));
    }
    out.push(add_state_command(sim::kScoreStateField, king, 1));
  }

  void drop_crates(const sim::World& world, RulesOutput& out) {
    if (crate_ < 0 || world.tick() % (uint64_t{kCrateEverySeconds} * ticks_per_second_) != 0) {
      return;
    }
    bodies_.resize(world.body_count());
    bodies_.resize(world.list_bodies(bodies_));
    uint32_t crates = 0;
    for (sim::BodyId id : bodies_) {
      sim::BodyView view;
      if (world.get_body(id, &view) == sim::Error::none && view.type == sim::BodyType::dynamic &&
          view.owner_player == 0)
        ++crates;
    }
    if (crates >= kMaxCrates) return;
    // Over a spawn point, turn by turn, well above the platform.
    const sim::SpawnPoint& point = spawn_points_[crates_dropped_++ % spawn_points_.size()];
    sim::Command spawn;
    spawn.type = sim::CommandType::spawn;
    spawn.template_index = static_cast<uint32_t>(crate_);
    spawn.position = sim::Vec3{point.position.x * 0.5f, 4.0f, point.position.z * 0.5f};
    out.push(spawn);
  }

  sim::BodyId hill_, fall_;
  int crate_;
  std::vector<sim::SpawnPoint> spawn_points_;
  uint32_t ticks_per_second_ = 60;
  uint32_t hill_seconds_ = sim::kNoStateField, king_field_ = sim::kNoStateField;
  std::vector<sim::BodyId> on_hill_;
  std::vector<sim::BodyId> bodies_;
  uint32_t king_ = 0, held_ticks_ = 0;
  uint32_t crates_dropped_ = 0;
  std::vector<uint32_t> ready_;  // players who said "ready", in that order
};

// A body the rules need: named, and a sensor.
bool find_sensor(const sim::Scene& scene, const char* name, sim::BodyId* out, std::string* error) {
  *out = sim::find_scene_body(scene, name);
  if (out->is_null()) {
    *error = std::string("rules koth: the scene has no body named '") + name + "' (a sensor)";
    return false;
  }
  if (!scene.bodies[out->index1 - 1].shape.sensor) {
    *error = std::string("rules koth: the body named '") + name + "' is not a sensor (sensor=1)";
    return false;
  }
  return true;
}

}  // namespace

std::unique_ptr<RoomRules> make_koth_rules(const sim::Scene& scene, std::string* error) {
  sim::BodyId hill, fall;
  if (!find_sensor(scene, "hill", &hill, error) || !find_sensor(scene, "fall", &fall, error)) {
    return nullptr;
  }
  if (scene.player_template < 0 || scene.spawn_points.empty()) {
    *error = "rules koth: the scene has no player template and spawn points";
    return nullptr;
  }
  return std::make_unique<KothRules>(scene, hill, fall, sim::find_template(scene.def, "crate"));
}

}  // namespace lockstep::server

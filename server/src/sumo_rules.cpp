// The `sumo` rules: players' balls on a platform over a sensor body named `fall`. A ball that
// enters the sensor is respawned, keeping its handle (at the spawn point farthest from every other
// player's ball, at rest; ties: the lowest index), and the last other player whose ball began
// touching it scores 1 (add_score). A ball that falls without having touched another scores nobody.
//
// "Last toucher" is taken from the contact begin events of each step (World::events()), so a
// push counts from the moment two balls meet; it is the rules' own memory (server only), reset
// when a ball is respawned.
#include <algorithm>
#include <array>
#include <vector>

#include "builtin_rules.h"
#include "lockstep/server/room_rules.h"

namespace lockstep::server {
namespace {

class SumoRules final : public RoomRules {
 public:
  SumoRules(const sim::Scene& scene, sim::BodyId fall)
      : fall_(fall), spawn_points_(scene.spawn_points) {}

  void after_step(const sim::World& world, std::span<const sim::SensorEvent> sensor_events,
                  RulesOutput& out) override {
    // Forget balls that are gone (a player left), so the memory stays bounded by the live ones.
    std::erase_if(touches_, [&world](const Touch& t) { return !world.is_alive(t.body); });
    for (const sim::ContactEvent& e : world.events()) {
      if (e.type != sim::ContactEventType::begin) continue;
      const uint32_t owner_a = owner_of(world, e.a);
      const uint32_t owner_b = owner_of(world, e.b);
      if (owner_a == 0 || owner_b == 0 || owner_a == owner_b) continue;
      set_last_toucher(e.a, owner_b);
      set_last_toucher(e.b, owner_a);
    }
    for (const sim::SensorEvent& e : sensor_events) {
      if (e.type != sim::ContactEventType::begin || !(e.sensor == fall_)) continue;
      const uint32_t player = owner_of(world, e.visitor);
      if (player == 0) continue;
      // Back to a spawn point with the same handle: the player's client keeps steering it.
      sim::Command respawn;
      respawn.type = sim::CommandType::respawn;
      respawn.body = e.visitor;
      const sim::SpawnPoint& point = spawn_points_[farthest_spawn_point(world, e.visitor)];
      respawn.position = point.position;
      respawn.orientation = point.orientation;
      if (!out.push(respawn)) continue;
      const uint32_t scorer = take_last_toucher(e.visitor);
      if (scorer != 0 && scorer != player) {
        sim::Command score;
        score.type = sim::CommandType::add_score;
        score.owner_player = scorer;
        score.score_delta = 1;
        out.push(score);
      }
    }
  }

 private:
  struct Touch {
    sim::BodyId body;
    uint32_t toucher = 0;
  };

  static uint32_t owner_of(const sim::World& world, sim::BodyId id) {
    sim::BodyView view;
    if (world.get_body(id, &view) != sim::Error::none) return 0;
    return view.type == sim::BodyType::dynamic ? view.owner_player : 0;
  }

  void set_last_toucher(sim::BodyId body, uint32_t toucher) {
    for (Touch& t : touches_) {
      if (t.body == body) {
        t.toucher = toucher;
        return;
      }
    }
    touches_.push_back(Touch{body, toucher});
  }

  uint32_t take_last_toucher(sim::BodyId body) {
    for (size_t i = 0; i < touches_.size(); ++i) {
      if (touches_[i].body == body) {
        const uint32_t toucher = touches_[i].toucher;
        touches_.erase(touches_.begin() + static_cast<std::ptrdiff_t>(i));
        return toucher;
      }
    }
    return 0;
  }

  // The spawn point whose nearest other player ball is farthest away (squared distances; ties go
  // to the lower index).
  size_t farthest_spawn_point(const sim::World& world, sim::BodyId fallen) {
    bodies_.resize(world.body_count());
    bodies_.resize(world.list_bodies(bodies_));
    size_t best = 0;
    float best_distance = -1.0f;
    for (size_t i = 0; i < spawn_points_.size(); ++i) {
      float nearest = 3.0e38f;
      for (sim::BodyId id : bodies_) {
        if (id == fallen || owner_of(world, id) == 0) continue;
        sim::BodyView view;
        if (world.get_body(id, &view) != sim::Error::none) continue;
        const sim::Vec3 d = view.position - spawn_points_[i].position;
        nearest = std::min(nearest, d.x * d.x + d.y * d.y + d.z * d.z);
      }
      if (nearest > best_distance) {
        best_distance = nearest;
        best = i;
      }
    }
    return best;
  }

  sim::BodyId fall_;
  std::vector<sim::SpawnPoint> spawn_points_;
  std::vector<Touch> touches_;
  std::vector<sim::BodyId> bodies_;
};

constexpr std::array<std::string_view, 2> kRulesNames = {"sumo", "koth"};

}  // namespace

std::span<const std::string_view> builtin_rules_names() {
  return kRulesNames;
}

std::unique_ptr<RoomRules> make_builtin_rules(std::string_view name, const sim::Scene& scene,
                                              std::string* error) {
  if (name == "sumo") {
    const sim::BodyId fall = sim::find_scene_body(scene, "fall");
    if (fall.is_null()) {
      *error = "rules sumo: the scene has no body named 'fall' (the sensor under the platform)";
      return nullptr;
    }
    if (!scene.bodies[fall.index1 - 1].shape.sensor) {
      *error = "rules sumo: the body named 'fall' is not a sensor (sensor=1)";
      return nullptr;
    }
    if (scene.player_template < 0 || scene.spawn_points.empty()) {
      *error = "rules sumo: the scene has no player template and spawn points";
      return nullptr;
    }
    return std::make_unique<SumoRules>(scene, fall);
  }
  if (name == "koth") return make_koth_rules(scene, error);
  *error = "unknown rules '" + std::string(name) + "' (built in: sumo, koth)";
  return nullptr;
}

}  // namespace lockstep::server

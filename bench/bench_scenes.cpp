// Benchmark scenes beyond the built-in ones (rain, grid-N) and the shared quality yardsticks.
//
// Like the built-in scenes, everything here is integer arithmetic, exact int -> float
// conversions and + - * / sqrt, so both engines (and every machine) get the same bodies.
#include "bench_scenes.h"

#include <time.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <initializer_list>
#include <string>

#include "collide.h"
#include "split_mix64.h"

namespace lockstep::bench {

sim::Scene make_hulls_scene(uint32_t n);
namespace {

using namespace lockstep::sim;

// Rain arena: walls with inner faces at x, z = ±16 m; spawn cells 2 m wide on a 16 x 16 grid.
constexpr float kRainArenaHalf = 16.0f;
constexpr uint32_t kRainCellsPerSide = 16;
constexpr uint32_t kRainCells = kRainCellsPerSide * kRainCellsPerSide;
// 97 is odd, so g -> 97·g mod 256 is a bijection on every 256 consecutive spawns: a cell is
// reused only after 256 / per_tick ticks (32 at 8 per tick, 0.53 s), by which time its last
// body has fallen 3 m (1.6 m at 3 m/s plus 1.4 m of gravity), more than two body sizes.
constexpr uint32_t kRainCellStride = 97;
constexpr float kRainSpawnHeight = 6.0f;
constexpr float kRainSpeed = 3.0f;

BodyDef static_box(Vec3 position, Vec3 half_extents) {
  BodyDef body = default_body_def();
  body.type = BodyType::static_body;
  body.position = position;
  body.shape.type = ShapeType::box;
  body.shape.half_extents = half_extents;
  return body;
}

Scene make_rain_scene(const RainSpec& spec) {
  Scene scene;
  scene.name = "rain";
  scene.def = default_world_def();
  // Settled pile-sized shapes touch about six neighbours: 6 pairs per body with room to spare.
  const uint32_t pairs = 6 * spec.max_dynamic + 256;
  scene.def.max_bodies = spec.max_dynamic + 8;
  scene.def.max_contact_pairs = pairs;
  scene.def.max_contact_points = 4 * pairs;
  scene.def.max_candidate_pairs = 3 * pairs;
  scene.def.max_events = pairs;
  BodyDef ground = default_body_def();
  ground.type = BodyType::static_body;
  ground.shape.type = ShapeType::plane;
  scene.bodies.push_back(ground);
  const float wall = kRainArenaHalf + 0.5f;
  scene.bodies.push_back(static_box({wall, 2, 0}, {0.5f, 2, wall + 0.5f}));
  scene.bodies.push_back(static_box({-wall, 2, 0}, {0.5f, 2, wall + 0.5f}));
  scene.bodies.push_back(static_box({0, 2, wall}, {kRainArenaHalf, 2, 0.5f}));
  scene.bodies.push_back(static_box({0, 2, -wall}, {kRainArenaHalf, 2, 0.5f}));
  return scene;
}

bool parse_grid_name(std::string_view name, uint32_t* n) {
  constexpr std::string_view kPrefix = "grid-";
  if (name.substr(0, kPrefix.size()) != kPrefix) return false;
  std::string_view digits = name.substr(kPrefix.size());
  uint32_t value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc{} || end != digits.data() + digits.size()) return false;
  if (value < 1 || value > 100000) return false;
  *n = value;
  return true;
}

}  // namespace

Scene make_grid_scene(uint32_t n) {
  uint32_t side = 1;
  while (side * side < n)
    ++side;
  Scene scene;
  scene.name = "grid-" + std::to_string(n);
  scene.def = default_world_def();
  scene.def.max_bodies = n + 1;
  scene.def.max_contact_pairs = 2 * n + 64;
  scene.def.max_contact_points = 8 * n + 256;
  scene.def.max_candidate_pairs = 8 * n + 256;
  scene.def.max_events = 2 * n + 64;
  BodyDef ground = default_body_def();
  ground.type = BodyType::static_body;
  ground.shape.type = ShapeType::plane;
  scene.bodies.push_back(ground);
  for (uint32_t i = 0; i < n; ++i) {
    BodyDef body = default_body_def();
    uint32_t row = i / side, col = i % side;
    body.position = {1.5f * static_cast<float>(col), 0.5f, 1.5f * static_cast<float>(row)};
    if (i % 2 == 1) {
      body.shape.type = ShapeType::box;
      body.shape.half_extents = {0.5f, 0.5f, 0.5f};
    } else {
      body.shape.type = ShapeType::sphere;
      body.shape.radius = 0.5f;
    }
    scene.bodies.push_back(body);
  }
  return scene;
}

bool make_bench_scene(std::string_view name, BenchScene* out) {
  BenchScene result;
  uint32_t n = 0;
  if (name.substr(0, 6) == "hulls-" && parse_grid_name("grid-" + std::string(name.substr(6)), &n)) {
    result.scene = make_hulls_scene(n);
  } else if (name == "pyramid-hulls") {
    make_builtin_scene("pyramid", &result.scene);
    // Every distinct box becomes an 8-point hull of the same size.
    WorldDef& def = result.scene.def;
    for (BodyDef& body : result.scene.bodies) {
      if (body.shape.type != ShapeType::box) continue;
      const Vec3 h = body.shape.half_extents;
      uint32_t index = def.hull_count;
      for (uint32_t k = 0; k < def.hull_count; ++k)
        if (def.hulls[k].points[7] == h) index = k;
      if (index == def.hull_count) {
        if (def.hull_count == kMaxHulls) return false;
        HullDef& hull = def.hulls[def.hull_count++];
        hull.point_count = 8;
        for (uint32_t c = 0; c < 8; ++c)
          hull.points[c] = {(c & 1) ? h.x : -h.x, (c & 2) ? h.y : -h.y, (c & 4) ? h.z : -h.z};
      }
      body.shape.type = ShapeType::hull;
      body.shape.hull = index;
    }
  } else if (name == "rain") {
    result.rain = true;
    result.scene = make_rain_scene(result.rain_spec);
  } else if (parse_grid_name(name, &n)) {
    result.scene = make_grid_scene(n);
  } else if (!make_builtin_scene(name, &result.scene)) {
    return false;
  }
  // The benchmarks measure the awake pipeline (Bullet's bodies run with DISABLE_DEACTIVATION,
  // Jolt's PyramidTest without sleeping); sim_bench's BM_SettledStacks measures sleeping.
  result.scene.def.enable_sleep = false;
  *out = std::move(result);
  return true;
}

Scene make_hulls_scene(uint32_t n) {
  Scene scene;
  scene.name = "hulls-" + std::to_string(n);
  scene.def = default_world_def();
  WorldDef& def = scene.def;
  // Five hulls: an 8-point box, a tetrahedron, a 5-point pyramid and 16- and 24-point stones
  // (Fibonacci spheres, squashed).
  auto add = [&def](std::initializer_list<Vec3> points) {
    HullDef& h = def.hulls[def.hull_count++];
    for (Vec3 p : points)
      h.points[h.point_count++] = p;
  };
  add({{-0.25f, -0.2f, -0.3f},
       {0.25f, -0.2f, -0.3f},
       {-0.25f, 0.2f, -0.3f},
       {0.25f, 0.2f, -0.3f},
       {-0.25f, -0.2f, 0.3f},
       {0.25f, -0.2f, 0.3f},
       {-0.25f, 0.2f, 0.3f},
       {0.25f, 0.2f, 0.3f}});
  add({{-0.3f, -0.2f, -0.25f}, {0.3f, -0.2f, -0.25f}, {0, -0.2f, 0.3f}, {0, 0.35f, 0}});
  add({{-0.3f, -0.15f, -0.3f},
       {0.3f, -0.15f, -0.3f},
       {0.3f, -0.15f, 0.3f},
       {-0.3f, -0.15f, 0.3f},
       {0, 0.35f, 0}});
  for (uint32_t count : {16u, 24u}) {
    HullDef& h = def.hulls[def.hull_count++];
    for (uint32_t i = 0; i < count; ++i) {
      const float y = 1.0f - (2.0f * static_cast<float>(i) + 1.0f) / static_cast<float>(count);
      const float r = std::sqrt(1.0f - y * y);
      const float a = 2.39996323f * static_cast<float>(i);
      h.points[h.point_count++] = {0.3f * r * std::cos(a), 0.24f * y, 0.27f * r * std::sin(a)};
    }
  }
  const uint32_t side = 10;  // 100 hulls a layer
  const float spacing = 0.8f;
  const float half = 0.5f * spacing * static_cast<float>(side) + 0.2f;
  def.max_bodies = n + 8;
  def.max_contact_pairs = 16 * (n + 8);
  def.max_contact_points = 4 * def.max_contact_pairs;
  def.max_candidate_pairs = 32 * (n + 8);
  BodyDef floor = default_body_def();
  floor.type = BodyType::static_body;
  floor.shape.type = ShapeType::plane;
  scene.bodies.push_back(floor);
  for (int wall = 0; wall < 4; ++wall) {
    BodyDef b = default_body_def();
    b.type = BodyType::static_body;
    b.shape.type = ShapeType::box;
    const bool along_x = wall < 2;
    const float sign = wall % 2 == 0 ? -1.0f : 1.0f;
    b.shape.half_extents = along_x ? Vec3{half + 0.5f, 4.0f, 0.5f} : Vec3{0.5f, 4.0f, half + 0.5f};
    b.position =
        along_x ? Vec3{0, 4.0f, sign * (half + 0.5f)} : Vec3{sign * (half + 0.5f), 4.0f, 0};
    scene.bodies.push_back(b);
  }
  SplitMix64 rng{0x6a11ull};
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t layer = i / (side * side), cell = i % (side * side);
    BodyDef b = default_body_def();
    b.shape.type = ShapeType::hull;
    b.shape.hull = i % def.hull_count;
    b.shape.friction = 0.6f;
    b.position = {-half + 0.2f + spacing * (0.5f + static_cast<float>(cell % side)),
                  0.5f + spacing * static_cast<float>(layer),
                  -half + 0.2f + spacing * (0.5f + static_cast<float>(cell / side))};
    b.orientation = rng.orientation();
    scene.bodies.push_back(b);
  }
  return scene;
}

uint32_t rain_spawns(const RainSpec& spec, uint32_t spawned, std::span<BodyDef> out) {
  uint32_t written = 0;
  while (written < out.size() && written < spec.per_tick && spawned + written < spec.max_dynamic) {
    const uint32_t g = spawned + written;
    const uint32_t cell = (g * kRainCellStride) % kRainCells;
    const float cell_x = static_cast<float>(cell % kRainCellsPerSide);
    const float cell_z = static_cast<float>(cell / kRainCellsPerSide);
    SplitMix64 rng{0x7a1full + g};
    BodyDef body = default_body_def();
    body.position = {-kRainArenaHalf + 1.0f + 2.0f * cell_x + rng.uniform(-0.3f, 0.3f),
                     kRainSpawnHeight + rng.uniform(0.0f, 0.5f),
                     -kRainArenaHalf + 1.0f + 2.0f * cell_z + rng.uniform(-0.3f, 0.3f)};
    body.orientation = rng.orientation();
    body.linear_velocity = {0, -kRainSpeed, 0};
    random_pile_shape(rng, &body.shape);  // the pile's mix of shapes and sizes
    out[written++] = body;
  }
  return written;
}

void PenetrationProbe::reserve(size_t bodies) {
  boxes_.reserve(bodies);
  order_.reserve(bodies);
}

float PenetrationProbe::deepest_m(std::span<const PosedShape> bodies) {
  const size_t n = bodies.size();
  boxes_.resize(n);
  order_.resize(n);
  lockstep::sim::ShapeLibrary library{hulls.data(), static_cast<uint32_t>(hulls.size())};
  library.meshes = meshes.data();
  library.mesh_count = static_cast<uint32_t>(meshes.size());
  library.heightfields = heightfields.data();
  library.heightfield_count = static_cast<uint32_t>(heightfields.size());
  for (size_t i = 0; i < n; ++i) {
    boxes_[i] = compute_aabb(bodies[i].shape, library, bodies[i].xf, 0.0f);
    order_[i] = static_cast<uint32_t>(i);
  }
  std::sort(order_.begin(), order_.end(), [this](uint32_t a, uint32_t b) {
    return boxes_[a].lower.x < boxes_[b].lower.x ||
           (boxes_[a].lower.x == boxes_[b].lower.x && a < b);
  });
  float deepest = 0;
  Manifold manifold;
  for (size_t oi = 0; oi < n; ++oi) {
    const uint32_t i = order_[oi];
    for (size_t oj = oi + 1; oj < n; ++oj) {
      const uint32_t j = order_[oj];
      if (boxes_[j].lower.x > boxes_[i].upper.x) break;
      if (!bodies[i].dynamic && !bodies[j].dynamic) continue;
      if (!overlaps(boxes_[i], boxes_[j])) continue;
      collide(bodies[i].shape, bodies[i].xf, bodies[j].shape, bodies[j].xf, library, 0.0f,
              &manifold);
      for (int k = 0; k < manifold.count; ++k) {
        deepest = std::max(deepest, -manifold.points[k].separation);
      }
    }
  }
  return deepest;
}

double mechanical_energy_j(const PosedShape& body, Vec3 linear_velocity, Vec3 angular_velocity,
                           Vec3 gravity, const lockstep::sim::ShapeLibrary& library) {
  if (!body.dynamic) return 0;
  const MassProperties mp = compute_mass_properties(body.shape, library);
  // Principal axes, where I is diagonal (turned in the body frame for a hull).
  const Vec3 w = inv_rotate(mp.principal_frame, inv_rotate(body.xf.q, angular_velocity));
  const double m = mp.mass;
  const double linear = 0.5 * m * static_cast<double>(dot(linear_velocity, linear_velocity));
  const double angular = 0.5 * (static_cast<double>(mp.inertia.x) * w.x * w.x +
                                static_cast<double>(mp.inertia.y) * w.y * w.y +
                                static_cast<double>(mp.inertia.z) * w.z * w.z);
  const double potential = -m * static_cast<double>(dot(gravity, body.xf.p));
  return linear + angular + potential;
}

int64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

Distribution distribution(std::span<double> sample) {
  if (sample.empty()) return {};
  std::sort(sample.begin(), sample.end());
  const size_t n = sample.size();
  const size_t p99_rank = (n * 99 + 99) / 100;  // ceil(0.99 n), 1-based
  const double median = n % 2 == 1 ? sample[n / 2] : 0.5 * (sample[n / 2 - 1] + sample[n / 2]);
  return {median, sample[p99_rank - 1]};
}

}  // namespace lockstep::bench

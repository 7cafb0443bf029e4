// Scenes and yardsticks shared by the benchmark programs (lockstep-bench-sim and
// lockstep-bench-bullet): the built-in scenes plus `rain` (bodies spawned every tick) and the
// `grid-N` series, all built with the public sim API, and engine-neutral quality measures
// (deepest overlap measured with one narrowphase for every engine, mechanical energy).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "hull.h"
#include "lockstep/sim/scene.h"
#include "mesh.h"
#include "shape.h"

namespace lockstep::bench {

/// Rain: a walled 32 m x 32 m floor; before every step `per_tick` bodies (a deterministic mix
/// of boxes, spheres and capsules, pile-sized) appear 6 m up, falling at 3 m/s, until
/// `max_dynamic` exist.
struct RainSpec {
  uint32_t max_dynamic = 4000;
  uint32_t per_tick = 8;
};

/// A benchmark scene: the bodies present before the first step, and for rain the spawn rule.
struct BenchScene {
  sim::Scene scene;
  bool rain = false;
  RainSpec rain_spec{};
};

/// Fills *out for a built-in scene name, "rain", "grid-N" (N bodies, 1 ≤ N ≤ 100,000),
/// "hulls-N" (N convex hulls of 4 to 24 points, mixed, dropped in layers of 100 into a walled
/// box) or "pyramid-hulls" (the pyramid with every box given as an 8-point hull); false for
/// anything else.
bool make_bench_scene(std::string_view name, BenchScene* out);

/// The series: N bodies (alternating unit spheres and unit boxes) resting 1.5 m apart on a
/// square grid over a static plane, so each touches only the plane and the work is linear in N.
sim::Scene make_grid_scene(uint32_t n);

/// Writes the bodies to create before the next step when `spawned` rain bodies exist (at most
/// per_tick, none once max_dynamic exist); returns how many were written (≤ out.size()). Body g
/// of the rain is a pure function of g.
uint32_t rain_spawns(const RainSpec& spec, uint32_t spawned, std::span<sim::BodyDef> out);

/// One body's shape and pose, whatever engine it came from.
struct PosedShape {
  sim::ShapeDef shape{};
  sim::Transform xf{};
  bool dynamic = false;
};

/// Deepest overlap between two shapes (at least one dynamic), measured by the sim's own
/// narrowphase (collide) on sharp shapes, so every engine is measured with the same ruler.
/// Sort-and-sweep on x over the bounding boxes; the scratch arrays grow on the first calls only.
class PenetrationProbe {
 public:
  /// Deepest overlap (m, ≥ 0; 0 when nothing overlaps).
  float deepest_m(std::span<const PosedShape> bodies);
  /// Takes the scratch for `bodies` bodies now (so that later calls do not allocate).
  void reserve(size_t bodies);
  /// The hulls hull shapes name (the scene's World::hulls, built from its WorldDef).
  std::vector<sim::HullGeometry> hulls;
  /// The level geometry mesh and heightfield shapes name (build_level of the scene's level).
  std::vector<sim::MeshGeometry> meshes;
  std::vector<sim::HeightfieldGeometry> heightfields;

 private:
  std::vector<sim::Aabb> boxes_;
  std::vector<uint32_t> order_;
};

/// Mechanical energy (J) of a body: ½mv² + ½ωᵀIω + m·(−g)·x, with I the shape's principal
/// inertia (sim::compute_mass_properties) rotated to world axes. Static bodies: 0.
double mechanical_energy_j(const PosedShape& body, sim::Vec3 linear_velocity,
                           sim::Vec3 angular_velocity, sim::Vec3 gravity,
                           const sim::ShapeLibrary& library);

/// CPU time of the calling thread (ns): step timings use it so that time the thread spends
/// preempted on a shared machine is not counted (wall time is reported beside it).
int64_t thread_cpu_ns();

/// Median (mean of the middle two for an even count) and nearest-rank 99th percentile of a
/// sample (sorted in place); 0 when empty.
struct Distribution {
  double median = 0;
  double p99 = 0;
};
Distribution distribution(std::span<double> sample);

}  // namespace lockstep::bench

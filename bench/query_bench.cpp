// Query benchmarks on the pile after 300 steps (about 1,000 bodies settled in a layer 1-2 m deep
// inside a 16 m walled box): one query per iteration, cycling through 64 fixed queries so no
// single path through the tree is measured. The queries' tree is built by the first query after
// the state changes; it is built before the timing loop here, and BM_QueryTreeBuild times that
// build alone (what the first query of a tick pays on top).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <string_view>

#include "bench_scenes.h"
#include "lockstep/sim/query.h"
#include "lockstep/sim/world.h"
#include "query_tree.h"
#include "world_data.h"

namespace {

using namespace lockstep::sim;

constexpr int kQueries = 64;
constexpr int kWarmUpTicks = 300;

std::unique_ptr<World> settled_pile() {
  lockstep::bench::BenchScene bench;
  if (!lockstep::bench::make_bench_scene("pile", &bench)) return nullptr;
  std::unique_ptr<World> world = build_world(bench.scene);
  if (world == nullptr) return nullptr;
  for (int i = 0; i < kWarmUpTicks; ++i)
    world->step();
  return world;
}

// Query k of 64: a line across the pile at a height in the settled layer, along x (even k) or
// z (odd k), offset sideways, from the inner face of one wall to the other (16 m).
void across(int k, Vec3* origin, Vec3* translation) {
  const float side = -7.0f + 14.0f * static_cast<float>(k / 2) / 31.0f;
  const float height = 0.3f + 1.5f * static_cast<float>(k % 8) / 7.0f;
  if (k % 2 == 0) {
    *origin = {-7.99f, height, side};
    *translation = {15.98f, 0, 0};
  } else {
    *origin = {side, height, -7.99f};
    *translation = {0, 0, 15.98f};
  }
}

// Point k of 64 on an 8 × 8 grid over the floor of the box.
Vec3 grid_point(int k, float y) {
  return {-7.0f + 2.0f * static_cast<float>(k % 8), y, -7.0f + 2.0f * static_cast<float>(k / 8)};
}

enum class RayKind { closest_across, closest_down, all_across, sphere_across };

void BM_QueryRay(benchmark::State& state, RayKind kind) {
  std::unique_ptr<World> world = settled_pile();
  if (world == nullptr) {
    state.SkipWithError("scene failed to build");
    return;
  }
  ShapeDef sphere;
  sphere.type = ShapeType::sphere;
  sphere.radius = 0.3f;
  RayHit hit;
  RayHit hits[256];
  uint64_t found = 0;
  int k = 0;
  auto run = [&]() {
    Vec3 origin, translation;
    across(k, &origin, &translation);
    QueryResult r;
    switch (kind) {
      case RayKind::closest_across:
        r = ray_cast(*world, origin, translation, {}, &hit);
        break;
      case RayKind::closest_down:
        r = ray_cast(*world, grid_point(k, 20), {0, -21, 0}, {}, &hit);
        break;
      case RayKind::all_across:
        r = ray_cast_all(*world, origin, translation, {}, hits);
        break;
      case RayKind::sphere_across:
        r = shape_cast(*world, sphere, Transform{origin, Quat{}}, translation, {}, &hit);
        break;
    }
    k = (k + 1) % kQueries;
    return r.found;
  };
  run();  // builds the tree
  for (auto _ : state) {
    found += run();
    benchmark::DoNotOptimize(hit);
    benchmark::ClobberMemory();
  }
  state.counters["hits_per_query"] =
      static_cast<double>(found) / static_cast<double>(state.iterations());
  state.counters["bodies"] = static_cast<double>(world->body_count());
}
BENCHMARK_CAPTURE(BM_QueryRay, pile_across, RayKind::closest_across)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_QueryRay, pile_down, RayKind::closest_down)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_QueryRay, pile_across_all, RayKind::all_across)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_QueryRay, pile_sphere_cast, RayKind::sphere_across)
    ->Unit(benchmark::kMicrosecond);

void BM_QueryOverlap(benchmark::State& state, ShapeType type) {
  std::unique_ptr<World> world = settled_pile();
  if (world == nullptr) {
    state.SkipWithError("scene failed to build");
    return;
  }
  ShapeDef shape;
  shape.type = type;
  shape.radius = 1.0f;                      // sphere, capsule
  shape.half_extents = {1.0f, 0.5f, 1.0f};  // box
  shape.half_height = 0.5f;                 // capsule
  const Quat turned = normalize(Quat{0.1f, 0.3f, 0.0f, 0.9f});
  BodyId bodies[256];
  uint64_t found = 0;
  int k = 0;
  auto run = [&]() {
    const QueryResult r =
        overlap(*world, shape, Transform{grid_point(k, 1.0f), turned}, {}, bodies);
    k = (k + 1) % kQueries;
    return r.found;
  };
  run();  // builds the tree
  for (auto _ : state) {
    found += run();
    benchmark::DoNotOptimize(bodies);
    benchmark::ClobberMemory();
  }
  state.counters["bodies_per_query"] =
      static_cast<double>(found) / static_cast<double>(state.iterations());
}
BENCHMARK_CAPTURE(BM_QueryOverlap, pile_sphere, ShapeType::sphere)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_QueryOverlap, pile_box, ShapeType::box)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_QueryOverlap, pile_capsule, ShapeType::capsule)->Unit(benchmark::kMicrosecond);

// The tree build alone: current boxes, Morton sort, nodes (once per changed state).
void BM_QueryTreeBuild(benchmark::State& state) {
  std::unique_ptr<World> world = settled_pile();
  if (world == nullptr) {
    state.SkipWithError("scene failed to build");
    return;
  }
  const WorldData& w = world_data(*world);
  for (auto _ : state) {
    query_tree_build(&w.query_tree, w);
    benchmark::ClobberMemory();
  }
  w.query_tree.built = false;  // the next query rebuilds it properly keyed
  state.counters["tree_depth"] = static_cast<double>(w.query_tree.depth);
  state.counters["nodes"] = static_cast<double>(w.query_tree.node_count);
}
BENCHMARK(BM_QueryTreeBuild)->Unit(benchmark::kMicrosecond);

}  // namespace

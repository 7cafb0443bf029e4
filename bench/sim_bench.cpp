// Simulation benchmarks: step time of the built-in scenes in steady state, the state hash,
// snapshot save/restore, and broadphase scaling with the body count.
//
// Step benchmarks build the scene once, step `warm-up` ticks (not timed), then time one step
// per iteration; each step's wall time also goes into a preallocated array so that the median
// and the 99th percentile are reported as counters (median_us, p99_us) besides the mean.
// Stage counters (broadphase_us, narrowphase_us, solve_us, hash_us) are means of the world's
// own StepStats timings. The default run takes well under two minutes:
//   build/<dir>/bench/lockstep-bench-sim
//   build/<dir>/bench/lockstep-bench-sim --benchmark_filter=Scaling
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "lockstep/sim/scene.h"
#include "lockstep/sim/world.h"
#include "state_stream.h"

namespace {

using namespace lockstep::sim;
using Clock = std::chrono::steady_clock;

std::unique_ptr<World> build_scene(std::string_view name, size_t* body_count) {
  Scene scene;
  if (!make_builtin_scene(name, &scene)) return nullptr;
  *body_count = scene.bodies.size();
  return build_world(scene);
}

/// Steps until the scene has settled into its steady state.
void warm_up(World& world, int ticks) {
  for (int i = 0; i < ticks; ++i)
    world.step();
}

struct StageSums {
  double broadphase_ns = 0, narrowphase_ns = 0, solve_ns = 0, hash_ns = 0;
  double contact_points = 0;
  void add(const StepStats& s) {
    broadphase_ns += static_cast<double>(s.ns_broadphase);
    narrowphase_ns += static_cast<double>(s.ns_narrowphase);
    solve_ns += static_cast<double>(s.ns_solve);
    hash_ns += static_cast<double>(s.ns_hash);
    contact_points += s.contact_points;
  }
  void report(benchmark::State& state, double steps) const {
    state.counters["broadphase_us"] = broadphase_ns / steps / 1e3;
    state.counters["narrowphase_us"] = narrowphase_ns / steps / 1e3;
    state.counters["solve_us"] = solve_ns / steps / 1e3;
    state.counters["hash_us"] = hash_ns / steps / 1e3;
    state.counters["contact_points"] = contact_points / steps;
  }
};

/// Median and 99th percentile (nearest rank) of the first `count` durations, as counters.
void report_distribution(benchmark::State& state, std::vector<int64_t>& ns, size_t count) {
  if (count == 0) return;
  std::sort(ns.begin(), ns.begin() + static_cast<std::ptrdiff_t>(count));
  size_t p99 = (count * 99 + 99) / 100;  // ceil(0.99 n), 1-based rank
  state.counters["median_us"] = static_cast<double>(ns[count / 2]) / 1e3;
  state.counters["p99_us"] = static_cast<double>(ns[p99 - 1]) / 1e3;
}

void BM_StepScene(benchmark::State& state, std::string_view name, int warm_up_ticks) {
  size_t bodies = 0;
  std::unique_ptr<World> world = build_scene(name, &bodies);
  if (world == nullptr) {
    state.SkipWithError("scene failed to build");
    return;
  }
  warm_up(*world, warm_up_ticks);
  std::vector<int64_t> durations(static_cast<size_t>(state.max_iterations));
  size_t count = 0;
  StageSums stages;
  for (auto _ : state) {
    Clock::time_point t0 = Clock::now();
    StepStatus status = world->step();
    Clock::time_point t1 = Clock::now();
    benchmark::DoNotOptimize(status);
    if (count < durations.size()) {
      durations[count++] = std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count();
    }
    stages.add(world->last_step_stats());
  }
  report_distribution(state, durations, count);
  stages.report(state, static_cast<double>(count));
  state.counters["bodies"] = static_cast<double>(bodies);
  state.counters["overflow_steps"] = static_cast<double>(world->counters().overflow_steps);
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(bodies));  // bodies/s
}

// Warm-up ticks: the pyramids settle within two seconds; the pile falls from up to 15 m and is
// mostly at rest after five.
BENCHMARK_CAPTURE(BM_StepScene, pyramid, "pyramid", 120)
    ->Iterations(300)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_StepScene, pile, "pile", 300)->Iterations(200)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_StepScene, pyramid3d, "pyramid3d", 120)
    ->Iterations(200)
    ->Unit(benchmark::kMicrosecond);

// The state hash is computed inside step() (its share is hash_us above); this times the same
// function alone: canonical encoding of the whole state into scratch, then XXH3-64.
void BM_StateHash(benchmark::State& state, std::string_view name) {
  size_t bodies = 0;
  std::unique_ptr<World> world = build_scene(name, &bodies);
  if (world == nullptr) {
    state.SkipWithError("scene failed to build");
    return;
  }
  warm_up(*world, 60);
  for (auto _ : state) {
    update_state_hash(world->data());
    benchmark::ClobberMemory();
  }
  size_t bytes = encoded_state_size(world->data());
  state.counters["state_bytes"] = static_cast<double>(bytes);
  state.counters["time_per_body"] = benchmark::Counter(
      static_cast<double>(bodies),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes));
}
BENCHMARK_CAPTURE(BM_StateHash, pile, "pile")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_StateHash, pyramid3d, "pyramid3d")->Unit(benchmark::kMicrosecond);

void BM_SnapshotSave(benchmark::State& state, std::string_view name) {
  size_t bodies = 0;
  std::unique_ptr<World> world = build_scene(name, &bodies);
  if (world == nullptr) {
    state.SkipWithError("scene failed to build");
    return;
  }
  warm_up(*world, 60);
  std::vector<uint8_t> buffer(world->max_snapshot_size());
  size_t written = 0;
  for (auto _ : state) {
    Error e = world->save_snapshot(buffer, &written);
    benchmark::DoNotOptimize(e);
    benchmark::ClobberMemory();
  }
  state.counters["bytes"] = static_cast<double>(written);
  state.counters["bytes_per_body"] = static_cast<double>(written) / static_cast<double>(bodies);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(written));
}
BENCHMARK_CAPTURE(BM_SnapshotSave, pile, "pile")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_SnapshotSave, pyramid3d, "pyramid3d")->Unit(benchmark::kMicrosecond);

void BM_SnapshotRestore(benchmark::State& state, std::string_view name) {
  size_t bodies = 0;
  std::unique_ptr<World> world = build_scene(name, &bodies);
  if (world == nullptr) {
    state.SkipWithError("scene failed to build");
    return;
  }
  warm_up(*world, 60);
  std::vector<uint8_t> buffer(world->max_snapshot_size());
  size_t written = 0;
  if (world->save_snapshot(buffer, &written) != Error::none) {
    state.SkipWithError("save_snapshot failed");
    return;
  }
  std::span<const uint8_t> snapshot(buffer.data(), written);
  for (auto _ : state) {
    Error e = world->restore_snapshot(snapshot);
    benchmark::DoNotOptimize(e);
  }
  state.counters["bytes"] = static_cast<double>(written);
  state.counters["bytes_per_body"] = static_cast<double>(written) / static_cast<double>(bodies);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(written));
}
BENCHMARK_CAPTURE(BM_SnapshotRestore, pile, "pile")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_SnapshotRestore, pyramid3d, "pyramid3d")->Unit(benchmark::kMicrosecond);

// Broadphase scaling: N bodies (alternating unit spheres and unit boxes) resting 1.5 m apart
// on a square grid over a static plane, so each touches only the plane and the contact work is
// linear in N. time_per_body staying flat as N grows 100x shows the step (and the broadphase_us
// share) is sub-quadratic; benchmark's complexity fit (BigO line) says the same.
void BM_BroadphaseScaling(benchmark::State& state) {
  const uint32_t n = static_cast<uint32_t>(state.range(0));
  uint32_t side = 1;
  while (side * side < n)
    ++side;
  Scene scene;
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
  std::unique_ptr<World> world = build_world(scene);
  if (world == nullptr) {
    state.SkipWithError("scene failed to build");
    return;
  }
  warm_up(*world, 5);
  StageSums stages;
  int64_t steps = 0;
  for (auto _ : state) {
    StepStatus status = world->step();
    benchmark::DoNotOptimize(status);
    stages.add(world->last_step_stats());
    ++steps;
  }
  stages.report(state, static_cast<double>(steps));
  state.counters["time_per_body"] =
      benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate |
                                                     benchmark::Counter::kInvert);
  state.counters["broadphase_ns_per_body"] =
      stages.broadphase_ns / static_cast<double>(steps) / static_cast<double>(n);
  state.counters["overflow_steps"] = static_cast<double>(world->counters().overflow_steps);
  state.SetComplexityN(n);
}
BENCHMARK(BM_BroadphaseScaling)
    ->Arg(100)
    ->Arg(300)
    ->Arg(1000)
    ->Arg(3000)
    ->Arg(10000)
    ->Unit(benchmark::kMicrosecond)
    ->MinTime(0.3)
    ->Complexity();

}  // namespace

BENCHMARK_MAIN();

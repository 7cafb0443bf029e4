// Simulation benchmarks (single thread): step time of the built-in scenes, whole runs from the
// first tick (Jolt's 500-step pyramid), rain (bodies spawned every tick up to 4,000), the
// 100 -> 10,000 body series, the state hash, snapshot save/restore and the world's memory.
//
// Step timings (CPU time of the thread) go into preallocated arrays, so every benchmark reports
// the median and the 99th percentile of single steps (median_us, p99_us) besides benchmark's
// mean. Stage counters
// (broadphase_us, narrowphase_us, solve_us, contacts_us, hash_us) are means of the world's own
// StepStats.
// bench/README.md says how to run it and how to read every counter.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "alloc_counter.h"
#include "bench_scenes.h"
#include "lockstep/sim/scene.h"
#include "lockstep/sim/testing.h"
#include "lockstep/sim/world.h"
#include "state_stream.h"

namespace {

using namespace lockstep::sim;
using lockstep::bench::BenchScene;
using lockstep::bench::distribution;
using lockstep::bench::make_bench_scene;
using lockstep::testing::alloc_totals;

// Timings are CPU time of this thread (bench_scenes.h): a preempted step on the shared machine
// does not count the time other processes ran. Benchmark's own Time column is wall time.
int64_t now_ns() {
  return lockstep::bench::thread_cpu_ns();
}
double elapsed_ns(int64_t t0, int64_t t1) {
  return static_cast<double>(t1 - t0);
}

std::unique_ptr<World> build_scene(std::string_view name, size_t* body_count) {
  BenchScene bench;
  if (!make_bench_scene(name, &bench)) return nullptr;
  *body_count = bench.scene.bodies.size();
  return build_world(bench.scene);
}

/// Steps until the scene has settled into its steady state.
void warm_up(World& world, int ticks) {
  for (int i = 0; i < ticks; ++i)
    world.step();
}

struct StageSums {
  double broadphase_ns = 0, narrowphase_ns = 0, solve_ns = 0, contacts_ns = 0, hash_ns = 0;
  double contact_points = 0;
  // The CSV columns keep their names and meaning (earlier runs in bench/README.md compare with
  // them): solve_us is prepare_contacts to sweep_bullets without integrate_positions, and
  // contacts_us the events, the sensor overlaps and the warm-start cache.
  void add(const StepStats& s) {
    broadphase_ns += static_cast<double>(s.ns(StepStage::update_broadphase));
    narrowphase_ns += static_cast<double>(s.ns(StepStage::collide_pairs));
    solve_ns += static_cast<double>(s.ns(StepStage::prepare_contacts, StepStage::sweep_bullets) -
                                    s.ns(StepStage::integrate_positions));
    contacts_ns +=
        static_cast<double>(s.ns(StepStage::emit_contact_events, StepStage::store_contacts));
    hash_ns += static_cast<double>(s.ns(StepStage::update_state_hash));
    contact_points += s.contact_points;
  }
  void report(benchmark::State& state, double steps) const {
    state.counters["broadphase_us"] = broadphase_ns / steps / 1e3;
    state.counters["narrowphase_us"] = narrowphase_ns / steps / 1e3;
    state.counters["solve_us"] = solve_ns / steps / 1e3;
    state.counters["contacts_us"] = contacts_ns / steps / 1e3;
    state.counters["hash_us"] = hash_ns / steps / 1e3;
    state.counters["contact_points"] = contact_points / steps;
  }
};

/// Median and 99th percentile (nearest rank) of the first `count` step times (ns), in µs.
void report_distribution(benchmark::State& state, std::vector<double>& ns, size_t count) {
  lockstep::bench::Distribution d =
      distribution(std::span<double>(ns.data(), std::min(count, ns.size())));
  state.counters["median_us"] = d.median / 1e3;
  state.counters["p99_us"] = d.p99 / 1e3;
}

/// One World::step() per iteration of `state`, with the counters of BM_StepScene.
void measure_steps(benchmark::State& state, World* world, size_t bodies) {
  std::vector<double> durations(static_cast<size_t>(state.max_iterations));
  size_t count = 0;
  StageSums stages;
  const uint64_t allocations_before = alloc_totals().allocations;
  for (auto _ : state) {
    int64_t t0 = now_ns();
    StepStatus status = world->step();
    int64_t t1 = now_ns();
    benchmark::DoNotOptimize(status);
    if (count < durations.size()) durations[count++] = elapsed_ns(t0, t1);
    stages.add(world->last_step_stats());
  }
  // Benchmark's own loop does not allocate, so anything counted here came from step().
  const uint64_t allocations = alloc_totals().allocations - allocations_before;
  report_distribution(state, durations, count);
  stages.report(state, static_cast<double>(count));
  state.counters["bodies"] = static_cast<double>(bodies);
  state.counters["step_allocations"] = static_cast<double>(allocations);
  state.counters["overflow_steps"] = static_cast<double>(world->counters().overflow_steps);
  state.counters["sleeping_bodies"] = world->last_step_stats().sleeping_bodies;
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(bodies));  // bodies/s
}

/// One World::step() per iteration after `warm_up_ticks` untimed steps. With warm-up 0 and
/// Iterations(N) this is a whole run from the first tick (Jolt's performance test: 500 steps).
void BM_StepScene(benchmark::State& state, std::string_view name, int warm_up_ticks) {
  size_t bodies = 0;
  std::unique_ptr<World> world = build_scene(name, &bodies);
  if (world == nullptr) {
    state.SkipWithError("scene failed to build");
    return;
  }
  warm_up(*world, warm_up_ticks);
  measure_steps(state, world.get(), bodies);
}

// Steady state. Warm-up ticks: the pyramids settle within two seconds; the pile falls from up
// to 15 m and is mostly at rest after five.
BENCHMARK_CAPTURE(BM_StepScene, pyramid, "pyramid", 120)
    ->Iterations(300)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_StepScene, pile, "pile", 300)->Iterations(200)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_StepScene, pyramid3d, "pyramid3d", 120)
    ->Iterations(200)
    ->Unit(benchmark::kMicrosecond);
// Whole runs from the first tick: settling included, as in Jolt's PyramidTest (500 steps).
BENCHMARK_CAPTURE(BM_StepScene, pyramid3d_run, "pyramid3d", 0)
    ->Iterations(500)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_StepScene, pile_run, "pile", 0)
    ->Iterations(500)
    ->Unit(benchmark::kMicrosecond);
// Level geometry: the mesh benchmark scene as Jolt's PerformanceTest runs it (500 steps from the
// first tick, no sleeping), and 1,000 bodies on a 256 x 256 heightfield.
BENCHMARK_CAPTURE(BM_StepScene, convex_vs_mesh_run, "convex_vs_mesh", 0)
    ->Iterations(500)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_StepScene, terrain_pile_run, "terrain_pile", 0)
    ->Iterations(500)
    ->Unit(benchmark::kMicrosecond);

/// Sleeping: 1,000 unit boxes in 500 stacks of two (a 25 × 20 grid, 1.4 m apart) on a static
/// floor, stepped after 600 untimed steps, with sleeping on (`asleep`: every stack sleeps about
/// half a second after it settles) and off (`awake`: the same scene, every body stepped). The
/// built-in pile is not used: it never settles completely (a few balls perched on others roll
/// off minutes in, and one connected island of ~990 bodies stays awake while one body moves).
void BM_SettledStacks(benchmark::State& state, bool sleep) {
  Scene scene;
  scene.name = "stacks";
  scene.def = default_world_def();
  scene.def.max_bodies = 1024;
  scene.def.enable_sleep = sleep;
  BodyDef floor = default_body_def();
  floor.type = BodyType::static_body;
  floor.shape.type = ShapeType::box;
  floor.shape.half_extents = {30, 0.5f, 30};
  floor.position = {0, -0.5f, 0};
  scene.bodies.push_back(floor);
  for (int i = 0; i < 25; ++i) {
    for (int j = 0; j < 20; ++j) {
      for (int level = 0; level < 2; ++level) {
        BodyDef box = default_body_def();
        box.shape.type = ShapeType::box;
        box.position = {-16.8f + 1.4f * static_cast<float>(i), 0.5f + static_cast<float>(level),
                        -13.3f + 1.4f * static_cast<float>(j)};
        scene.bodies.push_back(box);
      }
    }
  }
  std::unique_ptr<World> world = build_world(scene);
  if (world == nullptr) {
    state.SkipWithError("scene failed to build");
    return;
  }
  warm_up(*world, 600);
  measure_steps(state, world.get(), scene.bodies.size());
}
BENCHMARK_CAPTURE(BM_SettledStacks, awake, false)->Iterations(300)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_SettledStacks, asleep, true)->Iterations(300)->Unit(benchmark::kMicrosecond);

/// Rain: before every step `per_tick` bodies are created (World::create_body between steps)
/// until 4,000 exist, then 100 more steps. One iteration is the whole run; its time is the sum
/// of the step times (creation excluded). step_us_at_N is the median step time while the world
/// holds N ± 50 rain bodies (at 4,000: the 100 steps after the last spawn).
void BM_Rain(benchmark::State& state) {
  BenchScene bench;
  make_bench_scene("rain", &bench);
  const lockstep::bench::RainSpec spec = bench.rain_spec;
  const uint32_t spawn_ticks = (spec.max_dynamic + spec.per_tick - 1) / spec.per_tick;
  const uint32_t steps = spawn_ticks + 100;
  std::vector<double> durations(steps);
  std::vector<uint32_t> counts(steps);
  std::vector<BodyDef> spawns(spec.per_tick);
  std::vector<double> window;
  window.reserve(steps);
  for (auto _ : state) {
    std::unique_ptr<World> world = build_world(bench.scene);
    if (world == nullptr) {
      state.SkipWithError("rain failed to build");
      return;
    }
    uint32_t spawned = 0;
    uint64_t create_errors = 0;
    double total_ns = 0;
    const uint64_t allocations_before = alloc_totals().allocations;
    for (uint32_t t = 0; t < steps; ++t) {
      const uint32_t n = lockstep::bench::rain_spawns(spec, spawned, spawns);
      for (uint32_t i = 0; i < n; ++i) {
        BodyId id;
        if (world->create_body(spawns[i], &id) != Error::none) ++create_errors;
      }
      spawned += n;
      int64_t t0 = now_ns();
      StepStatus status = world->step();
      int64_t t1 = now_ns();
      benchmark::DoNotOptimize(status);
      durations[t] = elapsed_ns(t0, t1);
      counts[t] = spawned;
      total_ns += durations[t];
    }
    const uint64_t allocations = alloc_totals().allocations - allocations_before;
    state.SetIterationTime(total_ns / 1e9);
    for (uint32_t at : {1000u, 2000u, 4000u}) {
      window.clear();
      for (uint32_t t = 0; t < steps; ++t) {
        const bool near = counts[t] + 50 >= at && counts[t] <= at + 50;
        if (near) window.push_back(durations[t]);
      }
      state.counters["step_us_at_" + std::to_string(at)] = distribution(window).median / 1e3;
    }
    std::vector<double> all = durations;
    lockstep::bench::Distribution d = distribution(all);
    state.counters["median_us"] = d.median / 1e3;
    state.counters["p99_us"] = d.p99 / 1e3;
    state.counters["mean_us"] = total_ns / steps / 1e3;
    state.counters["bodies"] = static_cast<double>(world->body_count());
    state.counters["create_errors"] = static_cast<double>(create_errors);
    state.counters["step_allocations"] = static_cast<double>(allocations);
    state.counters["overflow_steps"] = static_cast<double>(world->counters().overflow_steps);
  }
}
BENCHMARK(BM_Rain)->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);

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
  int64_t t0 = now_ns();
  for (auto _ : state) {
    update_state_hash(world_data(*world));
    benchmark::ClobberMemory();
  }
  const double ns = elapsed_ns(t0, now_ns());
  size_t bytes = encoded_state_size(world_data(*world));
  state.counters["state_bytes"] = static_cast<double>(bytes);
  state.counters["bytes_per_body"] = static_cast<double>(bytes) / static_cast<double>(bodies);
  state.counters["ns_per_body"] =
      ns / static_cast<double>(state.iterations()) / static_cast<double>(bodies);
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
  int64_t t0 = now_ns();
  for (auto _ : state) {
    Error e = world->save_snapshot(buffer, &written);
    benchmark::DoNotOptimize(e);
    benchmark::ClobberMemory();
  }
  const double ns = elapsed_ns(t0, now_ns());
  state.counters["bytes"] = static_cast<double>(written);
  state.counters["bytes_per_body"] = static_cast<double>(written) / static_cast<double>(bodies);
  state.counters["ns_per_body"] =
      ns / static_cast<double>(state.iterations()) / static_cast<double>(bodies);
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
  int64_t t0 = now_ns();
  for (auto _ : state) {
    Error e = world->restore_snapshot(snapshot);
    benchmark::DoNotOptimize(e);
  }
  const double ns = elapsed_ns(t0, now_ns());
  state.counters["bytes"] = static_cast<double>(written);
  state.counters["bytes_per_body"] = static_cast<double>(written) / static_cast<double>(bodies);
  state.counters["ns_per_body"] =
      ns / static_cast<double>(state.iterations()) / static_cast<double>(bodies);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(written));
}
BENCHMARK_CAPTURE(BM_SnapshotRestore, inputs, "inputs")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_SnapshotRestore, pile, "pile")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_SnapshotRestore, pyramid3d, "pyramid3d")->Unit(benchmark::kMicrosecond);

/// A rollback as a predicting client does it when a confirmation differs from its guess:
/// restore the confirmed state, then re-simulate `ticks` ticks with their inputs (the scene's
/// scripted pushes). Time per rollback; restore_us is the restore alone (measured in the same
/// iterations), resim_us the steps.
void BM_Rollback(benchmark::State& state, std::string_view name, int ticks) {
  size_t bodies = 0;
  std::unique_ptr<World> world = build_scene(name, &bodies);
  if (world == nullptr) {
    state.SkipWithError("scene failed to build");
    return;
  }
  const lockstep::sim::InputScript script = lockstep::sim::make_input_script(*world);
  std::vector<lockstep::sim::Input> scratch(world->def().max_inputs_per_tick);
  const auto queue_scripted = [&](World& w) {
    const uint32_t n = lockstep::sim::scripted_inputs(1, w.tick(), script, w, scratch);
    for (uint32_t i = 0; i < n; ++i)
      w.queue_input(scratch[i]);
  };
  for (int i = 0; i < 60; ++i) {
    queue_scripted(*world);
    world->step();
  }
  std::vector<uint8_t> buffer(world->max_snapshot_size());
  size_t written = 0;
  if (world->save_snapshot(buffer, &written) != Error::none) {
    state.SkipWithError("save_snapshot failed");
    return;
  }
  const std::span<const uint8_t> confirmed(buffer.data(), written);
  double restore_ns = 0, total_ns = 0;
  for (auto _ : state) {
    const int64_t t0 = now_ns();
    Error e = world->restore_snapshot(confirmed);
    const int64_t t1 = now_ns();
    benchmark::DoNotOptimize(e);
    for (int t = 0; t < ticks; ++t) {
      queue_scripted(*world);
      world->step();
    }
    const int64_t t2 = now_ns();
    restore_ns += elapsed_ns(t0, t1);
    total_ns += elapsed_ns(t0, t2);
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["restore_us"] = restore_ns / n / 1e3;
  state.counters["resim_us"] = (total_ns - restore_ns) / n / 1e3;
  state.counters["rollback_us"] = total_ns / n / 1e3;
  state.counters["bytes"] = static_cast<double>(written);
  state.counters["bodies"] = static_cast<double>(bodies);
}
BENCHMARK_CAPTURE(BM_Rollback, inputs_8_ticks, "inputs", 8)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Rollback, pile_8_ticks, "pile", 8)->Unit(benchmark::kMicrosecond);

/// Memory of a world: live heap bytes World::create takes for the scene's WorldDef (all of it:
/// the step never allocates, which step_allocations over 60 steps checks), per body of capacity
/// (bytes_per_body), and the marginal cost of one more body slot with every other capacity
/// unchanged (body_slot_bytes, from max_bodies + 1,000). Time is build_world's (creation and
/// bodies).
void BM_WorldMemory(benchmark::State& state, std::string_view name) {
  BenchScene bench;
  if (!make_bench_scene(name, &bench)) {
    state.SkipWithError("unknown scene");
    return;
  }
  for (auto _ : state) {
    const int64_t before = alloc_totals().live_bytes;
    const int64_t t0 = now_ns();
    std::unique_ptr<World> world = build_world(bench.scene);
    state.SetIterationTime(elapsed_ns(t0, now_ns()) / 1e9);
    const int64_t world_bytes = alloc_totals().live_bytes - before;
    if (world == nullptr) {
      state.SkipWithError("scene failed to build");
      return;
    }
    const uint64_t allocations_before = alloc_totals().allocations;
    warm_up(*world, 60);
    const uint64_t step_allocations = alloc_totals().allocations - allocations_before;

    WorldDef bigger = bench.scene.def;
    bigger.max_bodies += 1000;
    const int64_t before_bigger = alloc_totals().live_bytes;
    std::unique_ptr<World> bigger_world = World::create(bigger);
    const int64_t bigger_bytes = alloc_totals().live_bytes - before_bigger;
    const int64_t before_same = alloc_totals().live_bytes;
    std::unique_ptr<World> same_world = World::create(bench.scene.def);
    const int64_t empty_bytes = alloc_totals().live_bytes - before_same;

    const double capacity = static_cast<double>(bench.scene.def.max_bodies);
    state.counters["world_bytes"] = static_cast<double>(world_bytes);
    state.counters["max_bodies"] = capacity;
    state.counters["bytes_per_body"] = static_cast<double>(world_bytes) / capacity;
    state.counters["body_slot_bytes"] = static_cast<double>(bigger_bytes - empty_bytes) / 1000.0;
    state.counters["step_allocations"] = static_cast<double>(step_allocations);
  }
}
BENCHMARK_CAPTURE(BM_WorldMemory, pyramid, "pyramid")
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_WorldMemory, pile, "pile")
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_WorldMemory, pyramid3d, "pyramid3d")
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_WorldMemory, rain, "rain")
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_WorldMemory, grid_10000, "grid-10000")
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

// The series: N bodies resting on a grid over a plane (bench_scenes.h make_grid_scene), each
// touching only the plane, so the work is linear in N. step_ns_per_body is the whole step's
// mean time per body: flat as N grows 100x means the step (and the broadphase share,
// broadphase_ns_per_body) scales linearly; benchmark's complexity fit (BigO line) says the same.
void BM_BroadphaseScaling(benchmark::State& state) {
  const uint32_t n = static_cast<uint32_t>(state.range(0));
  std::unique_ptr<World> world = build_world(lockstep::bench::make_grid_scene(n));
  if (world == nullptr) {
    state.SkipWithError("scene failed to build");
    return;
  }
  warm_up(*world, 5);
  StageSums stages;
  std::vector<double> durations(4096);
  size_t count = 0;
  double total_ns = 0;
  for (auto _ : state) {
    int64_t t0 = now_ns();
    StepStatus status = world->step();
    int64_t t1 = now_ns();
    benchmark::DoNotOptimize(status);
    const double ns = elapsed_ns(t0, t1);
    total_ns += ns;
    if (count < durations.size()) durations[count++] = ns;
    stages.add(world->last_step_stats());
  }
  const double steps = static_cast<double>(state.iterations());
  stages.report(state, steps);
  report_distribution(state, durations, count);
  state.counters["bodies"] = static_cast<double>(n);
  state.counters["step_ns_per_body"] = total_ns / steps / static_cast<double>(n);
  state.counters["broadphase_ns_per_body"] = stages.broadphase_ns / steps / static_cast<double>(n);
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

// Determinism of the state: identical runs hash identically (in one process and across
// processes), a snapshot restored into a fresh world continues exactly like the uninterrupted
// run, and every malformed snapshot is refused with the right error and no change to the world.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "lockstep/sim/testing.h"
#include "lockstep/sim/world.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace {

using lockstep::sim::BodyDef;
using lockstep::sim::BodyId;
using lockstep::sim::BodyType;
using lockstep::sim::Error;
using lockstep::sim::Input;
using lockstep::sim::Quat;
using lockstep::sim::ShapeType;
using lockstep::sim::Vec3;
using lockstep::sim::World;
using lockstep::sim::WorldDef;

// Integer hash for scene jitter and inputs (SplitMix64 finaliser): the same on every machine.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A value in [lo, hi) from an integer: k / 2^16 is exact in float.
float uniform(uint64_t seed, float lo, float hi) {
  const float unit = static_cast<float>(mix(seed) & 0xffff) / 65536.0f;
  return lo + (hi - lo) * unit;
}

WorldDef scene_def() {
  WorldDef def = lockstep::sim::default_world_def();
  def.max_bodies = 256;
  def.max_contact_pairs = 2048;
  def.max_contact_points = 4096;
  def.max_candidate_pairs = 8192;
  def.measure_stage_times = false;
  return def;
}

BodyDef plane(Vec3 normal, float offset) {
  BodyDef def = lockstep::sim::default_body_def();
  def.type = BodyType::static_body;
  def.shape.type = ShapeType::plane;
  def.shape.plane_normal = normal;
  def.shape.plane_offset = offset;
  return def;
}

// Ground, four walls (planes facing in, 6 m from the centre), a kinematic sweeper, and
// `count` mixed dynamic bodies on a jittered grid; every seventh is owned by player 1 or 2.
void build_scene(World& world, int count, std::vector<BodyId>* owned = nullptr) {
  BodyId id{};
  ASSERT_EQ(world.create_body(plane({0, 1, 0}, 0), &id), Error::none);
  ASSERT_EQ(world.create_body(plane({1, 0, 0}, -6), &id), Error::none);
  ASSERT_EQ(world.create_body(plane({-1, 0, 0}, -6), &id), Error::none);
  ASSERT_EQ(world.create_body(plane({0, 0, 1}, -6), &id), Error::none);
  ASSERT_EQ(world.create_body(plane({0, 0, -1}, -6), &id), Error::none);
  BodyDef sweeper = lockstep::sim::default_body_def();
  sweeper.type = BodyType::kinematic;
  sweeper.shape.type = ShapeType::box;
  sweeper.shape.half_extents = {0.2f, 0.4f, 3.0f};
  sweeper.position = {-5.0f, 0.4f, 0};
  sweeper.linear_velocity = {0.5f, 0, 0};
  sweeper.angular_velocity = {0, 0.3f, 0};
  ASSERT_EQ(world.create_body(sweeper, &id), Error::none);
  for (int i = 0; i < count; ++i) {
    const uint64_t s = static_cast<uint64_t>(i) * 16;
    BodyDef def = lockstep::sim::default_body_def();
    def.position = {-4.5f + static_cast<float>(i % 10) + uniform(s + 1, -0.05f, 0.05f),
                    0.6f + 1.1f * static_cast<float>(i / 100) + uniform(s + 2, 0.0f, 0.1f),
                    -4.5f + static_cast<float>((i / 10) % 10) + uniform(s + 3, -0.05f, 0.05f)};
    def.orientation = lockstep::sim::normalize(
        Quat{uniform(s + 4, -0.3f, 0.3f), uniform(s + 5, -0.3f, 0.3f), 0, 1});
    def.linear_velocity = {uniform(s + 6, -1, 1), 0, uniform(s + 7, -1, 1)};
    def.shape.friction = uniform(s + 8, 0.2f, 0.8f);
    def.shape.restitution = (i % 5 == 0) ? 0.5f : 0.0f;
    def.linear_damping = (i % 3 == 0) ? 0.1f : 0.0f;
    def.angular_damping = (i % 4 == 0) ? 0.2f : 0.0f;
    switch (i % 3) {
      case 0:
        def.shape.type = ShapeType::sphere;
        def.shape.radius = uniform(s + 9, 0.2f, 0.45f);
        break;
      case 1:
        def.shape.type = ShapeType::box;
        def.shape.half_extents = {uniform(s + 10, 0.15f, 0.4f), uniform(s + 11, 0.15f, 0.4f),
                                  uniform(s + 12, 0.15f, 0.4f)};
        break;
      default:
        def.shape.type = ShapeType::capsule;
        def.shape.radius = uniform(s + 13, 0.15f, 0.25f);
        def.shape.half_height = uniform(s + 14, 0.1f, 0.2f);
        break;
    }
    if (i % 7 == 0) def.owner_player = 1 + static_cast<uint32_t>(i % 2);
    ASSERT_EQ(world.create_body(def, &id), Error::none);
    if (owned != nullptr && def.owner_player != 0) owned->push_back(id);
  }
}

// Inputs of one tick: a push on a few owned bodies, a function of the tick only.
void queue_inputs(World& world, const std::vector<BodyId>& owned, uint64_t tick) {
  for (size_t k = 0; k < owned.size(); ++k) {
    const uint64_t r = mix(tick * 1000 + k);
    if (r % 4 != 0) continue;
    lockstep::sim::BodyView view{};
    ASSERT_EQ(world.get_body(owned[k], &view), Error::none);
    Input in;
    in.player = view.owner_player;
    in.sequence = static_cast<uint32_t>(tick);
    in.body = owned[k];
    in.linear_impulse[0] = static_cast<int32_t>(r >> 8 & 0xffff) - 0x8000;
    in.linear_impulse[1] = static_cast<int32_t>(r >> 24 & 0x3fff);
    in.linear_impulse[2] = static_cast<int32_t>(r >> 40 & 0xffff) - 0x8000;
    in.angular_impulse[1] = static_cast<int32_t>(r >> 56) - 128;
    in.buttons = static_cast<uint32_t>(r);
    ASSERT_EQ(world.queue_input(in), Error::none);
  }
}

struct SimRun {
  std::unique_ptr<World> world;
  std::vector<BodyId> owned;
};

SimRun start_run(int count = 200) {
  SimRun run;
  run.world = World::create(scene_def());
  EXPECT_NE(run.world, nullptr);
  build_scene(*run.world, count, &run.owned);
  return run;
}

// Steps from the current tick to `end_tick`, queuing the inputs of each tick first.
void advance(SimRun& run, uint64_t end_tick, std::vector<uint64_t>* hashes) {
  while (run.world->tick() < end_tick) {
    queue_inputs(*run.world, run.owned, run.world->tick());
    run.world->step();
    if (hashes != nullptr) hashes->push_back(run.world->state_hash());
  }
}

std::vector<uint8_t> save(const World& world) {
  std::vector<uint8_t> bytes(world.snapshot_size());
  size_t written = 0;
  EXPECT_EQ(world.save_snapshot(bytes, &written), Error::none);
  EXPECT_EQ(written, bytes.size());
  return bytes;
}

// ---- same run, same hashes
// -----------------------------------------------------------------------

TEST(SimState, SameSceneTwiceGivesIdenticalHashSequences) {
  SimRun a = start_run(), b = start_run();
  EXPECT_EQ(a.world->state_hash(), b.world->state_hash());
  std::vector<uint64_t> ha, hb;
  advance(a, 600, &ha);
  advance(b, 600, &hb);
  ASSERT_EQ(ha.size(), 600u);
  EXPECT_EQ(ha, hb);
  // The hash follows the state: no two consecutive ticks hash alike while things move.
  for (size_t i = 1; i < ha.size(); ++i)
    ASSERT_NE(ha[i], ha[i - 1]) << "tick " << i;
  // And the run exercised contacts and inputs.
  EXPECT_GT(a.world->last_step_stats().contact_points, 100u);
  EXPECT_GT(a.world->counters().inputs_accepted, 500u);
}

TEST(SimState, SameSceneInAnotherProcessGivesIdenticalHashes) {
  constexpr uint64_t kTicks = 300;
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Child: its own heap and address layout; writes its hashes and leaves without gtest.
    close(fds[0]);
    SimRun run = start_run();
    std::vector<uint64_t> hashes;
    advance(run, kTicks, &hashes);
    const char* p = reinterpret_cast<const char*>(hashes.data());
    size_t left = hashes.size() * sizeof(uint64_t);
    while (left > 0) {
      const ssize_t n = write(fds[1], p, left);
      if (n <= 0) _exit(2);
      p += n;
      left -= static_cast<size_t>(n);
    }
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  // Parent: make its own heap differ a little before building the same scene.
  std::vector<std::unique_ptr<int>> noise;
  for (int i = 0; i < 1000; ++i)
    noise.push_back(std::make_unique<int>(i));
  std::vector<uint64_t> child_hashes(kTicks);
  char* p = reinterpret_cast<char*>(child_hashes.data());
  size_t left = child_hashes.size() * sizeof(uint64_t);
  while (left > 0) {
    const ssize_t n = read(fds[0], p, left);
    ASSERT_GT(n, 0) << "child wrote too little";
    p += n;
    left -= static_cast<size_t>(n);
  }
  close(fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);

  SimRun run = start_run();
  std::vector<uint64_t> hashes;
  advance(run, kTicks, &hashes);
  EXPECT_EQ(hashes, child_hashes);
}

// ---- snapshots
// ------------------------------------------------------------------------------------

TEST(SimState, SnapshotRestoredIntoAFreshWorldContinuesIdentically) {
  SimRun reference = start_run();
  std::vector<uint64_t> expected;
  advance(reference, 600, &expected);

  SimRun first = start_run();
  advance(first, 300, nullptr);
  // Queue tick 300's inputs before saving: queued inputs are part of the state.
  queue_inputs(*first.world, first.owned, 300);
  const std::vector<uint8_t> bytes = save(*first.world);

  std::unique_ptr<World> fresh = World::create(scene_def());
  ASSERT_NE(fresh, nullptr);
  ASSERT_EQ(fresh->restore_snapshot(bytes), Error::none);
  EXPECT_EQ(fresh->tick(), 300u);
  EXPECT_EQ(fresh->state_hash(), first.world->state_hash());
  EXPECT_EQ(save(*fresh), bytes);  // the state round-trips byte for byte

  SimRun resumed;
  resumed.world = std::move(fresh);
  resumed.owned = first.owned;  // same handles: slots and generations are in the snapshot
  resumed.world->step();        // tick 300's inputs came with the snapshot
  std::vector<uint64_t> hashes{resumed.world->state_hash()};
  advance(resumed, 600, &hashes);
  ASSERT_EQ(hashes.size(), 300u);
  for (size_t i = 0; i < hashes.size(); ++i) {
    ASSERT_EQ(hashes[i], expected[300 + i]) << "tick " << 301 + i;
  }
}

// Stacks that fall asleep, a ball that may not sleep rolling among them, and a script that
// wakes them: a box thrown at one stack (tick 200) and an input on another (tick 260).
void build_sleep_scene(World& world, std::vector<BodyId>* stack_tops) {
  BodyId id{};
  ASSERT_EQ(world.create_body(plane({0, 1, 0}, 0), &id), Error::none);
  for (int s = 0; s < 3; ++s) {
    for (int level = 0; level < 3; ++level) {
      BodyDef box = lockstep::sim::default_body_def();
      box.shape.type = ShapeType::box;
      box.shape.half_extents = {0.4f, 0.4f, 0.4f};
      box.position = {-3.0f + 3.0f * static_cast<float>(s), 0.4f + 0.8f * static_cast<float>(level),
                      0};
      ASSERT_EQ(world.create_body(box, &id), Error::none);
    }
    stack_tops->push_back(id);
  }
  BodyDef ball = lockstep::sim::default_body_def();
  ball.shape.radius = 0.3f;
  ball.position = {-4.0f, 0.3f, 3.0f};
  ball.linear_velocity = {0.2f, 0, 0};
  ball.allow_sleep = false;
  ASSERT_EQ(world.create_body(ball, &id), Error::none);
}

void sleep_script(World& world, const std::vector<BodyId>& stack_tops) {
  if (world.tick() == 200) {
    BodyDef thrown = lockstep::sim::default_body_def();
    thrown.shape.type = ShapeType::box;
    thrown.shape.half_extents = {0.2f, 0.2f, 0.2f};
    thrown.position = {-6.0f, 2.0f, 0};
    thrown.linear_velocity = {9.0f, 1.0f, 0};
    BodyId id{};
    ASSERT_EQ(world.create_body(thrown, &id), Error::none);
  }
  if (world.tick() == 260) {
    Input in;
    in.player = 1;
    in.sequence = 260;
    in.body = stack_tops[2];
    in.linear_impulse[2] = 200 * 1024;
    ASSERT_EQ(world.queue_input(in), Error::none);
  }
}

TEST(SimState, SnapshotsOfASleepingSceneContinueIdentically) {
  std::vector<BodyId> tops;
  std::unique_ptr<World> reference = World::create(scene_def());
  ASSERT_NE(reference, nullptr);
  build_sleep_scene(*reference, &tops);
  std::vector<uint64_t> expected;
  std::vector<lockstep::sim::StepStats> stats;
  while (reference->tick() < 600) {
    sleep_script(*reference, tops);
    reference->step();
    expected.push_back(reference->state_hash());
    stats.push_back(reference->last_step_stats());
  }
  // The scene does what it is for: stacks asleep while the ball rolls (tick 150), a stack woken
  // by the thrown box while the others sleep (tick 230); 262 is just after the input.
  EXPECT_EQ(stats[149].sleeping_bodies, 9u);
  EXPECT_EQ(stats[149].awake_dynamic_bodies, 1u);
  EXPECT_GT(stats[229].sleeping_bodies, 0u);
  EXPECT_GT(stats[229].awake_dynamic_bodies, 2u);

  for (const uint64_t snapshot_tick : {150u, 230u, 262u}) {
    std::unique_ptr<World> first = World::create(scene_def());
    std::vector<BodyId> first_tops;
    build_sleep_scene(*first, &first_tops);
    while (first->tick() < snapshot_tick) {
      sleep_script(*first, first_tops);
      first->step();
    }
    const std::vector<uint8_t> bytes = save(*first);
    std::unique_ptr<World> resumed = World::create(scene_def());
    ASSERT_EQ(resumed->restore_snapshot(bytes), Error::none);
    ASSERT_EQ(resumed->state_hash(), expected[snapshot_tick - 1]);
    EXPECT_EQ(save(*resumed), bytes);
    while (resumed->tick() < 600) {
      sleep_script(*resumed, first_tops);
      resumed->step();
      ASSERT_EQ(resumed->state_hash(), expected[resumed->tick() - 1])
          << "snapshot at " << snapshot_tick << ", tick " << resumed->tick();
    }
  }
}

TEST(SimState, RestoreReplacesAWorldThatHeldSomethingElse) {
  SimRun source = start_run(60);
  advance(source, 120, nullptr);
  // Destroy a few bodies so the snapshot has dead slots with bumped generations.
  BodyId ids[128];
  const uint32_t n = source.world->list_bodies(ids);
  ASSERT_GT(n, 40u);
  for (uint32_t i = 10; i < 40; i += 3)
    ASSERT_EQ(source.world->destroy_body(ids[i]), Error::none);
  std::vector<BodyId> owned;
  for (BodyId id : source.owned) {
    if (source.world->is_alive(id)) owned.push_back(id);
  }
  source.owned = owned;
  const std::vector<uint8_t> bytes = save(*source.world);

  SimRun target = start_run(200);  // more bodies and slots than the source
  advance(target, 50, nullptr);
  ASSERT_EQ(target.world->restore_snapshot(bytes), Error::none);
  EXPECT_EQ(target.world->state_hash(), source.world->state_hash());
  EXPECT_EQ(target.world->body_count(), source.world->body_count());
  EXPECT_EQ(save(*target.world), bytes);

  // Both now create a body: the lowest free slot comes from the alive flags, so the same handle.
  BodyDef extra = lockstep::sim::default_body_def();
  extra.position = {0, 8, 0};
  BodyId a{}, b{};
  ASSERT_EQ(source.world->create_body(extra, &a), Error::none);
  ASSERT_EQ(target.world->create_body(extra, &b), Error::none);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.generation, 1u);  // a reused slot
  target.owned = source.owned;
  std::vector<uint64_t> ha, hb;
  advance(source, 240, &ha);
  advance(target, 240, &hb);
  EXPECT_EQ(ha, hb);
}

// The state hash streams the encoding through a small scratch (a chunk and one record, whatever
// the world holds), so it must still be the XXH3 of the whole encoding: the bytes a snapshot
// carries between its 16-byte header and its 8-byte checksum, hashed here in one call. The world
// is filled towards the most a state can hold beyond bodies and contacts: every game-state field
// with every player's value, scores for the last players, and a full tick of inputs and
// commands queued (queued ones are state).
TEST(SimState, TheStreamedStateHashIsTheHashOfTheWholeEncoding) {
  using lockstep::sim::Command;
  using lockstep::sim::CommandType;
  SimRun run = start_run();
  advance(run, 30, nullptr);  // bodies in contact: manifolds and points in the encoding
  World& world = *run.world;
  for (uint32_t f = 0; f < lockstep::sim::kMaxStateFields; ++f) {
    lockstep::sim::StateFieldDef field;
    std::snprintf(field.name, sizeof field.name, "field%u", f);
    field.scope = lockstep::sim::StateScope::player;
    field.type = lockstep::sim::StateType::int32;
    ASSERT_EQ(world.declare_state_field(field), Error::none);
  }
  const uint32_t per_tick = world.def().max_commands_per_tick;
  uint32_t sequence = 0;
  auto queue = [&](CommandType type, uint32_t field, uint32_t player, int32_t value) {
    Command c;
    c.type = type;
    c.sequence = ++sequence;
    c.template_index = field;
    c.owner_player = player;
    c.score_delta = value;
    ASSERT_EQ(world.queue_command(c), Error::none);
    if (sequence % per_tick == 0) world.step();
  };
  for (uint32_t f = 0; f < lockstep::sim::kMaxStateFields; ++f) {
    for (uint32_t p = 1; p <= lockstep::sim::kMaxStatePlayers; ++p)
      queue(CommandType::set_state, f, p, static_cast<int32_t>(f * 1000 + p));
  }
  for (uint32_t p = lockstep::sim::kMaxPlayers - per_tick + 1; p <= lockstep::sim::kMaxPlayers; ++p)
    queue(CommandType::add_score, 0, p, -static_cast<int32_t>(p));
  world.step();
  EXPECT_EQ(world.state(lockstep::sim::kMaxStateFields - 1, lockstep::sim::kMaxStatePlayers),
            static_cast<int32_t>((lockstep::sim::kMaxStateFields - 1) * 1000 +
                                 lockstep::sim::kMaxStatePlayers));
  EXPECT_EQ(world.score(lockstep::sim::kMaxPlayers),
            -static_cast<int32_t>(lockstep::sim::kMaxPlayers));
  for (uint32_t k = 0; k < world.def().max_inputs_per_tick; ++k) {
    Input in;
    in.body = run.owned[k % run.owned.size()];
    lockstep::sim::BodyView view{};
    ASSERT_EQ(world.get_body(in.body, &view), Error::none);
    in.player = view.owner_player;
    in.sequence = k;
    in.linear_impulse[0] = static_cast<int32_t>(k);
    ASSERT_EQ(world.queue_input(in), Error::none) << "input " << k;
  }
  for (uint32_t k = 0; k < per_tick; ++k) {
    Command c;
    c.type = CommandType::add_score;
    c.sequence = 1 + k;
    c.owner_player = 1 + k;
    c.score_delta = 1;
    ASSERT_EQ(world.queue_command(c), Error::none);
  }
  const std::vector<uint8_t> bytes = save(world);
  ASSERT_GT(bytes.size(), 16u + 8u);
  EXPECT_EQ(world.state_hash(), XXH3_64bits(bytes.data() + 16, bytes.size() - 16 - 8));
  EXPECT_GT(bytes.size(), size_t{64} * 1024);  // several of the hash's chunks
}

TEST(SimState, SnapshotBytesAreIdenticalForIdenticalStates) {
  SimRun a = start_run(), b = start_run();
  advance(a, 90, nullptr);
  advance(b, 90, nullptr);
  const std::vector<uint8_t> sa = save(*a.world);
  EXPECT_EQ(sa, save(*b.world));
  EXPECT_EQ(sa, save(*a.world));  // saving does not change anything
  EXPECT_LE(sa.size(), a.world->max_snapshot_size());
  // A buffer one byte short is refused.
  std::vector<uint8_t> small(sa.size() - 1);
  size_t written = 99;
  EXPECT_EQ(a.world->save_snapshot(small, &written), Error::buffer_too_small);
  EXPECT_EQ(written, 0u);
  // One body nudged by one ulp: different bytes, different hash.
  BodyId ids[256];
  ASSERT_GT(b.world->list_bodies(ids), 20u);
  ASSERT_EQ(debug_perturb_position(*b.world, ids[20], {1e-6f, 0, 0}), Error::none);
  EXPECT_NE(sa, save(*b.world));
  EXPECT_NE(a.world->state_hash(), b.world->state_hash());
}

// ---- malformed snapshots
// ---------------------------------------------------------------------------

// Layout facts the tests rely on (state_stream.cpp documents the format).
constexpr size_t kHeaderBytes = 16;                         // "LSSN", u32 version, u64 total size
constexpr size_t kTrailerBytes = 8;                         // XXH3-64 of everything before it
constexpr size_t kPayloadSlots = kHeaderBytes + 4 + 8 + 8;  // slot count offset
constexpr size_t kFirstSlot = kPayloadSlots + 4;            // slot 0: u32 generation, u8 alive
constexpr size_t kLiveBodyBytes = 147;                      // after generation and alive
constexpr size_t kShapeBytes = 1 + 12 * 4 + 2 * 4;          // type, 12 floats, category, mask
// Warm-start point: feature, normal impulse, friction impulse (3), anchor in A's frame (3).
constexpr size_t kPointBytes = 4 + 4 + 12 + 12 + 4 + 4;
constexpr size_t kReferenceBytes = 12 + 16 + 12;  // a manifold's reference pose

void put_u32(std::vector<uint8_t>& b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    b[at + static_cast<size_t>(i)] = static_cast<uint8_t>(v >> (8 * i));
}

void reseal(std::vector<uint8_t>& b) {
  const size_t body = b.size() - kTrailerBytes;
  const uint64_t sum = XXH3_64bits(b.data(), body);
  for (int i = 0; i < 8; ++i)
    b[body + static_cast<size_t>(i)] = static_cast<uint8_t>(sum >> (8 * i));
}

// The restore is refused with `want` and the world keeps its exact state.
void expect_refused(World& world, const std::vector<uint8_t>& bytes, Error want, const char* what,
                    size_t at = 0) {
  const uint64_t hash = world.state_hash();
  const uint64_t tick = world.tick();
  ASSERT_EQ(world.restore_snapshot(bytes), want) << what << " at " << at;
  ASSERT_EQ(world.state_hash(), hash) << what << " at " << at;
  ASSERT_EQ(world.tick(), tick) << what << " at " << at;
}

TEST(SimState, TruncatedSnapshotsAreRefusedAtEveryLength) {
  SimRun source = start_run(60);
  advance(source, 60, nullptr);
  const std::vector<uint8_t> bytes = save(*source.world);
  SimRun target = start_run(30);
  advance(target, 10, nullptr);
  const std::vector<uint8_t> before = save(*target.world);
  for (size_t len = 0; len < bytes.size(); ++len) {
    const std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + static_cast<long>(len));
    expect_refused(*target.world, prefix, Error::snapshot_truncated, "prefix", len);
  }
  EXPECT_EQ(save(*target.world), before);
  // Trailing bytes are not a truncation but still not a snapshot of this size.
  std::vector<uint8_t> longer = bytes;
  longer.push_back(0);
  expect_refused(*target.world, longer, Error::snapshot_corrupt, "trailing byte");
}

TEST(SimState, HeaderErrorsAreNamed) {
  SimRun source = start_run(30);
  advance(source, 30, nullptr);
  const std::vector<uint8_t> bytes = save(*source.world);
  SimRun target = start_run(30);
  for (size_t i = 0; i < 4; ++i) {
    std::vector<uint8_t> bad = bytes;
    bad[i] ^= 0x20;
    expect_refused(*target.world, bad, Error::snapshot_bad_magic, "magic", i);
  }
  std::vector<uint8_t> future = bytes;
  put_u32(future, 4, 7);  // a version from the future, even with a valid checksum
  reseal(future);
  expect_refused(*target.world, future, Error::snapshot_version, "future version");
  // The state encoding's own version, inside the checksummed payload.
  std::vector<uint8_t> inner = bytes;
  put_u32(inner, kHeaderBytes, 99);
  reseal(inner);
  expect_refused(*target.world, inner, Error::snapshot_version, "state version");

  // A snapshot of a world made from another WorldDef.
  WorldDef other = scene_def();
  other.velocity_iterations = 9;
  std::unique_ptr<World> foreign = World::create(other);
  ASSERT_NE(foreign, nullptr);
  build_scene(*foreign, 30);
  expect_refused(*target.world, save(*foreign), Error::snapshot_mismatch, "other WorldDef");
  // measure_stage_times does not change the simulation, so it does not make a mismatch.
  WorldDef timed = scene_def();
  timed.measure_stage_times = true;
  std::unique_ptr<World> timed_world = World::create(timed);
  ASSERT_NE(timed_world, nullptr);
  EXPECT_EQ(timed_world->restore_snapshot(bytes), Error::none);
}

TEST(SimState, AFlippedByteAnywhereIsRefused) {
  SimRun source = start_run(20);
  advance(source, 40, nullptr);  // resting contacts in the cache, inputs applied
  queue_inputs(*source.world, source.owned, 40);
  const std::vector<uint8_t> bytes = save(*source.world);
  SimRun target = start_run(20);
  const std::vector<uint8_t> before = save(*target.world);
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::vector<uint8_t> bad = bytes;
    bad[i] ^= static_cast<uint8_t>(1u << (i % 8));
    const Error got = target.world->restore_snapshot(bad);
    Error want = Error::snapshot_corrupt;
    if (i < 4)
      want = Error::snapshot_bad_magic;
    else if (i < 8)
      want = Error::snapshot_version;
    if (i >= 8 && i < 16) {
      // The total-size field: a larger size reads as truncated, a smaller one as corrupt.
      ASSERT_TRUE(got == Error::snapshot_truncated || got == Error::snapshot_corrupt) << i;
    } else {
      ASSERT_EQ(got, want) << "byte " << i;
    }
  }
  EXPECT_EQ(save(*target.world), before);
}

// Payloads with a valid checksum but contents no world could hold: the validating pass refuses
// them before anything is written.
TEST(SimState, StructurallyInvalidPayloadsAreRefused) {
  SimRun source = start_run(20);
  advance(source, 40, nullptr);
  ASSERT_FALSE(source.owned.empty());
  Input in;
  in.player = 1;  // body 0 of the scene is owned by player 1
  in.sequence = 40;
  in.body = source.owned[0];
  in.linear_impulse[1] = 100;
  in.flags = lockstep::sim::input_sets_linear_velocity;
  in.linear_velocity[0] = 1024;
  ASSERT_EQ(source.world->queue_input(in), Error::none);
  const std::vector<uint8_t> bytes = save(*source.world);
  SimRun target = start_run(20);
  advance(target, 3, nullptr);
  const std::vector<uint8_t> before = save(*target.world);

  // Slot 0 is the ground plane (alive). Its fields after generation (4) and alive (1):
  // type (1), shape type (1), radius (4), half extents (12), half height (4), plane normal (12),
  // plane offset (4), density (4), friction (4), restitution (4), category and mask (8),
  // owner (4), damping (8),
  // position (12), orientation (16), velocities (24), mass (4), inertia (12).
  const size_t alive0 = kFirstSlot + 4;
  const size_t type0 = alive0 + 1;
  const size_t shape0 = type0 + 1;
  const size_t position0 = shape0 + kShapeBytes + 4 + 8;
  // Slot 6 is the first dynamic body (5 planes and the sweeper come first).
  const size_t slot6 = kFirstSlot + 6 * (5 + kLiveBodyBytes);
  const size_t velocity6 = slot6 + 5 + 1 + kShapeBytes + 4 + 8 + 12 + 16;
  const size_t mass6 = velocity6 + 24;
  // Sleep state after the inertia: u8 flags (1 allow sleep, 2 asleep), f32 timer, u32 island.
  const size_t sleep0 = alive0 + 1 + 138;
  const size_t sleep6 = mass6 + 4 + 12;

  struct Edit {
    const char* what;
    size_t at;
    uint32_t value;  // written as u32 LE (or the low byte when `byte`)
    bool byte;
  };
  const uint32_t nan_bits = 0x7fc00000u, inf_bits = 0x7f800000u;
  const Edit edits[] = {
      {"alive flag 2", alive0, 2, true},
      {"body type 7", type0, 7, true},
      {"shape type 9", shape0, 9, true},
      {"NaN position", position0, nan_bits, false},
      {"inf velocity", velocity6 + 4, inf_bits, false},
      {"NaN mass", mass6, nan_bits, false},
      {"negative mass", mass6, 0xbf800000u, false},
      {"slot count beyond capacity", kPayloadSlots, 100000, false},
      {"slot count short", kPayloadSlots, 3, false},
      {"ground turned dynamic", type0, 2, true},  // a dynamic plane is not allowed
      {"static body asleep", sleep0, 3, true},
      {"static body with a rest timer", sleep0 + 1, 0x3e800000u, false},
      {"unknown body flag 16", sleep6, 17, true},
      {"NaN rest timer", sleep6 + 1, nan_bits, false},
      {"negative rest timer", sleep6 + 1, 0xbf800000u, false},
      {"rest timer beyond time_to_sleep", sleep6 + 1, 0x3f800000u, false},
      {"island named by an awake body", sleep6 + 5, 3, false},
      {"asleep while moving, with an input queued", sleep6, 3, true},
  };
  for (const Edit& e : edits) {
    std::vector<uint8_t> bad = bytes;
    if (e.byte) {
      bad[e.at] = static_cast<uint8_t>(e.value);
    } else {
      put_u32(bad, e.at, e.value);
    }
    reseal(bad);
    expect_refused(*target.world, bad, Error::snapshot_corrupt, e.what);
  }
  // The trailing sections: the warm-start cache and the queued inputs, found by walking the
  // slots (u32 generation, u8 alive, 139 bytes when alive).
  uint32_t slot_count = 0;
  for (int i = 0; i < 4; ++i)
    slot_count |= uint32_t{bytes[kPayloadSlots + size_t(i)]} << (8 * i);
  size_t at = kFirstSlot;
  for (uint32_t slot = 0; slot < slot_count; ++slot)
    at += 5 + (bytes[at + 4] ? kLiveBodyBytes : 0);
  // u32 count; per manifold u64 key, u8 points, the reference pose, kPointBytes per point.
  const size_t cache = at;
  ASSERT_GE(bytes[cache], 2);
  const size_t key0 = cache + 4;
  const size_t points0 = key0 + 8;
  const size_t reference0 = points0 + 1;
  const size_t impulse0 = reference0 + kReferenceBytes + 4;
  const size_t key1 = reference0 + kReferenceBytes + kPointBytes * size_t{bytes[points0]};
  size_t inputs = cache + 4;
  const uint32_t manifolds = bytes[cache];
  for (uint32_t m = 0; m < manifolds; ++m)
    inputs += 9 + kReferenceBytes + kPointBytes * size_t{bytes[inputs + 8]};
  // The overlapping sensor pairs (u32 count, u64 keys): none in this scene.
  const size_t sensors = inputs;
  ASSERT_EQ(bytes[sensors], 0);
  inputs += 4;
  ASSERT_EQ(bytes[inputs], 1);  // the one input queued above
  // Per input: 44 bytes of ids, impulses and buttons, u32 flags, 24 bytes of target velocities.
  constexpr size_t kInputBytes = 44 + 4 + 24;
  // Then the queued commands (u32 count, none here) and the scores (u32 count, none here).
  const size_t commands = inputs + 4 + kInputBytes;
  const size_t scores = commands + 4;
  ASSERT_EQ(scores + 4 + kTrailerBytes, bytes.size());
  const Edit tail_edits[] = {
      {"manifold with no point", points0, 0, true},
      {"manifold with 5 points", points0, 5, true},
      {"pair key with a >= b", key0, 0, false},  // slot_b (low half) becomes 0
      {"pair keys out of order", key1, 0, false},
      {"negative normal impulse", impulse0, 0xbf800000u, false},
      {"NaN normal impulse", impulse0, nan_bits, false},
      {"inf friction impulse", impulse0 + 4, inf_bits, false},
      {"inf anchor", impulse0 + 16, inf_bits, false},
      {"NaN reference separation", impulse0 + 28, nan_bits, false},
      {"negative rest offset", impulse0 + 32, 0xbf800000u, false},
      {"NaN rest offset", impulse0 + 32, nan_bits, false},
      {"rest offset beyond its bound", impulse0 + 32, 0x3f800000u, false},  // 1 m
      {"NaN reference position", reference0, nan_bits, false},
      {"reference rotation not unit", reference0 + 12 + 12, 0x40000000u, false},  // w = 2
      {"reference normal not unit", reference0 + 28, 0x40000000u, false},
      {"sensor pair count beyond what follows", sensors, 1, false},
      {"input count beyond capacity", inputs, 100000, false},
      {"input for a dead slot", inputs + 4 + 8, 250, false},
      {"input with a stale generation", inputs + 4 + 12, 5, false},
      {"input for another player's body", inputs + 4, 2, false},
      {"input with an unknown flag", inputs + 4 + 44, 5, false},
      {"input with a velocity but no flag", inputs + 4 + 44, 0, false},
      {"input velocity beyond the limit", inputs + 4 + 48, 0x7fffffffu, false},
      {"command count beyond what follows", commands, 1, false},
      {"command count beyond capacity", commands, 100000, false},
      {"score count beyond what follows", scores, 1, false},
      {"score count beyond the players", scores, 100000, false},
  };
  for (const Edit& e : tail_edits) {
    std::vector<uint8_t> bad = bytes;
    if (e.byte) {
      bad[e.at] = static_cast<uint8_t>(e.value);
    } else {
      put_u32(bad, e.at, e.value);
    }
    reseal(bad);
    expect_refused(*target.world, bad, Error::snapshot_corrupt, e.what);
  }
  EXPECT_EQ(save(*target.world), before);
  // Sanity: the unedited bytes are accepted by the same world.
  EXPECT_EQ(target.world->restore_snapshot(bytes), Error::none);
  EXPECT_EQ(target.world->state_hash(), source.world->state_hash());
}

// A snapshot whose stacks sleep, edited into sleep states island.cpp never leaves: refused.
TEST(SimState, InvalidSleepStatesAreRefused) {
  std::vector<BodyId> tops;
  std::unique_ptr<World> source = World::create(scene_def());
  build_sleep_scene(*source, &tops);
  while (source->tick() < 150)
    source->step();
  BodyId ids[16];
  ASSERT_GE(source->list_bodies(ids), 4u);
  lockstep::sim::BodyView first{};
  ASSERT_EQ(source->get_body(ids[1], &first), Error::none);
  ASSERT_TRUE(first.asleep);  // slot 1, the bottom box of the first stack: its island's root
  const std::vector<uint8_t> bytes = save(*source);
  std::unique_ptr<World> target = World::create(scene_def());

  // Slot 0 is the ground plane; slot 1 the first box. Offsets inside slot 1 as in
  // StructurallyInvalidPayloadsAreRefused; slot 2 (the box above, same island) 144 bytes on.
  const size_t slot1 = kFirstSlot + 5 + kLiveBodyBytes;
  const size_t velocity1 = slot1 + 5 + 1 + kShapeBytes + 4 + 8 + 12 + 16;
  const size_t sleep1 = velocity1 + 24 + 4 + 12;
  const size_t sleep2 = sleep1 + 5 + kLiveBodyBytes;
  struct Edit {
    const char* what;
    size_t at;
    uint32_t value;
  };
  const Edit edits[] = {
      {"sleeping body with a -0 velocity", velocity1, 0x80000000u},
      {"sleeping body moving", velocity1 + 4, 0x3f800000u},
      {"sleeping body with a short rest timer", sleep1 + 1, 0x3e800000u},
      {"island named by a body that is not its root", sleep2 + 5, 2},
      {"island named after a later slot", sleep1 + 5, 2},
  };
  for (const Edit& e : edits) {
    std::vector<uint8_t> bad = bytes;
    put_u32(bad, e.at, e.value);
    reseal(bad);
    expect_refused(*target, bad, Error::snapshot_corrupt, e.what);
  }
  // The island root awake while the rest of its island sleeps.
  std::vector<uint8_t> bad = bytes;
  bad[sleep1] = 1;              // allow sleep, not asleep
  put_u32(bad, sleep1 + 5, 0);  // and naming no island
  reseal(bad);
  expect_refused(*target, bad, Error::snapshot_corrupt, "island root awake");
  EXPECT_EQ(target->restore_snapshot(bytes), Error::none);
  EXPECT_EQ(target->state_hash(), source->state_hash());
}

}  // namespace

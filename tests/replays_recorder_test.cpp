// Replay files (replays/recorder.h, read back with replay_reader.h): format round trip, the
// always-on window (≥ 10 s, a keyframe at or before its start, no allocation per tick), truncated
// and killed recordings, bad files, verification of a tampered hash, and a diff that names the
// tick, body and field of a perturbation made at a known tick.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "alloc_counter.h"
#include "lockstep/replays/record_file.h"
#include "lockstep/replays/recorder.h"
#include "lockstep/schema/compact_codec.h"
#include "lockstep/schema/frame.h"
#include "lockstep/schema/messages.h"
#include "lockstep/sim/scene.h"
#include "lockstep/sim/testing.h"
#include "lockstep/sim/version.h"

namespace {

using namespace lockstep;
using replays::LoadedReplay;

// The `inputs` scene (4 players × 4 bodies) driven by the scripted inputs: one "match".
struct Match {
  sim::Scene scene;
  std::unique_ptr<sim::World> world;
  sim::InputScript script;
  std::vector<sim::Input> buffer;
  std::vector<sim::Input> applied;
  uint64_t seed;

  explicit Match(uint64_t input_seed = 1) : seed(input_seed) {
    EXPECT_TRUE(sim::make_builtin_scene("inputs", &scene));
    world = sim::build_world(scene);
    script = sim::make_input_script(*world);
    buffer.resize(world->def().max_inputs_per_tick);
    applied.reserve(buffer.size());
  }
  // Queues the scripted inputs of the next tick and steps; `applied` holds the accepted ones.
  void step() {
    const uint32_t n = sim::scripted_inputs(seed, world->tick() + 1, script, *world, buffer);
    applied.clear();
    for (uint32_t i = 0; i < n; ++i)
      if (world->queue_input(buffer[i]) == sim::Error::none) applied.push_back(buffer[i]);
    world->step();
  }
  replays::ReplayHeader header() const { return replays::make_replay_header(*world, "inputs", 60); }
};

std::string temp_dir() {
  const std::string dir =
      std::filesystem::temp_directory_path() / ("replays_file_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

// Removes this process's temporary directory after the last test.
class TempDirCleanup : public ::testing::Environment {
 public:
  void TearDown() override { std::filesystem::remove_all(temp_dir()); }
};
[[maybe_unused]] ::testing::Environment* const g_cleanup =
    ::testing::AddGlobalTestEnvironment(new TempDirCleanup);

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A whole match of `ticks` ticks written by ReplayStreamWriter, returned as file bytes.
std::vector<uint8_t> stream_match(const std::string& path, uint64_t ticks) {
  Match m;
  replays::ReplayStreamWriter writer;
  EXPECT_TRUE(writer.open(path, m.header(), *m.world).ok);
  for (uint64_t i = 0; i < ticks; ++i) {
    m.step();
    EXPECT_TRUE(writer.record_step(*m.world, m.applied, m.world->state_hash(), std::nullopt).ok);
  }
  EXPECT_TRUE(writer.finish().ok);
  return read_bytes(path);
}

TEST(ReplayFile, RoundTripKeepsEveryField) {
  Match m;
  replays::ReplayWindow window(*m.world, {600, 120, 0});
  std::vector<std::vector<sim::Input>> inputs;
  std::vector<uint64_t> hashes;
  for (int i = 0; i < 50; ++i) {
    m.step();
    inputs.push_back(m.applied);
    hashes.push_back(m.world->state_hash());
    // Client-style records on odd ticks: the optional hash must survive as present/absent.
    const std::optional<uint64_t> client =
        i % 2 ? std::optional<uint64_t>(hashes.back() ^ 0xabcdu) : std::nullopt;
    ASSERT_TRUE(window.record_step(*m.world, m.applied, hashes.back(), client));
  }
  replays::ReplayHeader header = m.header();
  header.writer = replays::ReplayWriterKind::client;
  header.player_id = 3;
  header.room = "room-7";
  header.tick_rate_hz = 30;
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(window.write_bytes(&bytes, header).ok);

  LoadedReplay r;
  std::string error;
  ASSERT_TRUE(replays::load_replay(bytes, &r, &error)) << error;
  EXPECT_EQ(r.header.format_version, replays::kReplayFormatVersion);
  EXPECT_EQ(r.header.lockstep_version, replays::lockstep_version_string());
  EXPECT_EQ(r.header.scene, "inputs");
  EXPECT_EQ(r.header.room, "room-7");
  EXPECT_EQ(r.header.tick_rate_hz, 30u);
  EXPECT_EQ(r.header.writer, replays::ReplayWriterKind::client);
  EXPECT_EQ(r.header.player_id, 3u);
  EXPECT_EQ(r.header.physics_revision, sim::kPhysicsRevision);
  EXPECT_EQ(r.header.first_tick, 0u);
  // The WorldDef must come back bit for bit: its fingerprint is computed independently here.
  EXPECT_EQ(sim::world_def_fingerprint(r.header.world_def),
            sim::world_def_fingerprint(m.scene.def));
  EXPECT_EQ(r.header.world_def.max_bodies, m.scene.def.max_bodies);
  EXPECT_EQ(r.header.world_def.dt_s, m.scene.def.dt_s);
  EXPECT_EQ(r.header.world_def_fingerprint, sim::world_def_fingerprint(m.scene.def));
  ASSERT_EQ(r.ticks.size(), 50u);
  for (size_t i = 0; i < r.ticks.size(); ++i) {
    EXPECT_EQ(r.ticks[i].tick, i + 1);
    EXPECT_EQ(r.ticks[i].authoritative_hash, hashes[i]);
    EXPECT_EQ(r.ticks[i].client_hash.has_value(), i % 2 == 1);
    ASSERT_EQ(r.ticks[i].inputs.size(), inputs[i].size());
    for (size_t k = 0; k < inputs[i].size(); ++k) {
      const sim::Input& a = r.ticks[i].inputs[k];
      const sim::Input& b = inputs[i][k];
      EXPECT_EQ(a.player, b.player);
      EXPECT_EQ(a.sequence, b.sequence);
      EXPECT_EQ(a.body, b.body);
      for (int c = 0; c < 3; ++c) {
        EXPECT_EQ(a.linear_impulse[c], b.linear_impulse[c]);
        EXPECT_EQ(a.angular_impulse[c], b.angular_impulse[c]);
      }
      EXPECT_EQ(a.buttons, b.buttons);
    }
  }
  EXPECT_FALSE(inputs[0].empty()) << "the scripted match must carry inputs to test anything";
  ASSERT_EQ(r.keyframes.size(), 1u);
  EXPECT_EQ(r.keyframes[0].tick, 0u);
  EXPECT_FALSE(r.truncated);
  // Re-simulating from the keyframe reproduces the recorded hashes.
  EXPECT_TRUE(replays::verify_replay(r).ok);
}

TEST(ReplayFile, HeaderKeepsTheSleepingFields) {
  Match m;
  replays::ReplayWindow window(*m.world, {600, 120, 0});
  m.step();
  ASSERT_TRUE(window.record_step(*m.world, m.applied, m.world->state_hash(), std::nullopt));
  for (const bool enable : {true, false}) {
    replays::ReplayHeader header = m.header();
    header.world_def.enable_sleep = enable;
    header.world_def.sleep_speed_threshold_mps = enable ? 0.07f : 0.0f;
    header.world_def.time_to_sleep_s = 1.25f;
    header.world_def_fingerprint = sim::world_def_fingerprint(header.world_def);
    std::vector<uint8_t> bytes;
    ASSERT_TRUE(window.write_bytes(&bytes, header).ok);
    LoadedReplay r;
    std::string error;
    ASSERT_TRUE(replays::load_replay(bytes, &r, &error)) << error;
    EXPECT_EQ(r.header.world_def.enable_sleep, enable);
    EXPECT_EQ(r.header.world_def.sleep_speed_threshold_mps, enable ? 0.07f : 0.0f);
    EXPECT_EQ(r.header.world_def.time_to_sleep_s, 1.25f);
    EXPECT_EQ(sim::world_def_fingerprint(r.header.world_def), header.world_def_fingerprint);
  }
}

TEST(ReplayFile, StreamedMatchVerifies) {
  const std::string path = temp_dir() + "/stream.lsr";
  const std::vector<uint8_t> bytes = stream_match(path, 120);
  LoadedReplay r;
  std::string error;
  ASSERT_TRUE(replays::load_replay(bytes, &r, &error)) << error;
  EXPECT_EQ(r.ticks.size(), 120u);
  EXPECT_EQ(r.records, 122u);  // header + keyframe + 120 ticks
  const replays::VerifyResult v = replays::verify_replay(r);
  EXPECT_TRUE(v.ok) << v.error;
  EXPECT_EQ(v.ticks_verified, 120u);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

// Format 4: every tick turns some scripted pushes into target velocities; the file gives back
// each input's flags and targets, the WorldDef's velocity limits, command capacity and spawn
// templates (same fingerprint), and verifies.
TEST(ReplayFile, VelocityInputsAndTemplatesRoundTripAndVerify) {
  Match m;
  m.scene.def.max_input_linear_velocity = 7.5f;
  m.scene.def.max_input_angular_velocity = 3.25f;
  // Spawn templates and the command capacity travel in the header's WorldDef (fingerprinted).
  m.scene.def.max_commands_per_tick = 5;
  m.scene.def.template_count = 2;
  ASSERT_TRUE(sim::set_template_name(&m.scene.def.templates[0], "crate"));
  m.scene.def.templates[0].shape.type = sim::ShapeType::box;
  m.scene.def.templates[0].shape.half_extents = {0.5f, 0.25f, 0.125f};
  m.scene.def.templates[0].shape.category = 4;
  m.scene.def.templates[0].allow_sleep = false;
  ASSERT_TRUE(sim::set_template_name(&m.scene.def.templates[1], "goal-zone.1"));
  m.scene.def.templates[1].type = sim::BodyType::static_body;
  m.scene.def.templates[1].shape.sensor = true;
  m.scene.def.templates[1].linear_damping = 0.5f;
  m.world = sim::build_world(m.scene);
  m.script = sim::make_input_script(*m.world);
  replays::ReplayWindow window(*m.world, {600, 120, 0});
  std::vector<std::vector<sim::Input>> inputs;
  uint32_t with_velocity = 0;
  for (int i = 0; i < 40; ++i) {
    const uint32_t n =
        sim::scripted_inputs(m.seed, m.world->tick() + 1, m.script, *m.world, m.buffer);
    m.applied.clear();
    for (uint32_t k = 0; k < n; ++k) {
      sim::Input in = m.buffer[k];
      if ((k + static_cast<uint32_t>(i)) % 2 == 0) {
        in.flags = sim::input_sets_linear_velocity | sim::input_sets_angular_velocity;
        in.linear_velocity[0] = 3 * 1024 + static_cast<int32_t>(k);
        in.linear_velocity[2] = -7 * 1024;
        in.angular_velocity[1] = -(3 << 10) - 256;
        ++with_velocity;
      }
      ASSERT_EQ(m.world->queue_input(in), sim::Error::none);
      m.applied.push_back(in);
    }
    m.world->step();
    inputs.push_back(m.applied);
    ASSERT_TRUE(window.record_step(*m.world, m.applied, m.world->state_hash(), std::nullopt));
  }
  ASSERT_GT(with_velocity, 0u);
  replays::ReplayHeader header = m.header();
  header.scene = "";  // a custom WorldDef: verified from the keyframe, not the built-in scene
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(window.write_bytes(&bytes, header).ok);
  LoadedReplay r;
  std::string error;
  ASSERT_TRUE(replays::load_replay(bytes, &r, &error)) << error;
  EXPECT_EQ(r.header.world_def.max_input_linear_velocity, 7.5f);
  EXPECT_EQ(r.header.world_def.max_input_angular_velocity, 3.25f);
  EXPECT_EQ(r.header.world_def.max_commands_per_tick, 5u);
  ASSERT_EQ(r.header.world_def.template_count, 2u);
  EXPECT_EQ(sim::find_template(r.header.world_def, "goal-zone.1"), 1);
  EXPECT_TRUE(r.header.world_def.templates[1].shape.sensor);
  EXPECT_EQ(r.header.world_def.templates[0].shape.half_extents.z, 0.125f);
  EXPECT_FALSE(r.header.world_def.templates[0].allow_sleep);
  EXPECT_EQ(sim::world_def_fingerprint(r.header.world_def),
            sim::world_def_fingerprint(m.scene.def));
  ASSERT_EQ(r.ticks.size(), inputs.size());
  for (size_t i = 0; i < r.ticks.size(); ++i) {
    ASSERT_EQ(r.ticks[i].inputs.size(), inputs[i].size());
    for (size_t k = 0; k < inputs[i].size(); ++k) {
      const sim::Input& a = r.ticks[i].inputs[k];
      const sim::Input& b = inputs[i][k];
      EXPECT_EQ(a.flags, b.flags);
      for (int c = 0; c < 3; ++c) {
        EXPECT_EQ(a.linear_velocity[c], b.linear_velocity[c]);
        EXPECT_EQ(a.angular_velocity[c], b.angular_velocity[c]);
        EXPECT_EQ(a.linear_impulse[c], b.linear_impulse[c]);
      }
    }
  }
  const replays::VerifyResult v = replays::verify_replay(r);
  EXPECT_TRUE(v.ok) << v.error;
}

// Since replay format 6 a tick record is the compact body of its tick's TickFrame, byte for byte
// (docs/protocol.md, "Compact bodies"): the file holds exactly the wire's body bytes.
TEST(ReplayFile, ATickRecordIsTheWiresTickFrameBody) {
  sim::Input input;
  input.player = 3;
  input.sequence = 0x11223344u;
  input.body = sim::BodyId{0x00a0b0c0u, 0x0d0e0f10u};
  input.linear_impulse[0] = -2;
  input.linear_impulse[1] = 1 << 20;
  input.linear_impulse[2] = 7;
  input.angular_impulse[0] = -(1 << 30);
  input.angular_impulse[1] = 0x7fffffff;
  input.angular_impulse[2] = -1;
  input.buttons = 0xdeadbeefu;

  Match m;
  replays::ReplayWindow window(*m.world, {600, 120, 0});
  m.step();
  ASSERT_TRUE(window.record_step(*m.world, std::span<const sim::Input>(&input, 1),
                                 m.world->state_hash(), std::nullopt));
  std::vector<uint8_t> file;
  ASSERT_TRUE(window.write_bytes(&file, m.header()).ok);
  const std::vector<uint8_t> frame =
      schema::encode_frame(schema::TickFrame{m.world->tick(), {input}, m.world->state_hash(), {}});
  const std::vector<uint8_t> body(frame.begin() + schema::kFrameHeaderBytes, frame.end());
  size_t n = 0;
  for (auto it = file.begin();
       (it = std::search(it, file.end(), body.begin(), body.end())) != file.end(); ++it)
    ++n;
  EXPECT_EQ(n, 1u);
  LoadedReplay r;
  std::string error;
  ASSERT_TRUE(replays::load_replay(file, &r, &error)) << error;
  ASSERT_EQ(r.ticks.size(), 1u);
  ASSERT_EQ(r.ticks[0].inputs.size(), 1u);
  EXPECT_EQ(r.ticks[0].inputs[0].sequence, input.sequence);
  EXPECT_EQ(r.ticks[0].inputs[0].buttons, input.buttons);
  EXPECT_EQ(r.ticks[0].inputs[0].angular_impulse[0], input.angular_impulse[0]);
}

TEST(ReplayWindow, KeepsTenSecondsWithAKeyframeAtOrBeforeItsStart) {
  Match m;
  const replays::ReplayWindowConfig config{600, 120, 0};
  replays::ReplayWindow window(*m.world, config);
  const size_t memory = window.memory_bytes();
  for (int i = 0; i < 1000; ++i) {
    m.step();
    window.record_step(*m.world, m.applied, m.world->state_hash(), std::nullopt);
    // After every tick the window holds ≥ 600 ticks (or all of them early on) and its first
    // keyframe is at or before the window's start — so the keyframe ring never drops one that
    // is still needed.
    const uint64_t last = m.world->tick();
    ASSERT_TRUE(window.first_written_tick().has_value());
    const uint64_t first = *window.first_written_tick();
    ASSERT_LE(first, last >= 600 ? last - 600 : 0) << "at tick " << last;
    ASSERT_EQ(first % 120, 0u);
  }
  EXPECT_EQ(window.memory_bytes(), memory);
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(window.write_bytes(&bytes, m.header()).ok);
  LoadedReplay r;
  std::string error;
  ASSERT_TRUE(replays::load_replay(bytes, &r, &error)) << error;
  EXPECT_EQ(r.last_tick(), 1000u);
  EXPECT_GE(r.ticks.size(), 600u);
  EXPECT_LE(r.header.first_tick, 1000u - 600u);
  EXPECT_EQ(r.header.first_tick, 360u);  // newest multiple of 120 at or before 400
  EXPECT_TRUE(replays::verify_replay(r).ok);
}

TEST(ReplayWindow, KeyframesOverTheSlotSizeAreSkippedAndCounted) {
  Match m;
  replays::ReplayWindowConfig config{600, 10, 0};
  config.keyframe_slot_bytes = 64;  // far below any snapshot of this scene
  replays::ReplayWindow window(*m.world, config);
  EXPECT_EQ(window.skipped_keyframes(), 1u);  // the starting keyframe
  EXPECT_FALSE(window.first_written_tick().has_value());
  for (int i = 0; i < 20; ++i) {
    m.step();
    window.record_step(*m.world, m.applied, m.world->state_hash(), std::nullopt);
  }
  EXPECT_EQ(window.skipped_keyframes(), 3u);  // ticks 10 and 20 too
  std::vector<uint8_t> bytes;
  EXPECT_FALSE(window.write_bytes(&bytes, m.header()).ok);
}

TEST(ReplayWindow, RecordingAllocatesNothing) {
  Match m;
  replays::ReplayWindow window(*m.world, {600, 60, 0});
  // Warm up past a wrap of both rings so every slot has been used once.
  for (int i = 0; i < 700; ++i) {
    m.step();
    window.record_step(*m.world, m.applied, m.world->state_hash(), std::nullopt);
  }
  // The counter must see allocations, or the zero below proves nothing.
  {
    lockstep::testing::AllocationCounter probe_counter;
    { std::vector<int> probe(3); }
    ASSERT_GT(probe_counter.count(), 0u);
  }

  std::vector<sim::Input> inputs(16);
  uint64_t allocations = 0;
  for (int i = 0; i < 300; ++i) {
    m.step();  // outside the counted span: the sim's own test covers it
    lockstep::testing::AllocationCounter counter;
    window.record_step(*m.world, m.applied, m.world->state_hash(), m.world->state_hash());
    allocations += counter.count();
  }
  EXPECT_EQ(allocations, 0u);
}

TEST(ReplayFile, TruncatedFileReadsToItsLastCompleteRecord) {
  const std::string path = temp_dir() + "/truncated.lsr";
  std::vector<uint8_t> bytes = stream_match(path, 60);
  ASSERT_GT(bytes.size(), 100u);
  bytes.erase(bytes.end() - 5, bytes.end());  // cut inside the last tick record
  LoadedReplay r;
  std::string error;
  ASSERT_TRUE(replays::load_replay(bytes, &r, &error)) << error;
  EXPECT_TRUE(r.truncated);
  EXPECT_EQ(r.ticks.size(), 59u);
  EXPECT_NE(r.integrity.find("truncated"), std::string::npos) << r.integrity;
  EXPECT_TRUE(replays::verify_replay(r).ok);
}

TEST(ReplayFile, KilledRecorderLeavesAReadableFile) {
  const std::string path = temp_dir() + "/killed.lsr";
  std::filesystem::remove(path + ".tmp");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Match m;
    replays::ReplayStreamWriter writer;
    if (!writer.open(path, m.header(), *m.world).ok) ::_exit(3);
    for (int i = 0; i < 90; ++i) {
      m.step();
      if (!writer.record_step(*m.world, m.applied, m.world->state_hash(), std::nullopt).ok)
        ::_exit(4);
    }
    ::kill(::getpid(), SIGKILL);  // no destructor, no finish()
    ::_exit(5);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exit " << WEXITSTATUS(status);
  EXPECT_FALSE(std::filesystem::exists(path));  // never published
  LoadedReplay r;
  std::string error;
  ASSERT_TRUE(replays::load_replay_file(path + ".tmp", &r, &error)) << error;
  EXPECT_EQ(r.ticks.size(), 90u);  // flushed every tick: nothing lost
  EXPECT_TRUE(replays::verify_replay(r).ok);
}

// Encoded in memory on one thread and written in chunks on another (the server's match
// recordings), a match gives the same file, byte for byte, as ReplayStreamWriter.
TEST(ReplayFile, EncodedInChunksTheStreamIsTheSameFile) {
  const std::string dir = temp_dir();
  constexpr uint32_t kKeyframeEvery = 20;
  replays::ReplayStreamOptions options;
  options.keyframe_interval_ticks = kKeyframeEvery;
  Match streamed;
  replays::ReplayStreamWriter stream;
  ASSERT_TRUE(stream.open(dir + "/streamed.lsr", streamed.header(), *streamed.world, options).ok);

  Match encoded;
  replays::ReplayStreamEncoder encoder;
  replays::RecordWriter writer;
  ASSERT_EQ(writer.open(dir + "/chunked.lsr"), replays::RecordError::none);
  std::vector<uint8_t> chunk;
  ASSERT_TRUE(encoder.begin(encoded.header(), *encoded.world, kKeyframeEvery, &chunk).ok);
  for (int i = 0; i < 100; ++i) {
    streamed.step();
    encoded.step();
    ASSERT_TRUE(stream
                    .record_step(*streamed.world, streamed.applied, streamed.world->state_hash(),
                                 std::nullopt)
                    .ok);
    ASSERT_TRUE(encoder
                    .record_step(*encoded.world, encoded.applied, encoded.world->state_hash(),
                                 std::nullopt, {}, &chunk)
                    .ok);
    if (i % 10 == 5) {  // game messages (format 9) after some ticks, the same way in both
      const std::vector<uint8_t> said = {'g', 'g', static_cast<uint8_t>(i)};
      ASSERT_TRUE(stream.record_game_message(streamed.world->tick(), 2, said).ok);
      ASSERT_TRUE(encoder.record_game_message(encoded.world->tick(), 2, said, &chunk).ok);
    }
    if (i % 7 == 3) {  // chunks of uneven sizes, some holding a keyframe
      ASSERT_EQ(writer.append_framed(chunk), replays::RecordError::none);
      chunk.clear();
    }
  }
  ASSERT_EQ(writer.append_framed(chunk), replays::RecordError::none);
  ASSERT_TRUE(stream.finish().ok);
  ASSERT_EQ(writer.finish(), replays::RecordError::none);

  const std::vector<uint8_t> want = read_bytes(dir + "/streamed.lsr");
  const std::vector<uint8_t> got = read_bytes(dir + "/chunked.lsr");
  ASSERT_FALSE(want.empty());
  EXPECT_EQ(got, want);
  LoadedReplay r;
  std::string error;
  ASSERT_TRUE(replays::load_replay(got, &r, &error)) << error;
  EXPECT_EQ(r.ticks.size(), 100u);
  EXPECT_GE(r.keyframes.size(), 6u);
  EXPECT_TRUE(replays::verify_replay(r).ok);
  ASSERT_EQ(r.game_messages.size(), 10u);
  for (size_t k = 0; k < r.game_messages.size(); ++k) {
    EXPECT_EQ(r.game_messages[k].tick, 10 * k + 6);  // after the step of tick i + 1
    EXPECT_EQ(r.game_messages[k].player, 2u);
    EXPECT_EQ(r.game_messages[k].data, (std::vector<uint8_t>{'g', 'g', uint8_t(10 * k + 5)}));
  }
}

TEST(ReplayFile, AGameMessageForATickTheFileHasNotReachedIsRefused) {
  const std::string dir = temp_dir();
  Match m;
  replays::ReplayStreamWriter writer;
  ASSERT_TRUE(writer.open(dir + "/ahead.lsr", m.header(), *m.world).ok);
  m.step();
  ASSERT_TRUE(writer.record_step(*m.world, m.applied, m.world->state_hash(), std::nullopt).ok);
  const std::vector<uint8_t> said = {'h', 'i'};
  ASSERT_TRUE(writer.record_game_message(m.world->tick() + 1, 1, said).ok);
  ASSERT_TRUE(writer.finish().ok);
  LoadedReplay r;
  std::string error;
  EXPECT_FALSE(replays::load_replay(read_bytes(dir + "/ahead.lsr"), &r, &error));
  EXPECT_NE(error.find("game message for tick 2 out of order"), std::string::npos) << error;
}

TEST(ReplayFile, BadFilesAreRefusedWithOneLine) {
  const std::string dir = temp_dir();
  const std::vector<uint8_t> good = stream_match(dir + "/good.lsr", 10);
  LoadedReplay r;
  std::string error;

  std::vector<uint8_t> bad_magic = good;
  bad_magic[0] = 'X';
  EXPECT_FALSE(replays::load_replay(bad_magic, &r, &error));
  EXPECT_NE(error.find("not a lockstep replay file"), std::string::npos) << error;

  // Flip a byte inside the third record's payload: its checksum fails at its offset.
  std::vector<uint8_t> corrupt = good;
  replays::RecordReader reader(good);
  std::span<const uint8_t> payload;
  reader.next(&payload);
  reader.next(&payload);
  const uint64_t third = reader.offset_bytes();
  corrupt[third + replays::kRecordHeaderBytes + 3] ^= 0x40;
  EXPECT_FALSE(replays::load_replay(corrupt, &r, &error));
  EXPECT_NE(error.find(std::to_string(third)), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos);

  std::vector<uint8_t> empty;
  EXPECT_FALSE(replays::load_replay(empty, &r, &error));
  EXPECT_FALSE(error.empty());
}

// Re-frames records with valid checksums, so the damage reaches the FlatBuffers layer.
std::vector<uint8_t> frame_records(const std::vector<std::vector<uint8_t>>& payloads) {
  std::vector<uint8_t> out;
  out.reserve(1 << 20);
  // "LSRP", record format version 1, reserved 0 (GCC 12 warns falsely on insert() here).
  for (const uint8_t b : {uint8_t{'L'}, uint8_t{'S'}, uint8_t{'R'}, uint8_t{'P'}, uint8_t{1},
                          uint8_t{0}, uint8_t{0}, uint8_t{0}})
    out.push_back(b);
  for (const std::vector<uint8_t>& p : payloads) {
    const uint64_t size = p.size(), sum = XXH3_64bits(p.data(), p.size());
    for (int i = 0; i < 4; ++i)
      out.push_back(static_cast<uint8_t>(size >> (8 * i)));
    for (int i = 0; i < 8; ++i)
      out.push_back(static_cast<uint8_t>(sum >> (8 * i)));
    out.insert(out.end(), p.begin(), p.end());
  }
  return out;
}

TEST(ReplayFile, DamagedPayloadsWithValidChecksumsNeverCrash) {
  const std::vector<uint8_t> good = stream_match(temp_dir() + "/fuzz.lsr", 4);
  std::vector<std::vector<uint8_t>> payloads;
  replays::RecordReader reader(good);
  std::span<const uint8_t> payload;
  while (reader.next(&payload) == replays::RecordError::none)
    payloads.emplace_back(payload.begin(), payload.end());
  ASSERT_EQ(payloads.size(), 6u);
  // The framing itself is right: unchanged payloads load.
  LoadedReplay r;
  std::string error;
  ASSERT_TRUE(replays::load_replay(frame_records(payloads), &r, &error)) << error;

  // Every third byte of the header and tick records, and a stride of the keyframe, flipped: each
  // file either loads (and then verifies or fails cleanly) or is refused with a message.
  uint64_t refused = 0, loaded = 0;
  for (size_t record = 0; record < payloads.size(); ++record) {
    const size_t stride = payloads[record].size() > 2000 ? 97 : 3;
    for (size_t at = 0; at < payloads[record].size(); at += stride) {
      std::vector<std::vector<uint8_t>> damaged = payloads;
      damaged[record][at] ^= 0xff;
      if (replays::load_replay(frame_records(damaged), &r, &error)) {
        ++loaded;
        const replays::VerifyResult v = replays::verify_replay(r);
        EXPECT_TRUE(v.ok || !v.error.empty() || v.first_divergent_tick.has_value());
      } else {
        ++refused;
        EXPECT_FALSE(error.empty());
        EXPECT_EQ(error.find('\n'), std::string::npos) << error;
      }
    }
  }
  EXPECT_GT(refused, 0u);
  EXPECT_GT(loaded, 0u);  // e.g. a changed hash or input value is still a well-formed record
  // A record order the format does not allow: two headers, ticks before the keyframe.
  EXPECT_FALSE(replays::load_replay(frame_records({payloads[0], payloads[0]}), &r, &error));
  EXPECT_NE(error.find("second header"), std::string::npos) << error;
  EXPECT_FALSE(replays::load_replay(frame_records({payloads[0], payloads[2]}), &r, &error));
  EXPECT_NE(error.find("before the first keyframe"), std::string::npos) << error;
  // (Tick 1, then tick 3: tick 2 left out. Tick 3's inputs are read against tick 1's.)
  EXPECT_FALSE(replays::load_replay(
      frame_records({payloads[0], payloads[1], payloads[2], payloads[4]}), &r, &error));
  EXPECT_NE(error.find("out of order"), std::string::npos) << error;
}

TEST(ReplayFile, WorldChecks) {
  Match m;
  replays::ReplayWindow window(*m.world, {600, 120, 0});
  m.step();
  window.record_step(*m.world, m.applied, m.world->state_hash(), std::nullopt);
  std::string error;
  LoadedReplay r;
  std::vector<uint8_t> bytes;

  replays::ReplayHeader header = m.header();
  header.scene = "no-such-scene";
  ASSERT_TRUE(window.write_bytes(&bytes, header).ok);
  ASSERT_TRUE(replays::load_replay(bytes, &r, &error)) << error;
  EXPECT_FALSE(replays::verify_replay(r).ok);
  EXPECT_NE(replays::verify_replay(r).error.find("not built into"), std::string::npos);

  header = m.header();
  header.world_def_fingerprint ^= 1;
  ASSERT_TRUE(window.write_bytes(&bytes, header).ok);
  ASSERT_TRUE(replays::load_replay(bytes, &r, &error)) << error;
  EXPECT_NE(replays::verify_replay(r).error.find("fingerprint mismatch"), std::string::npos);

  header = m.header();
  header.format_version = replays::kReplayFormatVersion + 1;
  ASSERT_TRUE(window.write_bytes(&bytes, header).ok);
  EXPECT_FALSE(replays::load_replay(bytes, &r, &error));
  EXPECT_NE(error.find("newer"), std::string::npos) << error;

  // Recorded by another simulation: it loads (info, dump and diff read it), but nothing
  // re-simulates it, which would report a divergence that is not in the match.
  header = m.header();
  header.physics_revision = sim::kPhysicsRevision + 1;
  ASSERT_TRUE(window.write_bytes(&bytes, header).ok);
  ASSERT_TRUE(replays::load_replay(bytes, &r, &error)) << error;
  EXPECT_EQ(r.header.physics_revision, sim::kPhysicsRevision + 1);
  EXPECT_EQ(replays::make_replay_world(r, &error), nullptr);
  const std::string expected =
      "recorded with physics revision " + std::to_string(sim::kPhysicsRevision + 1) +
      " (lockstep " + replays::lockstep_version_string() + "); this build simulates revision " +
      std::to_string(sim::kPhysicsRevision);
  EXPECT_NE(error.find(expected), std::string::npos) << error;
  const replays::VerifyResult other = replays::verify_replay(r);
  EXPECT_FALSE(other.ok);
  EXPECT_FALSE(other.first_divergent_tick.has_value()) << "reported as a divergence";
  EXPECT_NE(other.error.find(expected), std::string::npos) << other.error;

  // A file written before the field states none (0): taken on trust, it verifies.
  header = m.header();
  header.physics_revision = 0;
  ASSERT_TRUE(window.write_bytes(&bytes, header).ok);
  ASSERT_TRUE(replays::load_replay(bytes, &r, &error)) << error;
  EXPECT_EQ(r.header.physics_revision, 0u);
  EXPECT_TRUE(replays::verify_replay(r).ok) << replays::verify_replay(r).error;
}

TEST(ReplayVerify, TamperedHashNamesTheTick) {
  Match m;
  replays::ReplayStreamWriter writer;
  const std::string path = temp_dir() + "/tampered.lsr";
  ASSERT_TRUE(writer.open(path, m.header(), *m.world).ok);
  for (int i = 0; i < 100; ++i) {
    m.step();
    const uint64_t hash = m.world->tick() == 37 ? m.world->state_hash() ^ 1 : m.world->state_hash();
    ASSERT_TRUE(writer.record_step(*m.world, m.applied, hash, std::nullopt).ok);
  }
  ASSERT_TRUE(writer.finish().ok);
  LoadedReplay r;
  std::string error;
  ASSERT_TRUE(replays::load_replay_file(path, &r, &error)) << error;
  const replays::VerifyResult v = replays::verify_replay(r);
  EXPECT_FALSE(v.ok);
  ASSERT_TRUE(v.first_divergent_tick.has_value());
  EXPECT_EQ(*v.first_divergent_tick, 37u);
  EXPECT_EQ(v.ticks_verified, 36u);
  EXPECT_EQ(v.expected_hash ^ 1, v.actual_hash);
}

// Independent ULP count: step from a toward b with nextafter.
uint64_t count_ulps(float a, float b) {
  uint64_t n = 0;
  while (a != b && n < 1'000'000) {
    a = std::nextafter(a, b);
    ++n;
  }
  return n;
}

TEST(ReplayDiff, NamesTheTickBodyAndFieldOfAPerturbation) {
  // Server: a clean window. Client: same inputs, its world perturbed right after tick 200, its
  // window written with its live state (as the SDK does when it detects the desync).
  Match server, client;
  replays::ReplayWindow server_window(*server.world, {600, 60, 0});
  replays::ReplayWindow client_window(*client.world, {600, 60, 0});
  const sim::BodyId victim = client.script.bodies.at(5);
  const sim::Vec3 delta{0.001f, 0, 0};
  float clean_x = 0, perturbed_x = 0;
  for (int i = 0; i < 200; ++i) {
    server.step();
    client.step();
    if (server.world->tick() == 200) {
      sim::BodyView v;
      ASSERT_EQ(client.world->get_body(victim, &v), sim::Error::none);
      clean_x = v.position.x;
      ASSERT_EQ(debug_perturb_position(*client.world, victim, delta), sim::Error::none);
      ASSERT_EQ(client.world->get_body(victim, &v), sim::Error::none);
      perturbed_x = v.position.x;
    }
    server_window.record_step(*server.world, server.applied, server.world->state_hash(),
                              std::nullopt);
    client_window.record_step(*client.world, client.applied, server.world->state_hash(),
                              client.world->state_hash());
  }
  ASSERT_NE(clean_x, perturbed_x);
  std::vector<uint8_t> a_bytes, b_bytes;
  ASSERT_TRUE(server_window.write_bytes(&a_bytes, server.header()).ok);
  replays::ReplayHeader client_header = client.header();
  client_header.writer = replays::ReplayWriterKind::client;
  client_header.player_id = 2;
  ASSERT_TRUE(client_window.write_bytes(&b_bytes, client_header, client.world.get()).ok);
  LoadedReplay a, b;
  std::string error;
  ASSERT_TRUE(replays::load_replay(a_bytes, &a, &error)) << error;
  ASSERT_TRUE(replays::load_replay(b_bytes, &b, &error)) << error;

  const replays::DiffResult d = replays::diff_replays(a, b);
  ASSERT_TRUE(d.ok) << d.error;
  ASSERT_TRUE(d.first_divergent_tick.has_value());
  EXPECT_EQ(*d.first_divergent_tick, 200u);
  ASSERT_TRUE(d.compared_tick.has_value());
  EXPECT_EQ(*d.compared_tick, 200u);
  ASSERT_EQ(d.fields.size(), 1u) << d.note;  // only the perturbed coordinate moved
  EXPECT_EQ(d.fields[0].body, victim);
  EXPECT_EQ(d.fields[0].field, "position.x");
  EXPECT_EQ(d.fields[0].value_a, clean_x);
  EXPECT_EQ(d.fields[0].value_b, perturbed_x);
  EXPECT_EQ(d.fields[0].ulps, count_ulps(clean_x, perturbed_x));

  // The client's file still verifies against the authoritative hashes (its inputs were right).
  EXPECT_TRUE(replays::verify_replay(b).ok);
  EXPECT_EQ(replays::verify_replay(b).first_client_mismatch_tick, std::optional<uint64_t>(200));
}

TEST(ReplayDiff, IdenticalReplaysHaveNoDivergence) {
  const std::string dir = temp_dir();
  LoadedReplay a, b;
  std::string error;
  ASSERT_TRUE(replays::load_replay(stream_match(dir + "/a.lsr", 30), &a, &error)) << error;
  ASSERT_TRUE(replays::load_replay(stream_match(dir + "/b.lsr", 40), &b, &error)) << error;
  const replays::DiffResult d = replays::diff_replays(a, b);
  ASSERT_TRUE(d.ok) << d.error;
  EXPECT_FALSE(d.first_divergent_tick.has_value());
  EXPECT_EQ(d.common_last_tick, 30u);
}

TEST(ReplayUlps, DistanceAcrossZeroAndEqual) {
  EXPECT_EQ(replays::float_ulp_distance(1.0f, 1.0f), 0u);
  EXPECT_EQ(replays::float_ulp_distance(1.0f, std::nextafter(1.0f, 2.0f)), 1u);
  // -0 and +0 are the same point on the line; the smallest subnormals either side are 2 apart.
  EXPECT_EQ(replays::float_ulp_distance(-0.0f, 0.0f), 0u);
  const float tiny = std::nextafter(0.0f, 1.0f);
  EXPECT_EQ(replays::float_ulp_distance(-tiny, tiny), 2u);
}

TEST(ReplayDump, JsonNamesEveryBody) {
  Match m;
  m.step();
  const std::string json = replays::dump_state_json(*m.world);
  EXPECT_NE(json.find("\"tick\":1"), std::string::npos);
  size_t bodies = 0;
  for (size_t at = json.find("\"index1\""); at != std::string::npos;
       at = json.find("\"index1\"", at + 1))
    ++bodies;
  EXPECT_EQ(bodies, m.world->body_count());
}

}  // namespace

namespace {

// A world with one template, where commands spawn, destroy and score on known ticks.
struct CommandMatch {
  std::unique_ptr<sim::World> world;
  std::vector<sim::Command> applied;

  CommandMatch() {
    sim::WorldDef def = sim::default_world_def();
    def.max_bodies = 16;
    sim::BodyTemplate& ball = def.templates[0];
    EXPECT_TRUE(sim::set_template_name(&ball, "ball"));
    ball.shape.radius = 0.25f;
    def.template_count = 1;
    world = sim::World::create(def);
    sim::BodyDef ground = sim::default_body_def();
    ground.type = sim::BodyType::static_body;
    ground.shape.type = sim::ShapeType::plane;
    sim::BodyId id;
    EXPECT_EQ(world->create_body(ground, &id), sim::Error::none);
  }

  void step() {
    const uint64_t tick = world->tick() + 1;
    applied.clear();
    sim::Command c;
    c.sequence = static_cast<uint32_t>(tick);
    if (tick % 10 == 3) {
      c.type = sim::CommandType::spawn;
      c.position = {static_cast<float>(tick % 7), 1.0f, 0};
      c.owner_player = 1 + static_cast<uint32_t>(tick % 3);
      applied.push_back(c);
    } else if (tick % 10 == 8) {
      c.type = sim::CommandType::destroy;
      c.body = sim::BodyId{2, static_cast<uint32_t>(tick / 10)};  // the ball spawned at ...3
      applied.push_back(c);
    } else if (tick % 10 == 5) {
      c.type = sim::CommandType::add_score;
      c.owner_player = 2;
      c.score_delta = 3;
      applied.push_back(c);
    }
    for (const sim::Command& command : applied)
      EXPECT_EQ(world->queue_command(command), sim::Error::none) << "tick " << tick;
    world->step();
  }
};

TEST(ReplayCommands, CommandsAreRecordedAndReplayedBitForBit) {
  CommandMatch match;
  replays::ReplayWindowConfig config;
  config.window_ticks = 200;
  config.keyframe_interval_ticks = 50;
  replays::ReplayWindow window(*match.world, config);
  size_t recorded = 0;
  for (int t = 0; t < 120; ++t) {
    match.step();
    recorded += match.applied.size();
    EXPECT_TRUE(window.record_step(*match.world, {}, match.world->state_hash(), std::nullopt,
                                   match.applied));
  }
  EXPECT_EQ(match.world->score(2), 36);
  EXPECT_EQ(window.dropped_commands(), 0u);
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(window.write_bytes(&bytes, replays::make_replay_header(*match.world, "", 60)).ok);
  LoadedReplay replay;
  std::string error;
  ASSERT_TRUE(replays::load_replay(bytes, &replay, &error)) << error;
  EXPECT_EQ(replay.header.format_version, replays::kReplayFormatVersion);
  size_t loaded = 0;
  for (const replays::ReplayTick& tick : replay.ticks)
    loaded += tick.commands.size();
  EXPECT_EQ(loaded, recorded);
  const replays::VerifyResult verified = replays::verify_replay(replay);
  EXPECT_TRUE(verified.ok) << verified.error;
  EXPECT_EQ(verified.ticks_verified, 120u);
  // Without its commands the file no longer replays: they are what made the ticks.
  for (replays::ReplayTick& tick : replay.ticks)
    tick.commands.clear();
  EXPECT_FALSE(replays::verify_replay(replay).ok);
}

TEST(ReplayCommands, ABadCommandInATickRecordIsAClearError) {
  CommandMatch match;
  replays::ReplayWindow window(*match.world, {});
  match.step();
  sim::Command bad;
  bad.type = static_cast<sim::CommandType>(11);  // one past emit_event
  ASSERT_TRUE(window.record_step(*match.world, {}, match.world->state_hash(), std::nullopt,
                                 std::span<const sim::Command>(&bad, 1)));
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(window.write_bytes(&bytes, replays::make_replay_header(*match.world, "", 60)).ok);
  LoadedReplay replay;
  std::string error;
  EXPECT_FALSE(replays::load_replay(bytes, &replay, &error));
  EXPECT_NE(error.find("replay tick 1: TickFrame: command 0: type 11 is not a command type"),
            std::string::npos)
      << error;
  // A window smaller than the tick's commands drops and counts the rest.
  replays::ReplayWindowConfig small;
  small.max_commands_per_tick = 1;
  replays::ReplayWindow narrow(*match.world, small);
  match.step();
  const sim::Command two[2] = {sim::Command{}, sim::Command{}};
  EXPECT_FALSE(narrow.record_step(*match.world, {}, match.world->state_hash(), std::nullopt, two));
  EXPECT_EQ(narrow.dropped_commands(), 1u);
}

// ---- keyframe deltas (format 7) -----------------------------------------------------------------

// A client's window of 400 ticks with a keyframe every 60: its snapshots, saved as they were
// recorded, to compare the file's rebuilt ones with.
struct KeyframedWindow {
  Match m;
  std::unique_ptr<replays::ReplayWindow> window;
  std::vector<std::pair<uint64_t, std::vector<uint8_t>>> snapshots;

  explicit KeyframedWindow(size_t dump_budget_bytes) {
    replays::ReplayWindowConfig config{300, 60, 0};
    config.dump_budget_bytes = dump_budget_bytes;
    window = std::make_unique<replays::ReplayWindow>(*m.world, config);
    for (int i = 0; i < 400; ++i) {
      m.step();
      EXPECT_TRUE(window->record_step(*m.world, m.applied, m.world->state_hash(), std::nullopt));
      if (window->keyframe_due(m.world->tick()) || m.world->tick() == 400) save();
    }
  }
  void save() {
    std::vector<uint8_t> bytes(m.world->snapshot_size());
    size_t written = 0;
    EXPECT_EQ(m.world->save_snapshot(bytes, &written), sim::Error::none);
    bytes.resize(written);
    snapshots.emplace_back(m.world->tick(), std::move(bytes));
  }
  std::vector<uint8_t> write(replays::ReplayWriterKind writer) const {
    replays::ReplayHeader header = m.header();
    header.writer = writer;
    std::vector<uint8_t> bytes;
    EXPECT_TRUE(window->write_bytes(&bytes, header, m.world.get()).ok);
    return bytes;
  }
};

// Every keyframe of a loaded file restores to a world with the keyframe's tick and state hash.
void expect_keyframes_restore(const LoadedReplay& r) {
  for (const replays::ReplayKeyframe& keyframe : r.keyframes) {
    std::unique_ptr<sim::World> world = sim::World::create(r.header.world_def);
    ASSERT_NE(world, nullptr);
    ASSERT_EQ(world->restore_snapshot(keyframe.snapshot), sim::Error::none)
        << "tick " << keyframe.tick;
    EXPECT_EQ(world->tick(), keyframe.tick);
    EXPECT_EQ(world->state_hash(), keyframe.state_hash) << "tick " << keyframe.tick;
  }
}

TEST(ReplayKeyframeDelta, EveryKeyframeOfAWindowIsRebuiltByteForByte) {
  const KeyframedWindow w(0);  // no budget: every keyframe is written
  const std::vector<uint8_t> bytes = w.write(replays::ReplayWriterKind::client);
  LoadedReplay r;
  std::string error;
  ASSERT_TRUE(replays::load_replay(bytes, &r, &error)) << error;
  EXPECT_GE(r.header.format_version, 7u);
  EXPECT_EQ(r.header.first_tick, 60u);  // newest multiple of 60 at or before 400 - 300
  // 60 (whole), 120 .. 360 (deltas), then the live state at 400 (a delta against 360).
  ASSERT_EQ(r.keyframes.size(), 7u);
  for (const replays::ReplayKeyframe& keyframe : r.keyframes) {
    const auto saved = std::find_if(w.snapshots.begin(), w.snapshots.end(),
                                    [&](const auto& s) { return s.first == keyframe.tick; });
    ASSERT_NE(saved, w.snapshots.end()) << "tick " << keyframe.tick;
    EXPECT_EQ(keyframe.snapshot, saved->second) << "tick " << keyframe.tick;
  }
  const replays::VerifyResult verified = replays::verify_replay(r);
  EXPECT_TRUE(verified.ok) << verified.error;
  expect_keyframes_restore(r);
  // Deltas are what make the later keyframes small: the whole file is well under seven whole
  // packed keyframes' worth of the first one.
  replays::RecordReader reader(bytes);
  std::span<const uint8_t> payload;
  std::vector<size_t> keyframe_bytes;
  while (reader.next(&payload) == replays::RecordError::none)
    if ((payload[0] & 3) == 0 && keyframe_bytes.size() < 8)
      keyframe_bytes.push_back(payload.size());
  ASSERT_GE(keyframe_bytes.size(), 3u);  // the header, then keyframes
  for (size_t i = 2; i < keyframe_bytes.size(); ++i)
    EXPECT_LT(keyframe_bytes[i], keyframe_bytes[1]) << "keyframe " << i - 1;
}

TEST(ReplayKeyframeDelta, TheBudgetKeepsTheFirstKeyframeTheTicksAndAClientsLiveState) {
  const KeyframedWindow w(1);  // a budget nothing fits in
  LoadedReplay server, client;
  std::string error;
  ASSERT_TRUE(replays::load_replay(w.write(replays::ReplayWriterKind::server), &server, &error))
      << error;
  ASSERT_TRUE(replays::load_replay(w.write(replays::ReplayWriterKind::client), &client, &error))
      << error;
  ASSERT_EQ(server.keyframes.size(), 1u);
  EXPECT_EQ(server.keyframes[0].tick, 60u);
  EXPECT_EQ(server.ticks.size(), 340u);
  // A client's live state is the evidence of its desync: written whatever the budget.
  ASSERT_EQ(client.keyframes.size(), 2u);
  EXPECT_EQ(client.keyframes[1].tick, 400u);
  EXPECT_EQ(client.keyframes[1].snapshot, w.snapshots.back().second);
  EXPECT_TRUE(replays::verify_replay(server).ok);
  EXPECT_TRUE(replays::verify_replay(client).ok);
}

TEST(ReplayKeyframeDelta, ACorruptDeltaOrAMissingBaseIsAClearError) {
  const KeyframedWindow w(0);
  std::vector<std::vector<uint8_t>> payloads;
  const std::vector<uint8_t> file = w.write(replays::ReplayWriterKind::server);
  replays::RecordReader reader(file);
  std::span<const uint8_t> payload;
  std::vector<size_t> keyframes;
  while (reader.next(&payload) == replays::RecordError::none) {
    if (!payloads.empty() && (payload[0] & 3) == 0) keyframes.push_back(payloads.size());
    payloads.emplace_back(payload.begin(), payload.end());
  }
  ASSERT_GE(keyframes.size(), 3u);
  LoadedReplay r;
  std::string error;
  ASSERT_TRUE(replays::load_replay(frame_records(payloads), &r, &error)) << error;

  // Bytes of the second keyframe's delta changed (the record checksums recomputed by
  // frame_records): refused, naming the delta, never a crash.
  const size_t delta = keyframes[1];
  for (size_t back : {8u, 20u, 40u, 200u}) {
    std::vector<std::vector<uint8_t>> damaged = payloads;
    damaged[delta][damaged[delta].size() - back] ^= 0x5a;
    EXPECT_FALSE(replays::load_replay(frame_records(damaged), &r, &error)) << back;
    EXPECT_NE(error.find("delta keyframe"), std::string::npos) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
  // Every 13th byte of the delta record flipped: each file is refused with one line, or loads
  // (a byte FlatBuffers does not read) and then verifies or fails cleanly; never a crash.
  for (size_t at = 0; at < payloads[delta].size(); at += 13) {
    std::vector<std::vector<uint8_t>> damaged = payloads;
    damaged[delta][at] ^= 0xff;
    if (replays::load_replay(frame_records(damaged), &r, &error)) {
      EXPECT_TRUE(replays::verify_replay(r).ok) << "byte " << at;
    } else {
      EXPECT_FALSE(error.empty());
      EXPECT_EQ(error.find('\n'), std::string::npos) << error;
    }
  }
  // The keyframe it was made against left out: applied to the one before, the rebuilt snapshot's
  // checksum does not match.
  std::vector<std::vector<uint8_t>> without_base = payloads;
  without_base.erase(without_base.begin() + static_cast<std::ptrdiff_t>(keyframes[1]));
  EXPECT_FALSE(replays::load_replay(frame_records(without_base), &r, &error));
  EXPECT_NE(error.find("not the keyframe it was made against"), std::string::npos) << error;
  // A delta as the file's first keyframe has no base at all: the live state at tick 400 (a delta
  // against 360) after the header of a window that starts at 400.
  std::vector<uint8_t> live_file = w.write(replays::ReplayWriterKind::client);
  std::vector<std::vector<uint8_t>> client_payloads;
  replays::RecordReader client_reader(live_file);
  while (client_reader.next(&payload) == replays::RecordError::none)
    client_payloads.emplace_back(payload.begin(), payload.end());
  replays::ReplayWindow at_400(*w.m.world, {300, 60, 0});
  std::vector<uint8_t> header_file;
  ASSERT_TRUE(at_400.write_bytes(&header_file, w.m.header()).ok);
  replays::RecordReader header_reader(header_file);
  ASSERT_EQ(header_reader.next(&payload), replays::RecordError::none);
  const std::vector<std::vector<uint8_t>> first_is_delta = {
      std::vector<uint8_t>(payload.begin(), payload.end()), client_payloads.back()};
  EXPECT_FALSE(replays::load_replay(frame_records(first_is_delta), &r, &error));
  EXPECT_NE(error.find("no keyframe before it"), std::string::npos) << error;
}

TEST(ReplayKeyframeDelta, AStreamedMatchWritesLaterKeyframesAsDeltas) {
  Match m;
  const std::string path = temp_dir() + "/stream_deltas.lsr";
  replays::ReplayStreamWriter writer;
  replays::ReplayStreamOptions options;
  options.keyframe_interval_ticks = 50;
  ASSERT_TRUE(writer.open(path, m.header(), *m.world, options).ok);
  std::vector<std::vector<uint8_t>> snapshots;
  for (int i = 0; i < 200; ++i) {
    m.step();
    ASSERT_TRUE(writer.record_step(*m.world, m.applied, m.world->state_hash(), std::nullopt).ok);
    if (m.world->tick() % 50 == 0) {
      std::vector<uint8_t> bytes(m.world->snapshot_size());
      size_t written = 0;
      ASSERT_EQ(m.world->save_snapshot(bytes, &written), sim::Error::none);
      bytes.resize(written);
      snapshots.push_back(std::move(bytes));
    }
  }
  ASSERT_TRUE(writer.finish().ok);
  LoadedReplay r;
  std::string error;
  ASSERT_TRUE(replays::load_replay_file(path, &r, &error)) << error;
  ASSERT_EQ(r.keyframes.size(), 5u);  // 0, then 50, 100, 150, 200 as deltas
  for (size_t i = 1; i < r.keyframes.size(); ++i)
    EXPECT_EQ(r.keyframes[i].snapshot, snapshots[i - 1]) << "tick " << r.keyframes[i].tick;
  expect_keyframes_restore(r);
  EXPECT_TRUE(replays::verify_replay(r).ok);
}

// A file of format 6 (whole packed keyframes, each tick record standing alone) read by this build:
// the 600 ticks of four players that record-scripted wrote for the `inputs` scene. It was recorded
// before a change to the physics, so it no longer re-simulates hash for hash (the golden replays
// in replays/golden do that, in the current format); what it checks is the reader: every record
// decodes and every tick carries its sixteen inputs. Its keyframe is a snapshot of state version
// 5, older than this build's: a world refuses it with snapshot_version, a clear error, never a
// misread state.
TEST(ReplayKeyframeDelta, AReplayOfFormat6StillLoads) {
  LoadedReplay r;
  std::string error;
  ASSERT_TRUE(replays::load_replay_file(
      std::string(LOCKSTEP_OLD_REPLAYS) + "/inputs_4p_600_format6.lsr", &r, &error))
      << error;
  EXPECT_EQ(r.header.format_version, 6u);
  EXPECT_EQ(r.header.physics_revision, 0u);  // written before the field
  EXPECT_EQ(r.header.scene, "inputs");
  EXPECT_FALSE(r.truncated);
  ASSERT_EQ(r.keyframes.size(), 1u);
  EXPECT_EQ(r.keyframes[0].tick, 0u);
  std::unique_ptr<sim::World> world = sim::World::create(r.header.world_def);
  ASSERT_NE(world, nullptr);
  EXPECT_EQ(world->restore_snapshot(r.keyframes[0].snapshot), sim::Error::snapshot_version);
  ASSERT_EQ(r.ticks.size(), 600u);
  for (size_t i = 0; i < r.ticks.size(); ++i) {
    const replays::ReplayTick& t = r.ticks[i];
    EXPECT_EQ(t.tick, i + 1);
    ASSERT_EQ(t.inputs.size(), 16u) << "tick " << t.tick;
    for (const sim::Input& input : t.inputs) {
      EXPECT_GE(input.player, 1u) << "tick " << t.tick;
      EXPECT_LE(input.player, 4u) << "tick " << t.tick;
    }
  }
}

// ---- tick records coded against the tick record before them (format 8) ----

// The tick records of a file, in order (records whose first byte's low bits are 01).
std::vector<std::vector<uint8_t>> tick_records(const std::vector<uint8_t>& file) {
  std::vector<std::vector<uint8_t>> ticks;
  replays::RecordReader reader(file);
  std::span<const uint8_t> payload;
  while (reader.next(&payload) == replays::RecordError::none)
    if ((payload[0] & 3) == 1) ticks.emplace_back(payload.begin(), payload.end());
  return ticks;
}

TEST(ReplayInputReference, ALongRoomsDumpFitsItsBudgetWithEveryTick) {
  // A room of the demo (the `inputs` scene, four players pushing) after 25 s: its dump holds the
  // keyframe at or before the window's start and every tick after it, within the server's
  // 128 KiB budget. The same ticks sent as the wire sends them, each standing alone, would not
  // fit: coding each tick's inputs against the tick before is what makes the room fit.
  Match m;
  replays::ReplayWindow window(*m.world, {});  // the server's: 600 ticks, keyframes every 120
  for (int i = 0; i < 1500; ++i) {
    m.step();
    ASSERT_TRUE(window.record_step(*m.world, m.applied, m.world->state_hash(), std::nullopt));
  }
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(window.write_bytes(&bytes, m.header(), m.world.get()).ok);
  EXPECT_LE(bytes.size(), 128u * 1024u);
  LoadedReplay r;
  std::string error;
  ASSERT_TRUE(replays::load_replay(bytes, &r, &error)) << error;
  EXPECT_EQ(r.header.format_version, replays::kReplayFormatVersion);
  EXPECT_EQ(r.header.first_tick, 840u);  // the newest multiple of 120 at or before 1500 - 600
  EXPECT_EQ(r.ticks.size(), 660u);
  const replays::VerifyResult verified = replays::verify_replay(r);
  EXPECT_TRUE(verified.ok) << verified.error;

  // What the file must hold: its header, first keyframe and ticks (the later keyframes only
  // spare a re-simulation and take what is left of the budget).
  replays::RecordReader reader(bytes);
  std::span<const uint8_t> payload;
  size_t header_and_keyframe = 8;  // the file header
  for (int i = 0; i < 2 && reader.next(&payload) == replays::RecordError::none; ++i)
    header_and_keyframe += replays::kRecordHeaderBytes + payload.size();
  size_t coded = 0;
  for (const std::vector<uint8_t>& record : tick_records(bytes))
    coded += replays::kRecordHeaderBytes + record.size();
  size_t standing_alone = 0;
  for (const replays::ReplayTick& t : r.ticks) {
    standing_alone +=
        replays::kRecordHeaderBytes +
        schema::encode_frame(schema::TickFrame{t.tick, t.inputs, t.authoritative_hash, {}}).size() -
        schema::kFrameHeaderBytes;
  }
  std::printf(
      "660 ticks of the demo: %zu bytes as tick records, %zu standing alone; header and "
      "first keyframe %zu; file %zu with %zu keyframes\n",
      coded, standing_alone, header_and_keyframe, bytes.size(), r.keyframes.size());
  EXPECT_LT(10 * coded, 6 * standing_alone);  // at most 60 %
  EXPECT_GT(header_and_keyframe + standing_alone, 128u * 1024u);
  EXPECT_LT(header_and_keyframe + coded, 100u * 1024u);
}

TEST(ReplayInputReference, OnlyTheFirstTickRecordStandsAloneAndItsLossIsAClearError) {
  Match m;
  replays::ReplayWindow window(*m.world, {600, 120, 0});
  for (int i = 0; i < 30; ++i) {
    m.step();
    ASSERT_TRUE(window.record_step(*m.world, m.applied, m.world->state_hash(), std::nullopt));
  }
  std::vector<uint8_t> file;
  ASSERT_TRUE(window.write_bytes(&file, m.header()).ok);
  const std::vector<std::vector<uint8_t>> ticks = tick_records(file);
  ASSERT_EQ(ticks.size(), 30u);
  EXPECT_EQ(ticks[0][0] & schema::compact::kInputsAgainstPrevious, 0);
  for (size_t i = 1; i < ticks.size(); ++i)
    EXPECT_NE(ticks[i][0] & schema::compact::kInputsAgainstPrevious, 0) << "tick record " << i;

  // Without its first tick record the file's next one has nothing to be read against; without a
  // later one, the one after it is out of order. Both refused in one line.
  std::vector<std::vector<uint8_t>> payloads;
  replays::RecordReader reader(file);
  std::span<const uint8_t> payload;
  while (reader.next(&payload) == replays::RecordError::none)
    payloads.emplace_back(payload.begin(), payload.end());
  ASSERT_EQ(payloads.size(), 32u);  // header, keyframe, 30 ticks
  LoadedReplay r;
  std::string error;
  std::vector<std::vector<uint8_t>> damaged = payloads;
  damaged.erase(damaged.begin() + 2);
  EXPECT_FALSE(replays::load_replay(frame_records(damaged), &r, &error));
  EXPECT_NE(error.find("none precedes this one"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  damaged = payloads;
  damaged.erase(damaged.begin() + 10);
  EXPECT_FALSE(replays::load_replay(frame_records(damaged), &r, &error));
  EXPECT_NE(error.find("out of order"), std::string::npos) << error;
}

}  // namespace

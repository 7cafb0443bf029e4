// lockstep-replay as a subprocess: every command on a good file, and every kind of bad file —
// wrong identifier, truncated, corrupt record, future format version, a scene this build lacks,
// a WorldDef fingerprint mismatch — gets one line on stderr and exit code 2, never a crash.
// lockstep-replay-verify (its verify command alone, for the determinism matrix): the same
// results, and its own command line refused with exit 64.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "lockstep/replays/record_file.h"
#include "lockstep/replays/recorder.h"
#include "lockstep/replays/replay_reader.h"
#include "lockstep/schema/replay_generated.h"
#include "lockstep/sim/level.h"
#include "lockstep/sim/scene.h"
#include "lockstep/sim/testing.h"
#include "lockstep/sim/version.h"

#if !defined(LOCKSTEP_LEVEL_SCENES)
#error "LOCKSTEP_LEVEL_SCENES must name tests/level_scenes"
#endif
#if !defined(LOCKSTEP_REPLAY_TOOL) || !defined(LOCKSTEP_REPLAY_VERIFY_TOOL)
#error "LOCKSTEP_REPLAY_TOOL and LOCKSTEP_REPLAY_VERIFY_TOOL must name the two executables"
#endif

namespace {

using namespace lockstep;

std::string dir() {
  static const std::string path = [] {
    const std::string p =
        std::filesystem::temp_directory_path() / ("replay_tool_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(p);
    return p;
  }();
  return path;
}

// Removes this process's temporary directory after the last test.
class TempDirCleanup : public ::testing::Environment {
 public:
  void TearDown() override { std::filesystem::remove_all(dir()); }
};
[[maybe_unused]] ::testing::Environment* const g_cleanup =
    ::testing::AddGlobalTestEnvironment(new TempDirCleanup);

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

struct ToolRun {
  bool exited = false;  // false: killed by a signal (a crash)
  int code = -1;
  std::string out, err;
  size_t err_lines() const {
    size_t n = 0;
    for (char c : err)
      n += c == '\n';
    return n;
  }
};

ToolRun run_program(const std::string& program, const std::string& args) {
  const std::string out = dir() + "/stdout.txt", err = dir() + "/stderr.txt";
  const std::string command = program + " " + args + " >" + out + " 2>" + err;
  const int status = std::system(command.c_str());
  ToolRun r;
  r.exited = status != -1 && WIFEXITED(status);
  r.code = r.exited ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

ToolRun run(const std::string& args) {  // lockstep-replay
  return run_program(LOCKSTEP_REPLAY_TOOL, args);
}

ToolRun run_verify_tool(const std::string& args) {  // lockstep-replay-verify
  return run_program(LOCKSTEP_REPLAY_VERIFY_TOOL, args);
}

// A scripted `inputs` match, optionally perturbed on the "client" side after tick 200.
struct Match {
  sim::Scene scene;
  std::unique_ptr<sim::World> world;
  sim::InputScript script;
  std::vector<sim::Input> buffer, applied;
  Match() {
    EXPECT_TRUE(sim::make_builtin_scene("inputs", &scene));
    world = sim::build_world(scene);
    script = sim::make_input_script(*world);
    buffer.resize(world->def().max_inputs_per_tick);
  }
  void step() {
    const uint32_t n = sim::scripted_inputs(1, world->tick() + 1, script, *world, buffer);
    applied.clear();
    for (uint32_t i = 0; i < n; ++i)
      if (world->queue_input(buffer[i]) == sim::Error::none) applied.push_back(buffer[i]);
    world->step();
  }
};

// Writes a streamed match of `ticks` ticks; `header_edit` may spoil the header;
// `tamper_tick` records a wrong hash there.
std::string write_match(const std::string& name, uint64_t ticks,
                        void (*header_edit)(replays::ReplayHeader*) = nullptr,
                        uint64_t tamper_tick = 0) {
  Match m;
  replays::ReplayHeader header = replays::make_replay_header(*m.world, "inputs", 60);
  if (header_edit) header_edit(&header);
  const std::string path = dir() + "/" + name;
  replays::ReplayStreamWriter writer;
  EXPECT_TRUE(writer.open(path, header, *m.world).ok);
  for (uint64_t i = 0; i < ticks; ++i) {
    m.step();
    const uint64_t hash = m.world->state_hash() ^ (m.world->tick() == tamper_tick ? 1 : 0);
    EXPECT_TRUE(writer.record_step(*m.world, m.applied, hash, std::nullopt).ok);
  }
  EXPECT_TRUE(writer.finish().ok);
  return path;
}

// Flips a byte in the payload of the file's sixth record; returns that record's byte offset.
uint64_t corrupt_sixth_record(const std::string& path) {
  const std::string bytes = slurp(path);
  std::vector<uint8_t> raw(bytes.begin(), bytes.end());
  replays::RecordReader reader(raw);
  std::span<const uint8_t> payload;
  for (int i = 0; i < 5; ++i)
    reader.next(&payload);
  const uint64_t offset = reader.offset_bytes();
  raw[offset + replays::kRecordHeaderBytes + 10] ^= 0xff;
  write(path, raw);
  return offset;
}

void expect_bad_file(const ToolRun& r, const std::string& needle) {
  EXPECT_TRUE(r.exited) << "crashed";
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(r.err_lines(), 1u) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
}

TEST(ReplayTool, InfoCountsAMatchRecordingsGameMessagesAndViewFramesIt) {
  // A koth match recording (three bots said "ready"): format 10 with game message records.
  const std::string path = LOCKSTEP_REPLAY_FILES "/koth_ready.lsrp";
  ToolRun r = run("info " + path);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("format_version: 10"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("game_messages: 3"), std::string::npos) << r.out;
  r = run("verify --quiet " + path);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  r = run("view " + path + " -o " + dir() + "/koth.html");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("(dynamic bodies over the match)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(", 3 messages"), std::string::npos) << r.out;
  // A frame given on the command line replaces the one the tool would choose; a bad one is refused.
  r = run("view " + path + " -o " + dir() + "/koth_framed.html --frame -6,0,-6,6,2,6");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("camera: frame -6,0,-6 to 6,2,6 (given)"), std::string::npos) << r.out;
  r = run("view " + path + " -o " + dir() + "/koth_bad.html --frame 6,0,-6,-6,2,6");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.err.find("--frame takes"), std::string::npos) << r.err;
}

TEST(ReplayTool, InfoVerifyDumpExportOnAGoodFile) {
  const std::string path = write_match("good.lsr", 120);
  ToolRun r = run("info " + path);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("scene: inputs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ticks: 0..120"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("players: 1 2 3 4"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("records: 122"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("game_messages: 0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("intact"), std::string::npos) << r.out;

  r = run("verify " + path);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("OK: 120 ticks verified"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ticks/s"), std::string::npos) << r.out;

  r = run("dump " + path + " --tick 50");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("{\"tick\":50,", 0), 0u) << r.out.substr(0, 80);

  r = run("dump " + path + " --tick 500");
  expect_bad_file(r, "outside the replay");

  r = run("export " + path);
  EXPECT_EQ(r.code, 0) << r.err;
  Match m;  // the scene's body count, independently
  size_t lines = 0;
  for (char c : r.out)
    lines += c == '\n';
  EXPECT_EQ(lines, 1 + 121 * size_t{m.world->body_count()});  // header + ticks 0..120
}

TEST(ReplayTool, VerifyNamesTheTamperedTick) {
  const std::string path = write_match("tampered.lsr", 100, nullptr, 37);
  const ToolRun r = run("verify " + path);
  EXPECT_TRUE(r.exited);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("DIVERGED at tick 37"), std::string::npos) << r.out;
}

TEST(ReplayTool, DiffNamesTickBodyAndField) {
  Match server, client;
  replays::ReplayWindow server_window(*server.world, {600, 60, 0});
  replays::ReplayWindow client_window(*client.world, {600, 60, 0});
  const sim::BodyId victim = client.script.bodies.at(9);
  for (int i = 0; i < 240; ++i) {
    server.step();
    client.step();
    if (client.world->tick() == 200) debug_perturb_position(*client.world, victim, {0.01f, 0, 0});
    server_window.record_step(*server.world, server.applied, server.world->state_hash(),
                              std::nullopt);
    client_window.record_step(*client.world, client.applied, server.world->state_hash(),
                              client.world->state_hash());
  }
  // The client's window has keyframes at 0, 60, ..., 240: the one at 240 holds its real state.
  replays::ReplayHeader header = replays::make_replay_header(*server.world, "inputs", 60);
  ASSERT_TRUE(server_window.write_file(dir() + "/server.lsr", header).ok);
  header.writer = replays::ReplayWriterKind::client;
  header.player_id = 3;
  ASSERT_TRUE(client_window.write_file(dir() + "/client.lsr", header).ok);

  const ToolRun r = run("diff " + dir() + "/server.lsr " + dir() + "/client.lsr");
  EXPECT_TRUE(r.exited);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.out.find("first divergent tick: 200"), std::string::npos) << r.out;
  // Compared at the client's next keyframe (240): the victim's x is among the fields, and the
  // listing starts with the lowest slot that differs.
  EXPECT_NE(r.out.find("compared tick: 240"), std::string::npos) << r.out;
  const std::string victim_x = "body " + std::to_string(victim.index1) + ":" +
                               std::to_string(victim.generation) + " position.x ";
  EXPECT_NE(r.out.find(victim_x), std::string::npos) << r.out;

  const ToolRun same = run("diff " + dir() + "/server.lsr " + dir() + "/server.lsr");
  EXPECT_EQ(same.code, 0) << same.out << same.err;
  EXPECT_NE(same.out.find("identical"), std::string::npos);
}

TEST(ReplayTool, TruncatedFileVerifiesToItsLastCompleteRecord) {
  const std::string path = write_match("cut.lsr", 60);
  std::string bytes = slurp(path);
  bytes.resize(bytes.size() - 7);
  write(path, std::vector<uint8_t>(bytes.begin(), bytes.end()));
  const ToolRun r = run("verify " + path);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("OK: 59 ticks verified"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("truncated"), std::string::npos) << r.err;

  // Cut inside the header record: nothing usable, a clean error.
  write(path, std::vector<uint8_t>(bytes.begin(), bytes.begin() + 14));
  expect_bad_file(run("verify " + path), "no header record");
}

TEST(ReplayTool, BadFiles) {
  // Not a record file at all.
  const std::string text = dir() + "/text.lsr";
  write(text, {'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd', '\n'});
  expect_bad_file(run("verify " + text), "not a lockstep replay file");

  // A record file whose records are not replay records (another FlatBuffer's identifier).
  const std::string wrong_id = dir() + "/wrong_id.lsr";
  {
    replays::RecordWriter writer;
    ASSERT_EQ(writer.open(wrong_id), replays::RecordError::none);
    const std::vector<uint8_t> payload = {8, 0, 0, 0, 'L', 'S', 'W', '1', 0, 0, 0, 0};
    ASSERT_EQ(writer.append(payload), replays::RecordError::none);
    ASSERT_EQ(writer.finish(), replays::RecordError::none);
  }
  expect_bad_file(run("info " + wrong_id), "file identifier 'LSW1'");

  // A corrupt record: a flipped byte in the payload of the record at byte `offset`.
  const std::string corrupt = write_match("corrupt.lsr", 20);
  const uint64_t offset = corrupt_sixth_record(corrupt);
  expect_bad_file(run("verify " + corrupt), std::to_string(offset));

  expect_bad_file(run("verify " + write_match("future.lsr", 5,
                                              [](replays::ReplayHeader* h) {
                                                h->format_version =
                                                    replays::kReplayFormatVersion + 1;
                                              })),
                  "newer than this build reads");
  expect_bad_file(
      run("verify " +
          write_match("scene.lsr", 5, [](replays::ReplayHeader* h) { h->scene = "castle"; })),
      "scene 'castle' is not built into");
  expect_bad_file(run("verify " + write_match("fingerprint.lsr", 5,
                                              [](replays::ReplayHeader* h) {
                                                h->world_def_fingerprint ^= 0x100;
                                              })),
                  "fingerprint mismatch");
  // The scene exists but this build's version of it has another WorldDef.
  expect_bad_file(run("verify " + write_match("scene_def.lsr", 5,
                                              [](replays::ReplayHeader* h) {
                                                h->world_def.velocity_iterations += 1;
                                                h->world_def_fingerprint =
                                                    sim::world_def_fingerprint(h->world_def);
                                              })),
                  "fingerprint mismatch");
  // Recorded by another simulation: every re-simulating command refuses it by name (the ticks
  // would diverge at the first contact); info reads it and says so.
  const std::string other = write_match("other_revision.lsr", 5, [](replays::ReplayHeader* h) {
    h->physics_revision = sim::kPhysicsRevision + 1;
  });
  const std::string refusal =
      "recorded with physics revision " + std::to_string(sim::kPhysicsRevision + 1);
  for (const char* command : {"verify ", "dump --tick 3 ", "export ", "view -o /dev/null "})
    expect_bad_file(run(command + other), refusal);
  expect_bad_file(run_verify_tool(other), refusal);
  const ToolRun info = run("info " + other);
  EXPECT_EQ(info.code, 0) << info.err;
  EXPECT_NE(info.out.find("physics_revision: " + std::to_string(sim::kPhysicsRevision + 1) +
                          " (not this build's"),
            std::string::npos)
      << info.out;
  expect_bad_file(run("info " + dir() + "/does-not-exist.lsr"), "cannot open");
}

}  // namespace

namespace {

// A record whose union type names a kind while its table is absent: the FlatBuffers Verifier
// accepts it, so the decoder must check the table itself.
std::vector<uint8_t> record_without_table(lockstep::replay::Record kind) {
  flatbuffers::FlatBufferBuilder b;
  lockstep::replay::ReplayRecordBuilder record(b);
  record.add_record_type(kind);
  b.Finish(record.Finish(), lockstep::replay::ReplayRecordIdentifier());
  return {b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize()};
}

}  // namespace

// Regression: each of these files (under 60 bytes, valid checksums) used to kill info and verify
// with SIGSEGV; now exit 2 with one line.
TEST(ReplayTool, RecordKindWithoutItsTableIsABadFile) {
  using lockstep::replay::Record;
  const std::vector<uint8_t> header = record_without_table(Record::Header);
  for (const Record kind : {Record::Header, Record::Keyframe, Record::Tick}) {
    const std::string path = dir() + "/absent_" + std::to_string(static_cast<int>(kind)) + ".lsr";
    {
      replays::RecordWriter writer;
      ASSERT_EQ(writer.open(path), replays::RecordError::none);
      ASSERT_EQ(writer.append(record_without_table(kind)), replays::RecordError::none);
      ASSERT_EQ(writer.finish(), replays::RecordError::none);
    }
    EXPECT_LT(slurp(path).size(), 60u);
    expect_bad_file(run("info " + path), "without its table");
    expect_bad_file(run("verify " + path), "without its table");
  }
  // After a good header too (the keyframe and tick decoders are reached).
  const std::string good = write_match("good_for_absent.lsr", 2);
  for (const Record kind : {Record::Keyframe, Record::Tick}) {
    std::string bytes = slurp(good);
    std::vector<uint8_t> raw(bytes.begin(), bytes.end());
    replays::RecordReader reader(raw);
    std::span<const uint8_t> payload;
    ASSERT_EQ(reader.next(&payload), replays::RecordError::none);
    const std::vector<uint8_t> first(payload.begin(), payload.end());
    const std::string path = dir() + "/absent_after_header.lsr";
    {
      replays::RecordWriter writer;
      ASSERT_EQ(writer.open(path), replays::RecordError::none);
      ASSERT_EQ(writer.append(first), replays::RecordError::none);
      ASSERT_EQ(writer.append(record_without_table(kind)), replays::RecordError::none);
      ASSERT_EQ(writer.finish(), replays::RecordError::none);
    }
    expect_bad_file(run("verify " + path), "without its table");
  }
}

// Regression: a header whose WorldDef asks for millions of bodies used to make verify take
// gigabytes; the world's memory is computed from the WorldDef and checked against the budget
// before anything is allocated.
TEST(ReplayTool, WorldOverTheMemoryBudgetIsABadFile) {
  const std::string huge = write_match("huge.lsr", 3, [](replays::ReplayHeader* h) {
    h->world_def.max_bodies = 4000000;
    h->world_def.max_candidate_pairs = 40000000;
  });
  expect_bad_file(run("verify " + huge), "memory budget");
  expect_bad_file(run("info " + huge), "memory budget");
  // A normal file is refused under a tiny budget, and accepted under the default one.
  const std::string normal = write_match("normal_budget.lsr", 3);
  expect_bad_file(run("verify " + normal + " --memory-budget-mb 1"), "memory budget");
  const ToolRun ok = run("verify -q " + normal);
  EXPECT_TRUE(ok.exited);
  EXPECT_EQ(ok.code, 0) << ok.err;
}

// A scene whose level is an OBJ file (tests/level_scenes/ramp.scene: three bodies dropped on a
// ramp): record-scripted writes the geometry into the header, and the file re-simulates hash for
// hash from it alone.
std::string record_level_scene(const std::string& name) {
  const std::string path = dir() + "/" + name;
  const ToolRun r =
      run("record-scripted --scene " LOCKSTEP_LEVEL_SCENES "/ramp.scene --ticks 120 " + path);
  EXPECT_TRUE(r.exited);
  EXPECT_EQ(r.code, 0) << r.err;
  return path;
}

TEST(ReplayTool, ALevelSceneRecordingCarriesItsLevelAndVerifies) {
  const std::string path = record_level_scene("bowl.lsr");
  replays::LoadedReplay replay;
  std::string error;
  ASSERT_TRUE(replays::load_replay_file(path, &replay, &error)) << error;
  EXPECT_EQ(replay.header.format_version, replays::kReplayFormatVersion);
  ASSERT_EQ(replay.header.level_meshes.size(), 1u);
  EXPECT_EQ(replay.header.level_meshes[0].indices.size(), 6u);  // the ramp's quad
  EXPECT_TRUE(replay.header.level_heightfields.empty());

  // The re-simulated world has the ramp: at tick 120 the sphere (radius 0.5 m) rests on it, its
  // centre 0.5 m from the plane y = 0.3 x within 2 cm (without the level it would have fallen
  // 70 m by then).
  const std::unique_ptr<sim::World> world = replays::simulate_replay_to(replay, 120, &error);
  ASSERT_NE(world, nullptr) << error;
  std::vector<sim::BodyId> ids(world->body_count());
  ids.resize(world->list_bodies(ids));
  bool found = false;
  for (const sim::BodyId id : ids) {
    sim::BodyView v;
    ASSERT_EQ(world->get_body(id, &v), sim::Error::none);
    if (v.shape.type != sim::ShapeType::sphere) continue;
    const float distance = (v.position.y - 0.3f * v.position.x) / std::sqrt(1.0f + 0.09f);
    EXPECT_NEAR(distance, 0.5f, 0.02f);
    found = true;
  }
  EXPECT_TRUE(found);

  const ToolRun verify = run("verify " + path);
  EXPECT_EQ(verify.code, 0) << verify.err;
  EXPECT_EQ(verify.out.rfind("OK: 120 ticks verified (1..120) in ", 0), 0u) << verify.out;
  const ToolRun info = run("info " + path);
  EXPECT_EQ(info.code, 0) << info.err;
  char digest[17];
  std::snprintf(digest, sizeof(digest), "%016llx",
                static_cast<unsigned long long>(replays::replay_level_digest(replay.header)));
  EXPECT_NE(info.out.find(std::string("level: digest ") + digest +
                          ", 1 meshes (2 triangles), 0 heightfields (0 triangles)"),
            std::string::npos)
      << info.out;
  const ToolRun view = run("view " + path + " -o " + dir() + "/bowl.html");
  EXPECT_EQ(view.code, 0) << view.err;
  // The page draws the ramp from the header's level: its two triangles, in body space.
  EXPECT_NE(slurp(dir() + "/bowl.html")
                .find("\"level_index\":0,\"hull\":{\"v\":[-10,-3,-10,-10,-3,10,10,3,10,10,3,-10],"
                      "\"f\":[[0,1,2],[0,2,3]]}"),
            std::string::npos);
  const ToolRun diff = run("diff " + path + " " + path);
  EXPECT_TRUE(diff.exited);
  EXPECT_EQ(diff.code, 0) << diff.err << diff.out;

  // The level counts against the memory budget with the WorldDef: a budget of the WorldDef's
  // bytes alone refuses the file, one that adds the level's bound takes it.
  const uint64_t world_bytes = sim::world_memory_bytes(replay.header.world_def);
  std::vector<sim::MeshDef> meshes;
  for (const sim::SceneMesh& m : replay.header.level_meshes)
    meshes.push_back(sim::MeshDef{m.vertices, m.indices});
  sim::LevelDef level;
  level.meshes = meshes;
  const uint64_t level_bytes = sim::level_memory_bytes(level);
  ASSERT_GT(level_bytes, 0u);
  replays::LoadedReplay again;
  EXPECT_FALSE(replays::load_replay_file(path, &again, &error, world_bytes));
  EXPECT_NE(error.find("memory budget"), std::string::npos) << error;
  EXPECT_TRUE(replays::load_replay_file(path, &again, &error, world_bytes + level_bytes)) << error;
}

// A level whose content no longer hashes to the digest beside it is refused when the header is
// read, with one line naming the level, by every command.
TEST(ReplayTool, ATamperedLevelIsABadFile) {
  const std::string good = record_level_scene("bowl_for_tamper.lsr");
  replays::LoadedReplay replay;
  std::string error;
  ASSERT_TRUE(replays::load_replay_file(good, &replay, &error)) << error;
  // Moves the first vertex 1 mm up in the header record, then writes every record again (the
  // record layer's checksums are rebuilt: only the level's own digest can tell).
  const sim::Vec3 v = replay.header.level_meshes.at(0).vertices.at(0);
  const float xyz[3] = {v.x, v.y, v.z};
  const std::string bytes = slurp(good);
  std::vector<uint8_t> raw(bytes.begin(), bytes.end());
  replays::RecordReader reader(raw);
  std::vector<std::vector<uint8_t>> records;
  std::span<const uint8_t> payload;
  while (reader.next(&payload) == replays::RecordError::none)
    records.emplace_back(payload.begin(), payload.end());
  ASSERT_GE(records.size(), 2u);
  std::vector<uint8_t>& header = records[0];
  bool moved = false;
  for (size_t i = 0; i + sizeof(xyz) <= header.size() && !moved; ++i) {
    if (std::memcmp(header.data() + i, xyz, sizeof(xyz)) != 0) continue;
    const float y = v.y + 0.001f;
    std::memcpy(header.data() + i + sizeof(float), &y, sizeof(y));
    moved = true;
  }
  ASSERT_TRUE(moved);
  const std::string path = dir() + "/bowl_tampered.lsr";
  {
    replays::RecordWriter writer;
    ASSERT_EQ(writer.open(path), replays::RecordError::none);
    for (const std::vector<uint8_t>& record : records)
      ASSERT_EQ(writer.append(record), replays::RecordError::none);
    ASSERT_EQ(writer.finish(), replays::RecordError::none);
  }
  for (const char* command : {"info ", "verify ", "view -o /dev/null "})
    expect_bad_file(run(command + path),
                    "header level: the carried level does not hash to its digest");
}

// Files written before the header carried a level (format 6 here) still load, with no level.
// (This one names the built-in `inputs` scene, whose WorldDef has changed since: it loads and
// prints, and verify refuses it for that fingerprint, not for its format.)
TEST(ReplayTool, AnOldFormatFileLoadsWithoutALevel) {
  const std::string old = LOCKSTEP_REPLAY_FILES "/inputs_4p_600_format6.lsr";
  replays::LoadedReplay replay;
  std::string error;
  ASSERT_TRUE(replays::load_replay_file(old, &replay, &error)) << error;
  EXPECT_EQ(replay.header.format_version, 6u);
  EXPECT_TRUE(replay.header.level_meshes.empty());
  EXPECT_TRUE(replay.header.level_heightfields.empty());
  const ToolRun info = run("info " + old);
  EXPECT_EQ(info.code, 0) << info.err;
  EXPECT_NE(info.out.find("level: none\n"), std::string::npos) << info.out;
}

// lockstep-replay-verify gives lockstep-replay verify's results: the matrix relies on it.
TEST(ReplayVerifyTool, SameResultsAsLockstepReplayVerify) {
  const std::string good = write_match("verify_tool_good.lsr", 120);
  const ToolRun ok = run_verify_tool(good);
  EXPECT_TRUE(ok.exited);
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_EQ(ok.out.rfind("OK: 120 ticks verified (1..120) in ", 0), 0u) << ok.out;
  EXPECT_EQ(run_verify_tool("--quiet " + good).code, 0);
  EXPECT_EQ(run_verify_tool("-- " + good).code, 0);  // a file name after `--`

  const std::string tampered = write_match("verify_tool_tampered.lsr", 100, nullptr, 37);
  const ToolRun diverged = run_verify_tool("-q " + tampered);
  EXPECT_TRUE(diverged.exited);
  EXPECT_EQ(diverged.code, 1);
  EXPECT_EQ(diverged.out.rfind("DIVERGED at tick 37: recorded hash ", 0), 0u) << diverged.out;
  EXPECT_EQ(diverged.out, run("verify -q " + tampered).out);

  // Bad files: one line on stderr naming the tool, exit 2.
  expect_bad_file(run_verify_tool(dir() + "/no_such_file.lsr"), "lockstep-replay-verify: ");
  const std::string text = dir() + "/verify_tool_text.lsr";
  write(text, {'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd', '\n'});
  expect_bad_file(run_verify_tool(text), "not a lockstep replay file");
  // A flipped byte in the payload of the record at byte `offset`, named in the error.
  const std::string corrupt = write_match("verify_tool_corrupt.lsr", 20);
  const uint64_t offset = corrupt_sixth_record(corrupt);
  expect_bad_file(run_verify_tool(corrupt), std::to_string(offset));

  // The memory budget, as lockstep-replay's.
  const std::string huge = write_match("verify_tool_huge.lsr", 3, [](replays::ReplayHeader* h) {
    h->world_def.max_bodies = 4000000;
    h->world_def.max_candidate_pairs = 40000000;
  });
  expect_bad_file(run_verify_tool(huge), "memory budget");
  expect_bad_file(run_verify_tool("--memory-budget-mb 1 " + good), "memory budget");
  EXPECT_EQ(run_verify_tool("--memory-budget-mb 1048576 " + good).code, 0);
}

TEST(ReplayVerifyTool, BadCommandLinesAreRefusedWithTheUsage) {
  const std::string good = write_match("verify_tool_usage.lsr", 3);
  const std::string cases[] = {"",
                               "-q",
                               "--bogus " + good,
                               good + " " + good,
                               "--memory-budget-mb",
                               "--memory-budget-mb 0 " + good,
                               "--memory-budget-mb 1048577 " + good,
                               "--memory-budget-mb -5 " + good,
                               "--memory-budget-mb 12abc " + good,
                               "--memory-budget-mb ' 7' " + good,
                               "--memory-budget-mb 99999999999999999999 " + good};
  for (const std::string& args : cases) {
    const ToolRun r = run_verify_tool(args);
    EXPECT_TRUE(r.exited) << args;
    EXPECT_EQ(r.code, 64) << args << ": " << r.err;
    EXPECT_EQ(r.err.rfind("lockstep-replay-verify: ", 0), 0u) << args << ": " << r.err;
    EXPECT_NE(r.err.find("usage: lockstep-replay-verify"), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << args << ": " << r.out;
  }
  const ToolRun help = run_verify_tool("--help");
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("usage: lockstep-replay-verify"), std::string::npos) << help.out;
}

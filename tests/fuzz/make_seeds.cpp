// Writes the fuzzers' seed corpora from real frames and files: make_seeds OUT_DIR writes
// OUT_DIR/<target>/<name> for each harness (scripts/fuzz-seeds.sh; the result is committed).
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "lockstep/replays/recorder.h"
#include "lockstep/replays/replay_header.h"
#include "lockstep/schema/level_file.h"
#include "lockstep/schema/messages.h"
#include "lockstep/sim/scene.h"
#include "lockstep/sim/testing.h"
#include "lockstep/sim/world.h"

namespace {

using namespace lockstep;

void write(const std::filesystem::path& path, const std::vector<uint8_t>& bytes) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

std::vector<uint8_t> slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A first byte for fuzz_frame_messages: the side (bit 0) and the read size.
std::vector<uint8_t> framed(uint8_t side_and_chunk, const std::vector<uint8_t>& frames) {
  std::vector<uint8_t> out{side_and_chunk};
  out.insert(out.end(), frames.begin(), frames.end());
  return out;
}

// A replay file of 8 scripted ticks of `world` (stepped), written through the real recorder;
// `scene` is the built-in scene it names ("" for a world of the game's own). With `messages`, a
// game message record (format 9) follows every other tick. With `level`, the header carries that
// scene's level geometry, which `world` was built with (format 10).
std::vector<uint8_t> record_replay(sim::World& world, const char* scene,
                                   const std::filesystem::path& out,
                                   const replays::ReplayStreamOptions& options = {},
                                   bool messages = false, const sim::Scene* level = nullptr) {
  const sim::InputScript script = sim::make_input_script(world);
  std::vector<sim::Input> buffer(world.def().max_inputs_per_tick);
  const std::filesystem::path path = out / "match.lsr";
  {
    replays::ReplayStreamWriter writer;
    replays::ReplayHeader header = replays::make_replay_header(world, scene, 60);
    if (level != nullptr) {
      header.level_meshes = level->meshes;
      header.level_heightfields = level->heightfields;
    }
    writer.open(path.string(), header, world, options);
    std::vector<sim::Input> applied;
    for (int t = 0; t < 8; ++t) {
      const uint32_t n = sim::scripted_inputs(1, world.tick() + 1, script, world, buffer);
      applied.clear();
      for (uint32_t i = 0; i < n; ++i)
        if (world.queue_input(buffer[i]) == sim::Error::none) applied.push_back(buffer[i]);
      world.step();
      writer.record_step(world, applied, world.state_hash(), std::nullopt);
      if (messages && t % 2 == 1) {
        const std::vector<uint8_t> said = {'r', 'e', 'a', 'd', 'y'};
        writer.record_game_message(world.tick(), 1 + static_cast<uint32_t>(t % 4), said);
      }
    }
    writer.finish();
  }
  std::vector<uint8_t> bytes = slurp(path);
  std::filesystem::remove(path);
  return bytes;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_make_seeds OUT_DIR\n");
    return 2;
  }
  const std::filesystem::path out = argv[1];
  sim::Scene scene;
  sim::make_builtin_scene("inputs", &scene);
  std::unique_ptr<sim::World> world = sim::build_world(scene);
  const sim::InputScript script = sim::make_input_script(*world);
  std::vector<sim::Input> buffer(world->def().max_inputs_per_tick);

  // Snapshots: at the start and after a few scripted ticks.
  std::vector<uint8_t> snapshot(world->max_snapshot_size());
  size_t written = 0;
  world->save_snapshot(snapshot, &written);
  write(out / "fuzz_snapshot" / "start", {snapshot.begin(), snapshot.begin() + written});

  // A replay of 8 ticks (and the record-file layer sees the same file).
  const std::vector<uint8_t> replay = record_replay(*world, "inputs", out);
  write(out / "fuzz_replay_file" / "match8", replay);
  write(out / "fuzz_record_file" / "match8", replay);
  // The inputs of the last recorded tick, for the frames below.
  sim::scripted_inputs(1, world->tick(), script, *world, buffer);
  world->save_snapshot(snapshot, &written);
  write(out / "fuzz_snapshot" / "tick8", {snapshot.begin(), snapshot.begin() + written});

  // Frames of every message kind a peer sends, each side, whole and split into small reads.
  schema::Hello hello;
  hello.room = "r1";
  hello.player_name = "bot";
  hello.auth_token = "token";
  schema::InputFrame input;
  input.target_tick = 9;
  input.sequence = 1;
  input.inputs.push_back(buffer[0]);
  std::vector<uint8_t> client;
  for (const schema::Message& m :
       {schema::Message{hello}, schema::Message{input}, schema::Message{schema::Ping{42}},
        schema::Message{schema::DesyncReport{3, 4, 5}},
        schema::Message{schema::ResyncRequest{"lost"}}}) {
    const std::vector<uint8_t> f = schema::encode_frame(m);
    client.insert(client.end(), f.begin(), f.end());
  }
  write(out / "fuzz_frame_messages" / "client_whole", framed(0x01 | (127 << 1), client));
  // Game messages (protocol 5): a short one, one at the server's default limit, an empty one
  // and one past the codec's cap (refused as bad_value), whole and split.
  {
    std::vector<uint8_t> games;
    for (const size_t size :
         {size_t{5}, size_t{256}, size_t{0}, schema::kMaxGameMessageBytes + 1}) {
      const std::vector<uint8_t> f =
          schema::encode_frame(schema::GameMessage{std::vector<uint8_t>(size, 'g')});
      games.insert(games.end(), f.begin(), f.end());
    }
    write(out / "fuzz_frame_messages" / "client_game_messages", framed(0x01 | (127 << 1), games));
    write(out / "fuzz_frame_messages" / "client_game_messages_split",
          framed(0x01 | (5 << 1), games));
  }
  write(out / "fuzz_frame_messages" / "client_split", framed(0x01 | (3 << 1), client));
  schema::Welcome welcome;
  schema::TickFrame tick;
  tick.tick = 8;
  tick.inputs.push_back(buffer[0]);
  tick.state_hash = world->state_hash();
  schema::Snapshot snap;
  snap.tick = 8;
  snap.state.assign(snapshot.begin(), snapshot.begin() + written);
  std::vector<uint8_t> server;
  for (const schema::Message& m :
       {schema::Message{welcome}, schema::Message{tick}, schema::Message{schema::Pong{1, 2, 3}},
        schema::Message{schema::ErrorMessage{}}, schema::Message{snap}}) {
    const std::vector<uint8_t> f = schema::encode_frame(m);
    server.insert(server.end(), f.begin(), f.end());
  }
  write(out / "fuzz_frame_messages" / "server_whole", framed(0x00 | (127 << 1), server));

  // Welcomes with a level table: the geometry carried, the digest alone, and a carried level
  // whose digest is off by one bit (refused by the decoder).
  {
    schema::Welcome level_welcome;
    level_welcome.world_def = sim::default_world_def();
    level_welcome.world_def_fingerprint = sim::world_def_fingerprint(*level_welcome.world_def);
    sim::SceneMesh mesh;
    mesh.vertices = {{0, 0, 0}, {1, 0, 0}, {1, 0, 1}, {0, 0, 1}};
    mesh.indices = {0, 2, 1, 0, 3, 2};
    sim::SceneHeightfield field;
    field.heights = {0, 0.5f, 1, 0.25f};
    field.columns = 2;
    field.rows = 2;
    level_welcome.level_meshes = {mesh};
    level_welcome.level_heightfields = {field};
    level_welcome.level_carried = true;
    level_welcome.level_digest = sim::level_digest(
        schema::view_level(level_welcome.level_meshes, level_welcome.level_heightfields).def());
    write(out / "fuzz_frame_messages" / "server_welcome_level",
          framed(0x00 | (127 << 1), schema::encode_frame(schema::Message{level_welcome})));
    schema::Welcome digest_only = level_welcome;
    digest_only.level_carried = false;
    write(out / "fuzz_frame_messages" / "server_welcome_level_digest",
          framed(0x00 | (127 << 1), schema::encode_frame(schema::Message{digest_only})));
    level_welcome.level_digest ^= 1;
    write(out / "fuzz_frame_messages" / "server_welcome_level_bad_digest",
          framed(0x00 | (127 << 1), schema::encode_frame(schema::Message{level_welcome})));
  }

  // A TickFrame carrying every command type (the body commands reuse the spawn's fields), and a
  // snapshot with the same commands queued and a game state field declared.
  {
    sim::StateFieldDef field;
    std::memcpy(field.name, "hill", 4);
    field.scope = sim::StateScope::player;
    field.default_value = 3;
    world->declare_state_field(field);
    std::vector<sim::BodyId> ids(world->body_count());
    ids.resize(world->list_bodies(ids));
    schema::TickFrame commands_tick;
    commands_tick.tick = 9;
    commands_tick.state_hash = world->state_hash();
    uint32_t sequence = 1;
    for (uint32_t type = 0; type <= static_cast<uint32_t>(sim::kLastCommandType); ++type) {
      sim::Command c;
      c.type = static_cast<sim::CommandType>(type);
      c.sequence = sequence++;
      c.position = {1, 2, 3};
      c.linear_velocity = {0.5f, 0, 0};
      c.owner_player = 1;
      c.score_delta = 1;
      c.body = ids.empty() ? sim::BodyId{1, 1} : ids.back();
      commands_tick.commands.push_back(c);
      if (c.type != sim::CommandType::spawn) world->queue_command(c);
    }
    const std::vector<uint8_t> f = schema::encode_frame(schema::Message{commands_tick});
    write(out / "fuzz_frame_messages" / "server_commands", framed(0x00 | (127 << 1), f));
    world->save_snapshot(snapshot, &written);
    write(out / "fuzz_snapshot" / "queued_commands",
          {snapshot.begin(), snapshot.begin() + written});
  }

  // The same replay from a world with small capacities, as a world of the game's own (it names no
  // built-in scene, whose WorldDef it no longer matches): the replay harness's budget (2 MiB)
  // refuses the default world (its capacities take 2.9 MiB; these 1.4 MiB), and a world that
  // small is what lets the harness re-simulate thousands of files a second.
  {
    sim::Scene small = scene;
    small.def.max_bodies = 128;  // the scene has 105
    small.def.max_contact_pairs = 256;
    small.def.max_contact_points = 512;
    small.def.max_candidate_pairs = 1024;
    small.def.max_events = 64;
    std::unique_ptr<sim::World> small_world = sim::build_world(small);
    write(out / "fuzz_replay_file" / "match8_small", record_replay(*small_world, "", out));
    // The same with a keyframe every 4 ticks: ticks 4 and 8 are delta keyframes (format 7).
    std::unique_ptr<sim::World> delta_world = sim::build_world(small);
    replays::ReplayStreamOptions options;
    options.keyframe_interval_ticks = 4;
    write(out / "fuzz_replay_file" / "match8_small_deltas",
          record_replay(*delta_world, "", out, options));
    // With game message records (format 9).
    std::unique_ptr<sim::World> message_world = sim::build_world(small);
    write(out / "fuzz_replay_file" / "match8_small_messages",
          record_replay(*message_world, "", out, {}, true));
  }
  // A world with level geometry (format 10): two owned bodies on a two-triangle mesh floor, the
  // header carrying the mesh, small enough for the harness's budget. The replay harness decodes
  // the header's level table, checks it against its digest and builds it into the world.
  {
    sim::Scene level_scene;
    std::string error;
    if (!sim::parse_scene_text("scene name=level_seed version=1\n"
                               "world dt=0.0166667 gravity=0,-9.81,0 substeps=2 max_bodies=8\n"
                               "mesh name=floor file=floor.obj\n"
                               "body name=floor type=static shape=mesh mesh=floor\n"
                               "body type=dynamic shape=sphere radius=0.5 pos=0,0.6,0 owner=1\n"
                               "body type=dynamic shape=box half=0.4,0.4,0.4 pos=2,0.5,1 owner=2\n",
                               &level_scene, &error)) {
      std::fprintf(stderr, "level seed scene: %s\n", error.c_str());
      return 1;
    }
    sim::SceneMesh floor;
    floor.vertices = {{-10, 0, -10}, {-10, 0, 10}, {10, 0, 10}, {10, 0, -10}};
    floor.indices = {0, 1, 2, 0, 2, 3};
    level_scene.meshes = {floor};
    std::unique_ptr<sim::World> level_world = sim::build_world(level_scene);
    if (!level_world) {
      std::fprintf(stderr, "level seed scene cannot be built\n");
      return 1;
    }
    write(out / "fuzz_replay_file" / "match8_level",
          record_replay(*level_world, "", out, {}, false, &level_scene));
  }

  // Scripts for the stateful server harness (fuzz_server_session.cpp decodes them: an operation
  // byte, client in bits 0-1 and kind above, then its arguments). Players join room r0 with
  // valid tokens, send inputs and Pings; in the second, one reports a desync and both leave.
  {
    const auto play = [](uint8_t client) {
      return std::vector<uint8_t>{uint8_t(0x00 | client),
                                  uint8_t(0x08 | client),
                                  0,
                                  0,
                                  0,
                                  5,  // connect; Hello r0
                                  0x1c,
                                  5,  // drain, wait 5 ms
                                  uint8_t(0x0c | client),
                                  3,
                                  1,
                                  0,
                                  1,
                                  1,
                                  10,
                                  0,
                                  0,
                                  0,
                                  0,
                                  0,
                                  0,
                                  0,
                                  1,  // an input
                                  uint8_t(0x10 | client),
                                  0,  // a Ping
                                  0x1c,
                                  5};
    };
    write(out / "fuzz_server_session" / "join_and_play", play(0));
    std::vector<uint8_t> two = play(0);
    const std::vector<uint8_t> second = play(1);
    const std::vector<uint8_t> leave = {0x10, 1, 0x1c, 2, 0x18, 0, 0x19, 1};  // desync, closes
    two.insert(two.end(), second.begin(), second.end());
    two.insert(two.end(), leave.begin(), leave.end());
    write(out / "fuzz_server_session" / "two_players", two);
  }

  // Scene text: level file lines and the bodies that name them (the parser keeps the lines; the
  // harness's world refuses the missing geometry).
  {
    const std::string text =
        "scene version=1\n"
        "mesh name=bowl file=levels/bowl.obj scale=2 pos=0,-1,0 rot=0,0,0,1\n"
        "heightfield name=hills file=hills.pgm spacing_x=2 spacing_z=2 height=40\n"
        "body type=static shape=mesh mesh=bowl friction=0.6\n"
        "body type=static shape=heightfield heightfield=hills pos=-8,-4,-8\n"
        "body type=dynamic shape=sphere radius=0.5 pos=0,2,0\n";
    write(out / "fuzz_scene_text" / "level_lines", {text.begin(), text.end()});
  }
  // Scene text: the built-in scenes as text.
  for (const std::string_view name : sim::builtin_scene_names()) {
    sim::Scene s;
    sim::make_builtin_scene(name, &s);
    if (s.bodies.size() > 64) continue;  // small seeds only
    const std::string text = sim::format_scene_text(s);
    write(out / "fuzz_scene_text" / std::string(name), {text.begin(), text.end()});
  }
  return 0;
}

// lockstep-replay: inspect, verify, compare and export replay files (docs/replays.md).
//
//   lockstep-replay info FILE              header, tick range, players, records, integrity
//   lockstep-replay verify FILE            re-simulate and compare every tick's hash
//   lockstep-replay diff A B               first divergent tick, then body/field differences
//   lockstep-replay dump FILE --tick T     full state at tick T as JSON
//   lockstep-replay export FILE [-o CSV]   per-tick body positions and orientations
//   lockstep-replay view FILE [--against OTHER] [-o HTML]   the browser viewer's page
//   lockstep-replay record-scripted --scene S --ticks N --seed X OUT   (golden replays)
//
// Exit codes: 0 success (verify: every hash matched; diff: no divergence), 1 a divergence was
// found, 2 the file could not be read or used (one line on stderr), 64 bad command line.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "lockstep/replays/recorder.h"
#include "lockstep/replays/viewer_page.h"
#include "lockstep/schema/scene_file.h"
#include "lockstep/sim/scene.h"
#include "lockstep/sim/testing.h"
#include "lockstep/sim/version.h"
#include "replay_file.h"

namespace {

using namespace lockstep;

constexpr const char* kProgram = "lockstep-replay";
using apps::kExitDiverged;

int fail(const std::string& message) {
  return apps::fail(kProgram, message);
}

// --memory-budget-mb: the most a replay's world may take (files come from the field).
uint64_t g_memory_budget_mb = replays::kDefaultWorldMemoryBudgetBytes >> 20;

bool load(const std::string& path, replays::LoadedReplay* replay, int* exit_code) {
  return apps::load_replay(kProgram, path, g_memory_budget_mb << 20, replay, exit_code);
}

int cmd_info(const std::string& path) {
  replays::LoadedReplay r;
  int code = 0;
  if (!load(path, &r, &code)) return code;
  const replays::ReplayHeader& h = r.header;
  std::set<uint32_t> players;
  uint64_t inputs = 0;
  // By sim::CommandType: spawn, destroy, add_score, then the body commands.
  uint64_t commands[static_cast<size_t>(sim::kLastCommandType) + 1] = {};
  for (const replays::ReplayTick& t : r.ticks) {
    inputs += t.inputs.size();
    for (const sim::Command& c : t.commands)
      ++commands[std::min(static_cast<size_t>(c.type), std::size(commands) - 1)];
    for (const sim::Input& in : t.inputs)
      players.insert(in.player);
  }
  std::printf("file: %s\n", path.c_str());
  std::printf("format_version: %u\nlockstep_version: %s\n", h.format_version,
              h.lockstep_version.c_str());
  if (h.physics_revision == 0) {
    std::printf("physics_revision: not stated (written before the field)\n");
  } else {
    std::printf("physics_revision: %u%s\n", h.physics_revision,
                h.physics_revision == sim::kPhysicsRevision ? " (this build's)"
                                                            : " (not this build's: it cannot "
                                                              "re-simulate the ticks)");
  }
  std::printf("writer: %s", h.writer == replays::ReplayWriterKind::client ? "client" : "server");
  if (h.writer == replays::ReplayWriterKind::client) std::printf(" (player %u)", h.player_id);
  std::printf("\nroom: %s\nscene: %s\n", h.room.c_str(),
              h.scene.empty() ? "(custom)" : h.scene.c_str());
  std::printf("world_def_fingerprint: %016" PRIx64 "\ntick_rate_hz: %u\n", h.world_def_fingerprint,
              h.tick_rate_hz);
  if (h.level_meshes.empty() && h.level_heightfields.empty()) {
    std::printf("level: none\n");
  } else {
    // Triangles as the header holds them (degenerate ones included: the world drops those).
    uint64_t mesh_triangles = 0;
    uint64_t heightfield_triangles = 0;
    for (const sim::SceneMesh& m : h.level_meshes)
      mesh_triangles += m.indices.size() / 3;
    for (const sim::SceneHeightfield& f : h.level_heightfields)
      heightfield_triangles += 2 * uint64_t{f.columns - 1} * (f.rows - 1);
    std::printf("level: digest %016" PRIx64 ", %zu meshes (%" PRIu64
                " triangles), %zu heightfields (%" PRIu64 " triangles)\n",
                replays::replay_level_digest(h), h.level_meshes.size(), mesh_triangles,
                h.level_heightfields.size(), heightfield_triangles);
  }
  std::printf("ticks: %" PRIu64 "..%" PRIu64 " (%zu tick records, %.2f s)\n", h.first_tick,
              r.last_tick(), r.ticks.size(),
              h.tick_rate_hz ? static_cast<double>(r.ticks.size()) / h.tick_rate_hz : 0.0);
  std::printf("keyframes: %zu at ticks", r.keyframes.size());
  for (const replays::ReplayKeyframe& k : r.keyframes)
    std::printf(" %" PRIu64, k.tick);
  std::printf("\nplayers:");
  for (uint32_t p : players)
    std::printf(" %u", p);
  if (players.empty()) std::printf(" (no inputs)");
  uint64_t body_commands = 0;
  for (size_t i = 3; i < std::size(commands); ++i)
    body_commands += commands[i];
  std::printf("\ninputs: %" PRIu64 "\ncommands: %" PRIu64 " spawn, %" PRIu64 " destroy, %" PRIu64
              " add_score, %" PRIu64
              " body (pose, velocity, impulse, kinematic, respawn)\n"
              "game_messages: %zu\nrecords: %" PRIu64 "\nintegrity: %s\n",
              inputs, commands[0], commands[1], commands[2], body_commands, r.game_messages.size(),
              r.records, r.integrity.c_str());
  return 0;
}

int cmd_verify(const std::string& path, bool quiet) {
  return apps::verify_replay_file(kProgram, path, g_memory_budget_mb << 20, quiet);
}

int cmd_diff(const std::string& path_a, const std::string& path_b, size_t max_fields) {
  replays::LoadedReplay a, b;
  int code = 0;
  if (!load(path_a, &a, &code) || !load(path_b, &b, &code)) return code;
  const replays::DiffResult d = replays::diff_replays(a, b, max_fields);
  if (!d.ok) return fail(d.error);
  if (!d.first_divergent_tick) {
    std::printf("identical: hashes agree on every common tick (%" PRIu64 "..%" PRIu64 ")\n",
                d.common_first_tick, d.common_last_tick);
    return 0;
  }
  std::printf("first divergent tick: %" PRIu64 "\n", *d.first_divergent_tick);
  std::printf("compared tick: %" PRIu64 " (%s)\n", *d.compared_tick, d.note.c_str());
  if (d.fields.empty())
    std::printf(
        "no body field differs (the difference is in state get_body does not show, "
        "e.g. the contact cache)\n");
  for (const replays::FieldDiff& f : d.fields)
    std::printf("body %u:%u %s A=%.9g B=%.9g ulps=%" PRIu64 "\n", f.body.index1, f.body.generation,
                f.field.c_str(), f.value_a, f.value_b, f.ulps);
  if (d.fields.size() == max_fields) std::printf("(stopped at %zu fields)\n", max_fields);
  return kExitDiverged;
}

int cmd_dump(const std::string& path, uint64_t tick) {
  replays::LoadedReplay r;
  int code = 0;
  if (!load(path, &r, &code)) return code;
  std::string error;
  std::unique_ptr<sim::World> world = replays::simulate_replay_to(r, tick, &error);
  if (!world) return fail(path + ": " + error);
  std::fputs(replays::dump_state_json(*world).c_str(), stdout);
  return 0;
}

int cmd_state(const std::string& path, uint64_t tick) {
  replays::LoadedReplay r;
  int code = 0;
  if (!load(path, &r, &code)) return code;
  std::string error;
  std::unique_ptr<sim::World> world = replays::simulate_replay_to(r, tick, &error);
  if (!world) return fail(path + ": " + error);
  std::printf("tick=%" PRIu64 " state=%s\n", world->tick(),
              replays::game_state_text(*world).c_str());
  return 0;
}

int cmd_export(const std::string& path, const std::string& out_path) {
  replays::LoadedReplay r;
  int code = 0;
  if (!load(path, &r, &code)) return code;
  std::string error;
  bool ok;
  if (out_path.empty() || out_path == "-") {
    ok = replays::export_csv(r, std::cout, &error);
  } else {
    std::ofstream out(out_path);
    if (!out) return fail("cannot create " + out_path);
    ok = replays::export_csv(r, out, &error);
  }
  return ok ? 0 : fail(path + ": " + error);
}

// The viewer page of FILE (and OTHER): default output FILE with ".html" appended.
int cmd_view(const std::string& path, const std::string& against_path, std::string out_path,
             const std::vector<uint32_t>& contact_bodies, const std::vector<float>& frame) {
  const auto start = std::chrono::steady_clock::now();
  replays::LoadedReplay r, other;
  int code = 0;
  if (!load(path, &r, &code)) return code;
  if (!against_path.empty() && !load(against_path, &other, &code)) return code;
  replays::ViewerOptions options;
  options.contact_bodies = contact_bodies;
  if (!frame.empty()) {
    if (frame.size() != 6 || !(frame[0] < frame[3] && frame[1] < frame[4] && frame[2] < frame[5]))
      return fail("--frame takes X0,Y0,Z0,X1,Y1,Z1 with each low corner below the high one");
    options.frame =
        std::array<float, 6>{frame[0], frame[1], frame[2], frame[3], frame[4], frame[5]};
  }
  const replays::ViewerPage page =
      replays::make_viewer_page(r, against_path.empty() ? nullptr : &other, options);
  if (!page.ok) return fail(path + ": " + page.error);
  if (out_path.empty()) out_path = path + ".html";
  {
    std::ofstream out(out_path, std::ios::binary);
    if (!out) return fail("cannot create " + out_path);
    out.write(page.html.data(), static_cast<std::streamsize>(page.html.size()));
    if (!out) return fail("writing " + out_path + " failed");
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("wrote %s: ticks %" PRIu64 "..%" PRIu64 ", %u bodies, %zu bytes (poses %zu",
              out_path.c_str(), page.first_tick, page.last_tick, page.bodies, page.html.size(),
              page.pose_bytes);
  if (page.other_pose_bytes != 0) std::printf(" + %zu of the other run", page.other_pose_bytes);
  std::printf(", contacts %zu, before base64) in %.2f s (re-simulation %.2f s)\n",
              page.contact_bytes, seconds, page.simulate_seconds);
  std::printf("camera: frame %.6g,%.6g,%.6g to %.6g,%.6g,%.6g (%s)\n", page.frame_lo[0],
              page.frame_lo[1], page.frame_lo[2], page.frame_hi[0], page.frame_hi[1],
              page.frame_hi[2], page.frame_from.c_str());
  if (page.game_events + page.game_state_changes + page.game_messages != 0)
    std::printf("game: %zu events, %zu state changes, %zu messages\n", page.game_events,
                page.game_state_changes, page.game_messages);
  if (page.first_divergent_tick)
    std::printf("desync: first divergent tick %" PRIu64 ", %zu differing fields\n",
                *page.first_divergent_tick, page.fields);
  return 0;
}

// Pushes for scenes without player-owned bodies (pile): each of `players` players pushes a
// pseudo-random dynamic body sideways every 20 ticks (SplitMix64 of seed and tick).
uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint32_t scripted_pushes(uint64_t seed, uint64_t tick, uint32_t players,
                         const std::vector<sim::BodyId>& dynamic_bodies,
                         std::vector<sim::Input>* out) {
  out->clear();
  if (dynamic_bodies.empty()) return 0;
  for (uint32_t p = 1; p <= players; ++p) {
    const uint64_t r = mix64(seed ^ mix64(tick * 16 + p));
    if ((tick + p * 5) % 20 != 0) continue;
    sim::Input in;
    in.player = p;
    in.sequence = static_cast<uint32_t>(tick);
    in.body = dynamic_bodies[r % dynamic_bodies.size()];
    // ±(100..612) N·s sideways: a visible shove for bodies of a few hundred kg.
    const auto impulse = [](uint64_t bits) {
      const int32_t magnitude = 100 + static_cast<int32_t>(bits % 512);
      return ((bits >> 9) & 1 ? magnitude : -magnitude) * (1 << sim::kInputScaleLog2);
    };
    in.linear_impulse[0] = impulse(r >> 8);
    in.linear_impulse[2] = impulse(r >> 24);
    out->push_back(in);
  }
  return static_cast<uint32_t>(out->size());
}

// The body --desync-at moves: player 1's first body, else the first dynamic one.
sim::BodyId desync_victim(const sim::World& world, const std::vector<sim::BodyId>& dynamic_bodies) {
  std::vector<sim::BodyId> ids(world.body_count());
  ids.resize(world.list_bodies(ids));
  for (sim::BodyId id : ids) {
    sim::BodyView v;
    if (world.get_body(id, &v) == sim::Error::none && v.owner_player == 1) return id;
  }
  return dynamic_bodies.empty() ? sim::BodyId{} : dynamic_bodies.front();
}

// With desync_at > 0 the file is a made client desync dump: the recorded world is a client's
// whose body is moved 0.5 m along x before the step that makes tick desync_at (the SDK's test
// hook does the same in the end-to-end test); an untouched copy gives the authoritative hashes.
// It ends at that tick with the client's own state as a last keyframe, as a client's dump does.

int cmd_record_scripted(const std::string& scene_name, uint64_t ticks, uint64_t seed,
                        uint32_t players, uint32_t keyframe_interval, uint64_t desync_at,
                        const std::string& out_path) {
  sim::Scene scene;
  const bool builtin = sim::make_builtin_scene(scene_name, &scene);
  if (!builtin) {
    // A scene file: its `at` lines are applied as lockstep-sim applies them, and its level
    // files are read relative to its folder (the header carries their geometry).
    std::string error;
    if (!schema::load_scene_file(scene_name, &scene, &error)) {
      return fail("'" + scene_name + "' is neither a built-in scene nor a loadable scene file (" +
                  error + ")");
    }
  }
  scene.def.measure_stage_times = false;
  sim::Error error = sim::Error::none;
  std::unique_ptr<sim::World> world = sim::build_world(scene, &error);
  if (!world) return fail(std::string("scene cannot be built: ") + sim::error_message(error));
  const sim::InputScript script = sim::make_input_script(*world);
  std::vector<sim::BodyId> dynamic_bodies;
  {
    std::vector<sim::BodyId> ids(world->body_count());
    ids.resize(world->list_bodies(ids));
    for (sim::BodyId id : ids) {
      sim::BodyView v;
      if (world->get_body(id, &v) == sim::Error::none && v.type == sim::BodyType::dynamic)
        dynamic_bodies.push_back(id);
    }
  }
  // A scene file is not part of the build: the header's WorldDef and keyframe carry it, and only
  // a built-in scene is named (verify checks a named scene against this build's).
  replays::ReplayHeader header = replays::make_replay_header(*world, builtin ? scene_name : "", 60);
  header.level_meshes = scene.meshes;
  header.level_heightfields = scene.heightfields;
  header.room = "record-scripted seed " + std::to_string(seed);
  if (!builtin) header.room += ", scene file " + scene_name;
  std::unique_ptr<sim::World> authority;  // the untouched world of a made desync
  sim::BodyId victim{};
  if (desync_at != 0) {
    authority = sim::build_world(scene, &error);
    victim = desync_victim(*world, dynamic_bodies);
    if (!authority || victim.is_null()) return fail("this scene cannot make a desync");
    header.writer = replays::ReplayWriterKind::client;
    header.player_id = 1;
    header.room += ", desync made at tick " + std::to_string(desync_at);
    ticks = std::min(ticks, desync_at);
  }
  replays::ReplayStreamWriter writer;
  replays::ReplayStreamOptions options;
  options.flush_every_ticks = 64;
  options.keyframe_interval_ticks = keyframe_interval;
  replays::WriteResult result = writer.open(out_path, header, *world, options);
  if (!result.ok) return fail(result.error);
  std::vector<sim::Input> candidates(world->def().max_inputs_per_tick);
  std::vector<sim::Input> applied;
  std::vector<sim::Command> commands;  // the scene's `at` lines of the tick
  size_t next_action = 0;
  std::vector<sim::Error> errors;  // what the world said to each candidate
  for (uint64_t n = 0; n < ticks; ++n) {
    const uint64_t tick = world->tick() + 1;  // inputs for the step that makes `tick`
    if (!script.bodies.empty()) {
      candidates.resize(world->def().max_inputs_per_tick);
      candidates.resize(sim::scripted_inputs(seed, tick, script, *world, candidates));
    } else {
      scripted_pushes(seed, tick, players, dynamic_bodies, &candidates);
    }
    commands.clear();
    for (; next_action < scene.actions.size() && scene.actions[next_action].tick <= tick;
         ++next_action) {
      const sim::ScriptedAction& a = scene.actions[next_action];
      if (a.tick != tick) continue;
      if (a.is_command) {
        commands.push_back(a.command);
      } else {
        candidates.push_back(a.input);
      }
    }
    std::sort(commands.begin(), commands.end(), sim::command_less);
    std::sort(candidates.begin(), candidates.end(), sim::input_less);
    if (authority && tick == desync_at) debug_perturb_position(*world, victim, {0.5f, 0, 0});
    errors.assign(candidates.size(), sim::Error::none);
    world->step(sim::TickInput{commands, candidates}, sim::TickErrors{{}, errors});
    applied.clear();
    for (size_t i = 0; i < candidates.size(); ++i)
      if (errors[i] == sim::Error::none) applied.push_back(candidates[i]);
    if (authority) authority->step(sim::TickInput{commands, applied});
    const uint64_t authoritative = authority ? authority->state_hash() : world->state_hash();
    const std::optional<uint64_t> own =
        authority ? std::optional<uint64_t>(world->state_hash()) : std::nullopt;
    result = writer.record_step(*world, applied, authoritative, own, commands);
    if (!result.ok) return fail(result.error);
  }
  if (authority) {
    result = writer.record_keyframe(*world);
    if (!result.ok) return fail(result.error);
  }
  result = writer.finish();
  if (!result.ok) return fail(result.error);
  std::printf("wrote %s: scene %s, ticks %" PRIu64 "..%" PRIu64 ", %" PRIu64 " bytes\n",
              out_path.c_str(), scene_name.c_str(), header.first_tick, world->tick(),
              writer.file_bytes());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"lockstep-replay: inspect, verify, diff, dump and export lockstep replay files"};
  app.require_subcommand(1);
  app.fallthrough();  // --memory-budget-mb may follow the subcommand
  app.add_option("--memory-budget-mb", g_memory_budget_mb,
                 "refuse a file whose world would take more memory than this (MiB)")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 20));

  std::string file, file_b, out_path;
  bool quiet = false;
  uint64_t tick = 0;
  size_t max_fields = 200;

  CLI::App* info = app.add_subcommand("info", "header, tick range, players, records, integrity");
  info->add_option("FILE", file, "replay file")->required();

  CLI::App* verify = app.add_subcommand("verify", "re-simulate and compare every tick's hash");
  verify->add_option("FILE", file, "replay file")->required();
  verify->add_flag("-q,--quiet", quiet, "no progress bar");

  CLI::App* diff = app.add_subcommand("diff", "first divergent tick, body and field of A and B");
  diff->add_option("A", file, "first replay file")->required();
  diff->add_option("B", file_b, "second replay file")->required();
  diff->add_option("--max-fields", max_fields, "stop listing after this many fields")
      ->capture_default_str();

  CLI::App* dump = app.add_subcommand("dump", "full state at a tick as JSON");
  dump->add_option("FILE", file, "replay file")->required();
  dump->add_option("--tick", tick, "tick to dump")->required();

  CLI::App* state = app.add_subcommand(
      "state", "game state at a tick, re-simulated (the line lockstep-bot prints as state=)");
  state->add_option("FILE", file, "replay file")->required();
  state->add_option("--tick", tick, "tick to re-simulate to")->required();

  CLI::App* exp = app.add_subcommand("export", "per-tick body positions/orientations as CSV");
  exp->add_option("FILE", file, "replay file")->required();
  exp->add_option("-o,--output", out_path, "CSV file (default: stdout)");

  std::vector<uint32_t> contact_bodies;
  CLI::App* view = app.add_subcommand(
      "view", "write one self-contained HTML page showing the replay (and a desync) in 3D");
  view->add_option("FILE", file, "replay file")->required();
  view->add_option("--against", file_b, "a second replay of the same match to compare with");
  view->add_option("-o,--output", out_path, "HTML file (default: FILE.html)");
  view->add_option("--contacts", contact_bodies,
                   "body slots (the K of body K:G) whose contact points are also written");
  std::vector<float> frame;
  view->add_option("--frame", frame,
                   "X0,Y0,Z0,X1,Y1,Z1: the box (metres) the camera frames first, instead of "
                   "where the dynamic bodies went")
      ->delimiter(',')
      ->expected(6);

  std::string scene = "inputs";
  uint64_t ticks = 600;
  uint64_t seed = 1;
  uint32_t players = 4;
  uint32_t keyframe_interval = 0;
  CLI::App* record =
      app.add_subcommand("record-scripted", "record a scene driven by scripted inputs");
  record->add_option("--scene", scene, "built-in scene, or a scene file")->capture_default_str();
  record->add_option("--ticks", ticks, "ticks to record")->capture_default_str();
  record->add_option("--seed", seed, "input script seed")->capture_default_str();
  record->add_option("--players", players, "pushing players (scenes without owned bodies)")
      ->capture_default_str();
  record->add_option("--keyframe-interval", keyframe_interval, "extra keyframes every N ticks")
      ->capture_default_str();
  uint64_t desync_at = 0;
  record->add_option("--desync-at", desync_at,
                     "write a made client desync dump: player 1's body moved 0.5 m before this "
                     "tick, the file ending there");
  record->add_option("OUT", out_path, "replay file to write")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : apps::kExitUsage;
  }

  if (*info) return cmd_info(file);
  if (*verify) return cmd_verify(file, quiet);
  if (*diff) return cmd_diff(file, file_b, max_fields);
  if (*dump) return cmd_dump(file, tick);
  if (*state) return cmd_state(file, tick);
  if (*exp) return cmd_export(file, out_path);
  if (*view) return cmd_view(file, file_b, out_path, contact_bodies, frame);
  if (*record)
    return cmd_record_scripted(scene, ticks, seed, players, keyframe_interval, desync_at, out_path);
  return apps::kExitUsage;
}

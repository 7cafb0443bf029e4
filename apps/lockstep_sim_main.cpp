// lockstep-sim: runs a scene headless and prints its state hashes, for the determinism matrix
// (the same command on every platform must print the same lines) and for quick experiments.
//
// Usage:
//   lockstep-sim --scene NAME|FILE --ticks N [--every K] [--json] [--seed S] [--timing]
//   lockstep-sim --scene NAME|FILE --print-scene
//
//   --scene NAME|FILE  a built-in scene (pyramid, pile, bounce, inputs, pyramid3d) or the path
//                      of a text scene file (format: docs/scene-format.md), with the level files
//                      its `mesh file=` and `heightfield file=` lines name
//   --ticks N          number of fixed-dt steps to run (0 prints the initial state's hash)
//   --every K          print a hash every K ticks (default 60), and always after the last tick
//   --json             one JSON object per line: {"tick":N,"hash":"..."}, then a summary
//                      {"scene":...,"ticks":N,"hash":"...","overflow_steps":M}
//   --seed S           seed of the input script for scenes whose bodies players own (the
//                      `inputs` scene); default 0x5eed1234abcd0001
//   --timing           print the wall-clock time of the run to stderr
//   --stages           print the mean wall-clock time of each step stage to stderr (the step's
//                      own timers, StepStats::stage_ns: where a build spends its step)
//   --query-probe T    after tick T, also print `T queries HASH`: the hash of a fixed set of
//                      ray casts, sphere casts and overlaps (query_probe_hash in
//                      lockstep/sim/query.h); the query golden. Not printed when the run is
//                      shorter than T ticks
//   Scene files may schedule commands and inputs (`at tick=N spawn|destroy|input ...` lines,
//   docs/scene-format.md): they are queued before the step that makes tick N; a rejected one is
//   reported on stderr and the run goes on (the rejection is part of the deterministic result).
//   --query FILE       after the last tick, run the query lines of FILE (ray, overlap, cast;
//                      format below) against the final state and print one result line each
//   --print-scene      print the scene in the text format and exit (no --ticks needed); a
//                      starting point for new scene files
//   --help             this text
// Query file: one query a line, `#` comments, key=value tokens (vectors x,y,z; filters decimal
// or 0x hex, defaults as QueryFilter):
//   ray from=x,y,z to=x,y,z [all=1] [category=C] [mask=M]
//   overlap shape=sphere|box|capsule [radius=R] [half=x,y,z] [half_height=H] pos=x,y,z
//           [rot=x,y,z,w] [category=C] [mask=M]
//   cast radius=R from=x,y,z to=x,y,z [category=C] [mask=M]          (a sphere cast)
// Output, per line N of the file: `query N <kind> found=F` then, for each result,
// ` body=INDEX1:GEN` and for rays and casts ` fraction=.. point=x,y,z normal=x,y,z` (%.9g, so
// every platform prints the same text for the same bits). A malformed line exits 2.
// Flags also accept the --flag=value form. Integers are decimal, unsigned, without sign.
//
// Output (stdout, text mode): one line per printed tick, `<tick> <hash>`, the hash as 16
// lowercase hex digits. Warnings (a capacity ran out during a step: printed once per kind,
// counted always) and errors go to stderr.
//
// Sync test (--synctest K): after every tick a copy of the world is restored to K ticks back and
// steps them again with the same inputs and commands; every tick's hash and the final snapshot
// must match. On stderr: one line when it passed, or the first failing tick and the first body
// fields that differ there.
//
// Exit status: 0 success; 1 a sync test failed; 2 bad flags, unreadable or malformed scene file,
// or a scene the world refuses.
//
// Examples:
//   lockstep-sim --scene pile --ticks 600
//   lockstep-sim --scene inputs --ticks 3600 --every 600 --json --seed 42
//   lockstep-sim --scene my_scene.txt --ticks 120 --every 1
//   lockstep-sim --scene pyramid --print-scene > my_scene.txt
//
// Depends on the sim and the C++ standard library only, so it builds for every platform of
// the determinism matrix (x86-64, aarch64, i686, wasm32 via emscripten).
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>
#ifdef _WIN32
#include <fcntl.h>
#include <io.h>
#endif

#include "lockstep/sim/query.h"
#include "lockstep/sim/scene.h"
#if LOCKSTEP_SIM_LEVEL_FILES
#include "lockstep/schema/level_file.h"
#endif
#include "lockstep/sim/state_diff.h"
#include "lockstep/sim/sync_test.h"
#include "lockstep/sim/testing.h"
#include "lockstep/sim/world.h"

namespace {

using namespace lockstep::sim;

constexpr int kExitUsage = 2;
constexpr uint64_t kDefaultMemoryBudgetMb = 512;
constexpr uint64_t kDefaultEvery = 60;
constexpr std::streamsize kMaxSceneFileBytes = 256ll << 20;

void print_usage(std::FILE* out) {
  std::fputs(
      "usage: lockstep-sim --scene NAME|FILE --ticks N [--every K] [--json] [--seed S] "
      "[--timing] [--stages] [--synctest K]\n"
      "       lockstep-sim --scene NAME|FILE --print-scene\n"
      "  --scene NAME|FILE  built-in scene (",
      out);
  bool first = true;
  for (std::string_view name : builtin_scene_names()) {
    std::fprintf(out, "%s%.*s", first ? "" : ", ", static_cast<int>(name.size()), name.data());
    first = false;
  }
  std::fputs(
      ") or a text scene file\n"
      "  --ticks N          steps to run\n"
      "  --every K          print a hash every K ticks (default 60) and after the last\n"
      "  --json             JSON lines instead of `tick hash`\n"
      "  --seed S           input script seed for scenes with players\n"
      "  --timing           wall-clock time of the run on stderr\n"
      "  --stages           mean wall-clock time of each step stage on stderr\n"
      "  --query-probe T    after tick T also print `T queries HASH` (the query golden)\n"
      "  --synctest K       after every tick, roll back K ticks (1-64) and re-simulate them: the\n"
      "                     hashes and the snapshot must come out the same (exit 1 if not)\n"
      "  --print-scene      print the scene as text (docs/scene-format.md) and exit\n"
      "  --memory-budget-mb M  refuse a scene whose world would take more than M MiB\n"
      "                     (default 512)\n",
      out);
}

/// Strict decimal uint64: digits only (no sign, no spaces), no overflow.
bool parse_u64(std::string_view text, uint64_t* out) {
  if (text.empty()) return false;
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    uint64_t digit = static_cast<uint64_t>(c - '0');
    if (value > (UINT64_MAX - digit) / 10) return false;
    value = value * 10 + digit;
  }
  *out = value;
  return true;
}

struct Options {
  std::string scene;
  uint64_t ticks = 0;
  uint64_t every = kDefaultEvery;
  uint64_t seed = kDefaultInputSeed;
  bool json = false;
  bool timing = false;
  bool stages = false;  // --stages: mean time per step stage on stderr
  bool help = false;
  bool print_scene = false;
  bool query_probe = false;
  uint64_t query_probe_tick = 0;
  std::string query_file;  // --query: query lines run against the final state
  uint64_t synctest = 0;   // --synctest K: roll back K ticks and re-simulate after every tick
  // --memory-budget-mb: a scene file from the field may not make the world bigger than this.
  uint64_t memory_budget_mb = kDefaultMemoryBudgetMb;
};

/// Parses argv; on failure writes why to *error.
bool parse_options(int argc, char** argv, Options* options, std::string* error) {
  bool have_scene = false, have_ticks = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    std::string_view value;
    bool inline_value = false;
    if (size_t eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string_view::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      inline_value = true;
    }
    auto take_value = [&](std::string_view* out) {
      if (inline_value) {
        *out = value;
        return true;
      }
      if (i + 1 >= argc) {
        *error = std::string(arg) + " needs a value";
        return false;
      }
      *out = argv[++i];
      return true;
    };
    auto take_u64 = [&](uint64_t* out) {
      std::string_view text;
      if (!take_value(&text)) return false;
      if (!parse_u64(text, out)) {
        *error = std::string(arg) + ": '" + std::string(text) +
                 "' is not an unsigned decimal integer (64-bit)";
        return false;
      }
      return true;
    };
    auto no_value = [&]() {
      if (!inline_value) return true;
      *error = std::string(arg) + " takes no value";
      return false;
    };
    if (arg == "--scene") {
      std::string_view text;
      if (!take_value(&text)) return false;
      if (text.empty()) {
        *error = "--scene: empty name";
        return false;
      }
      options->scene = std::string(text);
      have_scene = true;
    } else if (arg == "--ticks") {
      if (!take_u64(&options->ticks)) return false;
      have_ticks = true;
    } else if (arg == "--every") {
      if (!take_u64(&options->every)) return false;
      if (options->every == 0) {
        *error = "--every: must be at least 1";
        return false;
      }
    } else if (arg == "--seed") {
      if (!take_u64(&options->seed)) return false;
    } else if (arg == "--json") {
      if (!no_value()) return false;
      options->json = true;
    } else if (arg == "--timing") {
      if (!no_value()) return false;
      options->timing = true;
    } else if (arg == "--stages") {
      if (!no_value()) return false;
      options->stages = true;
    } else if (arg == "--query-probe") {
      if (!take_u64(&options->query_probe_tick)) return false;
      options->query_probe = true;
    } else if (arg == "--query") {
      std::string_view file;
      if (!take_value(&file)) return false;
      options->query_file = std::string(file);
    } else if (arg == "--synctest") {
      if (!take_u64(&options->synctest)) return false;
      if (options->synctest < 1 || options->synctest > SyncTester::kMaxRollbackTicks) {
        *error = "--synctest: K must be 1 … " + std::to_string(SyncTester::kMaxRollbackTicks);
        return false;
      }
    } else if (arg == "--memory-budget-mb") {
      if (!take_u64(&options->memory_budget_mb)) return false;
      if (options->memory_budget_mb < 1 || options->memory_budget_mb > (uint64_t{1} << 20)) {
        *error = "--memory-budget-mb: must be 1 … 1048576";
        return false;
      }
    } else if (arg == "--print-scene") {
      if (!no_value()) return false;
      options->print_scene = true;
    } else if (arg == "--help" || arg == "-h") {
      options->help = true;
      return true;
    } else {
      *error = "unknown argument '" + std::string(argv[i]) + "'";
      return false;
    }
  }
  if (!have_scene) {
    *error = "--scene is required";
    return false;
  }
  if (!have_ticks && !options->print_scene) {
    *error = "--ticks is required";
    return false;
  }
  return true;
}

bool is_builtin(std::string_view name) {
  for (std::string_view builtin : builtin_scene_names()) {
    if (builtin == name) return true;
  }
  for (std::string_view builtin : level_scene_names()) {
    if (builtin == name) return true;
  }
  return false;
}

/// A built-in scene by name, else the scene file at that path.
bool load_scene(const std::string& name_or_path, Scene* scene) {
  if (is_builtin(name_or_path)) return make_builtin_scene(name_or_path, scene);
  std::ifstream file(name_or_path, std::ios::binary);
  if (!file) {
    std::fprintf(stderr,
                 "lockstep-sim: '%s' is neither a built-in scene nor a readable file "
                 "(built-in: ",
                 name_or_path.c_str());
    bool first = true;
    for (std::string_view name : builtin_scene_names()) {
      std::fprintf(stderr, "%s%.*s", first ? "" : ", ", static_cast<int>(name.size()), name.data());
      first = false;
    }
    std::fputs(")\n", stderr);
    return false;
  }
  std::string text;
  char buffer[1 << 16];
  while (file.read(buffer, sizeof(buffer)) || file.gcount() > 0) {
    text.append(buffer, static_cast<size_t>(file.gcount()));
    if (static_cast<std::streamsize>(text.size()) > kMaxSceneFileBytes) {
      std::fprintf(stderr, "lockstep-sim: %s: larger than %lld bytes\n", name_or_path.c_str(),
                   static_cast<long long>(kMaxSceneFileBytes));
      return false;
    }
  }
  if (file.bad()) {
    std::fprintf(stderr, "lockstep-sim: %s: read error\n", name_or_path.c_str());
    return false;
  }
  std::string error;
  if (!parse_scene_text(text, scene, &error)) {
    std::fprintf(stderr, "lockstep-sim: %s: %s\n", name_or_path.c_str(), error.c_str());
    return false;
  }
#if LOCKSTEP_SIM_LEVEL_FILES
  // The level's `mesh file=` and `heightfield file=` lines, relative to the scene file.
  if (!lockstep::schema::load_scene_level(lockstep::schema::folder_of(name_or_path), name_or_path,
                                          scene, &error)) {
    std::fprintf(stderr, "lockstep-sim: %s\n", error.c_str());
    return false;
  }
#endif
  if (scene->name.empty()) scene->name = name_or_path;
  return true;
}

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", u);
      out += escaped;
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

void print_hash(const Options& options, uint64_t tick, uint64_t hash) {
  if (options.json) {
    std::printf("{\"tick\":%" PRIu64 ",\"hash\":\"%016" PRIx64 "\"}\n", tick, hash);
  } else {
    std::printf("%" PRIu64 " %016" PRIx64 "\n", tick, hash);
  }
  // Each line as it is made: a checker reading a pipe can stop at the first differing tick.
  std::fflush(stdout);
}

void print_query_probe(const Options& options, uint64_t tick, uint64_t hash) {
  if (options.json) {
    std::printf("{\"tick\":%" PRIu64 ",\"queries\":\"%016" PRIx64 "\"}\n", tick, hash);
  } else {
    std::printf("%" PRIu64 " queries %016" PRIx64 "\n", tick, hash);
  }
  std::fflush(stdout);
}

/// Names the capacities in an overflow bit set, for the warning.
std::string overflow_names(uint32_t bits) {
  std::string names;
  auto add = [&](uint32_t bit, const char* name) {
    if ((bits & bit) == 0) return;
    if (!names.empty()) names += ", ";
    names += name;
  };
  add(overflow_candidate_pairs, "max_candidate_pairs");
  add(overflow_contact_pairs, "max_contact_pairs");
  add(overflow_contact_points, "max_contact_points");
  add(overflow_events, "max_events");
  return names;
}

// ---- --query FILE ----

struct QueryLine {
  std::vector<std::pair<std::string, std::string>> keys;
  const std::string* find(const char* key) const {
    for (const auto& kv : keys) {
      if (kv.first == key) return &kv.second;
    }
    return nullptr;
  }
};

bool parse_floats(const std::string& text, float* out, int arity) {
  int n = 0;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string item =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (n >= arity || item.empty()) return false;
    char* end = nullptr;
    const float v = std::strtof(item.c_str(), &end);
    if (end != item.c_str() + item.size() || !std::isfinite(v)) return false;
    out[n++] = v;
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return n == arity;
}

bool parse_bits(const std::string& text, uint32_t* out) {
  if (text.empty() || text.size() > 10 || text[0] == '-') return false;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 0);
  if (end != text.c_str() + text.size() || v > 0xffffffffull) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

void print_hit(const RayHit& h) {
  std::printf(" body=%u:%u fraction=%.9g point=%.9g,%.9g,%.9g normal=%.9g,%.9g,%.9g", h.body.index1,
              h.body.generation, static_cast<double>(h.fraction), static_cast<double>(h.point.x),
              static_cast<double>(h.point.y), static_cast<double>(h.point.z),
              static_cast<double>(h.normal.x), static_cast<double>(h.normal.y),
              static_cast<double>(h.normal.z));
}

// Runs every query of `path` against `world`; false (after a message naming the line) when the
// file is unreadable or a line malformed.
bool run_query_file(const std::string& path, const World& world) {
  std::ifstream file(path);
  if (!file) {
    std::fprintf(stderr, "lockstep-sim: %s: cannot read the query file\n", path.c_str());
    return false;
  }
  std::string text;
  size_t line_number = 0;
  std::vector<RayHit> hits(64);
  std::vector<BodyId> bodies(256);
  while (std::getline(file, text)) {
    ++line_number;
    auto fail = [&](const std::string& why) {
      std::fprintf(stderr, "lockstep-sim: %s: line %zu: %s\n", path.c_str(), line_number,
                   why.c_str());
      return false;
    };
    if (const size_t hash = text.find('#'); hash != std::string::npos) text.resize(hash);
    std::vector<std::string> words;
    size_t i = 0;
    while (i < text.size()) {
      while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r'))
        ++i;
      const size_t start = i;
      while (i < text.size() && text[i] != ' ' && text[i] != '\t' && text[i] != '\r')
        ++i;
      if (i > start) words.push_back(text.substr(start, i - start));
    }
    if (words.empty()) continue;
    const std::string kind = words[0];
    QueryLine q;
    for (size_t w = 1; w < words.size(); ++w) {
      const size_t eq = words[w].find('=');
      if (eq == std::string::npos || eq == 0)
        return fail("expected key=value, got '" + words[w] + "'");
      q.keys.emplace_back(words[w].substr(0, eq), words[w].substr(eq + 1));
    }
    auto vec3 = [&](const char* key, Vec3* out, bool required) {
      const std::string* v = q.find(key);
      if (v == nullptr) return !required || fail(std::string("missing key '") + key + "'");
      float f[3];
      if (!parse_floats(*v, f, 3)) return fail(std::string("key '") + key + "': needs x,y,z");
      *out = Vec3{f[0], f[1], f[2]};
      return true;
    };
    auto number = [&](const char* key, float* out, bool required) {
      const std::string* v = q.find(key);
      if (v == nullptr) return !required || fail(std::string("missing key '") + key + "'");
      if (!parse_floats(*v, out, 1)) return fail(std::string("key '") + key + "': not a number");
      return true;
    };
    QueryFilter filter;
    for (const char* key : {"category", "mask"}) {
      if (const std::string* v = q.find(key)) {
        uint32_t* out = key[0] == 'c' ? &filter.category_bits : &filter.mask_bits;
        if (!parse_bits(*v, out)) return fail(std::string("key '") + key + "': not a bit set");
      }
    }
    for (const auto& kv : q.keys) {
      static const char* const kKnown[] = {"from",        "to",    "all",    "category",
                                           "mask",        "shape", "radius", "half",
                                           "half_height", "pos",   "rot"};
      bool known = false;
      for (const char* k : kKnown)
        known = known || kv.first == k;
      if (!known) return fail("unknown key '" + kv.first + "'");
    }
    QueryResult r;
    if (kind == "ray" || kind == "cast") {
      Vec3 from{}, to{};
      if (!vec3("from", &from, true) || !vec3("to", &to, true)) return false;
      if (kind == "ray" && q.find("all") != nullptr && *q.find("all") == "1") {
        r = ray_cast_all(world, from, to - from, filter, hits);
        if (!r.ok()) return fail(std::string("ray: ") + error_message(r.error));
        std::printf("query %zu ray found=%u", line_number, r.found);
        for (uint32_t k = 0; k < r.count; ++k)
          print_hit(hits[k]);
      } else {
        RayHit hit;
        if (kind == "ray") {
          r = ray_cast(world, from, to - from, filter, &hit);
        } else {
          ShapeDef sphere;
          sphere.type = ShapeType::sphere;
          if (!number("radius", &sphere.radius, true)) return false;
          r = shape_cast(world, sphere, Transform{from, Quat{}}, to - from, filter, &hit);
        }
        if (!r.ok()) return fail(kind + ": " + error_message(r.error));
        std::printf("query %zu %s found=%u", line_number, kind.c_str(), r.found);
        if (r.count == 1) print_hit(hit);
      }
    } else if (kind == "overlap") {
      ShapeDef shape;
      const std::string* type = q.find("shape");
      if (type == nullptr) return fail("missing key 'shape'");
      if (*type == "sphere") {
        shape.type = ShapeType::sphere;
      } else if (*type == "box") {
        shape.type = ShapeType::box;
      } else if (*type == "capsule") {
        shape.type = ShapeType::capsule;
      } else {
        return fail("unknown shape '" + *type + "' (expected sphere, box, capsule)");
      }
      Transform pose{};
      float rot[4] = {0, 0, 0, 1};
      if (const std::string* v = q.find("rot"); v != nullptr && !parse_floats(*v, rot, 4)) {
        return fail("key 'rot': needs x,y,z,w");
      }
      pose.q = Quat{rot[0], rot[1], rot[2], rot[3]};
      if (!vec3("pos", &pose.p, true) || !number("radius", &shape.radius, false) ||
          !vec3("half", &shape.half_extents, false) ||
          !number("half_height", &shape.half_height, false)) {
        return false;
      }
      r = overlap(world, shape, pose, filter, bodies);
      if (!r.ok()) return fail(std::string("overlap: ") + error_message(r.error));
      std::printf("query %zu overlap found=%u", line_number, r.found);
      for (uint32_t k = 0; k < r.count; ++k)
        std::printf(" body=%u:%u", bodies[k].index1, bodies[k].generation);
    } else {
      return fail("unknown query '" + kind + "' (expected ray, overlap, cast)");
    }
    std::printf("\n");
  }
  return true;
}

}  // namespace

// Steps either directly or through a sync tester (which records and re-simulates).
struct Driver {
  World& world;
  SyncTester* tester = nullptr;
  StepStatus step(const TickInput& tick, const TickErrors& errors) {
    return tester ? tester->step(world, tick, errors) : world.step(tick, errors);
  }
};

// One tick's commands and inputs as gathered from the scene's `at` lines (with their line
// numbers) and the scripted players (line 0), and what the world said to each.
struct TickBatch {
  std::vector<Command> commands;
  std::vector<uint32_t> command_lines;
  std::vector<Input> inputs;
  std::vector<uint32_t> input_lines;
  std::vector<Error> command_errors;
  std::vector<Error> input_errors;

  void clear() {
    commands.clear();
    command_lines.clear();
    inputs.clear();
    input_lines.clear();
  }
  void add(const ScriptedAction& action) {
    if (action.is_command) {
      commands.push_back(action.command);
      command_lines.push_back(action.line);
    } else {
      inputs.push_back(action.input);
      input_lines.push_back(action.line);
    }
  }
  StepStatus step(Driver& driver) {
    command_errors.assign(commands.size(), Error::none);
    input_errors.assign(inputs.size(), Error::none);
    return driver.step(TickInput{commands, inputs}, TickErrors{command_errors, input_errors});
  }
  // A warning per refused `at` line; the first refused scripted input only (*warned_scripted).
  void warn_refusals(uint64_t tick, bool* warned_scripted) const {
    for (size_t i = 0; i < commands.size(); ++i) {
      if (command_errors[i] == Error::none) continue;
      std::fprintf(stderr,
                   "lockstep-sim: warning: tick %" PRIu64
                   ": the command of line %u was rejected: %s\n",
                   tick, command_lines[i], error_message(command_errors[i]));
    }
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (input_errors[i] == Error::none) continue;
      if (input_lines[i] != 0) {
        std::fprintf(stderr,
                     "lockstep-sim: warning: tick %" PRIu64
                     ": the input of line %u was rejected: %s\n",
                     tick, input_lines[i], error_message(input_errors[i]));
      } else if (!*warned_scripted) {
        std::fprintf(stderr,
                     "lockstep-sim: warning: tick %" PRIu64
                     ": an input was rejected (%s); later rejections are counted only\n",
                     tick, error_message(input_errors[i]));
        *warned_scripted = true;
      }
    }
  }
};

// One line on stderr for a passed sync test; for a failed one the tick, the hashes and the
// first differing bodies' fields. False when it failed.
bool report_sync_test(const std::string& scene, uint64_t k, const SyncTester& tester) {
  if (!tester.failed()) {
    std::fprintf(stderr,
                 "lockstep-sim: synctest %s K=%" PRIu64 ": passed (%" PRIu64
                 " ticks re-simulated and compared)\n",
                 scene.c_str(), k, tester.ticks_compared());
    return true;
  }
  const SyncTestFailure& f = tester.failure();
  if (f.hash_misses_state) {
    std::fprintf(stderr,
                 "lockstep-sim: synctest %s K=%" PRIu64 ": FAILED at tick %" PRIu64
                 ": the hashes agree (%016" PRIx64
                 ") but the re-simulated snapshot differs: the hash misses part of the state\n",
                 scene.c_str(), k, f.tick, f.hash);
  } else {
    std::fprintf(stderr,
                 "lockstep-sim: synctest %s K=%" PRIu64 ": FAILED at tick %" PRIu64
                 ": hash %016" PRIx64 ", re-simulated %016" PRIx64 "\n",
                 scene.c_str(), k, f.tick, f.hash, f.resimulated_hash);
  }
  constexpr size_t kShown = 8;
  const std::vector<StateFieldDiff> diffs =
      diff_state(tester.recorded_at_failure(), tester.resimulated_at_failure(), kShown + 1);
  if (diffs.empty()) {
    std::fprintf(stderr,
                 "  no body field differs: the difference is in state bodies do not "
                 "show (contacts, queued inputs, sleep, counters of the step)\n");
  }
  for (size_t i = 0; i < diffs.size() && i < kShown; ++i) {
    const StateFieldDiff& d = diffs[i];
    if (d.player != 0) {
      std::fprintf(stderr, "  player %u score: %.9g, re-simulated %.9g\n", d.player, d.value_a,
                   d.value_b);
    } else {
      std::fprintf(stderr, "  body %u:%u %s: %.9g, re-simulated %.9g\n", d.body.index1,
                   d.body.generation, d.field, d.value_a, d.value_b);
    }
  }
  if (diffs.size() > kShown) std::fprintf(stderr, "  ... more fields differ\n");
  return false;
}

int main(int argc, char** argv) {
#ifdef _WIN32
  // Windows: stdout in binary mode, so that lines end in \n as everywhere else (the determinism
  // matrix compares them byte for byte with the golden chains).
  _setmode(_fileno(stdout), _O_BINARY);
#endif
  Options options;
  std::string error;
  if (!parse_options(argc, argv, &options, &error)) {
    std::fprintf(stderr, "lockstep-sim: %s\n", error.c_str());
    print_usage(stderr);
    return kExitUsage;
  }
  if (options.help) {
    print_usage(stdout);
    return 0;
  }

  Scene scene;
  if (!load_scene(options.scene, &scene)) return kExitUsage;
  if (options.print_scene) {
    std::string text = format_scene_text(scene);
    std::fwrite(text.data(), 1, text.size(), stdout);
    return std::fflush(stdout) == 0 ? 0 : 1;
  }
  // Checked before the world takes its memory: a short scene file can ask for gigabytes.
  if (const uint64_t bytes = world_memory_bytes(scene.def);
      bytes > (options.memory_budget_mb << 20)) {
    std::fprintf(stderr,
                 "lockstep-sim: %s: the scene's world needs %llu MiB, over the memory budget of "
                 "%llu MiB (--memory-budget-mb)\n",
                 options.scene.c_str(),
                 static_cast<unsigned long long>((bytes + (1 << 20) - 1) >> 20),
                 static_cast<unsigned long long>(options.memory_budget_mb));
    return kExitUsage;
  }
  // The step's stage timers only when asked for: a clock read per stage is cheap natively but
  // leaves wasm for JavaScript, which would weigh on --timing there. Not simulated: the hashes
  // are the same either way.
  scene.def.measure_stage_times = options.stages;
  Error build_error = Error::none;
  size_t failed_body = SIZE_MAX;
  std::unique_ptr<World> world = build_world(scene, &build_error, &failed_body);
  if (world == nullptr) {
    if (failed_body == SIZE_MAX) {
      std::fprintf(stderr, "lockstep-sim: %s: the world refused the scene: %s\n",
                   options.scene.c_str(), error_message(build_error));
    } else {
      std::fprintf(stderr, "lockstep-sim: %s: body %zu (0-based, in file order) refused: %s\n",
                   options.scene.c_str(), failed_body, error_message(build_error));
    }
    return kExitUsage;
  }

  const bool has_players = scene_player_count(scene) > 0;
  InputScript script;
  if (has_players) script = make_input_script(*world);
  std::vector<Input> inputs(has_players ? scene.def.max_inputs_per_tick : 0);

  std::unique_ptr<SyncTester> tester;
  if (options.synctest != 0) {
    tester = SyncTester::create(*world, static_cast<uint32_t>(options.synctest));
    if (tester == nullptr) {
      std::fprintf(stderr, "lockstep-sim: --synctest: cannot make the tester\n");
      return kExitUsage;
    }
  }
  Driver driver{*world, tester.get()};
  TickBatch batch;

  uint32_t warned_overflow = 0;
  bool warned_input = false;
  uint64_t stage_ns[kStepStageCount] = {};  // --stages: summed over the run
  const auto start = std::chrono::steady_clock::now();
  if (options.ticks == 0) print_hash(options, world->tick(), world->state_hash());
  if (options.query_probe && options.query_probe_tick == 0) {
    print_query_probe(options, world->tick(), query_probe_hash(*world));
  }
  size_t next_action = 0;  // scene.actions: ascending ticks
  for (uint64_t t = 1; t <= options.ticks; ++t) {
    // The scene file's `at tick=t` lines, in file order, then the scripted players' inputs;
    // command_less / input_less order them.
    batch.clear();
    for (; next_action < scene.actions.size() && scene.actions[next_action].tick <= t;
         ++next_action) {
      if (scene.actions[next_action].tick == t) batch.add(scene.actions[next_action]);
    }
    if (has_players) {
      const uint32_t count = scripted_inputs(options.seed, world->tick(), script, *world, inputs);
      for (uint32_t i = 0; i < count; ++i) {
        batch.inputs.push_back(inputs[i]);
        batch.input_lines.push_back(0);
      }
    }
    const StepStatus status = batch.step(driver);
    if (options.stages) {
      for (uint32_t i = 0; i < kStepStageCount; ++i)
        stage_ns[i] += world->last_step_stats().stage_ns[i];
    }
    batch.warn_refusals(t, &warned_input);
    uint32_t fresh = status.overflow & ~warned_overflow;
    if (fresh != 0) {
      std::fprintf(stderr,
                   "lockstep-sim: warning: tick %" PRIu64
                   ": capacity ran out (%s): the excess was dropped deterministically; "
                   "raise it in the scene's world line (further overflows are only counted)\n",
                   world->tick(), overflow_names(fresh).c_str());
      warned_overflow |= fresh;
    }
    if (t % options.every == 0 || t == options.ticks) {
      print_hash(options, world->tick(), world->state_hash());
    }
    if (options.query_probe && t == options.query_probe_tick) {
      print_query_probe(options, world->tick(), query_probe_hash(*world));
    }
  }
  if (!options.query_file.empty() && !run_query_file(options.query_file, *world)) {
    return kExitUsage;
  }
  if (tester != nullptr && !report_sync_test(scene.name, options.synctest, *tester)) return 1;
  const double elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  const WorldCounters& counters = world->counters();
  if (options.json) {
    std::printf("{\"scene\":%s,\"ticks\":%" PRIu64 ",\"hash\":\"%016" PRIx64
                "\",\"overflow_steps\":%" PRIu64 "}\n",
                json_string(scene.name).c_str(), world->tick(), world->state_hash(),
                counters.overflow_steps);
  }
  if (counters.commands_rejected + counters.commands_failed != 0) {
    std::fprintf(stderr, "lockstep-sim: %" PRIu64 " commands rejected, %" PRIu64 " failed\n",
                 counters.commands_rejected, counters.commands_failed);
  }
  if (counters.inputs_rejected != 0) {
    std::fprintf(stderr, "lockstep-sim: %" PRIu64 " inputs rejected\n", counters.inputs_rejected);
  }
  if (counters.overflow_steps != 0) {
    std::fprintf(stderr, "lockstep-sim: %" PRIu64 " steps overflowed a capacity\n",
                 counters.overflow_steps);
  }
  if (options.timing) {
    double per_tick_us =
        options.ticks == 0 ? 0.0 : elapsed_s * 1e6 / static_cast<double>(options.ticks);
    std::fprintf(stderr, "lockstep-sim: %s: %" PRIu64 " ticks, %zu bodies, %.3f s (%.1f us/tick)\n",
                 scene.name.c_str(), options.ticks, scene.bodies.size(), elapsed_s, per_tick_us);
  }
  if (options.stages && options.ticks != 0) {
    uint64_t total_ns = 0;
    for (uint32_t i = 0; i < kStepStageCount; ++i)
      total_ns += stage_ns[i];
    const double ticks = static_cast<double>(options.ticks);
    for (uint32_t i = 0; i < kStepStageCount; ++i) {
      if (stage_ns[i] == 0) continue;
      std::fprintf(stderr, "lockstep-sim: stage %-22s %9.1f us/tick %5.1f %%\n",
                   step_stage_name(static_cast<StepStage>(i)),
                   static_cast<double>(stage_ns[i]) / ticks / 1000.0,
                   100.0 * static_cast<double>(stage_ns[i]) / static_cast<double>(total_ns));
    }
    std::fprintf(stderr, "lockstep-sim: stage %-22s %9.1f us/tick\n", "(all)",
                 static_cast<double>(total_ns) / ticks / 1000.0);
  }
  if (std::fflush(stdout) != 0) return 1;
  return 0;
}

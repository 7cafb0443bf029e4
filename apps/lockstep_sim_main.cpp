// lockstep-sim: runs a scene headless and prints its state hashes, for the determinism matrix
// (the same command on every platform must print the same lines) and for quick experiments.
//
// Usage:
//   lockstep-sim --scene NAME|FILE --ticks N [--every K] [--json] [--seed S] [--timing]
//   lockstep-sim --scene NAME|FILE --print-scene
//
//   --scene NAME|FILE  a built-in scene (pyramid, pile, bounce, inputs, pyramid3d) or the path
//                      of a text scene file (format: docs/scene-format.md)
//   --ticks N          number of fixed-dt steps to run (0 prints the initial state's hash)
//   --every K          print a hash every K ticks (default 60), and always after the last tick
//   --json             one JSON object per line: {"tick":N,"hash":"..."}, then a summary
//                      {"scene":...,"ticks":N,"hash":"...","overflow_steps":M}
//   --seed S           seed of the input script for scenes whose bodies players own (the
//                      `inputs` scene); default 0x5eed1234abcd0001
//   --timing           print the wall-clock time of the run to stderr
//   --query-probe T    after tick T, also print `T queries HASH`: the hash of a fixed set of
//                      ray casts, sphere casts and overlaps (query_probe_hash in
//                      lockstep/sim/query.h); the query golden. Not printed when the run is
//                      shorter than T ticks
//   Scene files may schedule commands and inputs (`at tick=N spawn|destroy|input ...` lines,
//   docs/scene-format.md): they are queued before the step that makes tick N; a rejected one is
//   reported on stderr and the run goes on (the rejection is part of the deterministic result).
//   --print-scene      print the scene in the text format and exit (no --ticks needed); a
//                      starting point for new scene files
//   --help             this text
// Flags also accept the --flag=value form. Integers are decimal, unsigned, without sign.
//
// Output (stdout, text mode): one line per printed tick, `<tick> <hash>`, the hash as 16
// lowercase hex digits. Warnings (a capacity ran out during a step: printed once per kind,
// counted always) and errors go to stderr.
//
// Exit status: 0 success; 2 bad flags, unreadable or malformed scene file, or a scene the
// world refuses.
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
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lockstep/sim/query.h"
#include "lockstep/sim/scene.h"
#include "lockstep/sim/world.h"

namespace {

using namespace lockstep::sim;

constexpr int kExitUsage = 2;
constexpr uint64_t kDefaultEvery = 60;
constexpr std::streamsize kMaxSceneFileBytes = 256ll << 20;

void print_usage(std::FILE* out) {
  std::fputs(
      "usage: lockstep-sim --scene NAME|FILE --ticks N [--every K] [--json] [--seed S] "
      "[--timing]\n"
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
      "  --query-probe T    after tick T also print `T queries HASH` (the query golden)\n"
      "  --print-scene      print the scene as text (docs/scene-format.md) and exit\n",
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
  bool help = false;
  bool print_scene = false;
  bool query_probe = false;
  uint64_t query_probe_tick = 0;
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
    } else if (arg == "--query-probe") {
      if (!take_u64(&options->query_probe_tick)) return false;
      options->query_probe = true;
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

}  // namespace

int main(int argc, char** argv) {
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

  uint32_t warned_overflow = 0;
  bool warned_input = false;
  const auto start = std::chrono::steady_clock::now();
  if (options.ticks == 0) print_hash(options, world->tick(), world->state_hash());
  if (options.query_probe && options.query_probe_tick == 0) {
    print_query_probe(options, world->tick(), query_probe_hash(*world));
  }
  size_t next_action = 0;  // scene.actions: ascending ticks
  for (uint64_t t = 1; t <= options.ticks; ++t) {
    // The scene file's `at tick=t` lines, in file order; command_less / input_less order them.
    for (; next_action < scene.actions.size() && scene.actions[next_action].tick <= t;
         ++next_action) {
      const ScriptedAction& action = scene.actions[next_action];
      if (action.tick < t) continue;
      const Error e = action.is_command ? world->queue_command(action.command)
                                        : world->queue_input(action.input);
      if (e != Error::none) {
        std::fprintf(
            stderr, "lockstep-sim: warning: tick %" PRIu64 ": the %s of line %u was rejected: %s\n",
            t, action.is_command ? "command" : "input", action.line, error_message(e));
      }
    }
    if (has_players) {
      uint32_t count = scripted_inputs(options.seed, world->tick(), script, *world, inputs);
      for (uint32_t i = 0; i < count; ++i) {
        Error e = world->queue_input(inputs[i]);
        if (e != Error::none && !warned_input) {
          std::fprintf(stderr,
                       "lockstep-sim: warning: tick %" PRIu64
                       ": an input was rejected (%s); later rejections are counted only\n",
                       world->tick(), error_message(e));
          warned_input = true;
        }
      }
    }
    StepStatus status = world->step();
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
  if (std::fflush(stdout) != 0) return 1;
  return 0;
}

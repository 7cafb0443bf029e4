// lockstep-replay-verify: `lockstep-replay verify` alone, for the determinism matrix.
//
//   lockstep-replay-verify [-q|--quiet] [--memory-budget-mb N] FILE
//
// The same code and output as `lockstep-replay verify FILE` (apps/replay_file.cpp) without the
// other commands and their command-line library, which were a fifth of each matrix target's
// build. Exit codes: 0 every hash matched, 1 a divergence, 2 the file could not be read or
// used, 64 bad command line (with the usage on stderr).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "replay_file.h"

namespace {

using namespace lockstep;

constexpr const char* kProgram = "lockstep-replay-verify";
constexpr uint64_t kMaxMemoryBudgetMb = uint64_t{1} << 20;

void print_usage(std::FILE* to) {
  std::fprintf(to,
               "usage: lockstep-replay-verify [-q|--quiet] [--memory-budget-mb N] FILE\n"
               "  re-simulates a replay file and compares every tick's hash with the recorded one\n"
               "  -q, --quiet            no progress bar\n"
               "  --memory-budget-mb N   refuse a file whose world would take more than N MiB\n"
               "                         (1..%llu, default %llu)\n",
               static_cast<unsigned long long>(kMaxMemoryBudgetMb),
               static_cast<unsigned long long>(replays::kDefaultWorldMemoryBudgetBytes >> 20));
}

int usage_error(const std::string& message) {
  std::fprintf(stderr, "%s: %s\n", kProgram, message.c_str());
  print_usage(stderr);
  return apps::kExitUsage;
}

// A decimal count in 1..kMaxMemoryBudgetMb, nothing else (no sign, no suffix, no blanks).
bool parse_megabytes(const std::string& text, uint64_t* out) {
  if (text.empty() || text.size() > 7) return false;
  for (char c : text)
    if (c < '0' || c > '9') return false;
  const unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
  if (v < 1 || v > kMaxMemoryBudgetMb) return false;
  *out = v;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  bool quiet = false;
  uint64_t budget_mb = replays::kDefaultWorldMemoryBudgetBytes >> 20;
  std::string file;
  bool options_done = false;  // after `--`, every argument is a file name
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (!options_done && (arg == "-h" || arg == "--help")) {
      print_usage(stdout);
      return 0;
    }
    if (!options_done && (arg == "-q" || arg == "--quiet")) {
      quiet = true;
    } else if (!options_done && arg == "--memory-budget-mb") {
      if (i + 1 == argc) return usage_error("--memory-budget-mb needs a value");
      if (!parse_megabytes(argv[++i], &budget_mb))
        return usage_error(std::string("--memory-budget-mb: '") + argv[i] +
                           "' is not a whole number of MiB in 1.." +
                           std::to_string(kMaxMemoryBudgetMb));
    } else if (!options_done && arg == "--") {
      options_done = true;
    } else if (!options_done && arg.size() > 1 && arg[0] == '-') {
      return usage_error("unknown option '" + arg + "'");
    } else if (!file.empty()) {
      return usage_error("one replay file at a time (got '" + file + "' and '" + arg + "')");
    } else {
      file = arg;
    }
  }
  if (file.empty()) return usage_error("no replay file given");
  return apps::verify_replay_file(kProgram, file, budget_mb << 20, quiet);
}

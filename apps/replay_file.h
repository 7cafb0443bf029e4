// What lockstep-replay and lockstep-replay-verify share: reading a replay file with its errors
// on stderr, and the verify command (re-simulate the match, compare every tick's hash, report).
#pragma once

#include <cstdint>
#include <string>

#include "lockstep/replays/recorder.h"

namespace lockstep::apps {

inline constexpr int kExitDiverged = 1;  // verify: a re-simulated hash differs from the file's
inline constexpr int kExitBadFile = 2;   // the file could not be read or used
inline constexpr int kExitUsage = 64;    // bad command line

/// Prints `PROGRAM: MESSAGE` on stderr; returns kExitBadFile.
int fail(const char* program, const std::string& message);

/// Loads `path`, refusing a world that would take more than `memory_budget_bytes`. On failure
/// prints why, sets *exit_code and returns false; a truncated file loads with a warning.
bool load_replay(const char* program, const std::string& path, uint64_t memory_budget_bytes,
                 replays::LoadedReplay* replay, int* exit_code);

/// Re-simulates `path` and compares every tick's hash with the recorded one. Prints
/// `OK: N ticks verified ...` (exit 0) or `DIVERGED at tick T: ...` (kExitDiverged) on stdout;
/// a file that cannot be used gives one line on stderr (kExitBadFile). `quiet`: no progress bar.
int verify_replay_file(const char* program, const std::string& path, uint64_t memory_budget_bytes,
                       bool quiet);

}  // namespace lockstep::apps

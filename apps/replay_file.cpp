#include "replay_file.h"

#include <cinttypes>
#include <cstdio>

namespace lockstep::apps {

int fail(const char* program, const std::string& message) {
  std::fprintf(stderr, "%s: %s\n", program, message.c_str());
  return kExitBadFile;
}

bool load_replay(const char* program, const std::string& path, uint64_t memory_budget_bytes,
                 replays::LoadedReplay* replay, int* exit_code) {
  std::string error;
  if (!replays::load_replay_file(path, replay, &error, memory_budget_bytes)) {
    *exit_code = fail(program, error);
    return false;
  }
  if (replay->truncated)
    std::fprintf(stderr, "%s: warning: %s: %s\n", program, path.c_str(), replay->integrity.c_str());
  return true;
}

int verify_replay_file(const char* program, const std::string& path, uint64_t memory_budget_bytes,
                       bool quiet) {
  replays::LoadedReplay r;
  int code = 0;
  if (!load_replay(program, path, memory_budget_bytes, &r, &code)) return code;
  replays::VerifyOptions options;
  const bool show_progress = !quiet && r.ticks.size() >= 2000;
  if (show_progress) {
    options.progress = [](uint64_t done, uint64_t total) {
      if (done % 1024 != 0 && done != total) return;
      std::fprintf(stderr, "\rverify: %" PRIu64 "/%" PRIu64 " ticks (%3.0f%%)", done, total,
                   100.0 * static_cast<double>(done) / static_cast<double>(total));
      if (done == total) std::fprintf(stderr, "\n");
    };
  }
  const replays::VerifyResult v = replays::verify_replay(r, options);
  if (!v.error.empty()) return fail(program, path + ": " + v.error);
  const double rate = v.seconds > 0 ? static_cast<double>(v.ticks_verified) / v.seconds : 0.0;
  const double real_time_s =
      r.header.tick_rate_hz ? static_cast<double>(r.ticks.size()) / r.header.tick_rate_hz : 0.0;
  if (v.rejected_inputs != 0)
    std::fprintf(stderr, "%s: warning: the world refused %u recorded inputs\n", program,
                 v.rejected_inputs);
  if (v.first_client_mismatch_tick)
    std::printf(
        "note: the client's own hash first differs from the authoritative one at tick %" PRIu64
        "\n",
        *v.first_client_mismatch_tick);
  if (!v.ok) {
    std::printf("DIVERGED at tick %" PRIu64 ": recorded hash %016" PRIx64
                ", re-simulated %016" PRIx64 " (%" PRIu64 " ticks matched before it)\n",
                *v.first_divergent_tick, v.expected_hash, v.actual_hash, v.ticks_verified);
    return kExitDiverged;
  }
  std::printf("OK: %" PRIu64 " ticks verified (%" PRIu64 "..%" PRIu64
              ") in %.3f s, %.0f ticks/s, "
              "%.1fx real time\n",
              v.ticks_verified, r.header.first_tick + 1, r.last_tick(), v.seconds, rate,
              v.seconds > 0 ? real_time_s / v.seconds : 0.0);
  return 0;
}

}  // namespace lockstep::apps

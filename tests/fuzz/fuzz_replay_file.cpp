// libFuzzer harness: a replay file from the field through load_replay and, when it loads, the
// re-simulation verify_replay runs. The memory budget is small (16 MiB) so that each run stays
// fast and a file asking for a larger world is refused as the tools refuse it.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "lockstep/replays/replay_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  lockstep::replays::LoadedReplay replay;
  std::string error;
  if (!lockstep::replays::load_replay(std::span<const uint8_t>(data, size), &replay, &error,
                                      uint64_t{16} << 20))
    return 0;
  if (replay.ticks.size() > 2000) return 0;  // keep a run short; the loader itself was covered
  (void)lockstep::replays::verify_replay(replay);
  return 0;
}

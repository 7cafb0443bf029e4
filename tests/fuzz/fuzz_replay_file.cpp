// libFuzzer harness: a replay file from the field through load_replay and, when it loads, the
// re-simulation verify_replay runs. Before loading, every record's checksum is recomputed over
// its (mutated) payload: a random change almost never keeps an XXH3 checksum valid, so without
// this the fuzzer would only ever exercise the checksum check and not the records behind it (the
// record-file layer itself, checksums included, has its own harness). The memory budget is small
// (2 MiB: the committed seed `match8_small` is a world with small capacities) so that each run
// stays fast (a run's time is mostly its world's memory being mapped and zeroed under ASan) and
// a file asking for a larger world is refused as the tools refuse it (seed `match8`).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "lockstep/replays/record_file.h"
#include "lockstep/replays/replay_reader.h"
#include "lockstep/sim/world.h"
#include "replay_codec.h"  // replays/src: the record decoder, to find a header's fingerprint

namespace {

// A header record whose WorldDef was mutated gets the fingerprint of its new WorldDef, written
// over the old one's bytes, and loses its scene name: a world is only made when the WorldDef
// agrees with both, and a mutation almost never changes them together (the defect of a world
// made before its memory is checked hid behind that agreement).
void fix_fingerprint(uint8_t* payload, uint32_t size) {
  std::vector<uint8_t> scratch;
  lockstep::replays::detail::DecodedRecord record;
  std::string error;
  if (!lockstep::replays::detail::decode_record(std::span<const uint8_t>(payload, size), &scratch,
                                                &record, &error) ||
      record.kind != lockstep::replays::detail::RecordKind::header) {
    return;
  }
  const uint64_t stored = record.header.world_def_fingerprint;
  const uint64_t actual = lockstep::sim::world_def_fingerprint(record.header.world_def);
  if (stored == actual) return;
  // A built-in scene's name would also tie the WorldDef to that scene's own: empty the name
  // (its FlatBuffers string: length 0, then the terminating zero).
  const std::string& scene = record.header.scene;
  for (uint32_t i = 0; !scene.empty() && i + 4 + scene.size() <= size; ++i) {
    const uint32_t length =
        static_cast<uint32_t>(payload[i]) | static_cast<uint32_t>(payload[i + 1]) << 8 |
        static_cast<uint32_t>(payload[i + 2]) << 16 | static_cast<uint32_t>(payload[i + 3]) << 24;
    if (length != scene.size() || std::memcmp(payload + i + 4, scene.data(), length) != 0) continue;
    std::memset(payload + i, 0, 5);
    break;
  }
  for (uint32_t i = 0; i + 8 <= size; ++i) {
    uint64_t v = 0;
    for (int k = 0; k < 8; ++k)
      v |= uint64_t{payload[i + k]} << (8 * k);
    if (v != stored) continue;
    for (int k = 0; k < 8; ++k)
      payload[i + k] = static_cast<uint8_t>(actual >> (8 * k));
    return;
  }
}

// Rewrites the fingerprint of a header record and the checksum of each complete record of a
// record file in place.
void fix_checksums(std::vector<uint8_t>* file) {
  size_t at = 8;  // magic, version, reserved
  while (at + lockstep::replays::kRecordHeaderBytes <= file->size()) {
    uint8_t* p = file->data() + at;
    const uint32_t size = static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
                          static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
    if (size > file->size() - at - lockstep::replays::kRecordHeaderBytes) return;
    fix_fingerprint(p + lockstep::replays::kRecordHeaderBytes, size);
    const uint64_t sum = XXH3_64bits(p + lockstep::replays::kRecordHeaderBytes, size);
    for (int i = 0; i < 8; ++i)
      p[4 + i] = static_cast<uint8_t>(sum >> (8 * i));
    at += lockstep::replays::kRecordHeaderBytes + size;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> file(data, data + size);
  fix_checksums(&file);
  lockstep::replays::LoadedReplay replay;
  std::string error;
  if (!lockstep::replays::load_replay(file, &replay, &error, uint64_t{2} << 20)) return 0;
  if (replay.ticks.size() > 2000) return 0;  // keep a run short; the loader itself was covered
  (void)lockstep::replays::verify_replay(replay);
  return 0;
}

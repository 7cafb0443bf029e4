// libFuzzer harness: the record-file layer (magic, version, length + checksum framing) on its own.
#include <cstddef>
#include <cstdint>
#include <span>

#include "lockstep/replays/record_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> file(data, size);
  (void)lockstep::replays::check_record_file(file, 1u << 20);
  lockstep::replays::RecordReader reader(file, 1u << 20);
  std::span<const uint8_t> payload;
  while (reader.next(&payload) == lockstep::replays::RecordError::none) {
  }
  return 0;
}

// libFuzzer harness: bytes from a socket through the frame decoder and the message decoder, with
// the server's cap on client frames and the client's cap on server frames. The first byte picks
// the side and how the bytes are split into reads (a peer chooses both).
#include <cstddef>
#include <cstdint>
#include <span>

#include "lockstep/schema/frame.h"
#include "lockstep/schema/limits.h"
#include "lockstep/schema/messages.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const bool server_side = (data[0] & 1) != 0;
  const size_t chunk = 1 + (data[0] >> 1);  // 1..128 bytes per read
  std::span<const uint8_t> bytes(data + 1, size - 1);
  // The client's cap is 8 MiB of buffer; the fuzzer's inputs are far smaller, so use a cap just
  // over the input size on that side to keep each run cheap while still exercising the limit.
  const uint32_t cap = server_side
                           ? lockstep::schema::kMaxClientFrameBytes
                           : static_cast<uint32_t>(bytes.size() < 65536 ? 65536 : bytes.size());
  lockstep::schema::FrameDecoder decoder(cap);
  lockstep::schema::Message message;
  while (!bytes.empty()) {
    std::span<const uint8_t> read = bytes.first(bytes.size() < chunk ? bytes.size() : chunk);
    bytes = bytes.subspan(read.size());
    const lockstep::schema::FrameError error =
        decoder.feed_all(read, [&](std::span<const uint8_t> body) {
          const lockstep::schema::DecodeResult r = lockstep::schema::decode_body(body, &message);
          if (r.ok()) (void)lockstep::schema::message_name(message);
        });
    if (error != lockstep::schema::FrameError::none) break;
  }
  // Every body also straight through the message decoder (no framing in the way).
  (void)lockstep::schema::decode_body(std::span<const uint8_t>(data + 1, size - 1), &message);
  return 0;
}

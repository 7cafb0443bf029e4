// Wire framing (docs/protocol.md): a frame is a 4-byte little-endian body length, then
// the body (one FlatBuffer). Both the server and the client SDK decode with FrameDecoder, so
// there is one copy of the rules:
// - the length is checked (not zero, not over the cap) as soon as its 4 bytes are in, before a
//   single body byte is buffered, so a peer can never make us hold more than the cap;
// - the body buffer is taken once, at construction, and never grows;
// - an error is sticky: the stream is out of step and the connection must be closed.
//
// Our frames are not built with FlatBufferBuilder::FinishSizePrefixed(): it aligns the buffer
// with its prefix, so a body read on its own (at an aligned address) has every 64-bit field 4
// bytes off. messages.cpp finishes without a prefix and writes this header in front; the bytes
// on the wire have the same layout. A peer's size-prefixed body is still decoded (messages.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace lockstep::schema {

inline constexpr size_t kFrameHeaderBytes = 4;

/// Writes the little-endian length header of a `body_bytes`-byte frame body.
void encode_frame_header(uint32_t body_bytes, std::span<uint8_t, kFrameHeaderBytes> out);

/// Reads the body length from a frame header.
uint32_t decode_frame_header(std::span<const uint8_t, kFrameHeaderBytes> header);

/// What went wrong in a stream of frames. Every error ends the stream.
enum class FrameError : uint8_t {
  none = 0,
  zero_length,  // a header announced an empty body (a frame always carries a FlatBuffer)
  over_cap,     // a header announced a body larger than the decoder's cap
  truncated,    // the stream ended inside a frame (reported by finish())
};

/// One-line English description of a frame error (static storage).
const char* frame_error_message(FrameError error);

/// Incremental decoder: feed it bytes in any split, take complete bodies out.
///
///   while (!chunk.empty()) {
///     chunk = chunk.subspan(decoder.feed(chunk));
///     if (decoder.has_frame()) handle(decoder.frame());
///     if (decoder.error() != FrameError::none) { log(decoder.error_text()); close(); break; }
///   }
///
/// Bodies are returned from the decoder's own buffer, which operator new aligns to at least
/// 16 bytes, as the FlatBuffers reader requires (a body taken in place from a read buffer would
/// sit at offset 4 and be misaligned).
class FrameDecoder final {
 public:
  /// A decoder for bodies of 1..max_body_bytes bytes (a cap of 0 is taken as 1); takes its
  /// whole body buffer now.
  explicit FrameDecoder(uint32_t max_body_bytes);

  /// Consumes bytes until one body is complete, an error is found, or `bytes` runs out; returns
  /// how many bytes it consumed (0 once in error). First releases the previous call's frame.
  size_t feed(std::span<const uint8_t> bytes);

  /// True when the last feed() completed a body.
  bool has_frame() const { return frame_ready_; }
  /// The completed body; valid until the next feed(), feed_all() or reset().
  std::span<const uint8_t> frame() const;

  /// Feeds all of `bytes`, calling on_frame(std::span<const uint8_t>) for each complete body;
  /// stops at the first error and returns it (FrameError::none when all bytes were used).
  template <class OnFrame>
  FrameError feed_all(std::span<const uint8_t> bytes, OnFrame&& on_frame) {
    while (!bytes.empty() && error_ == FrameError::none) {
      bytes = bytes.subspan(feed(bytes));
      if (frame_ready_) {
        on_frame(frame());
        release_frame();
      }
    }
    return error_;
  }

  /// Call at the end of the stream: reports FrameError::truncated when it ended inside a frame.
  FrameError finish();

  FrameError error() const { return error_; }
  /// One line for logs: the error with the announced length, the cap and the stream offset.
  std::string error_text() const;

  /// Forgets any partial frame and any error, for a new stream (the buffer is kept).
  void reset();

  uint32_t max_body_bytes() const { return max_body_bytes_; }
  /// Bytes of the frame in progress held now (header and body; 0 between frames).
  size_t pending_bytes() const;
  /// Complete bodies returned since construction or reset().
  uint64_t frames_decoded() const { return frames_decoded_; }
  /// Bytes consumed since construction or reset().
  uint64_t stream_bytes() const { return stream_bytes_; }

 private:
  void release_frame();

  std::unique_ptr<uint8_t[]> body_;  // max_body_bytes_, allocated once
  uint32_t max_body_bytes_ = 0;
  uint8_t header_[kFrameHeaderBytes] = {};
  uint32_t header_have_ = 0;  // header bytes in header_
  uint32_t body_length_ = 0;  // announced by the current header
  uint32_t body_have_ = 0;    // body bytes in body_
  bool frame_ready_ = false;
  FrameError error_ = FrameError::none;
  uint32_t error_length_ = 0;        // the offending announced length
  uint64_t error_offset_bytes_ = 0;  // stream offset of the offending frame's header
  uint64_t frames_decoded_ = 0;
  uint64_t stream_bytes_ = 0;
};

}  // namespace lockstep::schema

// Frame decoding: a small state machine (header bytes, then body bytes) over one fixed buffer.
#include "lockstep/schema/frame.h"

#include <algorithm>
#include <cstring>

namespace lockstep::schema {

static_assert(__STDCPP_DEFAULT_NEW_ALIGNMENT__ >= 8, "frame bodies must be 8-byte aligned");

void encode_frame_header(uint32_t body_bytes, std::span<uint8_t, kFrameHeaderBytes> out) {
  out[0] = static_cast<uint8_t>(body_bytes);
  out[1] = static_cast<uint8_t>(body_bytes >> 8);
  out[2] = static_cast<uint8_t>(body_bytes >> 16);
  out[3] = static_cast<uint8_t>(body_bytes >> 24);
}

uint32_t decode_frame_header(std::span<const uint8_t, kFrameHeaderBytes> header) {
  return static_cast<uint32_t>(header[0]) | static_cast<uint32_t>(header[1]) << 8 |
         static_cast<uint32_t>(header[2]) << 16 | static_cast<uint32_t>(header[3]) << 24;
}

const char* frame_error_message(FrameError error) {
  switch (error) {
    case FrameError::none:
      return "no error";
    case FrameError::zero_length:
      return "frame announces an empty body";
    case FrameError::over_cap:
      return "frame announces a body over the size cap";
    case FrameError::truncated:
      return "stream ended inside a frame";
  }
  return "unknown frame error";
}

FrameDecoder::FrameDecoder(uint32_t max_body_bytes)
    : max_body_bytes_(std::max<uint32_t>(max_body_bytes, 1)) {
  // Default-initialised (make_unique_for_overwrite, spelt out for wasm's libc++ 13): the pages
  // are reserved, not touched, until bodies actually fill them.
  body_.reset(new uint8_t[max_body_bytes_]);
}

std::span<const uint8_t> FrameDecoder::frame() const {
  if (!frame_ready_) return {};
  return {body_.get(), body_length_};
}

size_t FrameDecoder::feed(std::span<const uint8_t> bytes) {
  if (error_ != FrameError::none) return 0;
  if (frame_ready_) release_frame();

  size_t used = 0;
  while (used < bytes.size()) {
    if (header_have_ < kFrameHeaderBytes) {
      header_[header_have_++] = bytes[used++];
      if (header_have_ < kFrameHeaderBytes) continue;
      const uint32_t length = decode_frame_header(
          std::span<const uint8_t, kFrameHeaderBytes>(header_, kFrameHeaderBytes));
      if (length == 0 || length > max_body_bytes_) {
        error_ = length == 0 ? FrameError::zero_length : FrameError::over_cap;
        error_length_ = length;
        error_offset_bytes_ = stream_bytes_ + used - kFrameHeaderBytes;
        break;
      }
      body_length_ = length;
      body_have_ = 0;
      continue;
    }
    const size_t take = std::min<size_t>(body_length_ - body_have_, bytes.size() - used);
    std::memcpy(body_.get() + body_have_, bytes.data() + used, take);
    body_have_ += static_cast<uint32_t>(take);
    used += take;
    if (body_have_ == body_length_) {
      frame_ready_ = true;
      ++frames_decoded_;
      break;
    }
  }
  stream_bytes_ += used;
  return used;
}

FrameError FrameDecoder::finish() {
  if (error_ == FrameError::none && !frame_ready_ && header_have_ > 0) {
    error_ = FrameError::truncated;
    error_length_ = header_have_ == kFrameHeaderBytes ? body_length_ : 0;
    error_offset_bytes_ = stream_bytes_ - pending_bytes();
  }
  return error_;
}

std::string FrameDecoder::error_text() const {
  const std::string at = "frame at stream byte " + std::to_string(error_offset_bytes_);
  switch (error_) {
    case FrameError::none:
      return "no error";
    case FrameError::zero_length:
      return at + " announces an empty body (frames always carry a message)";
    case FrameError::over_cap:
      return at + " announces " + std::to_string(error_length_) + " bytes, over the cap of " +
             std::to_string(max_body_bytes_);
    case FrameError::truncated:
      if (header_have_ < kFrameHeaderBytes) {
        return "stream ended at byte " + std::to_string(stream_bytes_) + " inside the header of " +
               at + " (" + std::to_string(header_have_) + " of 4 bytes)";
      }
      return "stream ended at byte " + std::to_string(stream_bytes_) + " inside " + at + " (" +
             std::to_string(body_have_) + " of " + std::to_string(body_length_) +
             " body bytes received)";
  }
  return frame_error_message(error_);
}

void FrameDecoder::reset() {
  release_frame();
  error_ = FrameError::none;
  error_length_ = 0;
  error_offset_bytes_ = 0;
  frames_decoded_ = 0;
  stream_bytes_ = 0;
}

size_t FrameDecoder::pending_bytes() const {
  if (frame_ready_ || error_ == FrameError::zero_length || error_ == FrameError::over_cap) {
    return 0;
  }
  return header_have_ + (header_have_ == kFrameHeaderBytes ? body_have_ : 0);
}

void FrameDecoder::release_frame() {
  frame_ready_ = false;
  header_have_ = 0;
  body_length_ = 0;
  body_have_ = 0;
}

}  // namespace lockstep::schema

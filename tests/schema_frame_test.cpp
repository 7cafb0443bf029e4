// Wire framing: headers, the incremental decoder under every split, and its error handling.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "lockstep/schema/frame.h"
#include "lockstep/schema/limits.h"

namespace {

using lockstep::schema::decode_frame_header;
using lockstep::schema::encode_frame_header;
using lockstep::schema::FrameDecoder;
using lockstep::schema::FrameError;
using lockstep::schema::kFrameHeaderBytes;
using Bytes = std::vector<uint8_t>;

// Frame bytes built by hand (not with encode_frame_header), so the test checks the encoder.
void append_frame(Bytes* stream, const Bytes& body) {
  const auto size = static_cast<uint32_t>(body.size());
  stream->push_back(static_cast<uint8_t>(size & 0xff));
  stream->push_back(static_cast<uint8_t>((size >> 8) & 0xff));
  stream->push_back(static_cast<uint8_t>((size >> 16) & 0xff));
  stream->push_back(static_cast<uint8_t>((size >> 24) & 0xff));
  stream->insert(stream->end(), body.begin(), body.end());
}

Bytes pattern_body(size_t size, uint8_t seed) {
  Bytes body(size);
  for (size_t i = 0; i < size; ++i)
    body[i] = static_cast<uint8_t>(seed + 31 * i);
  return body;
}

// Feeds the chunks in order and returns every body the decoder yields.
std::vector<Bytes> decode_chunks(FrameDecoder& decoder,
                                 const std::vector<std::span<const uint8_t>>& chunks) {
  std::vector<Bytes> bodies;
  for (std::span<const uint8_t> chunk : chunks) {
    const FrameError error = decoder.feed_all(chunk, [&](std::span<const uint8_t> body) {
      bodies.emplace_back(body.begin(), body.end());
    });
    EXPECT_EQ(error, FrameError::none) << decoder.error_text();
  }
  return bodies;
}

TEST(SchemaFrame, HeaderIsFourBytesLittleEndian) {
  uint8_t header[kFrameHeaderBytes];
  encode_frame_header(0x01020304u, header);
  EXPECT_EQ(header[0], 0x04);
  EXPECT_EQ(header[1], 0x03);
  EXPECT_EQ(header[2], 0x02);
  EXPECT_EQ(header[3], 0x01);
  const uint8_t max_header[kFrameHeaderBytes] = {0xff, 0xff, 0xff, 0xff};
  EXPECT_EQ(decode_frame_header(max_header), 0xffffffffu);
  for (uint32_t value : {0u, 1u, 255u, 256u, 65536u, 0x7fffffffu, 0xdeadbeefu}) {
    encode_frame_header(value, header);
    EXPECT_EQ(decode_frame_header(header), value);
  }
}

TEST(SchemaFrame, EveryTwoWaySplitOfAMultiFrameStreamDecodesTheSameFrames) {
  const std::vector<Bytes> bodies = {pattern_body(1, 1), pattern_body(2, 2), pattern_body(5, 3),
                                     pattern_body(300, 4), pattern_body(1, 5)};
  Bytes stream;
  for (const Bytes& body : bodies)
    append_frame(&stream, body);
  const std::span<const uint8_t> all(stream);
  for (size_t split = 0; split <= stream.size(); ++split) {
    FrameDecoder decoder(300);
    const std::vector<Bytes> got = decode_chunks(decoder, {all.first(split), all.subspan(split)});
    ASSERT_EQ(got, bodies) << "split at byte " << split;
    EXPECT_EQ(decoder.finish(), FrameError::none);
    EXPECT_EQ(decoder.frames_decoded(), bodies.size());
    EXPECT_EQ(decoder.stream_bytes(), stream.size());
  }
}

TEST(SchemaFrame, EveryThreeWaySplitDecodesTheSameFrames) {
  const std::vector<Bytes> bodies = {pattern_body(1, 7), pattern_body(3, 8), pattern_body(7, 9)};
  Bytes stream;
  for (const Bytes& body : bodies)
    append_frame(&stream, body);
  const std::span<const uint8_t> all(stream);
  for (size_t a = 0; a <= stream.size(); ++a) {
    for (size_t b = a; b <= stream.size(); ++b) {
      FrameDecoder decoder(16);
      const std::vector<Bytes> got =
          decode_chunks(decoder, {all.subspan(0, a), all.subspan(a, b - a), all.subspan(b)});
      ASSERT_EQ(got, bodies) << "splits at " << a << " and " << b;
      EXPECT_EQ(decoder.finish(), FrameError::none);
    }
  }
}

TEST(SchemaFrame, ByteAtATimeYieldsEachFrameOnItsLastByte) {
  const std::vector<Bytes> bodies = {pattern_body(4, 1), pattern_body(9, 2), pattern_body(1, 3)};
  Bytes stream;
  std::vector<size_t> frame_ends;  // index of each frame's last byte
  for (const Bytes& body : bodies) {
    append_frame(&stream, body);
    frame_ends.push_back(stream.size() - 1);
  }
  FrameDecoder decoder(64);
  size_t next_frame = 0;
  for (size_t i = 0; i < stream.size(); ++i) {
    ASSERT_EQ(decoder.feed(std::span<const uint8_t>(&stream[i], 1)), 1u);
    const bool frame_end = next_frame < frame_ends.size() && frame_ends[next_frame] == i;
    ASSERT_EQ(decoder.has_frame(), frame_end) << "byte " << i;
    if (frame_end) {
      EXPECT_EQ(Bytes(decoder.frame().begin(), decoder.frame().end()), bodies[next_frame]);
      // FlatBuffers reads scalars in place: the body must be 8-byte aligned.
      EXPECT_EQ(reinterpret_cast<uintptr_t>(decoder.frame().data()) % 8, 0u);
      ++next_frame;
    }
  }
  EXPECT_EQ(next_frame, bodies.size());
}

TEST(SchemaFrame, SeveralFramesInOneChunkComeOutOneFeedAtATime) {
  Bytes stream;
  append_frame(&stream, pattern_body(3, 1));
  append_frame(&stream, pattern_body(2, 2));
  FrameDecoder decoder(8);
  std::span<const uint8_t> rest(stream);
  EXPECT_EQ(decoder.feed(rest), 7u);  // stops after the first frame
  ASSERT_TRUE(decoder.has_frame());
  EXPECT_EQ(decoder.frame().size(), 3u);
  rest = rest.subspan(7);
  EXPECT_EQ(decoder.feed(rest), 6u);  // releases the first frame, completes the second
  ASSERT_TRUE(decoder.has_frame());
  EXPECT_EQ(Bytes(decoder.frame().begin(), decoder.frame().end()), pattern_body(2, 2));
  EXPECT_EQ(decoder.feed({}), 0u);
  EXPECT_FALSE(decoder.has_frame());  // released by the empty feed
}

TEST(SchemaFrame, ZeroLengthIsAnErrorAndTheErrorIsSticky) {
  Bytes stream;
  append_frame(&stream, pattern_body(5, 1));
  const size_t bad_header_at = stream.size();
  stream.insert(stream.end(), {0, 0, 0, 0});
  append_frame(&stream, pattern_body(5, 2));  // a valid frame after the bad one: never read

  FrameDecoder decoder(64);
  std::vector<Bytes> got;
  const FrameError error = decoder.feed_all(
      stream, [&](std::span<const uint8_t> body) { got.emplace_back(body.begin(), body.end()); });
  EXPECT_EQ(error, FrameError::zero_length);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(decoder.stream_bytes(), bad_header_at + kFrameHeaderBytes);
  EXPECT_NE(decoder.error_text().find("stream byte " + std::to_string(bad_header_at)),
            std::string::npos)
      << decoder.error_text();
  // Sticky: valid bytes change nothing, nothing is consumed.
  Bytes good;
  append_frame(&good, pattern_body(2, 3));
  EXPECT_EQ(decoder.feed(good), 0u);
  EXPECT_FALSE(decoder.has_frame());
  EXPECT_EQ(decoder.error(), FrameError::zero_length);
  EXPECT_EQ(decoder.finish(), FrameError::zero_length);
  // A new stream after reset() decodes again.
  decoder.reset();
  EXPECT_EQ(decoder.feed(good), good.size());
  EXPECT_TRUE(decoder.has_frame());
}

TEST(SchemaFrame, OverCapIsReportedBeforeAnyBodyByteIsBuffered) {
  constexpr uint32_t kCap = 100;
  Bytes stream;
  append_frame(&stream, pattern_body(kCap + 1, 1));  // header and the full body in one chunk
  FrameDecoder decoder(kCap);
  EXPECT_EQ(decoder.feed(stream), kFrameHeaderBytes);  // not one body byte taken
  EXPECT_EQ(decoder.error(), FrameError::over_cap);
  EXPECT_EQ(decoder.pending_bytes(), 0u);
  EXPECT_FALSE(decoder.has_frame());
  const std::string text = decoder.error_text();
  EXPECT_NE(text.find("101 bytes"), std::string::npos) << text;
  EXPECT_NE(text.find("cap of 100"), std::string::npos) << text;

  // Byte at a time: the error comes with the 4th header byte.
  FrameDecoder slow(kCap);
  for (size_t i = 0; i < kFrameHeaderBytes; ++i) {
    EXPECT_EQ(slow.error(), FrameError::none);
    EXPECT_EQ(slow.feed(std::span<const uint8_t>(&stream[i], 1)), 1u);
  }
  EXPECT_EQ(slow.error(), FrameError::over_cap);
  EXPECT_EQ(slow.feed(std::span<const uint8_t>(&stream[4], 1)), 0u);

  // A length of 0xffffffff is just another over-cap length.
  const Bytes huge = {0xff, 0xff, 0xff, 0xff, 1, 2, 3};
  FrameDecoder third(kCap);
  EXPECT_EQ(third.feed(huge), kFrameHeaderBytes);
  EXPECT_EQ(third.error(), FrameError::over_cap);

  // Exactly the cap is allowed.
  Bytes at_cap;
  append_frame(&at_cap, pattern_body(kCap, 2));
  FrameDecoder fourth(kCap);
  EXPECT_EQ(fourth.feed(at_cap), at_cap.size());
  ASSERT_TRUE(fourth.has_frame());
  EXPECT_EQ(fourth.frame().size(), kCap);
}

TEST(SchemaFrame, StreamEndingInsideAFrameIsTruncated) {
  // The header announces 10 bytes, the stream ends after 6 of them.
  Bytes stream;
  append_frame(&stream, pattern_body(3, 1));
  const size_t short_frame_at = stream.size();
  append_frame(&stream, pattern_body(10, 2));
  stream.erase(stream.end() - 4, stream.end());  // (not resize: GCC 12 -O1 misreads it)
  FrameDecoder decoder(64);
  int frames = 0;
  EXPECT_EQ(decoder.feed_all(stream, [&](std::span<const uint8_t>) { ++frames; }),
            FrameError::none);
  EXPECT_EQ(frames, 1);
  EXPECT_EQ(decoder.pending_bytes(), kFrameHeaderBytes + 6);
  EXPECT_EQ(decoder.finish(), FrameError::truncated);
  const std::string text = decoder.error_text();
  EXPECT_NE(text.find("6 of 10 body bytes"), std::string::npos) << text;
  EXPECT_NE(text.find("stream byte " + std::to_string(short_frame_at)), std::string::npos) << text;

  // Ending inside a header.
  FrameDecoder in_header(64);
  const Bytes two = {5, 0};
  EXPECT_EQ(in_header.feed(two), 2u);
  EXPECT_EQ(in_header.finish(), FrameError::truncated);
  EXPECT_NE(in_header.error_text().find("2 of 4 bytes"), std::string::npos);

  // A clean end: nothing pending, no error (even with a frame still held).
  FrameDecoder clean(64);
  Bytes whole;
  append_frame(&whole, pattern_body(3, 3));
  EXPECT_EQ(clean.feed(whole), whole.size());
  EXPECT_EQ(clean.finish(), FrameError::none);
  FrameDecoder empty(64);
  EXPECT_EQ(empty.finish(), FrameError::none);
}

TEST(SchemaFrame, RandomBytesNeverCrashAndStayWithinTheCap) {
  // Random chunks of random bytes, with valid frames mixed in. Invariants checked on every
  // call; ASan/UBSan catch any out-of-bounds access. 3000 chunks keep the test well under 1 s.
  constexpr uint32_t kCap = 1024;
  std::mt19937_64 rng(0x5eed);
  FrameDecoder decoder(kCap);
  uint64_t frames = 0, errors = 0;
  for (int round = 0; round < 3000; ++round) {
    Bytes chunk(rng() % 97);
    for (uint8_t& b : chunk)
      b = static_cast<uint8_t>(rng());
    if (rng() % 4 == 0) append_frame(&chunk, pattern_body(1 + rng() % 200, 9));
    std::span<const uint8_t> rest(chunk);
    while (!rest.empty()) {
      const size_t used = decoder.feed(rest);
      ASSERT_LE(used, rest.size());
      ASSERT_LE(decoder.pending_bytes(), kFrameHeaderBytes + kCap);
      if (decoder.has_frame()) {
        ++frames;
        ASSERT_GE(decoder.frame().size(), 1u);
        ASSERT_LE(decoder.frame().size(), kCap);
      }
      if (decoder.error() != FrameError::none) {
        ++errors;
        ASSERT_EQ(decoder.feed(rest.subspan(used)), 0u);
        ASSERT_FALSE(decoder.error_text().empty());
        decoder.reset();  // as a server would with the next connection
      } else {
        ASSERT_TRUE(used > 0 || rest.empty());
      }
      rest = rest.subspan(used);
    }
    ASSERT_EQ(decoder.max_body_bytes(), kCap);
  }
  // Random lengths are mostly over the cap, so errors must have happened, and some frames too.
  EXPECT_GT(errors, 100u);
  EXPECT_GT(frames, 0u);
}

TEST(SchemaFrame, DefaultCapsOrderedAsDocumented) {
  using namespace lockstep::schema;
  static_assert(kMaxClientFrameBytes == 64 * 1024);
  static_assert(kMaxServerFrameBytes == 8 * 1024 * 1024);
  static_assert(kMaxClientFrameBytes < kMaxServerFrameBytes);
  static_assert(kMaxServerFrameBytes < kMaxReplayRecordBytes);
  // A server-capped decoder takes a full-size snapshot frame.
  Bytes stream;
  append_frame(&stream, Bytes(kMaxServerFrameBytes, 0xab));
  FrameDecoder decoder(kMaxServerFrameBytes);
  EXPECT_EQ(decoder.feed(stream), stream.size());
  ASSERT_TRUE(decoder.has_frame());
  EXPECT_EQ(decoder.frame().size(), kMaxServerFrameBytes);
  // A client-capped decoder refuses it before reading its body.
  FrameDecoder client_capped(kMaxClientFrameBytes);
  EXPECT_EQ(client_capped.feed(stream), kFrameHeaderBytes);
  EXPECT_EQ(client_capped.error(), FrameError::over_cap);
}

}  // namespace

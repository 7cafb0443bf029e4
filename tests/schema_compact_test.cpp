// The compact bodies of TickFrame, InputFrame and replay ticks (schema/src/compact_codec.cpp):
// round trips through encode_frame / decode_body, the sizes they are for, and the refusal of
// every kind of malformed byte string a peer or a corrupt file could hand the decoder.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "lockstep/schema/compact_codec.h"
#include "lockstep/schema/frame.h"
#include "lockstep/schema/limits.h"
#include "lockstep/schema/messages.h"
#include "lockstep/schema/protocol_generated.h"
#include "lockstep/sim/scene.h"
#include "lockstep/sim/testing.h"
#include "lockstep/sim/world.h"

namespace {

using namespace lockstep;
using namespace lockstep::schema;

std::vector<uint8_t> body_of(const std::vector<uint8_t>& frame) {
  return std::vector<uint8_t>(frame.begin() + kFrameHeaderBytes, frame.end());
}

DecodeResult decode(const std::vector<uint8_t>& body, Message* out = nullptr) {
  return decode_body(body, out);
}

sim::Input input(uint32_t player, uint32_t sequence) {
  sim::Input in;
  in.player = player;
  in.sequence = sequence;
  in.body = sim::BodyId{player + 2, 1};
  in.linear_impulse[0] = -24 << 10;
  in.linear_impulse[2] = 17;
  in.buttons = 0xA5;
  return in;
}

bool same_input(const sim::Input& a, const sim::Input& b) {
  return a.player == b.player && a.sequence == b.sequence && a.body == b.body &&
         a.buttons == b.buttons && a.flags == b.flags &&
         std::equal(a.linear_impulse, a.linear_impulse + 3, b.linear_impulse) &&
         std::equal(a.angular_impulse, a.angular_impulse + 3, b.angular_impulse) &&
         std::equal(a.linear_velocity, a.linear_velocity + 3, b.linear_velocity) &&
         std::equal(a.angular_velocity, a.angular_velocity + 3, b.angular_velocity);
}

void expect_same_inputs(const std::vector<sim::Input>& a, const std::vector<sim::Input>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_TRUE(same_input(a[i], b[i])) << "input " << i;
}

// A TickFrame body with kind byte `kind` and the given bytes after tick 5 and a zero hash.
std::vector<uint8_t> tick_body(uint8_t kind, const std::vector<uint8_t>& rest) {
  std::vector<uint8_t> body(10 + rest.size(), 0);
  body[0] = kind;
  body[1] = 5;
  for (size_t i = 0; i < rest.size(); ++i)
    body[10 + i] = rest[i];
  return body;
}

void expect_malformed(const std::vector<uint8_t>& body, const std::string& words) {
  const DecodeResult result = decode(body);
  EXPECT_EQ(result.error, DecodeError::malformed) << result.detail;
  EXPECT_NE(result.detail.find(words), std::string::npos)
      << "detail '" << result.detail << "' does not say '" << words << "'";
}

TEST(SchemaCompact, VarintsRoundTripInTheirShortestForm) {
  const std::pair<uint64_t, size_t> cases[] = {
      {0, 1},           {1, 1},           {127, 1},
      {128, 2},         {16383, 2},       {16384, 3},
      {0xFFFFFFFFu, 5}, {1ull << 63, 10}, {std::numeric_limits<uint64_t>::max(), 10}};
  for (const auto& [value, bytes] : cases) {
    std::vector<uint8_t> out;
    compact::append_varint(value, &out);
    EXPECT_EQ(out.size(), bytes) << value;
    size_t offset = 0;
    uint64_t back = 0;
    std::string error;
    ASSERT_TRUE(compact::read_varint(out, &offset, &back, &error)) << error;
    EXPECT_EQ(back, value);
    EXPECT_EQ(offset, out.size());
  }
}

TEST(SchemaCompact, MalformedVarintsAreRefused) {
  const struct {
    std::vector<uint8_t> bytes;
    const char* words;
  } cases[] = {
      {{}, "truncated"},
      {{0x80}, "truncated"},
      {{0xFF, 0xFF}, "truncated"},
      {{0x80, 0x00}, "non-minimal"},
      {{0x81, 0x80, 0x00}, "non-minimal"},
      {{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02}, "beyond 64 bits"},
      {{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x81, 0x01}, "beyond 64 bits"},
      {{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, "beyond 64 bits"},
  };
  for (const auto& c : cases) {
    size_t offset = 0;
    uint64_t value = 0;
    std::string error;
    EXPECT_FALSE(compact::read_varint(c.bytes, &offset, &value, &error));
    EXPECT_NE(error.find(c.words), std::string::npos) << error;
    EXPECT_EQ(offset, 0u);
  }
}

TEST(SchemaCompact, EmptyTickFrameFitsIn24BytesOnTheWire) {
  // Frame header 4 + kind 1 + tick varint + hash 8: 16 bytes up to tick 2^21 (9.7 h at 60 Hz),
  // 24 bytes for any tick below 2^63.
  EXPECT_EQ(encode_frame(TickFrame{1'000'000, {}, 0x0123456789ABCDEFull, {}}).size(), 16u);
  EXPECT_LE(encode_frame(TickFrame{(1ull << 63) - 1, {}, ~0ull, {}}).size(), 24u);
  Message decoded;
  ASSERT_TRUE(decode(body_of(encode_frame(TickFrame{7, {}, 9, {}})), &decoded).ok());
  EXPECT_EQ(std::get<TickFrame>(decoded).tick, 7u);
  EXPECT_EQ(std::get<TickFrame>(decoded).state_hash, 9u);
}

TEST(SchemaCompact, TheDocsWorkedExampleByteForByte) {
  // docs/protocol.md, "Compact bodies": the same bytes, so the doc cannot drift from the code.
  EXPECT_EQ(encode_frame(TickFrame{1000, {}, 0x0123456789ABCDEFull, {}}),
            (std::vector<uint8_t>{0x0b, 0, 0, 0, 0x01, 0xe8, 0x07, 0xef, 0xcd, 0xab, 0x89, 0x67,
                                  0x45, 0x23, 0x01}));
  sim::Input in;
  in.player = 2;
  in.sequence = 153'600;
  in.body = sim::BodyId{5, 0};
  in.linear_impulse[0] = -1000;
  in.linear_impulse[2] = 3000;
  in.buttons = 200;
  EXPECT_EQ(encode_frame(TickFrame{1000, {in}, 0x0123456789ABCDEFull, {}}),
            (std::vector<uint8_t>{0x19, 0,    0,    0,    0x05, 0xe8, 0x07, 0xef, 0xcd, 0xab,
                                  0x89, 0x67, 0x45, 0x23, 0x01, 0x01, 0x02, 0x01, 0x80, 0xe0,
                                  0x12, 0x35, 0x05, 0xcf, 0x0f, 0xf0, 0x2e, 0xc8, 0x01}));
}

TEST(SchemaCompact, TickFrameRoundTripsEveryFieldAndExtreme) {
  TickFrame frame;
  frame.tick = 1ull << 40;
  frame.state_hash = 0x8000'0000'0000'0001ull;
  frame.inputs = {input(1, 256), input(1, 257), input(2, 0), input(3, 0xFFFFFFFFu), input(0, 0)};
  sim::Input& extreme = frame.inputs[2];
  extreme.body = sim::BodyId{0xFFFFFFFFu, 0xFFFFFFFFu};
  extreme.linear_impulse[1] = std::numeric_limits<int32_t>::min();
  extreme.angular_impulse[0] = std::numeric_limits<int32_t>::max();
  extreme.angular_impulse[1] = -1;
  extreme.angular_impulse[2] = 1;
  extreme.buttons = 0xFFFFFFFFu;
  extreme.flags = sim::input_sets_linear_velocity | sim::input_sets_angular_velocity;
  extreme.linear_velocity[0] = 3 << 10;
  extreme.linear_velocity[1] = std::numeric_limits<int32_t>::min();
  extreme.linear_velocity[2] = -5;
  extreme.angular_velocity[0] = 512;
  extreme.angular_velocity[1] = std::numeric_limits<int32_t>::max();
  extreme.angular_velocity[2] = -512;
  sim::Command spawn;
  spawn.type = sim::CommandType::spawn;
  spawn.sequence = 4;
  spawn.position = {1.5f, -0.0f, 2};
  spawn.orientation = {0, 0.6f, 0, 0.8f};
  spawn.owner_player = 2;
  sim::Command score;
  score.type = sim::CommandType::add_score;
  score.sequence = 5;
  score.owner_player = 1024;
  score.score_delta = std::numeric_limits<int32_t>::min();
  sim::Command destroy;
  destroy.type = sim::CommandType::destroy;
  destroy.sequence = 6;
  destroy.body = sim::BodyId{7, 3};
  frame.commands = {spawn, score, destroy};

  Message decoded;
  const DecodeResult result = decode(body_of(encode_frame(frame)), &decoded);
  ASSERT_TRUE(result.ok()) << result.detail;
  const auto& back = std::get<TickFrame>(decoded);
  EXPECT_EQ(back.tick, frame.tick);
  EXPECT_EQ(back.state_hash, frame.state_hash);
  expect_same_inputs(back.inputs, frame.inputs);
  ASSERT_EQ(back.commands.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_FALSE(sim::command_less(back.commands[i], frame.commands[i]) ||
                 sim::command_less(frame.commands[i], back.commands[i]))
        << "command " << i;
  }
  EXPECT_EQ(std::bit_cast<uint32_t>(back.commands[0].position.y), 0x80000000u);  // -0 kept
}

TEST(SchemaCompact, InputFrameRoundTripsUnsortedInputs) {
  // A client's frame need not be sorted: sequences may go down, players alternate (0 = "me").
  InputFrame frame{90, 17, {input(0, 9), input(0, 3), input(2, 3), input(0, 1)}};
  Message decoded;
  ASSERT_TRUE(decode(body_of(encode_frame(frame)), &decoded).ok());
  const auto& back = std::get<InputFrame>(decoded);
  EXPECT_EQ(back.target_tick, 90u);
  EXPECT_EQ(back.sequence, 17u);
  expect_same_inputs(back.inputs, frame.inputs);

  InputFrame empty{1, 0, {}};
  ASSERT_TRUE(decode(body_of(encode_frame(empty)), &decoded).ok());
  EXPECT_TRUE(std::get<InputFrame>(decoded).inputs.empty());
  EXPECT_EQ(encode_frame(empty).size(), 4u + 3u);
}

TEST(SchemaCompact, AnInputFrameCarriesAtMostItsCapOfInputs) {
  // Minimal inputs (player 0, sequence 0, nothing else: 2 bytes each) could pack ~32,000 into a
  // 64 KiB client frame; the decoder stops at kMaxInputFrameInputs, counted across groups.
  InputFrame at_cap{5, 1, std::vector<sim::Input>(kMaxInputFrameInputs)};
  Message decoded;
  ASSERT_TRUE(decode(body_of(encode_frame(at_cap)), &decoded).ok());
  EXPECT_EQ(std::get<InputFrame>(decoded).inputs.size(), kMaxInputFrameInputs);
  InputFrame over{5, 1, std::vector<sim::Input>(kMaxInputFrameInputs + 1)};
  const std::vector<uint8_t> body = body_of(encode_frame(over));
  EXPECT_LE(body.size(), kMaxClientFrameBytes);  // small enough to arrive: the cap must hold
  const DecodeResult result = decode(body, &decoded);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.detail.find("over the 1024 a frame may carry"), std::string::npos)
      << result.detail;
  // Split across two players' groups, the count is the frame's total.
  InputFrame split{5, 1, std::vector<sim::Input>(kMaxInputFrameInputs + 1)};
  for (size_t i = 0; i < 600; ++i)
    split.inputs[i].player = 1;
  EXPECT_FALSE(decode(body_of(encode_frame(split)), &decoded).ok());
  // A TickFrame (server → client) is bounded by the world's own input capacity, not this cap.
  TickFrame tick{5, std::vector<sim::Input>(kMaxInputFrameInputs + 1), 0, {}};
  EXPECT_TRUE(decode(body_of(encode_frame(tick)), &decoded).ok());
}

TEST(SchemaCompact, ReplayTicksCarryTheClientHashTheWireRefuses) {
  std::vector<uint8_t> body;
  compact::append_tick(12, 34, 56, {}, {}, &body);
  compact::Tick tick;
  std::string error;
  ASSERT_TRUE(compact::read_tick(body, true, &tick, &error)) << error;
  EXPECT_EQ(tick.client_hash, std::optional<uint64_t>(56));
  EXPECT_FALSE(compact::read_tick(body, false, &tick, &error));
  expect_malformed(body, "replay files only");
}

// ---- replay tick records coded against the tick record before them ----

// Appends a replay tick body of `inputs` coded against `reference` and reads it back against
// the same list; the decoded inputs, or a failure with the reader's reason.
std::vector<sim::Input> through_reference(const std::vector<sim::Input>& inputs,
                                          const std::vector<sim::Input>& reference,
                                          std::vector<uint8_t>* body = nullptr) {
  std::vector<uint8_t> bytes;
  compact::append_tick(9, 1, std::nullopt, inputs, {}, &bytes,
                       std::span<const sim::Input>(reference));
  compact::Tick tick;
  std::string error;
  EXPECT_TRUE(
      compact::read_tick(bytes, true, &tick, &error, std::span<const sim::Input>(reference)))
      << error;
  if (body != nullptr) *body = bytes;
  return tick.inputs;
}

TEST(SchemaCompact, AHeldInputCostsItsSequenceAndWhatChanged) {
  // Player 2 holds the same push on body 5 from one tick to the next and only a button changes:
  // the input is its sequence (exactly one past the last one: 0), a mask with the buttons bit
  // and the buttons XORed with the ones before (200 ^ 201 = 1).
  sim::Input before;
  before.player = 2;
  before.sequence = 41;
  before.body = sim::BodyId{5, 0};
  before.linear_impulse[0] = -1000;
  before.linear_impulse[2] = 3000;
  before.buttons = 200;
  sim::Input now = before;
  now.sequence = 42;
  now.buttons = 201;
  std::vector<uint8_t> body;
  expect_same_inputs(through_reference({now}, {before}, &body), {now});
  const std::vector<uint8_t> inputs(body.end() - 6, body.end());
  EXPECT_EQ(inputs, (std::vector<uint8_t>{0x01, 0x02, 0x01, 0x00, 0x20, 0x01}));
  EXPECT_EQ(body[0],
            compact::kKindTickFrame | compact::kHasInputs | compact::kInputsAgainstPrevious);
  // The same input on its own (no reference) writes every non-zero field: 12 bytes of inputs.
  std::vector<uint8_t> plain;
  compact::append_tick(9, 1, std::nullopt, std::vector<sim::Input>{now}, {}, &plain);
  EXPECT_EQ(plain.size() - 10, 12u);
  EXPECT_EQ(plain[0], compact::kKindTickFrame | compact::kHasInputs);
}

TEST(SchemaCompact, InputsCodedAgainstAnyReferenceRoundTrip) {
  // Random lists against random references: players present in one and not the other, groups
  // longer and shorter than their reference run, a player in two runs, extreme values whose
  // differences need 33 bits, sequences that wrap around the reference's.
  std::mt19937_64 rng(20261203);
  const auto pick = [&](std::initializer_list<int64_t> values) {
    return *(values.begin() + static_cast<std::ptrdiff_t>(rng() % values.size()));
  };
  const auto random_input = [&](uint32_t player) {
    sim::Input in;
    in.player = player;
    in.sequence = static_cast<uint32_t>(pick({0, 1, 41, 0x7fffffff, 0xffffffff}) + rng() % 3);
    in.body = sim::BodyId{static_cast<uint32_t>(rng() % 4), static_cast<uint32_t>(rng() % 2)};
    int32_t* signed_fields[] = {
        in.linear_impulse,  in.linear_impulse + 1,  in.linear_impulse + 2,
        in.angular_impulse, in.angular_impulse + 1, in.angular_impulse + 2,
        in.linear_velocity, in.linear_velocity + 2, in.angular_velocity + 1};
    for (int32_t* field : signed_fields) {
      *field =
          static_cast<int32_t>(pick({0, 0, 1, -1, 24 << 10, std::numeric_limits<int32_t>::min(),
                                     std::numeric_limits<int32_t>::max()}));
    }
    in.buttons = static_cast<uint32_t>(pick({0, 1, 0x80, 0xffffffff}));
    in.flags = static_cast<uint32_t>(rng() % 4);
    return in;
  };
  const auto random_list = [&]() {
    std::vector<sim::Input> list;
    const size_t count = rng() % 9;
    for (size_t i = 0; i < count; ++i)
      list.push_back(random_input(static_cast<uint32_t>(rng() % 4)));
    return list;
  };
  for (int round = 0; round < 2000; ++round) {
    const std::vector<sim::Input> reference = random_list();
    std::vector<sim::Input> inputs = random_list();
    if (inputs.empty()) inputs.push_back(random_input(1));
    expect_same_inputs(through_reference(inputs, reference), inputs);
    if (HasFailure()) {
      ADD_FAILURE() << "round " << round;
      return;
    }
  }
}

TEST(SchemaCompact, InputsCodedAgainstAReferenceAreRefusedWithoutOne) {
  const std::vector<sim::Input> reference = {input(1, 256)};
  std::vector<uint8_t> body;
  compact::append_tick(12, 34, std::nullopt, std::vector<sim::Input>{input(1, 257)}, {}, &body,
                       std::span<const sim::Input>(reference));
  compact::Tick tick;
  std::string error;
  // On the wire the bit is unknown; in a file, a record with no record before it has nothing to
  // be read against.
  expect_malformed(body, "replay files only");
  EXPECT_FALSE(compact::read_tick(body, true, &tick, &error));
  EXPECT_NE(error.find("none precedes"), std::string::npos) << error;
  // The bit without inputs would be a second encoding of an input-less tick.
  std::vector<uint8_t> no_inputs;
  compact::append_tick(12, 34, std::nullopt, {}, {}, &no_inputs);
  no_inputs[0] |= compact::kInputsAgainstPrevious;
  EXPECT_FALSE(
      compact::read_tick(no_inputs, true, &tick, &error, std::span<const sim::Input>(reference)));
  EXPECT_NE(error.find("no inputs follow"), std::string::npos) << error;
  // An input equal to its reference in a field the mask names (coded 0) is a second encoding;
  // a difference that leaves int32 is no input at all.
  std::vector<uint8_t> same = tick_body(
      compact::kKindTickFrame | compact::kHasInputs | compact::kInputsAgainstPrevious,
      {0x01, 0x01, 0x01, 0x00, 0x04, 0x00});  // player 1, sequence 257, linear x "changed" by 0
  EXPECT_FALSE(
      compact::read_tick(same, true, &tick, &error, std::span<const sim::Input>(reference)));
  EXPECT_NE(error.find("present but 0"), std::string::npos) << error;
  std::vector<uint8_t> beyond =
      tick_body(compact::kKindTickFrame | compact::kHasInputs | compact::kInputsAgainstPrevious,
                {0x01, 0x01, 0x01, 0x00, 0x04, 0xfe, 0xff, 0xff, 0xff, 0x1f});  // +2^32 - 1
  EXPECT_FALSE(
      compact::read_tick(beyond, true, &tick, &error, std::span<const sim::Input>(reference)));
  EXPECT_NE(error.find("outside int32"), std::string::npos) << error;
  // A sequence difference no two uint32 sequences have (2^64 - 1) is refused before any sum.
  expect_malformed(tick_body(compact::kKindTickFrame | compact::kHasInputs,
                             {0x01, 0x01, 0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                              0xff, 0x01, 0x00}),
                   "sequence delta at byte 13: 18446744073709551615 is out of range");
}

TEST(SchemaCompact, DemoTickWithSixteenInputsIsAFewBytesPerInput) {
  // The demo's traffic: the `inputs` scene, 4 players × 4 bodies, scripted inputs. Record the
  // bytes (bench/README.md quotes them) and hold the size the downstream figure rests on.
  sim::Scene scene;
  ASSERT_TRUE(sim::make_builtin_scene("inputs", &scene));
  std::unique_ptr<sim::World> world = sim::build_world(scene);
  ASSERT_NE(world, nullptr);
  const sim::InputScript script = sim::make_input_script(*world);
  std::vector<sim::Input> inputs(64);
  size_t total = 0;
  size_t count = 0;
  constexpr int kTicks = 600;
  for (int t = 0; t < kTicks; ++t) {
    const uint32_t n = sim::scripted_inputs(1, world->tick(), script, *world, inputs);
    std::vector<sim::Input> applied(inputs.begin(), inputs.begin() + n);
    for (uint32_t i = 0; i < n; ++i)
      ASSERT_EQ(world->queue_input(applied[i]), sim::Error::none);
    world->step();
    const TickFrame frame{world->tick(), applied, world->state_hash(), {}};
    const std::vector<uint8_t> encoded = encode_frame(frame);
    Message decoded;
    ASSERT_TRUE(decode(body_of(encoded), &decoded).ok());
    expect_same_inputs(std::get<TickFrame>(decoded).inputs, applied);
    total += encoded.size();
    count += n;
  }
  const double per_frame = static_cast<double>(total) / kTicks;
  const double per_input =
      (static_cast<double>(total) - kTicks * 16.0) / static_cast<double>(count);
  std::printf(
      "demo TickFrame: %.1f bytes with %.1f inputs (%.2f bytes per input), %.0f B/s at "
      "60 Hz\n",
      per_frame, static_cast<double>(count) / kTicks, per_input, per_frame * 60);
  EXPECT_EQ(count, 16u * kTicks);
  EXPECT_LE(per_frame * 60, 16000.0);  // the downstream goal, without Pongs (a few B/s)
}

TEST(SchemaCompact, PackedSnapshotsRoundTripAndRefuseMalformedBytes) {
  std::vector<uint8_t> bytes(200, 0);
  bytes[0] = 1;
  bytes[9] = 0xFF;
  bytes[63] = 7;
  bytes[64] = 2;
  bytes[199] = 3;  // in the last, short chunk
  for (size_t length : {size_t{0}, size_t{1}, size_t{64}, size_t{65}, size_t{200}}) {
    const std::vector<uint8_t> in(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(length));
    std::vector<uint8_t> packed;
    compact::append_packed(in, &packed);
    std::vector<uint8_t> out;
    std::string error;
    ASSERT_TRUE(compact::read_packed(packed, 1 << 20, &out, &error)) << error;
    EXPECT_EQ(out, in) << length;
  }
  std::vector<uint8_t> packed;
  compact::append_packed(bytes, &packed);
  // 200 = c8 01; chunk 0: blocks 0, 1, 7; chunk 1: block 0; chunk 2: none; chunk 3 (8 bytes):
  // block 0, byte 7.
  EXPECT_EQ(packed.size(), 2u + 1 + (1 + 1) + (1 + 1) + (1 + 1) + 1 + (1 + 1) + 1 + 1 + (1 + 1));
  const auto refused = [](std::vector<uint8_t> p, size_t max, const char* words) {
    std::vector<uint8_t> out;
    std::string error;
    EXPECT_FALSE(compact::read_packed(p, max, &out, &error));
    EXPECT_NE(error.find(words), std::string::npos) << error;
  };
  refused(packed, 100, "out of range");                // over the caller's cap
  refused({0xFF, 0xFF, 0x03}, 1 << 30, "needs more");  // a size the bytes cannot describe
  std::vector<uint8_t> cut(packed.begin(), packed.end() - 1);
  refused(cut, 1 << 20, "truncated");
  std::vector<uint8_t> longer = packed;
  longer.push_back(0);
  refused(longer, 1 << 20, "trailing");
  refused({4, 0x02, 0x01, 0x05}, 1 << 20, "past the end");  // block 1 of a 4-byte snapshot
  refused({4, 0x01, 0x10, 0x05}, 1 << 20, "past the end");  // byte 4 of a 4-byte snapshot
  refused({4, 0x01, 0x00}, 1 << 20, "empty block");
  refused({4, 0x01, 0x01, 0x00}, 1 << 20, "0 given as non-zero");
}

TEST(SchemaCompact, KindBytesAreCheckedBeforeAnythingElse) {
  // 0x?3 is no kind yet (a newer peer); unknown flag bits are refused.
  const DecodeResult unknown = decode(tick_body(0x03, {}));
  EXPECT_EQ(unknown.error, DecodeError::unknown_message) << unknown.detail;
  expect_malformed(tick_body(0x21, {}), "unknown flag bits");
  expect_malformed(tick_body(0x81, {}), "unknown flag bits");
  expect_malformed({0x02 | 0x08, 1, 1}, "unknown flag bits");  // commands in an InputFrame
  // The v3 tables of the compact messages are refused by name.
  flatbuffers::FlatBufferBuilder builder;
  wire::TickFrameBuilder tick(builder);
  tick.add_tick(5);
  builder.Finish(wire::CreateEnvelope(builder, wire::Message::TickFrame, tick.Finish().Union()),
                 wire::EnvelopeIdentifier());
  const std::vector<uint8_t> v3(builder.GetBufferPointer(),
                                builder.GetBufferPointer() + builder.GetSize());
  const DecodeResult old = decode(v3);
  EXPECT_EQ(old.error, DecodeError::unknown_message);
  EXPECT_NE(old.detail.find("protocol 3"), std::string::npos) << old.detail;
}

TEST(SchemaCompact, MalformedBodiesAreRefusedWithTheirReason) {
  const uint8_t k = compact::kKindTickFrame | compact::kHasInputs;
  const uint8_t kc = compact::kKindTickFrame | compact::kHasCommands;
  // group count, player, count, sequence delta, mask, fields...
  expect_malformed({0x01, 0x80, 0x00, 0, 0, 0, 0, 0, 0, 0, 0}, "tick at byte 1: overlong");
  expect_malformed({0x01, 0x85}, "tick at byte 1: truncated");
  expect_malformed({0x01, 5, 1, 2, 3}, "state_hash at byte 2: truncated");
  expect_malformed(tick_body(0x01, {0}), "1 trailing bytes");
  expect_malformed(tick_body(k, {}), "input group count at byte 10: truncated");
  expect_malformed(tick_body(k, {0}), "input group count at byte 10: 0");
  expect_malformed(tick_body(k, {0x80, 0x80, 0x80, 0x80, 0x10}), "cannot fit");
  expect_malformed(tick_body(k, {1, 0x80, 0x80, 0x80, 0x80, 0x10, 1, 0, 0}),
                   "group 0 player at byte 11: 4294967296 is out of range");
  expect_malformed(tick_body(k, {1, 1, 0, 0, 0}), "group 0 input count at byte 12: 0");
  expect_malformed(tick_body(k, {1, 1, 0x7F, 0, 0}), "cannot fit");
  expect_malformed(tick_body(k, {1, 1, 1, 1, 0}), "gives sequence -1");
  expect_malformed(tick_body(k, {1, 1, 1, 0, 0x80, 0x80, 0x04}), "field mask");
  expect_malformed(tick_body(k, {1, 1, 1, 0, 0x01, 0}), "present but 0");
  expect_malformed(tick_body(k, {1, 1, 1, 0, 0x01, 0x80, 0x80, 0x80, 0x80, 0x10}), "out of range");
  expect_malformed(tick_body(k, {2, 1, 1, 0, 0, 1, 1, 0, 0}), "repeats player 1");
  expect_malformed(tick_body(k, {1, 1, 1, 0, 0x01}), "input 0 field 0 at byte 15: truncated");
  expect_malformed(tick_body(kc, {1, 0x01, 11}),
                   "type 11 is not a command type");  // past emit_event
  expect_malformed(tick_body(kc, {1, 0x08, 0x00, 0x00, 0x80, 0x7F}), "not finite");
  expect_malformed(tick_body(kc, {1, 0x08, 0, 0, 0, 0}), "present but 0");
  expect_malformed(tick_body(kc, {1, 0x08, 0, 0}), "truncated");
  expect_malformed(tick_body(kc, {1, 0x80, 0x80, 0x80, 0x01}), "field mask");
  expect_malformed({0x06, 1, 0x80, 0x80, 0x80, 0x80, 0x10}, "sequence at byte 2: 4294967296");
}

TEST(SchemaCompact, EveryPrefixAndEveryByteFlipIsRefusedOrDecodedNeverACrash) {
  TickFrame frame{123'456, {input(1, 256), input(1, 257), input(2, 258)}, 0xFEEDu, {}};
  sim::Command score;
  score.type = sim::CommandType::add_score;
  score.owner_player = 3;
  score.score_delta = -2;
  frame.commands = {score};
  const std::vector<uint8_t> body = body_of(encode_frame(frame));
  // Every proper prefix is short of something (a prefix of 0 bytes is not compact at all).
  for (size_t n = 1; n < body.size(); ++n) {
    const DecodeResult result = decode(std::vector<uint8_t>(body.begin(), body.begin() + n));
    EXPECT_EQ(result.error, DecodeError::malformed) << n << " bytes: " << result.detail;
    EXPECT_FALSE(result.detail.empty());
  }
  // Any single corrupted byte: refused with a reason, or (a value byte) decoded to other values.
  for (size_t i = 0; i < body.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::vector<uint8_t> bad = body;
      bad[i] ^= static_cast<uint8_t>(1u << bit);
      Message decoded;
      const DecodeResult result = decode(bad, &decoded);
      if (!result.ok()) {
        EXPECT_FALSE(result.detail.empty());
      }
    }
  }
}

}  // namespace

// The compact encoding of TickFrame, InputFrame and replay ticks (compact_codec.h;
// docs/protocol.md, "Compact bodies", is the byte-by-byte description).
//
// Inputs travel in groups: a run of consecutive inputs of one player writes the player once, and
// each input's sequence is written as the signed difference from the previous input's (the
// inputs of a tick are sorted by player then sequence, so it is usually 1). Each input then
// writes a field mask and only its non-zero fields, as varints (signed ones zigzagged). Commands
// write a mask and their non-zero 4-byte words (floats as their raw bits, little-endian).
// Present fields are never zero and varints are minimal, so a message has exactly one encoding.
//
// A replay tick record after a file's first codes its inputs against the record before: each
// field is written against the reference input's (append_inputs), which on the wire is the zero
// input, so the two encodings are one code path.
#include "lockstep/schema/compact_codec.h"

#include <algorithm>
#include <bit>
#include <limits>

#include "lockstep/schema/limits.h"
#include "lockstep/schema/world_codec.h"

namespace lockstep::schema::compact {
namespace {

// Input fields, by bit of the field mask; the commonest first, so a typical mask is one byte.
enum InputField : uint32_t {
  kBodyIndex1 = 0,
  kBodyGeneration,
  kLinearX,
  kLinearY,
  kLinearZ,
  kButtons,
  kAngularX,
  kAngularY,
  kAngularZ,
  kFlags,
  kLinearVelocityX,
  kLinearVelocityY,
  kLinearVelocityZ,
  kAngularVelocityX,
  kAngularVelocityY,
  kAngularVelocityZ,
  kInputFieldCount,
};

// Command words, by bit of the command mask: wire::WorldCommand's 20 fields in schema order.
constexpr uint32_t kCommandWords = 20;
enum class WordKind : uint8_t { unsigned_int, signed_int, float_bits };
constexpr WordKind command_word_kind(uint32_t word) {
  if (word >= 3 && word <= 15) return WordKind::float_bits;
  return word == 19 ? WordKind::signed_int : WordKind::unsigned_int;
}

uint64_t zigzag(int64_t value) {
  return (static_cast<uint64_t>(value) << 1) ^ static_cast<uint64_t>(value >> 63);
}

int64_t unzigzag(uint64_t value) {
  return static_cast<int64_t>(value >> 1) ^ -static_cast<int64_t>(value & 1);
}

void append_fixed(uint64_t value, size_t bytes, std::vector<uint8_t>* out) {
  for (size_t i = 0; i < bytes; ++i)
    out->push_back(static_cast<uint8_t>(value >> (8 * i)));
}

// Whether an input field is signed (zigzag varint) or unsigned (varint).
constexpr bool is_signed_field(uint32_t field) {
  return field != kBodyIndex1 && field != kBodyGeneration && field != kButtons && field != kFlags;
}

// The input's fields in mask order: unsigned ones as they are, signed ones sign-extended.
void input_fields(const sim::Input& in, int64_t (&values)[kInputFieldCount]) {
  values[kBodyIndex1] = in.body.index1;
  values[kBodyGeneration] = in.body.generation;
  values[kLinearX] = in.linear_impulse[0];
  values[kLinearY] = in.linear_impulse[1];
  values[kLinearZ] = in.linear_impulse[2];
  values[kButtons] = in.buttons;
  values[kAngularX] = in.angular_impulse[0];
  values[kAngularY] = in.angular_impulse[1];
  values[kAngularZ] = in.angular_impulse[2];
  values[kFlags] = in.flags;
  values[kLinearVelocityX] = in.linear_velocity[0];
  values[kLinearVelocityY] = in.linear_velocity[1];
  values[kLinearVelocityZ] = in.linear_velocity[2];
  values[kAngularVelocityX] = in.angular_velocity[0];
  values[kAngularVelocityY] = in.angular_velocity[1];
  values[kAngularVelocityZ] = in.angular_velocity[2];
}

// A field as written against its reference's value: a signed field as the zigzag of the
// difference, an unsigned one XORed with it. Against a zero reference (the wire, and the inputs
// a replay tick record has no reference for) that is the field itself; either way it is 0
// exactly when the two are equal, so only the fields that differ are written.
uint64_t coded_field(uint32_t field, int64_t value, int64_t reference) {
  if (is_signed_field(field)) return zigzag(value - reference);
  return static_cast<uint64_t>(value) ^ static_cast<uint64_t>(reference);
}

// The reference of a group of `player`'s inputs: the first run of that player's inputs in the
// reference list (empty when it has none). The group's k-th input is coded against the run's
// k-th, or against the zero input past the run's end.
std::span<const sim::Input> reference_run(std::span<const sim::Input> reference, uint32_t player) {
  size_t begin = 0;
  while (begin < reference.size() && reference[begin].player != player)
    ++begin;
  size_t end = begin;
  while (end < reference.size() && reference[end].player == player)
    ++end;
  return reference.subspan(begin, end - begin);
}

// What a group's first sequence is written against: one past the last sequence of its reference
// run (a client numbering its inputs one by one is then exactly on it), or without a run the
// previous input's sequence in the message (0 before the first).
int64_t sequence_base(std::span<const sim::Input> run, uint32_t previous_sequence) {
  return run.empty() ? int64_t{previous_sequence} : int64_t{run.back().sequence} + 1;
}

void command_words(const sim::Command& c, uint32_t (&words)[kCommandWords]) {
  const auto f = [](float v) { return std::bit_cast<uint32_t>(v); };
  const uint32_t w[kCommandWords] = {static_cast<uint32_t>(c.type),
                                     c.sequence,
                                     c.template_index,
                                     f(c.position.x),
                                     f(c.position.y),
                                     f(c.position.z),
                                     f(c.orientation.x),
                                     f(c.orientation.y),
                                     f(c.orientation.z),
                                     f(c.orientation.w),
                                     f(c.linear_velocity.x),
                                     f(c.linear_velocity.y),
                                     f(c.linear_velocity.z),
                                     f(c.angular_velocity.x),
                                     f(c.angular_velocity.y),
                                     f(c.angular_velocity.z),
                                     c.owner_player,
                                     c.body.index1,
                                     c.body.generation,
                                     static_cast<uint32_t>(c.score_delta)};
  for (uint32_t i = 0; i < kCommandWords; ++i)
    words[i] = w[i];
}

// Bit i set when values[i] is not zero: the field mask of an input or a command.
template <class T, size_t N>
uint64_t nonzero_mask(const T (&values)[N]) {
  static_assert(N <= 64);
  uint64_t mask = 0;
  for (size_t i = 0; i < N; ++i) {
    if (values[i] != 0) mask |= uint64_t{1} << i;
  }
  return mask;
}

// `reference`: the inputs this list is coded against (empty: none, the plain encoding).
void append_inputs(std::span<const sim::Input> inputs, std::span<const sim::Input> reference,
                   std::vector<uint8_t>* out) {
  size_t groups = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (i == 0 || inputs[i].player != inputs[i - 1].player) ++groups;
  }
  append_varint(groups, out);
  uint32_t previous_sequence = 0;
  const sim::Input zero{};
  for (size_t start = 0; start < inputs.size();) {
    size_t end = start + 1;
    while (end < inputs.size() && inputs[end].player == inputs[start].player)
      ++end;
    append_varint(inputs[start].player, out);
    append_varint(end - start, out);
    const std::span<const sim::Input> run = reference_run(reference, inputs[start].player);
    for (size_t i = start; i < end; ++i) {
      const sim::Input& in = inputs[i];
      const int64_t base =
          i == start ? sequence_base(run, previous_sequence) : int64_t{previous_sequence};
      append_varint(zigzag(static_cast<int64_t>(in.sequence) - base), out);
      previous_sequence = in.sequence;
      int64_t values[kInputFieldCount];
      int64_t references[kInputFieldCount];
      input_fields(in, values);
      input_fields(i - start < run.size() ? run[i - start] : zero, references);
      uint64_t coded[kInputFieldCount];
      for (uint32_t f = 0; f < kInputFieldCount; ++f)
        coded[f] = coded_field(f, values[f], references[f]);
      append_varint(nonzero_mask(coded), out);
      for (uint32_t f = 0; f < kInputFieldCount; ++f) {
        if (coded[f] != 0) append_varint(coded[f], out);
      }
    }
    start = end;
  }
}

void append_commands(std::span<const sim::Command> commands, std::vector<uint8_t>* out) {
  append_varint(commands.size(), out);
  for (const sim::Command& c : commands) {
    uint32_t words[kCommandWords];
    command_words(c, words);
    append_varint(nonzero_mask(words), out);
    for (uint32_t w = 0; w < kCommandWords; ++w) {
      if (words[w] == 0) continue;
      switch (command_word_kind(w)) {
        case WordKind::unsigned_int:
          append_varint(words[w], out);
          break;
        case WordKind::signed_int:
          append_varint(zigzag(static_cast<int32_t>(words[w])), out);
          break;
        case WordKind::float_bits:
          append_fixed(words[w], 4, out);
          break;
      }
    }
  }
}

// ---- decoding ----

// A cursor over untrusted bytes: every read checks what is left and names the field on error.
class Reader {
 public:
  Reader(std::span<const uint8_t> bytes, const char* message, std::string* error)
      : bytes_(bytes), message_(message), error_(error) {}

  size_t offset() const { return offset_; }
  size_t remaining() const { return bytes_.size() - offset_; }

  bool fail(const std::string& what) {
    *error_ = std::string(message_) + ": " + what;
    return false;
  }
  bool fail_at(size_t at, const std::string& field, const std::string& what) {
    return fail(field + " at byte " + std::to_string(at) + ": " + what);
  }

  bool varint(const std::string& field, uint64_t* value) {
    const size_t at = offset_;
    std::string why;
    if (!read_varint(bytes_, &offset_, value, &why)) return fail_at(at, field, why);
    return true;
  }
  // A varint that must fit `max` (a field's range).
  bool bounded(const std::string& field, uint64_t max, uint64_t* value) {
    const size_t at = offset_;
    if (!varint(field, value)) return false;
    if (*value > max) {
      return fail_at(
          at, field,
          std::to_string(*value) + " is out of range (at most " + std::to_string(max) + ")");
    }
    return true;
  }
  bool u32(const std::string& field, uint32_t* value) {
    uint64_t v = 0;
    if (!bounded(field, std::numeric_limits<uint32_t>::max(), &v)) return false;
    *value = static_cast<uint32_t>(v);
    return true;
  }
  // A non-zero field (its mask bit said present): zero would be a second encoding.
  bool present(const std::string& field, uint64_t max, uint64_t* value) {
    const size_t at = offset_;
    if (!bounded(field, max, value)) return false;
    if (*value == 0) return fail_at(at, field, "present but 0 (zero fields are left out)");
    return true;
  }
  bool fixed(const std::string& field, size_t bytes, uint64_t* value) {
    if (remaining() < bytes) {
      return fail_at(offset_, field,
                     "truncated (" + std::to_string(bytes) + " bytes needed, " +
                         std::to_string(remaining()) + " left)");
    }
    uint64_t v = 0;
    for (size_t i = 0; i < bytes; ++i)
      v |= uint64_t{bytes_[offset_ + i]} << (8 * i);
    offset_ += bytes;
    *value = v;
    return true;
  }
  // A count of items that take at least `min_item_bytes` each: never more than the bytes left
  // could hold, so a forged count cannot make the reader reserve memory the body does not back.
  bool count(const std::string& field, size_t min_item_bytes, uint64_t* value) {
    const size_t at = offset_;
    if (!varint(field, value)) return false;
    if (*value == 0) return fail_at(at, field, "0 (an empty part is left out)");
    if (*value > remaining() / min_item_bytes) {
      return fail_at(at, field,
                     std::to_string(*value) + " items cannot fit in the " +
                         std::to_string(remaining()) + " bytes left");
    }
    return true;
  }
  bool at_end() {
    if (remaining() != 0) {
      return fail(std::to_string(remaining()) + " trailing bytes after the message (byte " +
                  std::to_string(offset_) + ")");
    }
    return true;
  }

 private:
  std::span<const uint8_t> bytes_;
  size_t offset_ = 0;
  const char* message_;
  std::string* error_;
};

int32_t to_int32(uint64_t zigzagged) {
  return static_cast<int32_t>(unzigzag(zigzagged));
}

// Smallest input: a sequence delta (1 byte) and a mask (1 byte); a group adds its player and
// count (1 byte each) to its first input.
constexpr size_t kMinInputBytes = 2;
constexpr size_t kMinGroupBytes = 2 + kMinInputBytes;
// Smallest command: its mask alone (a command whose every word is 0 is the one byte 0x00).
constexpr size_t kMinCommandBytes = 1;

// `reference`: the inputs the list was coded against (empty: the plain encoding).
bool read_inputs(Reader& r, std::span<const sim::Input> reference, std::vector<sim::Input>* out,
                 uint64_t max_inputs = std::numeric_limits<uint64_t>::max()) {
  uint64_t groups = 0;
  if (!r.count("input group count", kMinGroupBytes, &groups)) return false;
  uint32_t previous_sequence = 0;
  const sim::Input zero{};
  for (uint64_t g = 0; g < groups; ++g) {
    const std::string group = "group " + std::to_string(g);
    uint32_t player = 0;
    uint64_t count = 0;
    if (!r.u32(group + " player", &player) ||
        !r.count(group + " input count", kMinInputBytes, &count)) {
      return false;
    }
    if (count > max_inputs - out->size()) {
      return r.fail(group + " brings the inputs to " + std::to_string(out->size() + count) +
                    ", over the " + std::to_string(max_inputs) + " a frame may carry");
    }
    if (g > 0 && !out->empty() && out->back().player == player) {
      return r.fail(group + " repeats player " + std::to_string(player) +
                    " of the group before (one group per run of a player's inputs)");
    }
    const std::span<const sim::Input> run = reference_run(reference, player);
    out->reserve(out->size() + static_cast<size_t>(count));  // count is bounded above
    for (uint64_t k = 0; k < count; ++k) {
      const std::string name = "input " + std::to_string(out->size());
      sim::Input in;
      in.player = player;
      uint64_t delta = 0;
      const size_t at = r.offset();
      // Two sequences (or one and the base after a run, up to 2^32) differ by less than 2^33:
      // a larger zigzag is no sequence, and bounding it keeps the sum below from overflowing.
      if (!r.bounded(name + " sequence delta", (uint64_t{1} << 34) - 1, &delta)) return false;
      const int64_t base =
          k == 0 ? sequence_base(run, previous_sequence) : int64_t{previous_sequence};
      const int64_t sequence = base + unzigzag(delta);
      if (sequence < 0 || sequence > std::numeric_limits<uint32_t>::max()) {
        return r.fail_at(at, name + " sequence delta",
                         "gives sequence " + std::to_string(sequence) + ", outside uint32");
      }
      in.sequence = static_cast<uint32_t>(sequence);
      previous_sequence = in.sequence;
      uint64_t mask = 0;
      if (!r.bounded(name + " field mask", (uint64_t{1} << kInputFieldCount) - 1, &mask)) {
        return false;
      }
      int64_t values[kInputFieldCount];
      input_fields(k < run.size() ? run[static_cast<size_t>(k)] : zero,
                   values);  // the reference's, then replaced
      for (uint32_t f = 0; f < kInputFieldCount; ++f) {
        if ((mask >> f & 1) == 0) continue;
        const std::string field = name + " field " + std::to_string(f);
        const size_t field_at = r.offset();
        uint64_t coded = 0;
        if (!is_signed_field(f)) {
          if (!r.present(field, std::numeric_limits<uint32_t>::max(), &coded)) return false;
          values[f] = static_cast<int64_t>(static_cast<uint64_t>(values[f]) ^ coded);
          continue;
        }
        // The difference of two int32 values is below 2^32 in magnitude: its zigzag, below 2^33.
        if (!r.present(field, (uint64_t{1} << 33) - 1, &coded)) return false;
        const int64_t value = values[f] + unzigzag(coded);
        if (value < std::numeric_limits<int32_t>::min() ||
            value > std::numeric_limits<int32_t>::max()) {
          return r.fail_at(field_at, field, "gives " + std::to_string(value) + ", outside int32");
        }
        values[f] = value;
      }
      const auto u = [&](uint32_t f) { return static_cast<uint32_t>(values[f]); };
      const auto s = [&](uint32_t f) { return static_cast<int32_t>(values[f]); };
      in.body = sim::BodyId{u(kBodyIndex1), u(kBodyGeneration)};
      in.linear_impulse[0] = s(kLinearX);
      in.linear_impulse[1] = s(kLinearY);
      in.linear_impulse[2] = s(kLinearZ);
      in.buttons = u(kButtons);
      in.angular_impulse[0] = s(kAngularX);
      in.angular_impulse[1] = s(kAngularY);
      in.angular_impulse[2] = s(kAngularZ);
      in.flags = u(kFlags);
      in.linear_velocity[0] = s(kLinearVelocityX);
      in.linear_velocity[1] = s(kLinearVelocityY);
      in.linear_velocity[2] = s(kLinearVelocityZ);
      in.angular_velocity[0] = s(kAngularVelocityX);
      in.angular_velocity[1] = s(kAngularVelocityY);
      in.angular_velocity[2] = s(kAngularVelocityZ);
      out->push_back(in);
    }
  }
  return true;
}

bool read_commands(Reader& r, std::vector<sim::Command>* out) {
  uint64_t count = 0;
  if (!r.count("command count", kMinCommandBytes, &count)) return false;
  out->reserve(static_cast<size_t>(count));  // below the bytes left, so within size_t
  for (uint64_t k = 0; k < count; ++k) {
    const std::string name = "command " + std::to_string(k);
    uint64_t mask = 0;
    if (!r.bounded(name + " field mask", (uint64_t{1} << kCommandWords) - 1, &mask)) return false;
    uint32_t w[kCommandWords] = {};
    for (uint32_t i = 0; i < kCommandWords; ++i) {
      if ((mask >> i & 1) == 0) continue;
      const std::string field = name + " field " + std::to_string(i);
      uint64_t value = 0;
      switch (command_word_kind(i)) {
        case WordKind::unsigned_int:
          if (!r.present(field, std::numeric_limits<uint32_t>::max(), &value)) return false;
          w[i] = static_cast<uint32_t>(value);
          break;
        case WordKind::signed_int:
          if (!r.present(field, std::numeric_limits<uint32_t>::max(), &value)) return false;
          w[i] = static_cast<uint32_t>(to_int32(value));
          break;
        case WordKind::float_bits: {
          const size_t at = r.offset();
          if (!r.fixed(field, 4, &value)) return false;
          if (value == 0) return r.fail_at(at, field, "present but 0 (zero fields are left out)");
          w[i] = static_cast<uint32_t>(value);
          break;
        }
      }
    }
    const auto f = [&](uint32_t i) { return std::bit_cast<float>(w[i]); };
    const wire::WorldCommand packed(w[0], w[1], w[2], f(3), f(4), f(5), f(6), f(7), f(8), f(9),
                                    f(10), f(11), f(12), f(13), f(14), f(15), w[16], w[17], w[18],
                                    static_cast<int32_t>(w[19]));
    sim::Command command;
    std::string why;
    if (!from_world_command(packed, &command, &why)) return r.fail(name + ": " + why);
    out->push_back(command);
  }
  return true;
}

}  // namespace

void append_varint(uint64_t value, std::vector<uint8_t>* out) {
  while (value >= 0x80) {
    out->push_back(static_cast<uint8_t>(value | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<uint8_t>(value));
}

bool read_varint(std::span<const uint8_t> bytes, size_t* offset, uint64_t* value,
                 std::string* error) {
  constexpr size_t kMaxBytes = 10;  // ceil(64 / 7)
  uint64_t v = 0;
  for (size_t i = 0; i < kMaxBytes; ++i) {
    if (*offset + i >= bytes.size()) {
      *error = "truncated varint (the body ends inside it)";
      return false;
    }
    const uint8_t b = bytes[*offset + i];
    if (i == kMaxBytes - 1 && b > 1) {
      *error = "overlong varint (beyond 64 bits)";
      return false;
    }
    v |= uint64_t{b & 0x7Fu} << (7 * i);
    if ((b & 0x80) == 0) {
      if (b == 0 && i > 0) {
        *error = "overlong varint (a non-minimal encoding ending in a 0 byte)";
        return false;
      }
      *offset += i + 1;
      *value = v;
      return true;
    }
  }
  *error = "overlong varint (more than 10 bytes)";
  return false;
}

void append_tick(uint64_t tick, uint64_t state_hash, std::optional<uint64_t> client_hash,
                 std::span<const sim::Input> inputs, std::span<const sim::Command> commands,
                 std::vector<uint8_t>* out,
                 std::optional<std::span<const sim::Input>> inputs_reference) {
  uint8_t kind = kKindTickFrame;
  if (!inputs.empty()) kind |= kHasInputs;
  if (!inputs.empty() && inputs_reference) kind |= kInputsAgainstPrevious;
  if (!commands.empty()) kind |= kHasCommands;
  if (client_hash) kind |= kHasClientHash;
  out->push_back(kind);
  append_varint(tick, out);
  append_fixed(state_hash, 8, out);
  if (client_hash) append_fixed(*client_hash, 8, out);
  if (!commands.empty()) append_commands(commands, out);
  if (!inputs.empty())
    append_inputs(inputs, inputs_reference.value_or(std::span<const sim::Input>{}), out);
}

void append_input_frame(uint64_t target_tick, uint32_t sequence, std::span<const sim::Input> inputs,
                        std::vector<uint8_t>* out) {
  out->push_back(static_cast<uint8_t>(kKindInputFrame | (inputs.empty() ? 0 : kHasInputs)));
  append_varint(target_tick, out);
  append_varint(sequence, out);
  if (!inputs.empty()) append_inputs(inputs, {}, out);
}

size_t max_body_bytes(size_t inputs, size_t commands) {
  // Kind, tick, two hashes, counts; per input a group header (player, count), sequence, mask
  // and 16 fields of at most 5 bytes each; per command a mask and 20 words of at most 5 bytes.
  return 1 + 10 + 16 + 2 * 10 + inputs * (5 + 10 + 10 + 3 + 16 * 5) + commands * (3 + 20 * 5);
}

bool read_tick(std::span<const uint8_t> body, bool allow_client_hash, Tick* out, std::string* error,
               std::optional<std::span<const sim::Input>> inputs_reference) {
  Reader r(body, "TickFrame", error);
  uint64_t kind = 0;
  if (!r.fixed("kind", 1, &kind)) return false;
  // The two replay-file bits: a client hash, and inputs coded against the tick before.
  const uint8_t replay_bits = kHasClientHash | kInputsAgainstPrevious;
  const uint8_t known =
      kKindTickFrame | kHasInputs | kHasCommands | (allow_client_hash ? replay_bits : 0);
  if ((kind & kKindMask) != kKindTickFrame || (kind & ~uint64_t{known}) != 0) {
    return r.fail("kind byte " + std::to_string(kind) + " has unknown flag bits" +
                  (!allow_client_hash && (kind & replay_bits) != 0
                       ? " (a client hash and inputs coded against the previous tick belong in "
                         "replay files only)"
                       : ""));
  }
  if ((kind & kInputsAgainstPrevious) != 0) {
    if ((kind & kHasInputs) == 0) {
      return r.fail("kind byte " + std::to_string(kind) +
                    ": inputs coded against the previous tick, but no inputs follow");
    }
    if (!inputs_reference) {
      return r.fail("kind byte " + std::to_string(kind) +
                    ": inputs coded against the previous tick record, but none precedes this "
                    "one in its file");
    }
  }
  *out = Tick{};
  if (!r.varint("tick", &out->tick) || !r.fixed("state_hash", 8, &out->state_hash)) return false;
  if ((kind & kHasClientHash) != 0) {
    uint64_t client = 0;
    if (!r.fixed("client_hash", 8, &client)) return false;
    out->client_hash = client;
  }
  if ((kind & kHasCommands) != 0 && !read_commands(r, &out->commands)) return false;
  const std::span<const sim::Input> reference =
      (kind & kInputsAgainstPrevious) != 0 ? *inputs_reference : std::span<const sim::Input>{};
  if ((kind & kHasInputs) != 0 && !read_inputs(r, reference, &out->inputs)) return false;
  return r.at_end();
}

bool read_input_frame(std::span<const uint8_t> body, InputFrame* out, std::string* error) {
  Reader r(body, "InputFrame", error);
  uint64_t kind = 0;
  if (!r.fixed("kind", 1, &kind)) return false;
  if ((kind & kKindMask) != kKindInputFrame || (kind & ~uint64_t{kKindInputFrame | kHasInputs})) {
    return r.fail("kind byte " + std::to_string(kind) + " has unknown flag bits");
  }
  *out = InputFrame{};
  if (!r.varint("target_tick", &out->target_tick) || !r.u32("sequence", &out->sequence)) {
    return false;
  }
  if ((kind & kHasInputs) != 0 && !read_inputs(r, {}, &out->inputs, kMaxInputFrameInputs)) {
    return false;
  }
  return r.at_end();
}

void append_packed(std::span<const uint8_t> bytes, std::vector<uint8_t>* out) {
  append_varint(bytes.size(), out);
  for (size_t chunk = 0; chunk < bytes.size(); chunk += 64) {
    const size_t chunk_mask_at = out->size();
    out->push_back(0);
    for (size_t block = 0; block < 8 && chunk + 8 * block < bytes.size(); ++block) {
      const size_t start = chunk + 8 * block;
      const size_t end = std::min(start + 8, bytes.size());
      uint8_t mask = 0;
      for (size_t i = start; i < end; ++i) {
        if (bytes[i] != 0) mask = static_cast<uint8_t>(mask | 1u << (i - start));
      }
      if (mask == 0) continue;
      (*out)[chunk_mask_at] = static_cast<uint8_t>((*out)[chunk_mask_at] | 1u << block);
      out->push_back(mask);
      for (size_t i = start; i < end; ++i) {
        if (bytes[i] != 0) out->push_back(bytes[i]);
      }
    }
  }
}

bool read_packed(std::span<const uint8_t> packed, size_t max_bytes, std::vector<uint8_t>* out,
                 std::string* error) {
  Reader r(packed, "packed snapshot", error);
  uint64_t size = 0;
  if (!r.bounded("size", max_bytes, &size)) return false;
  // Every 64 bytes cost at least their chunk byte: a size the rest cannot describe is refused
  // before the output is sized.
  if ((size + 63) / 64 > r.remaining()) {
    return r.fail("size " + std::to_string(size) + " needs more than the " +
                  std::to_string(r.remaining()) + " bytes left");
  }
  out->assign(static_cast<size_t>(size), 0);
  for (size_t chunk = 0; chunk < size; chunk += 64) {
    uint64_t chunk_mask = 0;
    const size_t chunk_at = r.offset();
    if (!r.fixed("chunk mask", 1, &chunk_mask)) return false;
    for (size_t block = 0; block < 8; ++block) {
      if ((chunk_mask >> block & 1) == 0) continue;
      const size_t start = chunk + 8 * block;
      if (start >= size) return r.fail_at(chunk_at, "chunk mask", "names a block past the end");
      uint64_t mask = 0;
      const size_t mask_at = r.offset();
      if (!r.fixed("block mask", 1, &mask)) return false;
      if (mask == 0) return r.fail_at(mask_at, "block mask", "0 (an empty block is left out)");
      for (size_t i = 0; i < 8; ++i) {
        if ((mask >> i & 1) == 0) continue;
        if (start + i >= size) return r.fail_at(mask_at, "block mask", "names a byte past the end");
        uint64_t value = 0;
        const size_t at = r.offset();
        if (!r.fixed("byte", 1, &value)) return false;
        if (value == 0) return r.fail_at(at, "byte", "0 given as non-zero");
        (*out)[start + i] = static_cast<uint8_t>(value);
      }
    }
  }
  return r.at_end();
}

}  // namespace lockstep::schema::compact

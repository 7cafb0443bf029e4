// Recording: the always-on window of a room or client, and whole-match streaming.
//
// The window is two rings sized at construction: tick records (window + one keyframe interval
// of them, so that the keyframe at or before the window's start always still has every tick
// after it) with a fixed input slot per tick, and keyframe slots of max_snapshot_size bytes.
// record_tick / record_keyframe only copy into them.
#include "lockstep/replays/recorder.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <vector>

#include "lockstep/replays/record_file.h"
#include "lockstep/schema/level_file.h"
#include "replay_codec.h"
#include "replay_step.h"

#ifndef LOCKSTEP_VERSION_STRING
#define LOCKSTEP_VERSION_STRING "unknown"
#endif

namespace lockstep::replays {

const char* lockstep_version_string() {
  return LOCKSTEP_VERSION_STRING;
}

ReplayHeader make_replay_header(const sim::World& world, std::string scene, uint32_t tick_rate_hz,
                                ReplayWriterKind writer, uint32_t player_id) {
  ReplayHeader header;
  header.lockstep_version = lockstep_version_string();
  header.world_def = world.def();
  header.world_def_fingerprint = sim::world_def_fingerprint(world.def());
  header.tick_rate_hz = tick_rate_hz;
  header.scene = std::move(scene);
  header.first_tick = world.tick();
  header.writer = writer;
  header.player_id = player_id;
  return header;
}

uint64_t replay_level_digest(const ReplayHeader& header) {
  if (header.level_meshes.empty() && header.level_heightfields.empty()) return 0;
  return sim::level_digest(
      schema::view_level(header.level_meshes, header.level_heightfields).def());
}

namespace {

// A file whose header lacks the world's level could not be re-simulated: refused when written,
// not found out when the file is needed.
bool header_level_matches(const ReplayHeader& header, uint64_t world_level_digest,
                          WriteResult* result) {
  const uint64_t digest = replay_level_digest(header);
  if (digest == world_level_digest) return true;
  *result = {false, "the replay header's level (digest " + detail::hex64(digest) +
                        ") is not the world's (digest " + detail::hex64(world_level_digest) + ")"};
  return false;
}

}  // namespace

// ---- ReplayWindow -------------------------------------------------------------------------------

struct ReplayWindow::State {
  uint64_t level_digest = 0;  // the world's level (sim::LevelStats::digest)
  struct TickSlot {
    uint64_t tick = 0;
    uint64_t authoritative_hash = 0;
    uint64_t client_hash = 0;
    bool has_client_hash = false;
    uint32_t input_count = 0;
    uint32_t command_count = 0;
  };
  struct KeyframeSlot {
    uint64_t tick = 0;
    uint64_t state_hash = 0;
    size_t bytes = 0;
  };

  ReplayWindowConfig config;
  size_t snapshot_capacity = 0;
  uint32_t tick_capacity = 0;
  uint32_t keyframe_capacity = 0;
  std::unique_ptr<TickSlot[]> ticks;
  std::unique_ptr<sim::Input[]> inputs;      // tick_capacity × max_inputs_per_tick
  std::unique_ptr<sim::Command[]> commands;  // tick_capacity × max_commands_per_tick
  std::unique_ptr<KeyframeSlot[]> keyframes;
  std::unique_ptr<uint8_t[]> snapshots;  // keyframe_capacity × snapshot_capacity

  // Ticks held: (last_tick - tick_count, last_tick]; keyframes held: a ring, oldest first.
  bool started = false;  // a keyframe has been recorded since the last restart
  uint64_t last_tick = 0;
  uint32_t tick_count = 0;
  uint32_t keyframe_first = 0;
  uint32_t keyframe_count = 0;
  uint64_t dropped_inputs = 0;
  uint64_t dropped_commands = 0;
  uint64_t skipped_keyframes = 0;

  // tick % tick_capacity < tick_capacity (a uint32_t), so the index fits size_t on 32-bit targets.
  TickSlot& tick_slot(uint64_t tick) { return ticks[static_cast<size_t>(tick % tick_capacity)]; }
  const TickSlot& tick_slot(uint64_t tick) const {
    return ticks[static_cast<size_t>(tick % tick_capacity)];
  }
  const KeyframeSlot& keyframe(uint32_t i) const {
    return keyframes[(keyframe_first + i) % keyframe_capacity];
  }
  uint8_t* snapshot_bytes(uint32_t slot) { return snapshots.get() + slot * snapshot_capacity; }
  const uint8_t* snapshot_bytes(uint32_t slot) const {
    return snapshots.get() + slot * snapshot_capacity;
  }
  uint64_t first_held_tick() const { return last_tick - tick_count; }  // the state before them

  // Index (into the keyframe ring, 0 = oldest) of the keyframe to write first, or -1.
  int64_t start_keyframe() const {
    if (!started || keyframe_count == 0) return -1;
    const uint64_t window = config.window_ticks;
    const uint64_t window_start = last_tick > window ? last_tick - window : 0;
    int64_t chosen = -1;
    for (uint32_t i = 0; i < keyframe_count; ++i) {
      const uint64_t t = keyframe(i).tick;
      if (t < first_held_tick() || t > last_tick) continue;  // ticks after it are gone
      if (chosen < 0 || t <= window_start) chosen = i;       // newest at or before the start
    }
    return chosen;
  }
};

ReplayWindow::ReplayWindow(const sim::World& world, const ReplayWindowConfig& config)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.config = config;
  s.level_digest = world.level_stats().digest;
  if (s.config.keyframe_interval_ticks == 0) s.config.keyframe_interval_ticks = 1;
  if (s.config.max_inputs_per_tick == 0)
    s.config.max_inputs_per_tick = world.def().max_inputs_per_tick;
  if (s.config.max_commands_per_tick == 0)
    s.config.max_commands_per_tick = world.def().max_commands_per_tick;
  s.tick_capacity = s.config.window_ticks + s.config.keyframe_interval_ticks;
  // Keyframes spanning the tick ring, one more for the keyframe just before it, one spare for
  // the start keyframe (which need not fall on the interval).
  // Keyframes that still have every tick after them are the multiples of the interval among
  // the held ticks and the one just before them; one more for a start keyframe off the interval.
  s.keyframe_capacity =
      (s.tick_capacity + s.config.keyframe_interval_ticks - 1) / s.config.keyframe_interval_ticks +
      2;
  s.snapshot_capacity =
      s.config.keyframe_slot_bytes ? s.config.keyframe_slot_bytes : world.max_snapshot_size();
  s.ticks = std::make_unique<State::TickSlot[]>(s.tick_capacity);
  s.inputs = std::make_unique<sim::Input[]>(size_t{s.tick_capacity} * s.config.max_inputs_per_tick);
  s.commands =
      std::make_unique<sim::Command[]>(size_t{s.tick_capacity} * s.config.max_commands_per_tick);
  s.keyframes = std::make_unique<State::KeyframeSlot[]>(s.keyframe_capacity);
  s.snapshots = std::make_unique<uint8_t[]>(s.keyframe_capacity * s.snapshot_capacity);
  record_keyframe(world);
}

ReplayWindow::~ReplayWindow() = default;

bool ReplayWindow::record_tick(uint64_t tick, std::span<const sim::Input> applied_inputs,
                               uint64_t authoritative_hash, std::optional<uint64_t> client_hash,
                               std::span<const sim::Command> applied_commands) {
  State& s = *state_;
  if (!s.started || tick != s.last_tick + 1) {
    // A gap (or no keyframe yet): nothing held can be replayed into this tick. Wait for the
    // next keyframe.
    s.started = false;
    s.tick_count = 0;
    s.keyframe_count = 0;
    return false;
  }
  s.last_tick = tick;
  if (s.tick_count < s.tick_capacity) ++s.tick_count;
  State::TickSlot& slot = s.tick_slot(tick);
  slot.tick = tick;
  slot.authoritative_hash = authoritative_hash;
  slot.client_hash = client_hash.value_or(0);
  slot.has_client_hash = client_hash.has_value();
  const size_t count = std::min<size_t>(applied_inputs.size(), s.config.max_inputs_per_tick);
  slot.input_count = static_cast<uint32_t>(count);
  std::copy_n(applied_inputs.data(), count,
              s.inputs.get() + (tick % s.tick_capacity) * s.config.max_inputs_per_tick);
  s.dropped_inputs += applied_inputs.size() - count;
  const size_t command_count =
      std::min<size_t>(applied_commands.size(), s.config.max_commands_per_tick);
  slot.command_count = static_cast<uint32_t>(command_count);
  std::copy_n(applied_commands.data(), command_count,
              s.commands.get() + (tick % s.tick_capacity) * s.config.max_commands_per_tick);
  s.dropped_commands += applied_commands.size() - command_count;
  return count == applied_inputs.size() && command_count == applied_commands.size();
}

bool ReplayWindow::record_keyframe(const sim::World& world) {
  State& s = *state_;
  const uint64_t tick = world.tick();
  if (!s.started || tick != s.last_tick) {
    // A restart (first keyframe, or the world jumped, e.g. a client restored a snapshot).
    s.tick_count = 0;
    s.keyframe_count = 0;
    s.last_tick = tick;
  }
  if (s.keyframe_count > 0 &&
      s.keyframes[(s.keyframe_first + s.keyframe_count - 1) % s.keyframe_capacity].tick == tick)
    return true;  // already have this one
  const bool full = s.keyframe_count == s.keyframe_capacity;
  const uint32_t slot = full ? s.keyframe_first  // overwrite the oldest
                             : (s.keyframe_first + s.keyframe_count) % s.keyframe_capacity;
  size_t written = 0;
  const sim::Error error = world.save_snapshot(
      std::span<uint8_t>(s.snapshot_bytes(slot), s.snapshot_capacity), &written);
  if (full) {
    // The oldest keyframe's bytes are gone either way.
    s.keyframe_first = (s.keyframe_first + 1) % s.keyframe_capacity;
    --s.keyframe_count;
  }
  if (error != sim::Error::none) {
    ++s.skipped_keyframes;
    return false;
  }
  ++s.keyframe_count;
  s.keyframes[slot] = {tick, world.state_hash(), written};
  s.started = true;
  return true;
}

bool ReplayWindow::record_step(const sim::World& world, std::span<const sim::Input> applied_inputs,
                               uint64_t authoritative_hash, std::optional<uint64_t> client_hash,
                               std::span<const sim::Command> applied_commands) {
  bool ok =
      record_tick(world.tick(), applied_inputs, authoritative_hash, client_hash, applied_commands);
  if (keyframe_due(world.tick())) ok = record_keyframe(world) && ok;
  return ok;
}

bool ReplayWindow::keyframe_due(uint64_t tick) const {
  return tick % state_->config.keyframe_interval_ticks == 0;
}

std::optional<uint64_t> ReplayWindow::first_written_tick() const {
  const int64_t k = state_->start_keyframe();
  if (k < 0) return std::nullopt;
  return state_->keyframe(static_cast<uint32_t>(k)).tick;
}

std::optional<uint64_t> ReplayWindow::last_tick() const {
  if (!state_->started) return std::nullopt;
  return state_->last_tick;
}

size_t ReplayWindow::memory_bytes() const {
  const State& s = *state_;
  return sizeof(State) + s.tick_capacity * sizeof(State::TickSlot) +
         size_t{s.tick_capacity} * s.config.max_inputs_per_tick * sizeof(sim::Input) +
         size_t{s.tick_capacity} * s.config.max_commands_per_tick * sizeof(sim::Command) +
         s.keyframe_capacity * (sizeof(State::KeyframeSlot) + s.snapshot_capacity);
}

uint64_t ReplayWindow::dropped_inputs() const {
  return state_->dropped_inputs;
}
uint64_t ReplayWindow::dropped_commands() const {
  return state_->dropped_commands;
}
uint64_t ReplayWindow::skipped_keyframes() const {
  return state_->skipped_keyframes;
}
const ReplayWindowConfig& ReplayWindow::config() const {
  return state_->config;
}

WriteResult ReplayWindow::write_bytes(std::vector<uint8_t>* out, const ReplayHeader& header,
                                      const sim::World* live_world) const {
  out->clear();
  detail::append_file_header(out);
  const State& s = *state_;
  const int64_t start = s.start_keyframe();
  if (start < 0) return {false, "replay window holds no keyframe yet"};
  const State::KeyframeSlot& first = s.keyframe(static_cast<uint32_t>(start));
  const uint32_t first_slot =
      (s.keyframe_first + static_cast<uint32_t>(start)) % s.keyframe_capacity;
  const std::span<const uint8_t> first_snapshot(s.snapshot_bytes(first_slot), first.bytes);
  detail::RecordEncoder encoder(64 * 1024);
  WriteResult mismatch;
  if (!header_level_matches(header, s.level_digest, &mismatch)) return mismatch;
  ReplayHeader h = header;
  h.first_tick = first.tick;
  detail::append_record(out, encoder.header(h));
  const auto inputs_of = [&](uint64_t t) {
    const sim::Input* inputs =
        s.inputs.get() + (t % s.tick_capacity) * s.config.max_inputs_per_tick;
    return std::span<const sim::Input>(inputs, s.tick_slot(t).input_count);
  };
  const auto tick_record = [&](uint64_t t) {
    const State::TickSlot& slot = s.tick_slot(t);
    const sim::Command* commands =
        s.commands.get() + (t % s.tick_capacity) * s.config.max_commands_per_tick;
    // The file's first tick record stands alone; each later one is coded against the one before.
    std::optional<std::span<const sim::Input>> previous;
    if (t > first.tick + 1) previous = inputs_of(t - 1);
    return encoder.tick(
        t, inputs_of(t), slot.authoritative_hash,
        slot.has_client_hash ? std::optional<uint64_t>(slot.client_hash) : std::nullopt,
        std::span<const sim::Command>(commands, slot.command_count), previous);
  };

  std::vector<uint8_t> live;
  if (live_world != nullptr && live_world->tick() == s.last_tick) {
    live.resize(live_world->snapshot_size());
    size_t written = 0;
    if (live_world->save_snapshot(live, &written) == sim::Error::none)
      live.resize(written);
    else
      live.clear();
  }
  // A client's live state is the evidence of its desync: always written. A server's is what
  // re-simulating its own ticks gives, so it is only a shortcut like the ring's later keyframes.
  const bool live_required = !live.empty() && header.writer == ReplayWriterKind::client;

  // What is always written, measured first; later keyframes share what is left of the budget,
  // taken in file order, each a delta against the keyframe written before it.
  size_t optional_bytes_left = SIZE_MAX;
  if (s.config.dump_budget_bytes != 0) {
    size_t required = out->size() + kRecordHeaderBytes +
                      encoder.keyframe(first.tick, first.state_hash, first_snapshot).size();
    for (uint64_t t = first.tick + 1; t <= s.last_tick; ++t)
      required += kRecordHeaderBytes + tick_record(t).size();
    if (live_required) {
      required +=
          kRecordHeaderBytes +
          encoder.keyframe(live_world->tick(), live_world->state_hash(), live, first_snapshot)
              .size();
    }
    optional_bytes_left =
        s.config.dump_budget_bytes > required ? s.config.dump_budget_bytes - required : 0;
  }

  detail::append_record(out, encoder.keyframe(first.tick, first.state_hash, first_snapshot));
  std::span<const uint8_t> base = first_snapshot;
  uint32_t next_keyframe = static_cast<uint32_t>(start) + 1;
  for (uint64_t t = first.tick + 1; t <= s.last_tick; ++t) {
    detail::append_record(out, tick_record(t));
    while (next_keyframe < s.keyframe_count && s.keyframe(next_keyframe).tick == t) {
      const State::KeyframeSlot& k = s.keyframe(next_keyframe);
      const uint32_t slot_index = (s.keyframe_first + next_keyframe) % s.keyframe_capacity;
      const std::span<const uint8_t> snapshot(s.snapshot_bytes(slot_index), k.bytes);
      const std::span<const uint8_t> record =
          encoder.keyframe(k.tick, k.state_hash, snapshot, base);
      if (kRecordHeaderBytes + record.size() <= optional_bytes_left) {
        detail::append_record(out, record);
        optional_bytes_left -= kRecordHeaderBytes + record.size();
        base = snapshot;
      }
      ++next_keyframe;
    }
  }
  if (!live.empty()) {
    const std::span<const uint8_t> record =
        encoder.keyframe(live_world->tick(), live_world->state_hash(), live, base);
    if (live_required || kRecordHeaderBytes + record.size() <= optional_bytes_left)
      detail::append_record(out, record);
  }
  return {true, {}};
}

WriteResult ReplayWindow::write_file(const std::string& path, const ReplayHeader& header,
                                     const sim::World* live_world) const {
  std::vector<uint8_t> bytes;
  WriteResult result = write_bytes(&bytes, header, live_world);
  if (!result.ok) return result;
  // Re-frame through RecordWriter: walk the records just built (they are known good).
  RecordWriter writer;
  if (writer.open(path) != RecordError::none) return {false, writer.error_text()};
  RecordReader reader(bytes);
  std::span<const uint8_t> payload;
  while (reader.next(&payload) == RecordError::none) {
    if (writer.append(payload) != RecordError::none) return {false, writer.error_text()};
  }
  if (writer.finish() != RecordError::none) return {false, writer.error_text()};
  return {true, {}};
}

// ---- the previous tick record's inputs, for the streaming writers ------------------------------

namespace {

// The inputs of the last tick record a stream wrote, which the next one is coded against
// (format 8). Its capacity is taken when the stream opens, so remembering never allocates.
class PreviousInputs {
 public:
  void reset(const sim::World& world) {
    valid_ = false;
    inputs_.clear();
    inputs_.reserve(world.def().max_inputs_per_tick);
  }
  std::optional<std::span<const sim::Input>> reference_for(uint64_t tick) const {
    if (!valid_ || tick != tick_ + 1) return std::nullopt;
    return std::span<const sim::Input>(inputs_);
  }
  void remember(uint64_t tick, std::span<const sim::Input> inputs) {
    valid_ = true;
    tick_ = tick;
    inputs_.assign(inputs.begin(), inputs.end());
  }

 private:
  bool valid_ = false;
  uint64_t tick_ = 0;
  std::vector<sim::Input> inputs_;
};

}  // namespace

// ---- ReplayStreamWriter -------------------------------------------------------------------------

struct ReplayStreamWriter::State {
  RecordWriter writer;
  detail::RecordEncoder encoder{64 * 1024};
  ReplayStreamOptions options;
  PreviousInputs previous_inputs;
  std::vector<uint8_t> snapshot;  // max_snapshot_size, taken at open()
  // The last keyframe written, the base of the next one's delta (format 7); same size.
  std::vector<uint8_t> previous;
  size_t previous_bytes = 0;
  uint64_t ticks_since_flush = 0;
  uint64_t ticks_since_sync = 0;
  std::string empty;
};

ReplayStreamWriter::ReplayStreamWriter() : state_(std::make_unique<State>()) {}
ReplayStreamWriter::~ReplayStreamWriter() = default;

namespace {
WriteResult record_result(const RecordWriter& writer, RecordError error) {
  if (error == RecordError::none) return {true, {}};
  return {false, writer.error_text().empty() ? record_error_message(error) : writer.error_text()};
}
}  // namespace

WriteResult ReplayStreamWriter::open(const std::string& path, const ReplayHeader& header,
                                     const sim::World& world, const ReplayStreamOptions& options) {
  State& s = *state_;
  s.options = options;
  if (s.options.flush_every_ticks == 0) s.options.flush_every_ticks = 1;
  s.snapshot.assign(world.max_snapshot_size(), 0);
  s.previous.assign(world.max_snapshot_size(), 0);
  s.previous_bytes = 0;
  s.previous_inputs.reset(world);
  s.ticks_since_flush = s.ticks_since_sync = 0;
  WriteResult mismatch;
  if (!header_level_matches(header, world.level_stats().digest, &mismatch)) return mismatch;
  RecordError error = s.writer.open(path);
  if (error != RecordError::none) return record_result(s.writer, error);
  ReplayHeader h = header;
  h.first_tick = world.tick();
  error = s.writer.append(s.encoder.header(h));
  if (error != RecordError::none) return record_result(s.writer, error);
  WriteResult result = record_keyframe(world);
  if (!result.ok) return result;
  return record_result(s.writer, s.writer.flush());
}

WriteResult ReplayStreamWriter::record_tick(uint64_t tick,
                                            std::span<const sim::Input> applied_inputs,
                                            uint64_t authoritative_hash,
                                            std::optional<uint64_t> client_hash,
                                            std::span<const sim::Command> applied_commands) {
  State& s = *state_;
  RecordError error =
      s.writer.append(s.encoder.tick(tick, applied_inputs, authoritative_hash, client_hash,
                                     applied_commands, s.previous_inputs.reference_for(tick)));
  if (error != RecordError::none) return record_result(s.writer, error);
  s.previous_inputs.remember(tick, applied_inputs);
  if (++s.ticks_since_flush >= s.options.flush_every_ticks) {
    s.ticks_since_flush = 0;
    error = s.writer.flush();
  }
  if (error == RecordError::none && s.options.sync_every_ticks != 0 &&
      ++s.ticks_since_sync >= s.options.sync_every_ticks) {
    s.ticks_since_sync = 0;
    error = s.writer.sync();
  }
  return record_result(s.writer, error);
}

WriteResult ReplayStreamWriter::record_keyframe(const sim::World& world) {
  State& s = *state_;
  size_t written = 0;
  const sim::Error error = world.save_snapshot(s.snapshot, &written);
  if (error != sim::Error::none)
    return {false, std::string("snapshot failed: ") + sim::error_message(error)};
  // After the first, a keyframe is a delta against the one before it: its base is always
  // earlier in the file, so a file cut short still reads up to its last complete record.
  const RecordError appended = s.writer.append(s.encoder.keyframe(
      world.tick(), world.state_hash(), std::span<const uint8_t>(s.snapshot.data(), written),
      std::span<const uint8_t>(s.previous.data(), s.previous_bytes)));
  if (appended == RecordError::none) {
    s.snapshot.swap(s.previous);
    s.previous_bytes = written;
  }
  return record_result(s.writer, appended);
}

WriteResult ReplayStreamWriter::record_step(const sim::World& world,
                                            std::span<const sim::Input> applied_inputs,
                                            uint64_t authoritative_hash,
                                            std::optional<uint64_t> client_hash,
                                            std::span<const sim::Command> applied_commands) {
  WriteResult result =
      record_tick(world.tick(), applied_inputs, authoritative_hash, client_hash, applied_commands);
  if (result.ok && state_->options.keyframe_interval_ticks != 0 &&
      world.tick() % state_->options.keyframe_interval_ticks == 0)
    result = record_keyframe(world);
  return result;
}

WriteResult ReplayStreamWriter::record_game_message(uint64_t tick, uint32_t player,
                                                    std::span<const uint8_t> data) {
  State& s = *state_;
  return record_result(s.writer, s.writer.append(s.encoder.game_message(tick, player, data)));
}

WriteResult ReplayStreamWriter::finish() {
  return record_result(state_->writer, state_->writer.finish());
}

bool ReplayStreamWriter::is_open() const {
  return state_->writer.is_open();
}
uint64_t ReplayStreamWriter::file_bytes() const {
  return state_->writer.file_bytes();
}
const std::string& ReplayStreamWriter::temp_path() const {
  return state_->writer.temp_path();
}

// ---- ReplayStreamEncoder ------------------------------------------------------------------------

struct ReplayStreamEncoder::State {
  detail::RecordEncoder encoder{64 * 1024};
  uint32_t keyframe_interval_ticks = 0;
  PreviousInputs previous_inputs;
  std::vector<uint8_t> snapshot;  // max_snapshot_size, taken at begin()
  // The last keyframe encoded, the base of the next one's delta, as ReplayStreamWriter keeps it
  // (the two must write the same bytes).
  std::vector<uint8_t> previous;
  size_t previous_bytes = 0;
};

ReplayStreamEncoder::ReplayStreamEncoder() : state_(std::make_unique<State>()) {}
ReplayStreamEncoder::~ReplayStreamEncoder() = default;

namespace {

WriteResult framed(std::vector<uint8_t>* out, std::span<const uint8_t> payload) {
  if (frame_record(out, payload)) return {true, {}};
  return {false, record_error_message(RecordError::record_too_large)};
}

// A keyframe after the first is a delta against the one before it (ReplayStreamWriter's rule).
WriteResult framed_keyframe(detail::RecordEncoder& encoder, std::vector<uint8_t>& snapshot,
                            std::vector<uint8_t>& previous, size_t* previous_bytes,
                            const sim::World& world, std::vector<uint8_t>* out) {
  size_t written = 0;
  const sim::Error error = world.save_snapshot(snapshot, &written);
  if (error != sim::Error::none)
    return {false, std::string("snapshot failed: ") + sim::error_message(error)};
  const WriteResult result =
      framed(out, encoder.keyframe(world.tick(), world.state_hash(),
                                   std::span<const uint8_t>(snapshot.data(), written),
                                   std::span<const uint8_t>(previous.data(), *previous_bytes)));
  if (result.ok) {
    snapshot.swap(previous);
    *previous_bytes = written;
  }
  return result;
}

}  // namespace

WriteResult ReplayStreamEncoder::begin(const ReplayHeader& header, const sim::World& world,
                                       uint32_t keyframe_interval_ticks,
                                       std::vector<uint8_t>* out) {
  State& s = *state_;
  s.keyframe_interval_ticks = keyframe_interval_ticks;
  s.previous_inputs.reset(world);
  s.snapshot.assign(world.max_snapshot_size(), 0);
  s.previous.assign(world.max_snapshot_size(), 0);
  s.previous_bytes = 0;
  WriteResult mismatch;
  if (!header_level_matches(header, world.level_stats().digest, &mismatch)) return mismatch;
  ReplayHeader h = header;
  h.first_tick = world.tick();
  const WriteResult result = framed(out, s.encoder.header(h));
  if (!result.ok) return result;
  return framed_keyframe(s.encoder, s.snapshot, s.previous, &s.previous_bytes, world, out);
}

WriteResult ReplayStreamEncoder::record_step(const sim::World& world,
                                             std::span<const sim::Input> applied_inputs,
                                             uint64_t authoritative_hash,
                                             std::optional<uint64_t> client_hash,
                                             std::span<const sim::Command> applied_commands,
                                             std::vector<uint8_t>* out) {
  State& s = *state_;
  const WriteResult result =
      framed(out, s.encoder.tick(world.tick(), applied_inputs, authoritative_hash, client_hash,
                                 applied_commands, s.previous_inputs.reference_for(world.tick())));
  if (result.ok) s.previous_inputs.remember(world.tick(), applied_inputs);
  if (!result.ok || s.keyframe_interval_ticks == 0 || world.tick() % s.keyframe_interval_ticks != 0)
    return result;
  return framed_keyframe(s.encoder, s.snapshot, s.previous, &s.previous_bytes, world, out);
}

WriteResult ReplayStreamEncoder::record_game_message(uint64_t tick, uint32_t player,
                                                     std::span<const uint8_t> data,
                                                     std::vector<uint8_t>* out) {
  return framed(out, state_->encoder.game_message(tick, player, data));
}

}  // namespace lockstep::replays

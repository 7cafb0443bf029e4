#include "lockstep/sim/sync_test.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "lockstep/sim/world.h"

namespace lockstep::sim {
namespace {

// What one tick was given: the state after it (snapshot and hash) and its inputs and commands.
struct TickRecord {
  std::vector<uint8_t> snapshot;  // after the tick
  size_t snapshot_bytes = 0;
  uint64_t hash = 0;
  std::vector<Input> inputs;  // queued for the tick, in call order
  uint32_t input_count = 0;
  std::vector<Command> commands;
  uint32_t command_count = 0;
};

}  // namespace

struct SyncTester::Data {
  uint32_t rollback_ticks = 0;
  uint64_t start_tick = 0;
  std::vector<TickRecord> ring;  // tick t at t % ring.size()
  std::unique_ptr<World> copy;   // the re-simulation
  std::unique_ptr<World> recorded;
  std::vector<uint8_t> scratch;       // the copy's snapshot
  std::vector<Error> command_errors;  // what the world said to each command of the tick
  std::vector<Error> input_errors;
  bool failed = false;
  SyncTestFailure failure;
  uint64_t compared = 0;

  TickRecord& at(uint64_t tick) { return ring[static_cast<size_t>(tick % ring.size())]; }

  bool save(const World& world, TickRecord* r) {
    r->hash = world.state_hash();
    return world.save_snapshot(r->snapshot, &r->snapshot_bytes) == Error::none;
  }

  void fail(uint64_t tick, uint64_t hash, uint64_t resimulated, bool misses_state) {
    failed = true;
    failure = {tick, hash, resimulated, misses_state};
    const TickRecord& r = at(tick);
    recorded->restore_snapshot({r.snapshot.data(), r.snapshot_bytes});
  }

  // Re-simulates (present − rollback_ticks, present] on the copy.
  void check(uint64_t present) {
    const uint64_t from =
        present - start_tick > rollback_ticks ? present - rollback_ticks : start_tick;
    const TickRecord& base = at(from);
    if (copy->restore_snapshot({base.snapshot.data(), base.snapshot_bytes}) != Error::none) {
      fail(from, base.hash, 0, false);
      return;
    }
    for (uint64_t t = from + 1; t <= present; ++t) {
      const TickRecord& r = at(t);
      copy->step(TickInput{{r.commands.data(), r.command_count}, {r.inputs.data(), r.input_count}});
      ++compared;
      if (copy->state_hash() != r.hash) {
        fail(t, r.hash, copy->state_hash(), false);
        return;
      }
    }
    const TickRecord& now = at(present);
    size_t bytes = 0;
    if (copy->save_snapshot(scratch, &bytes) != Error::none || bytes != now.snapshot_bytes ||
        std::memcmp(scratch.data(), now.snapshot.data(), bytes) != 0) {
      fail(present, now.hash, copy->state_hash(), true);
    }
  }
};

SyncTester::SyncTester(std::unique_ptr<Data> data) : data_(std::move(data)) {}
SyncTester::~SyncTester() = default;

std::unique_ptr<SyncTester> SyncTester::create(const World& world, uint32_t rollback_ticks,
                                               Error* error) {
  const auto refuse = [&](Error e) {
    if (error != nullptr) *error = e;
    return std::unique_ptr<SyncTester>();
  };
  if (rollback_ticks < 1 || rollback_ticks > kMaxRollbackTicks)
    return refuse(Error::invalid_argument);
  auto d = std::make_unique<Data>();
  d->rollback_ticks = rollback_ticks;
  d->start_tick = world.tick();
  const WorldDef& def = world.def();
  const size_t max_bytes = world.max_snapshot_size();
  d->ring.resize(rollback_ticks + 1);
  for (TickRecord& r : d->ring) {
    r.snapshot.resize(max_bytes);
    r.inputs.resize(def.max_inputs_per_tick);
    r.commands.resize(def.max_commands_per_tick);
  }
  d->scratch.resize(max_bytes);
  d->command_errors.resize(def.max_commands_per_tick);
  d->input_errors.resize(def.max_inputs_per_tick);
  Error e = Error::none;
  d->copy = World::create_like(world, &e);  // the level too: the snapshots name it
  if (d->copy == nullptr) return refuse(e);
  d->recorded = World::create_like(world, &e);
  if (d->recorded == nullptr) return refuse(e);
  if (!d->save(world, &d->at(d->start_tick))) return refuse(Error::buffer_too_small);
  if (error != nullptr) *error = Error::none;
  return std::unique_ptr<SyncTester>(new SyncTester(std::move(d)));
}

StepStatus SyncTester::step(World& world, const TickInput& tick, const TickErrors& errors) {
  Data& d = *data_;
  if (d.command_errors.size() < tick.commands.size()) d.command_errors.resize(tick.commands.size());
  if (d.input_errors.size() < tick.inputs.size()) d.input_errors.resize(tick.inputs.size());
  const std::span<Error> command_errors(d.command_errors.data(), tick.commands.size());
  const std::span<Error> input_errors(d.input_errors.data(), tick.inputs.size());
  TickRecord& r = d.at(world.tick() + 1);
  const StepStatus status = world.step(tick, TickErrors{command_errors, input_errors});
  // What the world accepted is what the re-simulations apply (a refused one would be refused
  // there again, but the record holds only the world's per-tick capacity).
  for (size_t i = 0; i < tick.commands.size(); ++i) {
    if (command_errors[i] == Error::none && r.command_count < r.commands.size())
      r.commands[r.command_count++] = tick.commands[i];
  }
  for (size_t i = 0; i < tick.inputs.size(); ++i) {
    if (input_errors[i] == Error::none && r.input_count < r.inputs.size())
      r.inputs[r.input_count++] = tick.inputs[i];
  }
  std::copy_n(command_errors.begin(), std::min(command_errors.size(), errors.commands.size()),
              errors.commands.begin());
  std::copy_n(input_errors.begin(), std::min(input_errors.size(), errors.inputs.size()),
              errors.inputs.begin());
  const uint64_t present = world.tick();
  if (!d.save(world, &d.at(present))) {
    if (!d.failed) d.fail(present, world.state_hash(), 0, false);
  } else if (!d.failed) {
    d.check(present);
  }
  // The next tick's record starts empty (its slot last held the tick rollback_ticks + 1 back).
  TickRecord& next = d.at(present + 1);
  next.input_count = 0;
  next.command_count = 0;
  return status;
}

bool SyncTester::failed() const {
  return data_->failed;
}
const SyncTestFailure& SyncTester::failure() const {
  return data_->failure;
}
const World& SyncTester::recorded_at_failure() const {
  return *data_->recorded;
}
const World& SyncTester::resimulated_at_failure() const {
  return *data_->copy;
}
uint64_t SyncTester::ticks_compared() const {
  return data_->compared;
}

}  // namespace lockstep::sim

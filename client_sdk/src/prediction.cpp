// Prediction and rollback (prediction.h). The ring holds, per tick ahead of the confirmed one, the
// local inputs given for it and what the predicted world actually applied and hashed there, so a
// confirmation is checked against exactly what was simulated.
#include "lockstep/client_sdk/prediction.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "lockstep/sim/testing.h"

namespace lockstep::client_sdk {

namespace {

constexpr uint64_t kNoTick = std::numeric_limits<uint64_t>::max();

bool same_input(const sim::Input& a, const sim::Input& b) {
  return !sim::input_less(a, b) && !sim::input_less(b, a);
}

}  // namespace

Pose interpolate_pose(const Pose& from, const Pose& to, float alpha) {
  const float t = alpha < 0.0f ? 0.0f : (alpha > 1.0f ? 1.0f : alpha);
  const float s = 1.0f - t;
  Pose out;
  out.position = {from.position.x * s + to.position.x * t, from.position.y * s + to.position.y * t,
                  from.position.z * s + to.position.z * t};
  // q and -q are the same rotation: blend towards whichever is nearer, then renormalize.
  const sim::Quat& a = from.orientation;
  sim::Quat b = to.orientation;
  if (a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w < 0.0f) b = {-b.x, -b.y, -b.z, -b.w};
  sim::Quat q{a.x * s + b.x * t, a.y * s + b.y * t, a.z * s + b.z * t, a.w * s + b.w * t};
  const float length = std::sqrt(q.x * q.x + q.y * q.y + q.z * q.z + q.w * q.w);
  if (length > 0.0f) {
    q = {q.x / length, q.y / length, q.z / length, q.w / length};
  } else {
    q = to.orientation;
  }
  out.orientation = q;
  return out;
}

bool interpolate_body(const sim::World& from, const sim::World& to, sim::BodyId body, float alpha,
                      Pose* out) {
  sim::BodyView a;
  sim::BodyView b;
  if (from.get_body(body, &a) != sim::Error::none || to.get_body(body, &b) != sim::Error::none) {
    return false;
  }
  *out = interpolate_pose({a.position, a.orientation}, {b.position, b.orientation}, alpha);
  return true;
}

// ---- Prediction ------------------------------------------------------------------------------

struct Prediction::Data {
  struct TickRecord {
    uint64_t tick = kNoTick;          // the tick this record is about (the ring reuses records)
    std::vector<sim::Input> local;    // the local player's inputs for it
    std::vector<sim::Input> applied;  // what the predicted world applied (input_less order)
    uint64_t hash = 0;                // the predicted world's hash after it
    bool stepped = false;
    bool hash_valid = false;  // false once the predicted world was edited outside the tick
  };

  PredictionConfig config;
  uint32_t local_player = 0;
  std::unique_ptr<sim::World> world;
  std::vector<uint8_t> snapshot;  // max_snapshot_size bytes, the copy from confirmed to predicted
  std::vector<TickRecord> ring;   // kInputRingTicks records
  std::vector<sim::Input> last_remote;  // other players' inputs of the last confirmed tick
  uint64_t last_remote_tick = 0;
  std::vector<sim::Input> frame_sorted;  // scratch: a confirmed tick's inputs in input_less order
  uint64_t confirmed_tick = 0;
  bool pending = false;       // reconcile() must restore
  bool mispredicted = false;  // … because a confirmation disagreed (a rollback, not a catch-up)
  Counters counters;

  TickRecord& record(uint64_t tick) { return ring[tick % ring.size()]; }
  void copy_from(const sim::World& confirmed);
  void step(uint64_t tick);
};

void Prediction::Data::copy_from(const sim::World& confirmed) {
  size_t written = 0;
  // Both worlds come from one WorldDef, so the buffer sized at creation holds any state; a
  // failure here would be a bug in the sim's own size bound.
  if (confirmed.save_snapshot(snapshot, &written) == sim::Error::none) {
    world->restore_snapshot(std::span<const uint8_t>(snapshot.data(), written));
  }
}

void Prediction::Data::step(uint64_t tick) {
  TickRecord& r = record(tick);
  if (r.tick != tick) {
    r.tick = tick;
    r.local.clear();
  }
  r.applied.assign(r.local.begin(), r.local.end());
  const size_t capacity = r.applied.capacity();
  for (const sim::Input& last : last_remote) {
    sim::Input guess = last;
    if (config.predictor && !config.predictor(last, last_remote_tick, tick, &guess)) continue;
    if (r.applied.size() == capacity) {
      ++counters.inputs_dropped;
      continue;
    }
    r.applied.push_back(guess);
  }
  std::sort(r.applied.begin(), r.applied.end(), sim::input_less);
  // A guess the world refuses (a body gone since) is simply not applied; the server's inputs are
  // checked on the confirmed world, not here.
  world->step(sim::TickInput{{}, r.applied});
  r.hash = world->state_hash();
  r.stepped = true;
  r.hash_valid = true;
}

Prediction::Prediction(std::unique_ptr<Data> data) : data_(std::move(data)) {}
Prediction::~Prediction() = default;

std::unique_ptr<Prediction> Prediction::create(const sim::World& confirmed, uint32_t local_player,
                                               PredictionConfig config, sim::Error* error) {
  auto set = [error](sim::Error e) {
    if (error != nullptr) *error = e;
  };
  if (config.max_prediction_ticks == 0 || config.max_prediction_ticks > kMaxPredictionTicks ||
      config.max_inputs_per_tick == 0) {
    set(sim::Error::invalid_argument);
    return nullptr;
  }
  auto data = std::make_unique<Data>();
  sim::Error world_error = sim::Error::none;
  // The confirmed world's level too: its snapshots name it, and predicted bodies rest on it.
  data->world = sim::World::create_like(confirmed, &world_error);
  if (!data->world) {
    set(world_error);
    return nullptr;
  }
  data->config = std::move(config);
  data->local_player = local_player;
  data->snapshot.resize(confirmed.max_snapshot_size());
  data->ring.resize(kInputRingTicks);
  for (Data::TickRecord& r : data->ring) {
    r.local.reserve(data->config.max_inputs_per_tick);
    r.applied.reserve(data->config.max_inputs_per_tick);
  }
  data->last_remote.reserve(data->config.max_inputs_per_tick);
  data->frame_sorted.reserve(data->config.max_inputs_per_tick);
  std::unique_ptr<Prediction> prediction(new Prediction(std::move(data)));
  prediction->reset(confirmed);
  set(sim::Error::none);
  return prediction;
}

sim::Error Prediction::add_local_inputs(uint64_t tick, std::span<const sim::Input> inputs) {
  Data& d = *data_;
  if (tick <= d.confirmed_tick || tick > d.confirmed_tick + kInputRingTicks) {
    return sim::Error::invalid_argument;
  }
  Data::TickRecord& r = d.record(tick);
  if (r.tick != tick) {
    r.tick = tick;
    r.local.clear();
    r.stepped = false;
  }
  if (r.local.size() + inputs.size() > r.local.capacity()) return sim::Error::capacity_inputs;
  for (sim::Input input : inputs) {
    input.player = d.local_player;
    r.local.push_back(input);
  }
  // Already simulated without them: the record no longer matches what the world did, so the
  // confirmation of this tick rolls back and replays it with them.
  if (r.stepped && tick <= d.world->tick()) r.hash_valid = false;
  return sim::Error::none;
}

sim::Error Prediction::on_confirmed(const sim::World& confirmed, std::span<const sim::Input> inputs,
                                    std::span<const sim::Command> commands) {
  Data& d = *data_;
  const uint64_t tick = confirmed.tick();
  if (tick <= d.confirmed_tick) return sim::Error::invalid_argument;
  if (tick != d.confirmed_tick + 1) {
    reset(confirmed);
    return sim::Error::none;
  }
  d.confirmed_tick = tick;
  d.last_remote.clear();
  for (const sim::Input& input : inputs) {
    if (input.player == d.local_player) continue;
    if (d.last_remote.size() == d.last_remote.capacity()) break;
    d.last_remote.push_back(input);
  }
  d.last_remote_tick = tick;
  if (d.pending) return sim::Error::none;  // already going back to at least here

  if (d.world->tick() < tick) {
    d.pending = true;  // the prediction fell behind: catch up, nothing was mispredicted
    return sim::Error::none;
  }
  const Data::TickRecord& r = d.record(tick);
  bool same = r.tick == tick && r.stepped && r.hash_valid && commands.empty() &&
              r.hash == confirmed.state_hash() && inputs.size() == r.applied.size() &&
              inputs.size() <= d.frame_sorted.capacity();
  if (same) {
    d.frame_sorted.assign(inputs.begin(), inputs.end());
    std::sort(d.frame_sorted.begin(), d.frame_sorted.end(), sim::input_less);
    for (size_t i = 0; same && i < inputs.size(); ++i)
      same = same_input(d.frame_sorted[i], r.applied[i]);
  }
  if (!same) {
    d.pending = true;
    d.mispredicted = true;
  }
  return sim::Error::none;
}

void Prediction::reset(const sim::World& confirmed) {
  Data& d = *data_;
  d.confirmed_tick = confirmed.tick();
  d.copy_from(confirmed);
  for (Data::TickRecord& r : d.ring)
    r.stepped = false;
  d.last_remote.clear();
  d.pending = false;
  d.mispredicted = false;
}

bool Prediction::rollback_pending() const {
  return data_->pending;
}

bool Prediction::reconcile(const sim::World& confirmed, RollbackReport* report) {
  Data& d = *data_;
  if (!d.pending) return false;
  const auto start = std::chrono::steady_clock::now();
  const uint64_t reached = d.world->tick();
  const uint64_t from = confirmed.tick();
  const uint64_t to = std::min<uint64_t>(reached, from + d.config.max_prediction_ticks);
  d.copy_from(confirmed);
  uint32_t resimulated = 0;
  for (uint64_t tick = from + 1; tick <= to; ++tick) {
    d.step(tick);
    ++resimulated;
  }
  const bool rolled_back = d.mispredicted;
  d.pending = false;
  d.mispredicted = false;
  if (!rolled_back) return false;
  ++d.counters.rollbacks;
  d.counters.ticks_resimulated += resimulated;
  d.counters.max_ticks_resimulated = std::max(d.counters.max_ticks_resimulated, resimulated);
  if (report != nullptr) {
    report->from_tick = from;
    report->ticks_resimulated = resimulated;
    report->cost = std::chrono::steady_clock::now() - start;
  }
  return true;
}

uint32_t Prediction::advance(uint64_t target_tick,
                             const std::function<void(uint64_t tick)>& on_tick) {
  Data& d = *data_;
  const uint64_t limit = d.confirmed_tick + d.config.max_prediction_ticks;
  if (target_tick > limit) {
    ++d.counters.waits;
    target_tick = limit;
  }
  uint32_t steps = 0;
  while (d.world->tick() < target_tick) {
    const uint64_t tick = d.world->tick() + 1;
    d.step(tick);
    ++steps;
    ++d.counters.ticks_predicted;
    if (on_tick) on_tick(tick);
  }
  return steps;
}

const sim::World& Prediction::world() const {
  return *data_->world;
}
uint64_t Prediction::confirmed_tick() const {
  return data_->confirmed_tick;
}
uint32_t Prediction::max_prediction_ticks() const {
  return data_->config.max_prediction_ticks;
}
const Prediction::Counters& Prediction::counters() const {
  return data_->counters;
}

sim::Error Prediction::debug_perturb(sim::BodyId body, sim::Vec3 delta) {
  Data& d = *data_;
  const sim::Error error = debug_perturb_position(*d.world, body, delta);
  if (error == sim::Error::none) {
    for (Data::TickRecord& r : d.ring)
      r.hash_valid = false;
  }
  return error;
}

}  // namespace lockstep::client_sdk

// Prediction and rollback without sockets: a "server" world makes the true inputs, a confirmed
// world steps them some ticks late (as TickFrames would arrive), and the Prediction runs ahead
// with the local player's inputs and guesses for the others. Checked: once every tick is
// confirmed the predicted world is bit for bit the world of a client that never predicted; the
// bound holds; nothing allocates per tick; a perturbed prediction and hostile calls are handled.
#include "lockstep/client_sdk/prediction.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "alloc_counter.h"
#include "lockstep/sim/scene.h"
#include "lockstep/sim/testing.h"
#include "lockstep/sim/world.h"

namespace {

using lockstep::client_sdk::interpolate_pose;
using lockstep::client_sdk::Pose;
using lockstep::client_sdk::Prediction;
using lockstep::client_sdk::PredictionConfig;
using lockstep::client_sdk::RollbackReport;
using lockstep::sim::Error;
using lockstep::sim::Input;
using lockstep::sim::World;

constexpr uint32_t kLocalPlayer = 1;

std::unique_ptr<World> inputs_world() {
  lockstep::sim::Scene scene;
  EXPECT_TRUE(lockstep::sim::make_builtin_scene("inputs", &scene));
  std::unique_ptr<World> world = lockstep::sim::build_world(scene);
  EXPECT_NE(world, nullptr);
  return world;
}

// The scripted inputs of ticks 1 … ticks, made by stepping a world of their own (the "server").
std::vector<std::vector<Input>> true_inputs(uint64_t ticks) {
  std::unique_ptr<World> server = inputs_world();
  const lockstep::sim::InputScript script = lockstep::sim::make_input_script(*server);
  std::vector<Input> buffer(server->def().max_inputs_per_tick);
  std::vector<std::vector<Input>> by_tick(ticks + 1);
  for (uint64_t t = 1; t <= ticks; ++t) {
    const uint32_t n = lockstep::sim::scripted_inputs(7, server->tick(), script, *server, buffer);
    by_tick[t].assign(buffer.begin(), buffer.begin() + n);
    for (const Input& input : by_tick[t])
      server->queue_input(input);
    server->step();
  }
  return by_tick;
}

std::vector<Input> of_player(const std::vector<Input>& inputs, uint32_t player) {
  std::vector<Input> out;
  for (const Input& input : inputs)
    if (input.player == player) out.push_back(input);
  return out;
}

std::vector<uint8_t> snapshot_of(const World& world) {
  std::vector<uint8_t> bytes(world.max_snapshot_size());
  size_t written = 0;
  EXPECT_EQ(world.save_snapshot(bytes, &written), Error::none);
  bytes.resize(written);
  return bytes;
}

void confirm(World& confirmed, Prediction& prediction, const std::vector<Input>& inputs) {
  for (const Input& input : inputs)
    confirmed.queue_input(input);
  confirmed.step();
  ASSERT_EQ(prediction.on_confirmed(confirmed, inputs, {}), Error::none);
}

TEST(ClientPrediction, RollbackEndsInTheStateOfAClientThatNeverPredicted) {
  constexpr uint64_t kTicks = 240;
  constexpr uint64_t kLagTicks = 5;  // confirmations arrive this many ticks behind the prediction
  const std::vector<std::vector<Input>> inputs = true_inputs(kTicks);
  std::vector<std::vector<Input>> local(kTicks + 1);
  for (uint64_t t = 1; t <= kTicks; ++t)
    local[t] = of_player(inputs[t], kLocalPlayer);

  std::unique_ptr<World> confirmed = inputs_world();
  std::unique_ptr<World> never_predicted = inputs_world();
  std::unique_ptr<Prediction> prediction = Prediction::create(*confirmed, kLocalPlayer, {});
  ASSERT_NE(prediction, nullptr);

  uint64_t allocations = 0;
  for (uint64_t now = 1; now <= kTicks; ++now) {
    lockstep::testing::AllocationCounter counter;
    ASSERT_EQ(prediction->add_local_inputs(now, local[now]), Error::none);
    if (now > kLagTicks) confirm(*confirmed, *prediction, inputs[now - kLagTicks]);
    RollbackReport report;
    if (prediction->reconcile(*confirmed, &report)) {
      EXPECT_EQ(report.from_tick, confirmed->tick());
      EXPECT_LE(report.ticks_resimulated, prediction->max_prediction_ticks());
    }
    prediction->advance(now, nullptr);
    if (now > 20) allocations += counter.count();  // the first ticks may warm the sim up
    EXPECT_LE(prediction->world().tick(), confirmed->tick() + prediction->max_prediction_ticks());
    EXPECT_EQ(prediction->world().tick(), now);
  }
  EXPECT_EQ(allocations, 0u) << "predicting, confirming and rolling back must not allocate";
  // Confirm the rest: nothing is left to guess, so the prediction must be the truth.
  for (uint64_t t = confirmed->tick() + 1; t <= kTicks; ++t)
    confirm(*confirmed, *prediction, inputs[t]);
  prediction->reconcile(*confirmed, nullptr);
  for (uint64_t t = 1; t <= kTicks; ++t) {
    for (const Input& input : inputs[t])
      never_predicted->queue_input(input);
    never_predicted->step();
  }
  ASSERT_EQ(prediction->world().tick(), kTicks);
  EXPECT_EQ(confirmed->state_hash(), never_predicted->state_hash());
  EXPECT_EQ(prediction->world().state_hash(), never_predicted->state_hash());
  EXPECT_EQ(snapshot_of(prediction->world()), snapshot_of(*never_predicted));

  const Prediction::Counters& c = prediction->counters();
  EXPECT_GT(c.rollbacks, 0u) << "the script's other players change their pushes: guesses miss";
  EXPECT_LE(c.max_ticks_resimulated, prediction->max_prediction_ticks());
  EXPECT_GT(c.max_ticks_resimulated, 0u);
}

TEST(ClientPrediction, CorrectGuessesNeverRollBack) {
  // Everyone repeats one input: repeating the last one is always right.
  std::unique_ptr<World> confirmed = inputs_world();
  const lockstep::sim::InputScript script = lockstep::sim::make_input_script(*confirmed);
  ASSERT_GE(script.bodies.size(), 2u);
  std::vector<Input> constant;
  for (size_t i = 0; i < script.bodies.size(); ++i) {
    Input input;
    input.player = script.owner_players[i];
    input.body = script.bodies[i];
    input.linear_impulse[0] = 1 << 10;
    constant.push_back(input);
  }
  const std::vector<Input> local = of_player(constant, kLocalPlayer);
  std::unique_ptr<Prediction> prediction = Prediction::create(*confirmed, kLocalPlayer, {});
  ASSERT_NE(prediction, nullptr);
  // Tick 1 is guessed with nothing known of the others: one rollback at most, then none.
  for (uint64_t now = 1; now <= 60; ++now) {
    ASSERT_EQ(prediction->add_local_inputs(now, local), Error::none);
    if (now > 3) confirm(*confirmed, *prediction, constant);
    prediction->reconcile(*confirmed, nullptr);
    prediction->advance(now, nullptr);
  }
  EXPECT_LE(prediction->counters().rollbacks, 1u);
}

TEST(ClientPrediction, WaitsAtTheBound) {
  std::unique_ptr<World> confirmed = inputs_world();
  PredictionConfig config;
  config.max_prediction_ticks = 8;
  std::unique_ptr<Prediction> prediction = Prediction::create(*confirmed, kLocalPlayer, config);
  ASSERT_NE(prediction, nullptr);
  EXPECT_EQ(prediction->advance(100, nullptr), 8u);
  EXPECT_EQ(prediction->world().tick(), 8u);
  EXPECT_EQ(prediction->advance(100, nullptr), 0u);  // still no confirmation: it waits
  EXPECT_EQ(prediction->counters().waits, 2u);
  confirm(*confirmed, *prediction, {});
  prediction->reconcile(*confirmed, nullptr);
  EXPECT_EQ(prediction->advance(100, nullptr), 1u);
  EXPECT_EQ(prediction->world().tick(), 9u);

  config.max_prediction_ticks = 0;
  Error error = Error::none;
  EXPECT_EQ(Prediction::create(*confirmed, kLocalPlayer, config, &error), nullptr);
  EXPECT_EQ(error, Error::invalid_argument);
  config.max_prediction_ticks = Prediction::kMaxPredictionTicks + 1;
  EXPECT_EQ(Prediction::create(*confirmed, kLocalPlayer, config, &error), nullptr);
}

TEST(ClientPrediction, PerturbedPredictionIsCorrectedAtTheNextConfirmation) {
  std::unique_ptr<World> confirmed = inputs_world();
  std::unique_ptr<Prediction> prediction = Prediction::create(*confirmed, kLocalPlayer, {});
  ASSERT_NE(prediction, nullptr);
  prediction->advance(4, nullptr);
  const lockstep::sim::InputScript script = lockstep::sim::make_input_script(*confirmed);
  ASSERT_EQ(prediction->debug_perturb(script.bodies[0], {0.5f, 0, 0}), Error::none);
  confirm(*confirmed, *prediction, {});
  RollbackReport report;
  ASSERT_TRUE(prediction->reconcile(*confirmed, &report));
  EXPECT_EQ(report.from_tick, 1u);
  EXPECT_EQ(report.ticks_resimulated, 3u);
  // The same as stepping the confirmed world on with no inputs.
  std::unique_ptr<World> reference = inputs_world();
  for (int i = 0; i < 4; ++i)
    reference->step();
  EXPECT_EQ(prediction->world().state_hash(), reference->state_hash());
}

TEST(ClientPrediction, CommandsAreNeverGuessedSoTheyRollBack) {
  std::unique_ptr<World> confirmed = inputs_world();
  std::unique_ptr<Prediction> prediction = Prediction::create(*confirmed, kLocalPlayer, {});
  ASSERT_NE(prediction, nullptr);
  prediction->advance(3, nullptr);
  lockstep::sim::Command score;
  score.type = lockstep::sim::CommandType::add_score;
  score.owner_player = 2;
  score.score_delta = 1;
  ASSERT_EQ(confirmed->queue_command(score), Error::none);
  confirmed->step();
  ASSERT_EQ(prediction->on_confirmed(*confirmed, {}, std::span(&score, 1)), Error::none);
  RollbackReport report;
  ASSERT_TRUE(prediction->reconcile(*confirmed, &report));
  EXPECT_EQ(report.ticks_resimulated, 2u);
  EXPECT_EQ(prediction->world().score(2), 1);
}

TEST(ClientPrediction, HostileCallsAreRefusedOrRestart) {
  std::unique_ptr<World> confirmed = inputs_world();
  std::unique_ptr<Prediction> prediction = Prediction::create(*confirmed, kLocalPlayer, {});
  ASSERT_NE(prediction, nullptr);
  confirm(*confirmed, *prediction, {});
  // A confirmation of a tick already confirmed (a frame from the past) changes nothing.
  EXPECT_EQ(prediction->on_confirmed(*confirmed, {}, {}), Error::invalid_argument);
  // Inputs for a confirmed tick, or far beyond the ring.
  const std::vector<Input> none(1);
  EXPECT_EQ(prediction->add_local_inputs(1, none), Error::invalid_argument);
  EXPECT_EQ(prediction->add_local_inputs(2 + Prediction::kInputRingTicks, none),
            Error::invalid_argument);
  // Too many inputs for one tick.
  const std::vector<Input> flood(PredictionConfig{}.max_inputs_per_tick + 1);
  EXPECT_EQ(prediction->add_local_inputs(2, flood), Error::capacity_inputs);
  // A confirmed world far ahead (a snapshot restored in between): the prediction restarts there.
  for (int i = 0; i < 500; ++i)
    confirmed->step();
  EXPECT_EQ(prediction->on_confirmed(*confirmed, {}, {}), Error::none);
  EXPECT_EQ(prediction->confirmed_tick(), confirmed->tick());
  EXPECT_EQ(prediction->world().state_hash(), confirmed->state_hash());
  EXPECT_EQ(prediction->advance(confirmed->tick() + 2, nullptr), 2u);
}

TEST(ClientPrediction, InterpolatesPoses) {
  Pose a{{0, 0, 0}, {0, 0, 0, 1}};
  const float h = std::sqrt(0.5f);
  Pose b{{2, 4, -6}, {0, h, 0, h}};  // 90° about y
  Pose mid = interpolate_pose(a, b, 0.5f);
  EXPECT_FLOAT_EQ(mid.position.x, 1);
  EXPECT_FLOAT_EQ(mid.position.y, 2);
  EXPECT_FLOAT_EQ(mid.position.z, -3);
  // Halfway is 45° about y.
  EXPECT_NEAR(mid.orientation.y, std::sin(0.3926991f), 1e-5f);
  EXPECT_NEAR(mid.orientation.w, std::cos(0.3926991f), 1e-5f);
  EXPECT_FLOAT_EQ(interpolate_pose(a, b, 0).position.x, 0);
  EXPECT_FLOAT_EQ(interpolate_pose(a, b, 1).orientation.y, h);
  EXPECT_FLOAT_EQ(interpolate_pose(a, b, 7).position.y, 4);  // alpha clamped
  // -q is the same rotation: the blend takes the short way instead of passing through zero.
  Pose flipped{{0, 0, 0}, {0, 0, 0, -1}};
  Pose same = interpolate_pose(a, flipped, 0.5f);
  EXPECT_NEAR(std::fabs(same.orientation.w), 1.0f, 1e-6f);
  lockstep::testing::AllocationCounter counter;
  volatile float sink = interpolate_pose(a, b, 0.25f).position.x;
  (void)sink;
  EXPECT_EQ(counter.count(), 0u);
}

}  // namespace

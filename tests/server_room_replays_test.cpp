// A room's replays without a room or sockets: the window is fed step by step, desync reports
// write it (one file per tick reported, at most one per dump interval, time passed in), reports
// outside the window write nothing, and a shutdown dump is written on demand.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "file_writer.h"
#include "lockstep/sim/scene.h"
#include "lockstep/sim/world.h"
#include "room_replays.h"

namespace {

using namespace std::chrono_literals;
using lockstep::schema::DesyncReport;
using lockstep::server::FileWriter;
using lockstep::server::RoomReplays;
using lockstep::server::ServerConfig;
namespace sim = lockstep::sim;

class RoomReplaysTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("room_replays_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::remove_all(dir_);
    config_.replay_dir = dir_.string();
    config_.tick_rate_hz = 60;
    config_.replay_window_seconds = 1;
    config_.keyframe_interval_ticks = 30;
    config_.replay_dump_interval = 10'000ms;
    sim::Scene scene;
    ASSERT_TRUE(sim::make_builtin_scene("inputs", &scene));
    world_ = sim::build_world(scene);
    ASSERT_NE(world_, nullptr);
    writer_.start();
    replays_ =
        std::make_unique<RoomReplays>(config_, writer_, "alpha", *world_, sim::Scene{}, "inputs");
  }

  void step(int ticks) {
    for (int i = 0; i < ticks; ++i) {
      world_->step();
      replays_->record_step(*world_, {}, world_->state_hash(), {});
    }
  }

  // Replay files written, once every queued job has run.
  size_t files_written() {
    writer_.stop();
    size_t count = 0;
    if (!std::filesystem::exists(dir_)) return 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir_))
      count += entry.path().extension() == ".lsrp" ? 1 : 0;
    return count;
  }

  DesyncReport report(uint64_t tick) const { return DesyncReport{tick, 1, 2}; }

  std::filesystem::path dir_;
  ServerConfig config_;
  std::unique_ptr<sim::World> world_;
  FileWriter writer_{16};
  std::unique_ptr<RoomReplays> replays_;
  const RoomReplays::Clock::time_point t0_ = RoomReplays::Clock::time_point(1000s);
};

TEST_F(RoomReplaysTest, ADesyncReportWritesTheWindowOncePerIntervalAndTick) {
  step(90);
  replays_->on_desync_report(*world_, report(80), "player 1 'a'", t0_);
  // Another player reporting the same tick: the same file serves.
  replays_->on_desync_report(*world_, report(80), "player 2 'b'", t0_ + 1s);
  // Another tick within the interval: rate-limited.
  replays_->on_desync_report(*world_, report(85), "player 1 'a'", t0_ + 2s);
  // Past the interval: written.
  step(5);
  replays_->on_desync_report(*world_, report(90), "player 1 'a'", t0_ + 11s);
  EXPECT_EQ(files_written(), 2u);
}

TEST_F(RoomReplaysTest, ReportsOutsideTheWindowWriteNothing) {
  step(200);  // the window holds the last 60 ticks and the keyframe before them
  replays_->on_desync_report(*world_, report(3), "player 1 'a'", t0_);    // too old
  replays_->on_desync_report(*world_, report(500), "player 1 'a'", t0_);  // not stepped yet
  EXPECT_EQ(files_written(), 0u);
}

TEST_F(RoomReplaysTest, AShutdownDumpIsWrittenOnDemand) {
  step(10);
  const std::string path = replays_->write_window("shutdown", *world_);
  EXPECT_NE(path.find("shutdown-alpha-tick10"), std::string::npos) << path;
  replays_->finish();
  EXPECT_EQ(files_written(), 1u);
  EXPECT_TRUE(std::filesystem::exists(path)) << path;
}

TEST_F(RoomReplaysTest, WithoutAReplayDirectoryNothingIsKeptOrWritten) {
  config_.replay_dir.clear();
  replays_ =
      std::make_unique<RoomReplays>(config_, writer_, "alpha", *world_, sim::Scene{}, "inputs");
  step(10);
  replays_->on_desync_report(*world_, report(5), "player 1 'a'", t0_);
  EXPECT_EQ(replays_->write_window("shutdown", *world_), "");
  EXPECT_EQ(files_written(), 0u);
}

}  // namespace

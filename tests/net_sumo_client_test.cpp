// The sumo terminal client (client_sdk/examples/sumo_client.cpp) played for real: an in-process
// server running the sumo scene, a lockstep-bot playing it (`--game sumo`), and sumo_client in a
// detached tmux session of 80×40, steered with `tmux send-keys` and read back with
// `tmux capture-pane -p`. Every wait is for something to appear on the screen (or a process to
// end), bounded only by the hang guard.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "net_test_harness.h"

extern char** environ;

namespace lockstep {
namespace {

using net_test::eventually;
using net_test::kHangGuard;

struct Output {
  int status = -1;  // the exit status, or -1 when the command could not run or was killed
  std::string text;
};

/// Runs a shell command and returns its exit status and stdout (stderr joined to it).
Output run(const std::string& command) {
  Output out;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return out;
  std::array<char, 4096> chunk{};
  size_t n = 0;
  while ((n = std::fread(chunk.data(), 1, chunk.size(), pipe)) > 0)
    out.text.append(chunk.data(), n);
  const int status = ::pclose(pipe);
  out.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

/// Quotes one argument for /bin/sh.
std::string quote(const std::string& arg) {
  std::string out = "'";
  for (char c : arg)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// A child process (lockstep-bot) stopped with SIGINT, then waited for, when the object dies.
class ChildProcess final {
 public:
  explicit ChildProcess(const std::vector<std::string>& argv, const std::string& log_path) {
    std::vector<char*> args;
    for (const std::string& a : argv)
      args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    if (posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
  }
  ~ChildProcess() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGINT);
    int status = 0;
    const bool ended = eventually([&] { return ::waitpid(pid_, &status, WNOHANG) == pid_; },
                                  std::chrono::milliseconds(10'000));
    if (!ended) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
    }
  }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  bool started() const { return pid_ > 0; }
  /// True while the child has not exited.
  bool running() const { return pid_ > 0 && ::kill(pid_, 0) == 0; }

 private:
  pid_t pid_ = -1;
};

/// A private tmux server (its own socket, no user config), killed with everything in it when the
/// object dies.
class Tmux final {
 public:
  Tmux() : socket_("lockstep-sumo-test-" + std::to_string(::getpid())) {}
  ~Tmux() { run(base() + " kill-server"); }
  Tmux(const Tmux&) = delete;
  Tmux& operator=(const Tmux&) = delete;

  std::string base() const { return "tmux -L " + quote(socket_) + " -f /dev/null"; }
  /// Starts `command` in a detached 80×40 session; when it ends, the pane shows
  /// "[exited N]" (its exit status) and stays, so its last words can be read.
  ///
  /// The pane's shell then waits on the terminal (`cat`) until the tmux server is killed, instead
  /// of exiting. tmux 3.3 can notice a pane's process has exited before it has read what the
  /// process wrote, and a pane left dead by remain-on-exit then shows nothing: a client refused at
  /// once lost its last words and the "[exited N]" line about 2 times in 100 here, more often on a
  /// busy machine. A pane whose process is still alive is read to the end.
  Output start(const std::string& command) {
    const std::string wrapped = command + "; echo \"[exited $?]\"; exec cat >/dev/null";
    return run(base() + " new-session -d -x 80 -y 40 -s sumo " + quote(wrapped));
  }
  std::string screen() const { return run(base() + " capture-pane -p -t sumo").text; }
  /// The screen with the pane's history above it: the program's last lines and the "[exited N]"
  /// line may have scrolled into the history.
  std::string screen_and_history() const {
    return run(base() + " capture-pane -p -S - -t sumo").text;
  }
  void keys(const std::string& keys) { run(base() + " send-keys -t sumo " + keys); }

 private:
  std::string socket_;
};

bool have_tmux() {
  return run("command -v tmux").status == 0;
}

/// The rows of the arena: every line after the two header lines and before the two footer ones.
std::vector<std::string> arena_rows(const std::string& screen) {
  std::vector<std::string> lines;
  std::istringstream in(screen);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  if (lines.size() < 5) return {};
  return {lines.begin() + 2, lines.end() - 2};
}

/// The arena is drawn (a rim of at least a ring's worth of '#') and shows players 1 and 2.
bool shows_arena_and_two_players(const std::string& screen) {
  size_t rim = 0;
  bool one = false, two = false;
  for (const std::string& row : arena_rows(screen)) {
    for (char c : row) {
      rim += c == '#';
      one = one || c == '1';
      two = two || c == '2';
    }
  }
  return rim >= 40 && one && two;
}

/// The number right after the first `prefix` in `screen` that digits follow, if there is one.
/// (Plain string search: std::regex trips gcc 12's -Wmaybe-uninitialized under ASan.)
std::optional<uint64_t> number_after(const std::string& screen, const std::string& prefix) {
  for (size_t at = screen.find(prefix); at != std::string::npos; at = screen.find(prefix, at + 1)) {
    size_t i = at + prefix.size();
    if (i >= screen.size() || screen[i] < '0' || screen[i] > '9') continue;
    uint64_t value = 0;
    for (; i < screen.size() && screen[i] >= '0' && screen[i] <= '9'; ++i)
      value = value * 10 + static_cast<uint64_t>(screen[i] - '0');
    return value;
  }
  return std::nullopt;
}

/// The tick in the header ("tick N"), or 0.
uint64_t shown_tick(const std::string& screen) {
  return number_after(screen, "tick ").value_or(0);
}

server::ServerConfig sumo_config() {
  server::ServerConfig config = net_test::loopback_config();
  config.scene = LOCKSTEP_SUMO_SCENE;
  return config;
}

TEST(SumoClient, RefusesToRunWithoutATerminal) {
  const Output out = run(quote(LOCKSTEP_SUMO_CLIENT) + " --port 1 </dev/null");
  EXPECT_EQ(out.status, 2) << out.text;
  EXPECT_NE(out.text.find("must be a terminal"), std::string::npos) << out.text;
}

TEST(SumoClient, RejectsBadArguments) {
  for (const char* args : {"--port 99999", "--port abc", "--speed nan", "--bogus 1", "--port"}) {
    const Output out = run(quote(LOCKSTEP_SUMO_CLIENT) + " " + args + " </dev/null");
    EXPECT_EQ(out.status, 2) << args << ": " << out.text;
    EXPECT_NE(out.text.find("sumo_client:"), std::string::npos) << args << ": " << out.text;
  }
}

TEST(SumoClient, PlaysInTmuxAgainstABot) {
  if (!have_tmux()) GTEST_SKIP() << "tmux is not installed (scripts/setup.sh installs it)";
  net_test::InProcessServer server(sumo_config());
  ASSERT_TRUE(server.started());
  const std::string port = std::to_string(server.port());

  // Player 1: a bot pushing towards its nearest opponent until the test ends.
  const std::string bot_log = ::testing::TempDir() + "sumo_bot_" + port + ".log";
  ChildProcess bot({LOCKSTEP_BOT, "--port", port, "--game", "sumo", "--scene-file",
                    LOCKSTEP_SUMO_SCENE, "--name", "bot", "--seconds", "600", "--seed", "7"},
                   bot_log);
  ASSERT_TRUE(bot.started());
  server::ServerStats stats;
  ASSERT_TRUE(server.stats_eventually(
      [](const server::ServerStats& s) {
        return !s.rooms.empty() && s.rooms[0].clients == 1 && s.rooms[0].snapshots_sent >= 1;
      },
      &stats))
      << "the bot did not join; its log: " << run("cat " + quote(bot_log)).text;

  // Player 2: the terminal client.
  Tmux tmux;
  // No scene file: the client builds its world from the Welcome.
  const Output started =
      tmux.start(quote(LOCKSTEP_SUMO_CLIENT) + " --port " + port + " --name human");
  ASSERT_EQ(started.status, 0) << started.text;
  std::string screen;
  ASSERT_TRUE(eventually(
      [&] {
        screen = tmux.screen();
        return screen.find("you: player 2") != std::string::npos &&
               shows_arena_and_two_players(screen);
      },
      kHangGuard, std::chrono::milliseconds(50)))
      << "the arena with players 1 and 2 never showed:\n"
      << screen;

  // Steer for 3 s of ticks (180 at 60 Hz), a different arrow every few screens.
  const uint64_t first_tick = shown_tick(screen);
  const std::array<const char*, 4> arrows{"Left", "Up", "Right", "Down"};
  size_t sent = 0;
  ASSERT_TRUE(eventually(
      [&] {
        tmux.keys(arrows[sent % arrows.size()]);
        ++sent;
        screen = tmux.screen();
        return shown_tick(screen) >= first_tick + 180;
      },
      kHangGuard, std::chrono::milliseconds(100)))
      << "the tick shown did not advance 180 ticks past " << first_tick << ":\n"
      << screen;
  // The client read the keys: the last arrow shows as the heading (drawn at most 50 ms later),
  // and both balls are on the screen (one may be falling, or just respawned: wait for both).
  tmux.keys("Left");
  ASSERT_TRUE(eventually(
      [&] {
        screen = tmux.screen();
        return screen.find("heading: left") != std::string::npos &&
               shows_arena_and_two_players(screen);
      },
      kHangGuard, std::chrono::milliseconds(50)))
      << screen;
  EXPECT_NE(screen.find("desyncs 0"), std::string::npos) << screen;
  EXPECT_NE(screen.find("scores:"), std::string::npos) << screen;

  // The server saw the client's inputs (its target velocities), and no desync report.
  ASSERT_TRUE(server.stats_eventually(
      [](const server::ServerStats& s) {
        return !s.rooms.empty() && s.rooms[0].clients == 2 && s.rooms[0].inputs_accepted > 0;
      },
      &stats));
  EXPECT_EQ(stats.desync_reports, 0u);

  // q: the client leaves, restores the terminal and prints its summary; exit status 0.
  tmux.keys("q");
  ASSERT_TRUE(eventually(
      [&] {
        screen = tmux.screen_and_history();
        return screen.find("[exited ") != std::string::npos;
      },
      kHangGuard, std::chrono::milliseconds(50)))
      << "sumo_client did not exit after q:\n"
      << screen;
  EXPECT_NE(screen.find("[exited 0]"), std::string::npos) << screen;
  EXPECT_NE(screen.find("sumo_client: player 2,"), std::string::npos) << screen;
  EXPECT_NE(screen.find(" 0 desyncs"), std::string::npos) << screen;
  // The arrows became inputs (one per tick while steering on the platform), none refused.
  const size_t sent_at = screen.find(" inputs sent,");
  ASSERT_NE(sent_at, std::string::npos) << screen;
  const size_t count_at = screen.rfind(", ", sent_at);
  ASSERT_NE(count_at, std::string::npos) << screen;
  const std::optional<uint64_t> inputs_sent =
      number_after(screen.substr(count_at, sent_at - count_at), ", ");
  ASSERT_TRUE(inputs_sent.has_value()) << screen;
  EXPECT_GT(*inputs_sent, 0u) << screen;
  stats = server.stats();
  ASSERT_FALSE(stats.rooms.empty());
  bool saw_human = false;
  for (const server::ClientSummary& c : stats.rooms[0].client_list) {
    if (c.name != "human") continue;
    saw_human = true;
    EXPECT_EQ(c.errors, 0u) << "the server sent the client Error frames";
  }
  EXPECT_TRUE(saw_human);
  EXPECT_TRUE(bot.running()) << run("cat " + quote(bot_log)).text;
}

TEST(SumoClient, SaysSoWhenTheServerGoesAway) {
  if (!have_tmux()) GTEST_SKIP() << "tmux is not installed (scripts/setup.sh installs it)";
  net_test::InProcessServer server(sumo_config());
  ASSERT_TRUE(server.started());
  Tmux tmux;
  const Output started =
      tmux.start(quote(LOCKSTEP_SUMO_CLIENT) + " --port " + std::to_string(server.port()) +
                 " --scene-file " + quote(LOCKSTEP_SUMO_SCENE));
  ASSERT_EQ(started.status, 0) << started.text;
  std::string screen;
  ASSERT_TRUE(eventually(
      [&] {
        screen = tmux.screen();
        return screen.find("you: player 1") != std::string::npos;
      },
      kHangGuard, std::chrono::milliseconds(50)))
      << screen;
  server.stop();
  ASSERT_TRUE(eventually(
      [&] {
        screen = tmux.screen_and_history();
        return screen.find("[exited ") != std::string::npos;
      },
      kHangGuard, std::chrono::milliseconds(50)))
      << screen;
  EXPECT_NE(screen.find("[exited 1]"), std::string::npos) << screen;
  EXPECT_NE(screen.find("sumo_client: disconnected from 127.0.0.1:"), std::string::npos) << screen;
  EXPECT_NE(screen.find("server_shutdown"), std::string::npos) << screen;
}

TEST(SumoClient, SaysWhyTheServerRefusedIt) {
  if (!have_tmux()) GTEST_SKIP() << "tmux is not installed (scripts/setup.sh installs it)";
  net_test::InProcessServer server(sumo_config());
  ASSERT_TRUE(server.started());
  Tmux tmux;
  const Output started =
      tmux.start(quote(LOCKSTEP_SUMO_CLIENT) + " --port " + std::to_string(server.port()) +
                 " --room elsewhere --scene no-such-scene");
  ASSERT_EQ(started.status, 0) << started.text;
  std::string screen;
  ASSERT_TRUE(eventually(
      [&] {
        screen = tmux.screen_and_history();
        return screen.find("[exited ") != std::string::npos;
      },
      kHangGuard, std::chrono::milliseconds(50)))
      << screen;
  EXPECT_NE(screen.find("[exited 1]"), std::string::npos) << screen;
  // The server's own reason, not just "closed" (tmux may wrap it: look for its start).
  EXPECT_NE(screen.find("unknown_scene"), std::string::npos) << screen;
}

}  // namespace
}  // namespace lockstep

// The smallest backend that hosts lockstep rooms itself: a Server on 127.0.0.1 and an ephemeral
// port, served on this thread for a number of seconds, then shut down gracefully. Usage:
//   embedded_server [seconds]        (default 5; 0 starts, stops at once and exits)
// Prints `listening port=N` once bound and one `summary {json}` line at the end.
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

#include "lockstep/server/config.h"
#include "lockstep/server/server.h"

namespace server = lockstep::server;

int main(int argc, char** argv) {
  const int seconds = argc > 1 ? std::atoi(argv[1]) : 5;
  server::ServerConfig config;
  config.bind_address = "127.0.0.1";
  config.port = 0;
  config.replay_dir = "";  // no replay files from an example
  server::Server host(config);
  std::string error;
  if (!host.start(&error)) {
    std::fprintf(stderr, "embedded_server: %s\n", error.c_str());
    return 1;
  }
  std::printf("listening port=%u\n", static_cast<unsigned>(host.port()));
  std::fflush(stdout);

  // The game's own thread decides when to stop; run() returns once the shutdown is complete.
  std::mutex mutex;
  std::condition_variable served;
  bool done = false;
  std::thread stopper([&] {
    std::unique_lock<std::mutex> lock(mutex);
    served.wait_for(lock, std::chrono::seconds(seconds), [&] { return done; });
    host.request_shutdown();
  });
  host.run();
  {
    std::lock_guard<std::mutex> lock(mutex);
    done = true;
  }
  served.notify_one();
  stopper.join();
  std::printf("summary %s\n", server::summary_json(host.stats()).c_str());
  return 0;
}

// koth_client HOST PORT [SECONDS]: the worked client of docs/client.md (koth_client.h) as a
// program. Plays king of the hill in room "default" for SECONDS (default 10), then prints its
// hill seconds and score.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "koth_client.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: koth_client HOST PORT [SECONDS]\n");
    return 2;
  }
  const long port = std::strtol(argv[2], nullptr, 10);
  const double seconds = argc > 3 ? std::strtod(argv[3], nullptr) : 10.0;
  if (port <= 0 || port > 65535 || !(seconds > 0)) {
    std::fprintf(stderr, "koth_client: bad port or seconds\n");
    return 2;
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  KothProgress last;
  const int code =
      play_koth(argv[1], static_cast<uint16_t>(port), "default", [&](const KothProgress& p) {
        last = p;
        return std::chrono::steady_clock::now() >= until;
      });
  std::printf("ticks=%llu hill_seconds=%d score=%d events=%u ready=%d\n",
              static_cast<unsigned long long>(last.tick), last.hill_seconds, last.score,
              last.events, last.ready_seen ? 1 : 0);
  return code;
}

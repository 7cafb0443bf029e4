#include "lockstep/replays/file_name.h"

#include <atomic>
#include <chrono>
#include <ctime>

namespace lockstep::replays {
namespace {

constexpr size_t kMaxLabelBytes = 48;

// Several rooms or clients in one process never pick the same name.
std::atomic<uint64_t> g_replay_file_sequence{0};

std::string utc_stamp() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
#ifdef _WIN32
  gmtime_s(&utc, &now);  // the C runtime's thread-safe gmtime, its arguments the other way round
#else
  gmtime_r(&now, &utc);
#endif
  char text[32];
  const size_t n = std::strftime(text, sizeof(text), "%Y%m%dT%H%M%SZ", &utc);
  return std::string(text, n);
}

}  // namespace

std::string file_safe_label(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (out.size() == kMaxLabelBytes) break;
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '_';
    out.push_back(keep ? c : '_');
  }
  return out.empty() ? std::string("room") : out;
}

std::string replay_file_path(std::string_view dir, std::string_view kind, std::string_view label,
                             uint64_t tick) {
  const uint64_t sequence = g_replay_file_sequence.fetch_add(1, std::memory_order_relaxed) + 1;
  std::string path(dir);
  path += '/';
  path += kind;
  path += '-';
  path += file_safe_label(label);
  path += "-tick" + std::to_string(tick) + '-' + utc_stamp() + '-' + std::to_string(sequence);
  path += ".lsrp";
  return path;
}

}  // namespace lockstep::replays

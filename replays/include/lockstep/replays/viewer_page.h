// The replay viewer: one self-contained HTML page (WebGL, no network) showing a replay in 3D with
// a timeline, per-tick state hashes, and for a desync the two runs overlaid with the diff table.
// The page never simulates: the replay is re-simulated here and each tick's body poses are
// written into the page, quantised (docs/replays.md, Viewer).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/replays/replay_reader.h"

namespace lockstep::replays {

struct ViewerOptions {
  /// Bodies (slot index + 1) whose contact points are written besides the default ones: every
  /// body in worlds of up to kViewerAllContactsBodies bodies, else player-owned and differing ones.
  std::vector<uint32_t> contact_bodies;
  size_t max_fields = 200;  // rows of the diff table
};

/// Worlds with at most this many bodies get every body's contacts written.
inline constexpr uint32_t kViewerAllContactsBodies = 64;

struct ViewerPage {
  bool ok = false;
  std::string error;  // one line when !ok
  std::string html;
  uint64_t first_tick = 0, last_tick = 0;
  uint32_t bodies = 0;  // distinct bodies drawn over the window
  std::optional<uint64_t> first_divergent_tick;
  size_t fields = 0;                                               // rows of the diff table
  size_t pose_bytes = 0, other_pose_bytes = 0, contact_bytes = 0;  // before base64
  double simulate_seconds = 0;  // wall time of the re-simulations and the diff
};

/// Re-simulates `replay` (and `against`, when given, or a client file's own state after its
/// hashes leave the server's) and builds the page. !ok with a one-line error when the replay
/// cannot be re-simulated or the two files are not the same match.
ViewerPage make_viewer_page(const LoadedReplay& replay, const LoadedReplay* against,
                            const ViewerOptions& options = {});

/// The page template (replays/viewer/viewer.html, embedded at build time).
const char* viewer_page_template();

}  // namespace lockstep::replays

// Names of the replay files the server and the client SDK write.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace lockstep::replays {

/// `dir/<kind>-<label>-tick<T>-<UTC yyyymmddThhmmssZ>-<seq>.lsrp`. The label (a room name, which
/// comes from clients) keeps only [A-Za-z0-9_-] and at most 48 bytes, so it can never leave
/// `dir`; the per-process sequence number keeps two files named in the same second apart.
std::string replay_file_path(std::string_view dir, std::string_view kind, std::string_view label,
                             uint64_t tick);

/// `text` with every byte outside [A-Za-z0-9_-] replaced by '_', cut to 48 bytes; "room" if empty.
std::string file_safe_label(std::string_view text);

}  // namespace lockstep::replays

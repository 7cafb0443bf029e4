// Reading a whole file that a server or tool was told to load, up to a size cap: the scene files
// and the level files they name share it. Plain iostreams, no <filesystem>: schema is also built
// by the cross and wasm toolchains.
#pragma once

#include <cstddef>
#include <string>

namespace lockstep::schema::detail {

/// The bytes of the file at `path`, or false with *error naming the file and the reason: it
/// cannot be opened, it cannot be read (a folder), or it holds more than `max_bytes`
/// ("<path>: larger than <cap_name> of <max_bytes> bytes").
bool read_capped_file(const std::string& path, size_t max_bytes, const char* cap_name,
                      std::string* bytes, std::string* error);

}  // namespace lockstep::schema::detail

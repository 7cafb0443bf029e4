// Scene files: the text scene format (docs/scene-format.md) read from disk. The sim parses text
// and never opens files; the server (--scene FILE, --scene-dir DIR) and the client SDK (a game
// that ships the scene files its server serves) both load them here, so they agree on what a
// file means: the scene's name is the file's stem, and a file is only accepted when the sim can
// build its world.
//
// Set-up code: reads whole files and allocates. Never call it on a tick path.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "lockstep/sim/scene.h"

namespace lockstep::schema {

/// Scene files larger than this are refused (a scene is set-up data, not a level mesh).
inline constexpr size_t kMaxSceneFileBytes = size_t{16} << 20;
/// The extension of scene files a server serves from a folder (--scene-dir).
inline constexpr std::string_view kSceneFileExtension = ".scene";

/// Reads, parses and test-builds the scene file at `path`; its name becomes the file's stem.
/// False with one line in *error: "<path>: line L col C: <reason>" (or "<path>: <reason>" for an
/// unreadable file); *out is untouched then.
bool load_scene_file(const std::string& path, sim::Scene* out, std::string* error);

/// Parses and test-builds scene text; `source` only names it in errors ("<source>: line L ...").
/// The name stays the one of the text's `scene` line ("" when it has none). Level files its
/// `mesh` and `heightfield` lines name are read relative to the current directory (a scene file
/// read with load_scene_file reads them relative to its own folder).
bool load_scene_text(std::string_view text, const std::string& source, sim::Scene* out,
                     std::string* error);

/// A built-in scene by name (sim::builtin_scene_names()), else the scene file at that path.
bool load_scene(const std::string& name_or_path, sim::Scene* out, std::string* error);

/// True when `name` may name a served scene: 1..kMaxNameBytes of [A-Za-z0-9_.-], not starting
/// with '.'.
bool valid_scene_name(std::string_view name);

}  // namespace lockstep::schema

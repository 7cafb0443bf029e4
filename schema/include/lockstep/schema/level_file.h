// Level files: the Wavefront OBJ meshes and 16-bit gray heightfield images a scene's `mesh` and
// `heightfield` lines name (sim::SceneLevelFile). The sim only keeps the lines; this reads the
// files, relative to the scene file, into Scene::meshes and Scene::heightfields
// (docs/scene-format.md, Level files).
//
// OBJ structure (faces, their corners, groups) comes from Debian's tinyobjloader. Its number
// reader is not correctly rounded (it scales a decimal mantissa by powers from libm), so vertex
// coordinates are read again from the `v` lines with std::from_chars, which is: every platform
// gets the same bits. Polygons are cut into fans from their first corner, in integers.
//
// Set-up code: reads whole files and allocates. Never call it on a tick path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lockstep/sim/level.h"
#include "lockstep/sim/scene.h"

namespace lockstep::schema {

/// A level file larger than this is refused before it is parsed.
inline constexpr size_t kMaxLevelFileBytes = size_t{64} << 20;
/// The most memory one scene's level may take once read (vertices, indices and heights, bytes).
inline constexpr size_t kMaxLevelMemoryBytes = size_t{128} << 20;

/// Reads the OBJ at `path` into *out, each vertex v made rotate(rot, v · scale) + pos (the
/// line's fields). `max_triangles` caps the triangles it may hold. False with "<path>: line L:
/// <reason>" (or "<path>: <reason>") in *error.
bool load_obj_mesh(const std::string& path, const sim::SceneLevelFile& line, uint32_t max_triangles,
                   sim::SceneMesh* out, std::string* error);

/// The same from OBJ text already in memory; `source` names it in errors.
bool parse_obj_mesh(std::string_view text, const std::string& source,
                    const sim::SceneLevelFile& line, uint32_t max_triangles, sim::SceneMesh* out,
                    std::string* error);

/// Reads a 16-bit gray image (binary PGM "P5" with maxval 256..65535, or a 16-bit gray PNG) at
/// `path` into *out: columns = width, rows = height, sample s at (c, r) the height
/// s · (line.height / maxval) m (PNG: maxval 65535).
bool load_heightfield_image(const std::string& path, const sim::SceneLevelFile& line,
                            uint32_t max_triangles, sim::SceneHeightfield* out, std::string* error);

/// The same from image bytes in memory.
bool parse_heightfield_image(std::string_view bytes, const std::string& source,
                             const sim::SceneLevelFile& line, uint32_t max_triangles,
                             sim::SceneHeightfield* out, std::string* error);

/// Fills scene->meshes and scene->heightfields from its level file lines, each file relative to
/// `base_dir` ("" or a folder ending in '/'), within kMaxLevelMemoryBytes and the triangle
/// capacity of a default sim::LevelDef. `source` names the scene in errors: "<source>: line L:
/// mesh: <file>: ...".
bool load_scene_level(const std::string& base_dir, const std::string& source, sim::Scene* scene,
                      std::string* error);

/// The folder part of a path, with its trailing '/' ("" for a bare file name).
std::string folder_of(const std::string& path);

/// Spans over a scene's level vectors, as World::create takes them; valid while the vectors are.
struct LevelView {
  std::vector<sim::MeshDef> meshes;
  std::vector<sim::HeightfieldDef> heightfields;
  sim::LevelDef def() const { return sim::LevelDef{meshes, heightfields}; }
};
LevelView view_level(const std::vector<sim::SceneMesh>& meshes,
                     const std::vector<sim::SceneHeightfield>& heightfields);

/// The bytes a level's vertices, indices and heights take (what a Welcome carrying it costs, and
/// what a client holds before the world copies it).
uint64_t level_content_bytes(const std::vector<sim::SceneMesh>& meshes,
                             const std::vector<sim::SceneHeightfield>& heightfields);

}  // namespace lockstep::schema

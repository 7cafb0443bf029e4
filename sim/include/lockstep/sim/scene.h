// Scenes: a WorldDef plus the bodies to create in order, built in (pyramid, pile, bounce,
// inputs, pyramid3d) or read from the line-based text format (docs/scene-format.md). The
// deterministic input script that drives the bodies players own is in testing.h.
//
// Scenes are set-up data: building one allocates (std::string, std::vector), which is fine
// because it happens before any step. Built-in scenes use integer arithmetic, + - * / and sqrt
// only, so every platform builds bit-identical bodies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lockstep/sim/types.h"
#include "lockstep/sim/world.h"

namespace lockstep::sim {

/// A command or input a scene file schedules (`at tick=N ...` lines): queued before the step
/// that makes tick `tick` (>= 1), in file order.
struct ScriptedAction {
  uint64_t tick = 1;
  bool is_command = true;  // else an input
  Command command{};
  Input input{};
  uint32_t line = 0;  // line of the scene file, for messages
};

/// Where a joining player's body may appear (scene `spawn` lines).
struct SpawnPoint {
  Vec3 position{};
  Quat orientation{};
};

/// A body the scene names (`body ... name=NAME`), so server rules can find it: bodies[index].
struct NamedBody {
  std::string name;
  uint32_t index = 0;
};

/// A scene's triangle mesh, owned by the scene (level.h, MeshDef, says what the fields mean).
struct SceneMesh {
  std::vector<Vec3> vertices;
  std::vector<uint32_t> indices;
};

/// A scene's heightfield, owned by the scene (level.h, HeightfieldDef).
struct SceneHeightfield {
  std::vector<float> heights;
  uint32_t columns = 0, rows = 0;
  float spacing_x = 1.0f, spacing_z = 1.0f;
};

/// A `mesh` or `heightfield` line of the scene text: a level file the scene names. The sim never
/// opens files: it keeps the line's fields, and a loader above it (schema's load_scene_file) reads
/// the file, relative to the scene file, into Scene::meshes or Scene::heightfields at the same
/// index. format_scene_text writes the line back, so the text round-trips without the file.
struct SceneLevelFile {
  std::string name;  // what body lines name: `shape=mesh mesh=NAME`, `heightfield=NAME`
  std::string file;  // as written: relative, '/'-separated, no ".." (docs/scene-format.md)
  // mesh: each OBJ vertex v becomes rotate(orientation, v · scale) + position, in that order.
  float scale = 1.0f;
  Vec3 position{};
  Quat orientation{};
  // heightfield: the grid spacing (m) and the height (m) of the brightest sample (the image's
  // maxval); a sample s becomes the height s · (height / maxval).
  float spacing_x = 1.0f, spacing_z = 1.0f;
  float height = 1.0f;
  uint32_t line = 0;  // the line of the scene text, for messages
};

/// A world definition and the bodies to create, in creation order (so handles are stable).
struct Scene {
  std::string name;
  WorldDef def;
  std::vector<BodyDef> bodies;
  std::vector<ScriptedAction> actions;  // ascending ticks (stable: file order within a tick)
  // Players' bodies (scene `player` and `spawn` lines): a server spawns one body from this
  // template for each player who joins, at a spawn point; -1 when the scene has none.
  int32_t player_template = -1;
  std::vector<SpawnPoint> spawn_points;
  std::string rules;                        // the built-in game rules a server runs ("" = none)
  std::vector<NamedBody> named_bodies;      // in file order; names are unique
  std::vector<StateFieldDef> state_fields;  // game state (scene `state` lines), declared in order
  // Level geometry that mesh and heightfield shapes name by index; build_world hands it to
  // World::create (level.h). The text names files (mesh_files, heightfield_files, one per index);
  // a level loader fills these from them.
  std::vector<SceneMesh> meshes;
  std::vector<SceneHeightfield> heightfields;
  std::vector<SceneLevelFile> mesh_files;
  std::vector<SceneLevelFile> heightfield_files;
};

/// The BodyId a scene body gets in a world built by build_world (slot index + 1, generation 0),
/// for the body named `name`; null when no body has the name.
BodyId find_scene_body(const Scene& scene, std::string_view name);

/// Names of the built-in scenes, in a fixed order.
std::span<const std::string_view> builtin_scene_names();

/// Names of the built-in scenes with level geometry (convex_vs_mesh, terrain_pile), in a fixed
/// order. make_builtin_scene makes them too; they are listed apart because the text format does
/// not carry their meshes, so they cannot be written out and read back as the others are.
std::span<const std::string_view> level_scene_names();

/// Fills *out with the named built-in scene; false (and *out untouched) for an unknown name.
bool make_builtin_scene(std::string_view name, Scene* out);

/// Creates the scene's world and its bodies in order; null (and *error set) on failure, with
/// *failed_body = the index of the body that was refused (SIZE_MAX when the world was).
std::unique_ptr<World> build_world(const Scene& scene, Error* error = nullptr,
                                   size_t* failed_body = nullptr);

/// Number of players a scene expects: the largest BodyDef::owner_player (0 = no players).
uint32_t scene_player_count(const Scene& scene);

/// Default seed of the input script (lockstep-sim --seed overrides it).
inline constexpr uint64_t kDefaultInputSeed = 0x5eed'1234'abcd'0001ull;

/// Parses the text scene format (docs/scene-format.md). On failure returns false and sets
/// *error to one line naming where ("line 7 col 12") and what went wrong; *out is untouched.
bool parse_scene_text(std::string_view text, Scene* out, std::string* error);

/// Writes a scene in the text format; floats are printed with 9 significant digits, so
/// parse_scene_text(format_scene_text(s)) gives back s bit for bit.
std::string format_scene_text(const Scene& scene);

}  // namespace lockstep::sim

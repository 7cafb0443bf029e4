// libFuzzer harness: level files from bytes. The first byte picks the reader (even: OBJ, odd: a
// PGM or PNG heightfield image) and a triangle capacity; the rest is the file. The readers must
// refuse a malformed file with a message, never crash; what they accept is built into a world.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "lockstep/schema/level_file.h"
#include "lockstep/sim/world.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const bool image = (data[0] & 1) != 0;
  const uint32_t max_triangles = 1u + (static_cast<uint32_t>(data[0]) << 6);
  const std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  lockstep::sim::Scene scene;
  lockstep::sim::SceneLevelFile line;
  line.height = 10.0f;
  std::string error;
  bool ok = false;
  if (image) {
    lockstep::sim::SceneHeightfield field;
    ok = lockstep::schema::parse_heightfield_image(bytes, "fuzz", line, max_triangles, &field,
                                                   &error);
    if (ok) scene.heightfields.push_back(std::move(field));
  } else {
    lockstep::sim::SceneMesh mesh;
    ok = lockstep::schema::parse_obj_mesh(bytes, "fuzz", line, max_triangles, &mesh, &error);
    if (ok) scene.meshes.push_back(std::move(mesh));
  }
  if (!ok) {
    if (error.empty()) __builtin_trap();  // every refusal says why
    return 0;
  }
  scene.def.max_bodies = 4;
  std::unique_ptr<lockstep::sim::World> world = lockstep::sim::build_world(scene);
  if (world) world->step();
  return 0;
}

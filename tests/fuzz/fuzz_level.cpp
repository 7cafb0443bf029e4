// libFuzzer harness: level geometry from bytes. The first byte picks a mesh or a heightfield and
// sizes; the rest are raw floats and indices (NaN, infinities, huge values and indices out of
// range included). World::create must refuse bad levels with an Error, never crash; a level it
// accepts is stepped under a few falling bodies and queried.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "lockstep/sim/query.h"
#include "lockstep/sim/world.h"

using namespace lockstep::sim;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  const bool heightfield = (data[0] & 1) != 0;
  const uint32_t a = 2 + data[1] % 31, b = 2 + data[2] % 31;
  const uint8_t spacing_byte = data[3];
  data += 4;
  size -= 4;
  WorldDef def = default_world_def();
  def.max_bodies = 16;
  LevelDef level;
  std::vector<Vec3> vertices;
  std::vector<uint32_t> indices;
  std::vector<float> heights;
  MeshDef mesh;
  HeightfieldDef field;
  if (heightfield) {
    heights.resize(static_cast<size_t>(a) * b);
    // memcpy with a null pointer is undefined even for 0 bytes: copy only into a non-empty buffer.
    if (!heights.empty()) {
      std::memcpy(heights.data(), data, std::min(size, heights.size() * sizeof(float)));
    }
    field = HeightfieldDef{heights, a, b, 0.25f * static_cast<float>(spacing_byte), 1.0f};
    if ((spacing_byte & 1) != 0) field.rows += 1;  // a wrong sample count now and then
    level.heightfields = {&field, 1};
  } else {
    const size_t vertex_bytes = std::min(size, static_cast<size_t>(a) * sizeof(Vec3));
    vertices.resize(vertex_bytes / sizeof(Vec3));
    if (!vertices.empty()) std::memcpy(vertices.data(), data, vertices.size() * sizeof(Vec3));
    const size_t rest = size - vertex_bytes;
    indices.resize(rest / sizeof(uint32_t));
    if (!indices.empty()) {
      std::memcpy(indices.data(), data + vertex_bytes, indices.size() * sizeof(uint32_t));
    }
    for (uint32_t& i : indices)
      if ((spacing_byte & 2) != 0) i %= static_cast<uint32_t>(vertices.size() + 1);
    mesh = MeshDef{vertices, indices};
    level.meshes = {&mesh, 1};
    level.max_triangles = 1 + spacing_byte;
  }
  Error e = Error::none;
  std::unique_ptr<World> world = World::create(def, level, &e);
  if (world == nullptr) return 0;
  BodyDef ground = default_body_def();
  ground.type = BodyType::static_body;
  ground.shape.type = heightfield ? ShapeType::heightfield : ShapeType::mesh;
  BodyId id;
  if (world->create_body(ground, &id) != Error::none) return 0;
  for (int i = 0; i < 4; ++i) {
    BodyDef body = default_body_def();
    body.shape.type = i % 2 == 0 ? ShapeType::sphere : ShapeType::box;
    body.position = {static_cast<float>(i), 3.0f, 0.5f};
    (void)world->create_body(body, &id);
  }
  for (int s = 0; s < 30; ++s)
    world->step();
  RayHit hit;
  (void)ray_cast(*world, {0.5f, 10, 0.5f}, {0, -20, 0}, {}, &hit);
  return 0;
}

// libFuzzer harness: scene text through the parser and, when the world it asks for is within a
// small budget (as lockstep-sim checks with --memory-budget-mb), through build_world and a step.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "lockstep/sim/scene.h"
#include "lockstep/sim/world.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  lockstep::sim::Scene scene;
  std::string error;
  if (!lockstep::sim::parse_scene_text(text, &scene, &error)) return 0;
  (void)lockstep::sim::format_scene_text(scene);
  if (lockstep::sim::world_memory_bytes(scene.def) > (uint64_t{16} << 20)) return 0;
  std::unique_ptr<lockstep::sim::World> world = lockstep::sim::build_world(scene);
  if (world) world->step();
  return 0;
}

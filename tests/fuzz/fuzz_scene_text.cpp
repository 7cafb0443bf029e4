// libFuzzer harness: scene text through the parser and, when the world it asks for is within a
// small budget (as lockstep-sim checks with --memory-budget-mb), through build_world and a step.
// The per-step capacities are first cut to small values (bodies are kept, up to 256) so that a
// run stays fast: most of a run's time is the world's memory being mapped, zeroed and unmapped
// under ASan, so the smaller the world the more scenes a second. The budget check itself still
// sees the file's own capacities.
#include <algorithm>
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
  if (lockstep::sim::world_memory_bytes(scene.def) > (uint64_t{512} << 20)) return 0;
  if (scene.bodies.size() > 256) return 0;
  lockstep::sim::WorldDef& def = scene.def;
  def.max_bodies = std::min<uint32_t>(
      def.max_bodies, std::max<uint32_t>(16, static_cast<uint32_t>(scene.bodies.size())));
  def.max_contact_pairs = std::min<uint32_t>(def.max_contact_pairs, 256);
  def.max_contact_points = std::min<uint32_t>(def.max_contact_points, 512);
  def.max_candidate_pairs = std::min<uint32_t>(def.max_candidate_pairs, 1024);
  def.max_events = std::min<uint32_t>(def.max_events, 64);
  def.max_inputs_per_tick = std::min<uint32_t>(def.max_inputs_per_tick, 16);
  if (lockstep::sim::world_memory_bytes(def) > (uint64_t{1} << 20)) return 0;
  std::unique_ptr<lockstep::sim::World> world = lockstep::sim::build_world(scene);
  if (world) world->step();
  return 0;
}

// libFuzzer harness: snapshot bytes (as a client receives them) restored into a small world of
// the `inputs` scene; a restore that succeeds is stepped and saved again.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "lockstep/sim/scene.h"
#include "lockstep/sim/world.h"

namespace {
lockstep::sim::World& world() {
  static std::unique_ptr<lockstep::sim::World> w = [] {
    lockstep::sim::Scene scene;
    lockstep::sim::make_builtin_scene("inputs", &scene);
    return lockstep::sim::build_world(scene);
  }();
  return *w;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  lockstep::sim::World& w = world();
  if (w.restore_snapshot(std::span<const uint8_t>(data, size)) != lockstep::sim::Error::none)
    return 0;
  w.step();
  static std::vector<uint8_t> out(w.max_snapshot_size());
  size_t written = 0;
  (void)w.save_snapshot(out, &written);
  return 0;
}

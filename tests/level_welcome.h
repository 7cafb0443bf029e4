// Level scenes for the tests that play a server by hand (frames made by the codec): the OBJ ramp
// loaded from tests/level_scenes, and a Welcome's level fields filled as the server fills them.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "lockstep/schema/messages.h"
#include "lockstep/schema/scene_file.h"
#include "lockstep/sim/scene.h"
#include "lockstep/sim/world.h"

namespace level_welcome {

/// tests/level_scenes/ramp.scene with its OBJ (a 20 m ramp, one quad, three bodies).
inline lockstep::sim::Scene ramp_scene(const std::string& source_dir) {
  lockstep::sim::Scene scene;
  std::string error;
  EXPECT_TRUE(lockstep::schema::load_scene_file(source_dir + "/tests/level_scenes/ramp.scene",
                                                &scene, &error))
      << error;
  return scene;
}

/// The Welcome's level as a server sends it for `world` made from `scene`: nothing for a scene
/// without one; else its digest, and the meshes and heightfields themselves when `carry` (under
/// the server's --max-welcome-level-bytes), the digest alone when not.
inline void put_level(const lockstep::sim::Scene& scene, const lockstep::sim::World& world,
                      bool carry, lockstep::schema::Welcome* w) {
  if (scene.meshes.empty() && scene.heightfields.empty()) return;
  w->level_digest = world.level_stats().digest;
  w->level_carried = carry;
  if (carry) {
    w->level_meshes = scene.meshes;
    w->level_heightfields = scene.heightfields;
  }
}

}  // namespace level_welcome

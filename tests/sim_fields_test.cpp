// The definitions' field lists (lockstep/sim/fields.h): each names every member of its struct
// once, and every field reaches what it must: the WorldDef fingerprint, the state hash and
// snapshots, and the scene text (write, read back bit for bit). The wire codec is checked
// against the same lists in schema_protocol_test.cpp.
#include "lockstep/sim/fields.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "field_lists.h"
#include "lockstep/sim/scene.h"
#include "lockstep/sim/world.h"

namespace lockstep::sim {
namespace {

using testing::change_every_leaf;
using testing::change_value;
using testing::first_difference;
using testing::for_each_leaf;
using testing::member_count;

// The list of T has as many fields as T has members, each a different member with its own
// name: a member added to the struct but not to the list fails here.
template <class T>
void expect_list_names_every_member(const char* type) {
  SCOPED_TRACE(type);
  EXPECT_EQ(field_count<T>(), member_count<T>()) << "a member of " << type << " is not listed";
  const T object{};
  const auto* base = reinterpret_cast<const unsigned char*>(&object);
  std::set<std::ptrdiff_t> offsets;
  std::set<std::string_view> names;
  Fields<T>::visit([&](const Field& field, auto member) {
    offsets.insert(reinterpret_cast<const unsigned char*>(&(object.*member)) - base);
    names.insert(field.name);
  });
  EXPECT_EQ(offsets.size(), field_count<T>()) << "a member listed twice";
  EXPECT_EQ(names.size(), field_count<T>()) << "a name used twice";
}

TEST(FieldLists, EachListNamesEveryMemberOnce) {
  expect_list_names_every_member<ShapeDef>("ShapeDef");
  expect_list_names_every_member<BodyDef>("BodyDef");
  expect_list_names_every_member<BodyTemplate>("BodyTemplate");
  expect_list_names_every_member<WorldDef>("WorldDef");
}

TEST(FieldLists, TheCountCatchesAnUnlistedMember) {
  struct Listed {
    float a = 0;
    Vec3 b{};
    char name[4] = {};
    BodyTemplate templates[2] = {};
    bool c = false;
  };
  EXPECT_EQ(member_count<Listed>(), 5u);
  EXPECT_EQ(member_count<Vec3>(), 3u);
}

// Scene-text keys are unique within a line: the body's and its shape's together, the world's.
TEST(FieldLists, TextKeysAreUniquePerLine) {
  std::multiset<std::string_view> body, world;
  const auto add_to = [](std::multiset<std::string_view>* keys) {
    return [keys](const Field& field, auto) {
      if (!field.key.empty()) keys->insert(field.key);
    };
  };
  Fields<BodyDef>::visit(add_to(&body));
  Fields<ShapeDef>::visit(add_to(&body));
  Fields<WorldDef>::visit(add_to(&world));
  for (std::string_view key : body)
    EXPECT_EQ(body.count(key), 1u) << key;
  for (std::string_view key : world)
    EXPECT_EQ(world.count(key), 1u) << key;
}

WorldDef def_with_a_template() {
  WorldDef def = default_world_def();
  def.template_count = 1;
  EXPECT_TRUE(set_template_name(&def.templates[0], "crate"));
  return def;
}

// Every simulated field of a WorldDef, its template's included, changes the fingerprint (so a
// snapshot or replay of another def is refused); measure_stage_times does not.
TEST(FieldLists, EveryWorldDefFieldReachesTheFingerprint) {
  // With a hull, so the hull fields are in use (a world without hulls leaves them out).
  WorldDef base = def_with_a_template();
  base.hull_count = 1;
  base.hulls[0].point_count = 4;
  base.hulls[0].points[1] = {1, 0, 0};
  base.hulls[0].points[2] = {0, 1, 0};
  base.hulls[0].points[3] = {0, 0, 1};
  // And a compound of one child, so the compound fields are in use too.
  base.compound_count = 1;
  EXPECT_TRUE(set_compound_name(&base.compounds[0], "c"));
  base.compounds[0].child_count = 1;
  const uint64_t base_fingerprint = world_def_fingerprint(base);
  size_t leaf = 0, leaves = 0;
  for_each_leaf(base, [&](const std::string&, const Field&, const auto&) { ++leaves; });
  for (leaf = 0; leaf < leaves; ++leaf) {
    WorldDef def = base;
    size_t i = 0;
    bool simulated = true;
    std::string name;
    for_each_leaf(def, [&](const std::string& n, const Field& field, auto& value) {
      if (i++ != leaf) return;
      change_value(value);
      name = n;
      simulated = (field.flags & field_not_simulated) == 0;
      // A template's hull, compound and level indices are encoded only for such a shape;
      // the template is a sphere (HullIndexReachesTheStateHashAndSnapshots covers the index).
      if ((field.flags & field_encoded_if_used) != 0 &&
          (n.find("shape.hull") != std::string::npos ||
           n.find("shape.compound") != std::string::npos ||
           n.find("shape.mesh") != std::string::npos)) {
        simulated = false;
      }
    });
    SCOPED_TRACE(name);
    EXPECT_EQ(world_def_fingerprint(def) != base_fingerprint, simulated);
  }
}

// The fingerprint's bytes are those of the encoder that named every field by hand (values it
// gave): snapshots, replays and the golden hash chains carry it.
TEST(FieldLists, TheFingerprintIsTheOneBeforeTheLists) {
  EXPECT_EQ(world_def_fingerprint(default_world_def()), 0xb7879a4072ad7772ull);
  WorldDef def = def_with_a_template();
  EXPECT_EQ(world_def_fingerprint(def), 0xcd2a8b1d328a538dull);
  def.templates[0].bullet = true;
  def.templates[0].shape.sensor = true;
  EXPECT_EQ(world_def_fingerprint(def), 0xa15a92e286621b50ull);
}

// A hull shape's index is in the state hash and snapshots (other shapes leave it out, so a
// world without hulls hashes as before hulls existed).
TEST(FieldLists, HullIndexReachesTheStateHashAndSnapshots) {
  WorldDef def = default_world_def();
  def.hull_count = 2;
  for (uint32_t h = 0; h < 2; ++h) {
    def.hulls[h].point_count = 4;
    def.hulls[h].points[1] = {1, 0, 0};
    def.hulls[h].points[2] = {0, 1, 0};
    def.hulls[h].points[3] = {0, 0, 1.0f + static_cast<float>(h)};
  }
  uint64_t hashes[2];
  for (uint32_t h = 0; h < 2; ++h) {
    std::unique_ptr<World> world = World::create(def);
    ASSERT_NE(world, nullptr);
    BodyDef body = default_body_def();
    body.type = BodyType::static_body;
    body.shape.type = ShapeType::hull;
    body.shape.hull = h;
    BodyId id;
    ASSERT_EQ(world->create_body(body, &id), Error::none);
    hashes[h] = world->state_hash();
    std::vector<uint8_t> snapshot(world->snapshot_size());
    ASSERT_EQ(world->save_snapshot(snapshot, nullptr), Error::none);
    std::unique_ptr<World> copy = World::create(def);
    ASSERT_EQ(copy->restore_snapshot(snapshot), Error::none);
    BodyView view;
    ASSERT_EQ(copy->get_body(id, &view), Error::none);
    EXPECT_EQ(view.shape.hull, h);
    EXPECT_EQ(copy->state_hash(), hashes[h]);
  }
  EXPECT_NE(hashes[0], hashes[1]);
}

BodyDef test_body() {
  BodyDef body = default_body_def();
  body.position = {1, 2, 3};
  return body;
}

uint64_t hash_of_world_with(const BodyDef& body, std::string* error) {
  std::unique_ptr<World> world = World::create(default_world_def());
  BodyId id;
  const Error e = world->create_body(body, &id);
  if (e != Error::none) *error = error_message(e);
  return world->state_hash();
}

// Every BodyDef field reaches the state hash, and a snapshot carries it to another world.
TEST(FieldLists, EveryBodyDefFieldReachesTheStateHashAndSnapshots) {
  const BodyDef base = test_body();
  std::string error;
  const uint64_t base_hash = hash_of_world_with(base, &error);
  ASSERT_EQ(error, "");
  size_t leaves = 0;
  for_each_leaf(base, [&](const std::string&, const Field&, const auto&) { ++leaves; });
  for (size_t leaf = 0; leaf < leaves; ++leaf) {
    BodyDef body = base;
    size_t i = 0;
    std::string name;
    bool only_if_used = false;
    for_each_leaf(body, [&](const std::string& n, const Field& field, auto& value) {
      if (i++ != leaf) return;
      change_value(value);
      name = n;
      only_if_used = (field.flags & field_encoded_if_used) != 0;
    });
    SCOPED_TRACE(name);
    if (only_if_used) continue;  // the hull index of a sphere: HullIndexReachesTheStateHash
    std::unique_ptr<World> world = World::create(default_world_def());
    BodyId id;
    ASSERT_EQ(world->create_body(body, &id), Error::none);
    EXPECT_NE(world->state_hash(), base_hash);
    std::vector<uint8_t> snapshot(world->snapshot_size());
    ASSERT_EQ(world->save_snapshot(snapshot, nullptr), Error::none);
    std::unique_ptr<World> copy = World::create(default_world_def());
    ASSERT_EQ(copy->restore_snapshot(snapshot), Error::none);
    EXPECT_EQ(copy->state_hash(), world->state_hash());
  }
}

// A body or template whose every field is changed, as one shape type: the fields of other shape
// types are not in the text, so they keep their defaults.
BodyDef changed_body(ShapeType shape) {
  BodyDef body = test_body();
  change_every_leaf(body);
  body.type = shape == ShapeType::plane ? BodyType::static_body : BodyType::dynamic;
  body.shape.type = shape;
  if (shape == ShapeType::plane) body.shape.plane_normal = {0, 1, 0};
  const BodyDef defaults = default_body_def();
  Fields<ShapeDef>::visit([&](const Field& field, auto member) {
    if ((field.shapes & shape_bit(shape)) == 0) body.shape.*member = defaults.shape.*member;
  });
  return body;
}

// Every field of the world line, the templates and the bodies, changed from its default, comes
// back bit for bit from the scene text.
TEST(FieldLists, EveryFieldRoundTripsThroughTheSceneText) {
  Scene scene;
  scene.def = default_world_def();
  for_each_leaf(scene.def, [](const std::string& name, const Field& field, auto& value) {
    if (!field.key.empty() && name.find("templates") != 0) change_value(value);
  });
  scene.def.max_bodies = 8;
  // The hull shapes' points: one hull, which the text writes on each line that uses it.
  scene.def.hull_count = 1;
  scene.def.hulls[0] = HullDef{};
  scene.def.hulls[0].point_count = 4;
  scene.def.hulls[0].points[1] = {1, 0, 0};
  scene.def.hulls[0].points[2] = {0, 1, 0};
  scene.def.hulls[0].points[3] = {0, 0, 1};
  // The compound shapes' compound: one of one child (its keys changed above), named.
  scene.def.compound_count = 1;
  ASSERT_TRUE(set_compound_name(&scene.def.compounds[0], "c"));
  scene.def.compounds[0].child_count = 1;
  // Changed from a box into a capsule: the text writes a capsule's sizes, not a box's.
  ASSERT_EQ(scene.def.compounds[0].children[0].type, ShapeType::capsule);
  scene.def.compounds[0].children[0].half_extents = CompoundChild{}.half_extents;
  // Level shapes (mesh, heightfield) name geometry the text format does not carry yet.
  for (size_t s = 0; s < static_cast<size_t>(ShapeType::mesh); ++s) {
    BodyDef body = changed_body(static_cast<ShapeType>(s));
    body.shape.hull = 0;
    body.shape.compound = 0;
    scene.bodies.push_back(body);
    BodyTemplate& t = scene.def.templates[scene.def.template_count++];
    change_every_leaf(t);
    t.name[1] = static_cast<char>('0' + s);
    set_template_properties(&t, body);
  }
  const std::string text = format_scene_text(scene);
  Scene back;
  std::string error;
  ASSERT_TRUE(parse_scene_text(text, &back, &error)) << error << "\n" << text;
  EXPECT_EQ(first_difference(back.def, scene.def), "") << text;
  ASSERT_EQ(back.bodies.size(), scene.bodies.size());
  for (size_t i = 0; i < scene.bodies.size(); ++i)
    EXPECT_EQ(first_difference(back.bodies[i], scene.bodies[i]), "") << i << "\n" << text;
}

}  // namespace
}  // namespace lockstep::sim

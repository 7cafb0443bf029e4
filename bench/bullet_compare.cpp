// lockstep-bench-bullet: the same scenes stepped by lockstep's World and by Bullet 3
// (btDiscreteDynamicsWorld + btSequentialImpulseConstraintSolver), one thread, in one process,
// with the runs of the two engines interleaved so that both see the same machine load.
//
// Every BodyDef of a scene (bench_scenes.h: the built-in scenes, rain, grid-N) is mirrored into
// Bullet with the same shape sizes, mass and principal inertia (sim::compute_mass_properties),
// level geometry as Bullet's own level shapes (a mesh as a btBvhTriangleMeshShape over a
// btTriangleIndexVertexArray of the same vertices and indices, a heightfield as a
// btHeightfieldTerrainShape of the same heights, split along the same diagonal; both with
// Bullet's internal-edge utility, as a Bullet game does for a level),
// pose, velocities, damping, friction and restitution; the pair rules are made equal through
// Bullet's combine callbacks (friction sqrt(μa·μb), restitution max(ea, eb), as ours). Gravity,
// dt (one fixed substep per step) and solver iterations are the same; bench/README.md maps every
// setting. Quality is measured with one ruler for both engines: the deepest overlap between any
// two shapes, computed by our narrowphase on the poses each engine produced.
#include <BulletCollision/CollisionDispatch/btInternalEdgeUtility.h>
#include <BulletCollision/CollisionShapes/btHeightfieldTerrainShape.h>
#include <BulletCollision/CollisionShapes/btTriangleIndexVertexArray.h>
#include <btBulletDynamicsCommon.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "alloc_counter.h"
#include "bench_scenes.h"
#include "hull.h"
#include "lockstep/sim/scene.h"
#include "lockstep/sim/world.h"

namespace {

using namespace lockstep::sim;
using lockstep::bench::BenchScene;
using lockstep::bench::PosedShape;
using Clock = std::chrono::steady_clock;

// ---- engines -----------------------------------------------------------------------------------

/// The operations a run needs from an engine; bodies are indexed in creation order.
class Engine {
 public:
  virtual ~Engine() = default;
  virtual bool add_body(const BodyDef& def) = 0;
  virtual void step() = 0;
  virtual size_t body_count() const = 0;
  /// Shape and pose of every body, in creation order (`out` is resized).
  virtual void poses(std::vector<PosedShape>* out) const = 0;
  virtual Vec3 linear_velocity(size_t body) const = 0;
  virtual Vec3 angular_velocity(size_t body) const = 0;
  /// Deepest overlap the engine itself reports for its last step's contacts (m, ≥ 0).
  virtual float own_penetration_m() = 0;
  /// Steps that ran out of a capacity (ours); 0 for engines that grow instead.
  virtual uint64_t overflow_steps() const { return 0; }
};

/// The scene's level geometry as a LevelDef (spans into the scene).
struct SceneLevel {
  std::vector<MeshDef> meshes;
  std::vector<HeightfieldDef> heightfields;
  explicit SceneLevel(const Scene& scene) {
    for (const SceneMesh& m : scene.meshes)
      meshes.push_back(MeshDef{m.vertices, m.indices});
    for (const SceneHeightfield& h : scene.heightfields)
      heightfields.push_back(
          HeightfieldDef{h.heights, h.columns, h.rows, h.spacing_x, h.spacing_z});
  }
  LevelDef def() const {
    LevelDef level;
    level.meshes = meshes;
    level.heightfields = heightfields;
    return level;
  }
};

class LockstepEngine final : public Engine {
 public:
  explicit LockstepEngine(const Scene& scene)
      : world_(World::create(scene.def, SceneLevel(scene).def())) {}
  bool ok() const { return world_ != nullptr; }
  void reserve(size_t bodies) { ids_.reserve(bodies); }

  bool add_body(const BodyDef& def) override {
    BodyId id;
    if (world_->create_body(def, &id) != Error::none) return false;
    ids_.push_back(id);
    return true;
  }
  void step() override { world_->step(); }
  size_t body_count() const override { return ids_.size(); }
  void poses(std::vector<PosedShape>* out) const override {
    out->resize(ids_.size());
    for (size_t i = 0; i < ids_.size(); ++i) {
      BodyView view;
      world_->get_body(ids_[i], &view);
      (*out)[i] = {view.shape, {view.position, view.orientation}, view.type == BodyType::dynamic};
    }
  }
  Vec3 linear_velocity(size_t body) const override {
    BodyView view;
    world_->get_body(ids_[body], &view);
    return view.linear_velocity;
  }
  Vec3 angular_velocity(size_t body) const override {
    BodyView view;
    world_->get_body(ids_[body], &view);
    return view.angular_velocity;
  }
  // Our contacts are the narrowphase the ruler uses, on the same poses: the ruler is our own
  // report (own_pen_mm repeats max_pen_mm for this engine).
  float own_penetration_m() override { return -1; }
  uint64_t overflow_steps() const override { return world_->counters().overflow_steps; }

 private:
  std::unique_ptr<World> world_;
  std::vector<BodyId> ids_;
};

btVector3 to_bt(Vec3 v) {
  return {v.x, v.y, v.z};
}
Vec3 from_bt(const btVector3& v) {
  return {static_cast<float>(v.x()), static_cast<float>(v.y()), static_cast<float>(v.z())};
}

// Pair rules equal to ours (contact_solver.cpp): Bullet's defaults are μa·μb and ea·eb.
btScalar combine_friction_like_ours(const btCollisionObject* a, const btCollisionObject* b) {
  return btSqrt(a->getFriction() * b->getFriction());
}
btScalar combine_restitution_like_ours(const btCollisionObject* a, const btCollisionObject* b) {
  return std::max(a->getRestitution(), b->getRestitution());
}

// Bullet's internal-edge fix for contacts with level triangles (its InternalEdge demo's hook):
// a contact from an inactive edge of a mesh or heightfield takes the triangle's normal.
bool adjust_internal_edges(btManifoldPoint& cp, const btCollisionObjectWrapper* a, int part_a,
                           int index_a, const btCollisionObjectWrapper* b, int part_b,
                           int index_b) {
  if (b->getCollisionShape()->getShapeType() == TRIANGLE_SHAPE_PROXYTYPE) {
    btAdjustInternalEdgeContacts(cp, b, a, part_b, index_b);
  } else if (a->getCollisionShape()->getShapeType() == TRIANGLE_SHAPE_PROXYTYPE) {
    btAdjustInternalEdgeContacts(cp, a, b, part_a, index_a);
  }
  return true;
}

/// Which Bullet settings follow ours (bench/README.md, "Settings").
enum class BulletVariant {
  // The terms: our solver iterations and restitution threshold; Bullet's own tuning
  // (one friction direction, no slop, warm start 0.85, split impulse) for the rest.
  equal_iterations,
  // Also our two friction directions per point and our linear slop: every setting that Bullet has.
  mapped,
  // Bullet's defaults (10 iterations, restitution threshold 0.2 m/s), for reference.
  stock,
};

class BulletEngine final : public Engine {
 public:
  BulletEngine(const Scene& scene, BulletVariant variant)
      : scene_(&scene),
        dispatcher_(&config_),
        world_(&dispatcher_, &broadphase_, &solver_, &config_) {
    const WorldDef& def = scene.def;
    hulls_.resize(def.hull_count);
    for (uint32_t h = 0; h < def.hull_count; ++h)
      (void)build_hull(def.hulls[h], &hulls_[h]);
    world_.setGravity(to_bt(def.gravity));
    dt_ = def.dt_s;
    btContactSolverInfo& info = world_.getSolverInfo();
    info.m_timeStep = def.dt_s;
    // Bullet's own position correction: its default Baumgarte factor 0.2 (erp, erp2) and split
    // impulse. Ours is the soft contact (contact_hertz, contact_damping_ratio): no equivalent.
    info.m_erp = 0.2f;
    info.m_erp2 = 0.2f;
    if (variant != BulletVariant::stock) {
      // Equal passes over the contacts: ours runs velocity_iterations biased and relax_iterations
      // relax passes in each of its substeps (plus a warm start and a restitution pass each).
      info.m_numIterations =
          static_cast<int>(def.substeps * (def.velocity_iterations + def.relax_iterations));
      info.m_restitutionVelocityThreshold = def.restitution_threshold;
    }
    if (variant == BulletVariant::mapped) {
      info.m_solverMode |= SOLVER_USE_2_FRICTION_DIRECTIONS;  // ours: a 2D friction block
      info.m_linearSlop = def.linear_slop_m;
    }
    // The pair rules are physics, not tuning: equal in every variant.
    gCalculateCombinedFrictionCallback = &combine_friction_like_ours;
    gCalculateCombinedRestitutionCallback = &combine_restitution_like_ours;
    gContactAddedCallback = &adjust_internal_edges;
  }
  ~BulletEngine() override {
    for (auto& body : bodies_)
      world_.removeRigidBody(body.get());
  }
  void reserve(size_t bodies) {
    bodies_.reserve(bodies);
    shapes_.reserve(bodies);
    defs_.reserve(bodies);
    level_poses_.reserve(bodies);
  }

  bool add_body(const BodyDef& def) override {
    std::unique_ptr<btCollisionShape> shape;
    const ShapeDef& s = def.shape;
    btVector3 origin_offset(0, 0, 0);  // Bullet's heightfield is centred on its box
    bool level = false;
    switch (s.type) {
      case ShapeType::sphere:
        shape = std::make_unique<btSphereShape>(s.radius);
        break;
      case ShapeType::box:  // the default 4 cm margin lies inside the given half extents
        shape = std::make_unique<btBoxShape>(to_bt(s.half_extents));
        break;
      case ShapeType::capsule:  // both along local y; Bullet takes the full segment length
        shape = std::make_unique<btCapsuleShape>(s.radius, 2 * s.half_height);
        break;
      case ShapeType::plane:
        shape = std::make_unique<btStaticPlaneShape>(to_bt(s.plane_normal), s.plane_offset);
        break;
      case ShapeType::hull: {
        // The same vertices, centre of mass at the origin. Bullet grows a hull by its collision
        // margin; 1 cm (its default is 4) keeps its bodies near their real surfaces.
        const HullGeometry& g = hulls_[s.hull];
        auto hull = std::make_unique<btConvexHullShape>();
        for (uint32_t v = 0; v < g.vertex_count; ++v)
          hull->addPoint(to_bt(g.vertices[v]), false);
        hull->recalcLocalAabb();
        hull->setMargin(0.01f);
        shape = std::move(hull);
        break;
      }
      case ShapeType::mesh: {
        // The same vertices and indices (Bullet reads ints: the same values), with its
        // quantized BVH, as a level loader would make it.
        if (s.mesh >= scene_->meshes.size()) return false;
        const SceneMesh& mesh = scene_->meshes[s.mesh];
        auto& indices = mesh_indices_.emplace_back(std::make_unique<std::vector<int>>());
        for (uint32_t index : mesh.indices)
          indices->push_back(static_cast<int>(index));
        auto array = std::make_unique<btTriangleIndexVertexArray>(
            static_cast<int>(indices->size() / 3), indices->data(),
            3 * static_cast<int>(sizeof(int)), static_cast<int>(mesh.vertices.size()),
            const_cast<btScalar*>(&mesh.vertices[0].x),  // Bullet's interface is not const
            static_cast<int>(sizeof(Vec3)));
        auto trimesh = std::make_unique<btBvhTriangleMeshShape>(array.get(), true, true);
        auto edges = std::make_unique<btTriangleInfoMap>();
        btGenerateInternalEdgeInfo(trimesh.get(), edges.get());
        level_arrays_.push_back(std::move(array));
        edge_maps_.push_back(std::move(edges));
        shape = std::move(trimesh);
        level = true;
        break;
      }
      case ShapeType::heightfield: {
        if (s.mesh >= scene_->heightfields.size()) return false;
        const SceneHeightfield& h = scene_->heightfields[s.mesh];
        const auto [lo, hi] = std::minmax_element(h.heights.begin(), h.heights.end());
        // Sample (c, r) at (c·spacing_x, height, r·spacing_z), cells split from (c, r) to
        // (c + 1, r + 1): Bullet's default split. Bullet centres the grid on its box.
        auto field = std::make_unique<btHeightfieldTerrainShape>(
            static_cast<int>(h.columns), static_cast<int>(h.rows), h.heights.data(), *lo, *hi, 1,
            false);
        field->setLocalScaling(btVector3(h.spacing_x, 1, h.spacing_z));
        origin_offset =
            btVector3(0.5f * static_cast<float>(h.columns - 1) * h.spacing_x, 0.5f * (*lo + *hi),
                      0.5f * static_cast<float>(h.rows - 1) * h.spacing_z);
        auto edges = std::make_unique<btTriangleInfoMap>();
        btGenerateInternalEdgeInfo(field.get(), edges.get());
        edge_maps_.push_back(std::move(edges));
        shape = std::move(field);
        level = true;
        break;
      }
      case ShapeType::compound:  // no compared scene has compounds
        return false;
    }
    const bool dynamic = def.type == BodyType::dynamic;
    // A hull's inertia is diagonal in its principal frame, which Bullet's body frame cannot
    // turn: the principal values are given as they are (the scene's hulls are near symmetric).
    const MassProperties mp =
        dynamic ? compute_mass_properties(
                      s, ShapeLibrary{hulls_.data(), static_cast<uint32_t>(hulls_.size())})
                : MassProperties{};
    btRigidBody::btRigidBodyConstructionInfo info(mp.mass, nullptr, shape.get(), to_bt(mp.inertia));
    const Quat q = normalize(def.orientation);
    const btQuaternion bq(q.x, q.y, q.z, q.w);
    info.m_startWorldTransform =
        btTransform(bq, to_bt(def.position) + quatRotate(bq, origin_offset));
    info.m_friction = s.friction;
    info.m_restitution = s.restitution;
    info.m_linearDamping = def.linear_damping;
    info.m_angularDamping = def.angular_damping;
    auto body = std::make_unique<btRigidBody>(info);
    if (def.type == BodyType::kinematic) {
      body->setCollisionFlags(body->getCollisionFlags() | btCollisionObject::CF_KINEMATIC_OBJECT);
    }
    if (level) {  // contacts with it go through adjust_internal_edges
      body->setCollisionFlags(body->getCollisionFlags() |
                              btCollisionObject::CF_CUSTOM_MATERIAL_CALLBACK);
    }
    if (dynamic) {
      body->setLinearVelocity(to_bt(def.linear_velocity));
      body->setAngularVelocity(to_bt(def.angular_velocity));
      body->setActivationState(DISABLE_DEACTIVATION);  // our scenes never sleep
    }
    world_.addRigidBody(body.get());
    shapes_.push_back(std::move(shape));
    bodies_.push_back(std::move(body));
    defs_.push_back(s);
    level_poses_.push_back(Transform{def.position, q});
    return true;
  }
  // maxSubSteps = 0: exactly one internal step of dt, no accumulator, no interpolation.
  void step() override { world_.stepSimulation(dt_, 0); }
  size_t body_count() const override { return bodies_.size(); }
  void poses(std::vector<PosedShape>* out) const override {
    out->resize(bodies_.size());
    for (size_t i = 0; i < bodies_.size(); ++i) {
      if (defs_[i].type == ShapeType::mesh || defs_[i].type == ShapeType::heightfield) {
        (*out)[i] = {defs_[i], level_poses_[i], false};  // static, and Bullet's origin is offset
        continue;
      }
      const btTransform& xf = bodies_[i]->getWorldTransform();
      const btQuaternion q = xf.getRotation();
      (*out)[i] = {
          defs_[i],
          {from_bt(xf.getOrigin()), Quat{static_cast<float>(q.x()), static_cast<float>(q.y()),
                                         static_cast<float>(q.z()), static_cast<float>(q.w())}},
          bodies_[i]->getInvMass() > 0};
    }
  }
  Vec3 linear_velocity(size_t body) const override {
    return from_bt(bodies_[body]->getLinearVelocity());
  }
  Vec3 angular_velocity(size_t body) const override {
    return from_bt(bodies_[body]->getAngularVelocity());
  }
  // Manifold distances come from the step's collision detection, before the solve: the
  // overlap as the step found it (= the previous step's result), with Bullet's rounded boxes.
  float own_penetration_m() override {
    float deepest = 0;
    btDispatcher* dispatcher = world_.getDispatcher();
    for (int m = 0; m < dispatcher->getNumManifolds(); ++m) {
      const btPersistentManifold* manifold = dispatcher->getManifoldByIndexInternal(m);
      for (int k = 0; k < manifold->getNumContacts(); ++k) {
        deepest =
            std::max(deepest, static_cast<float>(-manifold->getContactPoint(k).getDistance()));
      }
    }
    return deepest;
  }

 private:
  const Scene* scene_;
  btDefaultCollisionConfiguration config_;
  btCollisionDispatcher dispatcher_;
  btDbvtBroadphase broadphase_;
  btSequentialImpulseConstraintSolver solver_;
  btDiscreteDynamicsWorld world_;
  float dt_ = 1.0f / 60.0f;
  std::vector<std::unique_ptr<btCollisionShape>> shapes_;
  std::vector<HullGeometry> hulls_;
  std::vector<std::unique_ptr<btRigidBody>> bodies_;
  std::vector<ShapeDef> defs_;
  std::vector<Transform> level_poses_;  // every body's pose as given (read for level bodies)
  // What Bullet's level shapes point at: their index arrays, vertex-array interfaces and
  // internal-edge maps (its vertices are the scene's).
  std::vector<std::unique_ptr<std::vector<int>>> mesh_indices_;
  std::vector<std::unique_ptr<btTriangleIndexVertexArray>> level_arrays_;
  std::vector<std::unique_ptr<btTriangleInfoMap>> edge_maps_;
};

// Bullet's allocations go through the same byte counters as operator new.
void* bullet_alloc(size_t size) {
  return lockstep::testing::counted_malloc(size);
}
void bullet_free(void* p) {
  lockstep::testing::counted_free(p);
}

// ---- runs --------------------------------------------------------------------------------------

struct Plan {
  std::string scene;
  uint32_t steps = 600;        // steps per run
  uint32_t timed_steps = 600;  // the first timed_steps go into the timing figures
  uint32_t reps = 3;           // runs per engine (the first also measures quality)
};

// Default plan: about 5 minutes here (two engines, loaded 2-core VM; the two level scenes take
// about 2 of them). pyramid3d is timed over Jolt's 500 steps and runs to 600 (10 s) for the top
// box; the big cases run fewer times.
std::vector<Plan> default_plans() {
  return {{"pyramid", 600, 600, 3},
          {"pyramid3d", 600, 500, 2},
          {"pile", 600, 600, 3},
          {"bounce", 600, 600, 3},
          {"rain", 600, 600, 2},
          {"grid-1000", 300, 300, 3},
          {"grid-4000", 200, 200, 2},
          {"grid-10000", 100, 100, 1},
          // Level geometry over Jolt's 500 steps (ConvexVsMesh's protocol).
          {"convex_vs_mesh", 500, 500, 2},
          {"terrain_pile", 500, 500, 1}};
}

struct Result {
  std::string scene, engine;
  size_t bodies = 0;
  std::vector<double> run_mean_ms;       // one per run (thread CPU time)
  std::vector<double> run_mean_wall_ms;  // one per run (wall time)
  std::vector<double> step_ms;           // every timed step of every run (thread CPU time)
  double max_pen_mm = 0, own_pen_mm = -1;
  double end_pen_mm = 0;     // the deepest overlap after the last step (resting contacts)
  double top_moved_mm = -1;  // pyramids only: from the start (includes settling the gaps)
  double top_drift_mm = -1;  // ... from where it was after 2 s (120 steps)
  double energy_drift_pct = 0, elastic_drift_pct = 0;  // bounce only
  bool has_energy = false;
  uint32_t lost_bodies = 0;  // dynamic bodies whose centre ended below the floor (y < 0 or
                             // the level's lowest point)
  double mem_peak_mb = 0;
  uint64_t overflow_steps = 0;
  double ms_per_step = 0, median_ms = 0, p99_ms = 0, wall_ms_per_step = 0;
  double load_avg_1m = -1;  // the machine's 1-minute load average when the scene finished
};

/// The 1-minute load average (/proc/loadavg), -1 where there is none: the machine is shared.
double load_average_1m() {
  double load = -1;
  if (std::FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &load) != 1) load = -1;
    std::fclose(f);
  }
  return load;
}

/// Index of the dynamic body with the highest start y (the first of equals); SIZE_MAX if none.
size_t top_body(const BenchScene& bench) {
  size_t top = SIZE_MAX;
  for (size_t i = 0; i < bench.scene.bodies.size(); ++i) {
    const BodyDef& b = bench.scene.bodies[i];
    if (b.type != BodyType::dynamic) continue;
    if (top == SIZE_MAX || b.position.y > bench.scene.bodies[top].position.y) top = i;
  }
  return top;
}

double total_energy_j(const Engine& engine, const std::vector<PosedShape>& poses, Vec3 gravity,
                      const ShapeLibrary& library, size_t only = SIZE_MAX) {
  double sum = 0;
  for (size_t i = 0; i < poses.size(); ++i) {
    if (only != SIZE_MAX && i != only) continue;
    sum += lockstep::bench::mechanical_energy_j(poses[i], engine.linear_velocity(i),
                                                engine.angular_velocity(i), gravity, library);
  }
  return sum;
}

std::unique_ptr<Engine> make_engine(std::string_view name, const Scene& scene, size_t capacity) {
  if (name == "ours") {
    auto engine = std::make_unique<LockstepEngine>(scene);
    if (!engine->ok()) return nullptr;
    engine->reserve(capacity);
    return engine;
  }
  const BulletVariant variant = name == "bullet-stock"    ? BulletVariant::stock
                                : name == "bullet-mapped" ? BulletVariant::mapped
                                                          : BulletVariant::equal_iterations;
  auto engine = std::make_unique<BulletEngine>(scene, variant);
  engine->reserve(capacity);
  return engine;
}

// The pyramids have settled after 2 s: the top box's drift is measured from there.
constexpr uint32_t kSettledSteps = 120;

/// One run of `plan.steps` steps; quality is measured when `probe_every` > 0 (every that many
/// steps and after the last).
bool run_once(const Plan& plan, const BenchScene& bench, std::string_view engine_name,
              uint32_t probe_every, Result* result) {
  const WorldDef& def = bench.scene.def;
  const size_t capacity = bench.rain ? def.max_bodies : bench.scene.bodies.size();
  const bool measure = probe_every > 0;
  // Scratch of the measurements, taken before the memory baseline.
  std::vector<PosedShape> poses;
  poses.reserve(capacity);
  lockstep::bench::PenetrationProbe probe;
  probe.reserve(capacity);
  probe.hulls.resize(def.hull_count);
  for (uint32_t h = 0; h < def.hull_count; ++h)
    if (build_hull(def.hulls[h], &probe.hulls[h]) != Error::none) return false;
  const SceneLevel level(bench.scene);
  LevelStats level_stats;
  if (build_level(level.def(), &probe.meshes, &probe.heightfields, &level_stats) != Error::none)
    return false;
  const ShapeLibrary library{probe.hulls.data(), def.hull_count};
  // A body is lost when its centre ends below the floor: y = 0, or the level's lowest point.
  float floor_y = 0;
  for (const BodyDef& body : bench.scene.bodies) {
    if (body.shape.type == ShapeType::mesh && body.shape.mesh < probe.meshes.size()) {
      floor_y = std::min(floor_y, body.position.y + probe.meshes[body.shape.mesh].lower.y);
    } else if (body.shape.type == ShapeType::heightfield &&
               body.shape.mesh < probe.heightfields.size()) {
      floor_y = std::min(floor_y, body.position.y + probe.heightfields[body.shape.mesh].lower.y);
    }
  }
  std::vector<BodyDef> spawns(bench.rain_spec.per_tick);
  std::vector<double> step_ms(plan.steps);

  const int64_t baseline = lockstep::testing::alloc_totals().live_bytes;
  lockstep::testing::reset_alloc_peak();
  std::unique_ptr<Engine> engine = make_engine(engine_name, bench.scene, capacity);
  if (engine == nullptr) return false;
  for (const BodyDef& body : bench.scene.bodies) {
    if (!engine->add_body(body)) return false;
  }

  const size_t top = top_body(bench);
  const Vec3 top_start = top != SIZE_MAX ? bench.scene.bodies[top].position : Vec3{};
  Vec3 top_settled = top_start;
  size_t elastic = SIZE_MAX;  // bounce: the ball with the largest restitution
  for (size_t i = 0; i < bench.scene.bodies.size(); ++i) {
    const BodyDef& b = bench.scene.bodies[i];
    if (b.type != BodyType::dynamic) continue;
    if (elastic == SIZE_MAX || b.shape.restitution > bench.scene.bodies[elastic].shape.restitution)
      elastic = i;
  }
  double energy_start = 0, elastic_start = 0;
  const bool energy = measure && bench.scene.name == "bounce";
  if (energy) {
    engine->poses(&poses);
    energy_start = total_energy_j(*engine, poses, def.gravity, library);
    elastic_start = total_energy_j(*engine, poses, def.gravity, library, elastic);
  }

  double max_pen = 0, own_pen = 0;
  float last_pen = 0;
  uint32_t spawned = 0;
  double timed_ms = 0, timed_wall_ms = 0;
  for (uint32_t t = 0; t < plan.steps; ++t) {
    if (bench.rain) {
      const uint32_t n = lockstep::bench::rain_spawns(bench.rain_spec, spawned, spawns);
      for (uint32_t i = 0; i < n; ++i) {
        if (!engine->add_body(spawns[i])) return false;
      }
      spawned += n;
    }
    const Clock::time_point w0 = Clock::now();
    const int64_t t0 = lockstep::bench::thread_cpu_ns();
    engine->step();
    const int64_t t1 = lockstep::bench::thread_cpu_ns();
    const Clock::time_point w1 = Clock::now();
    step_ms[t] = static_cast<double>(t1 - t0) / 1e6;
    if (t < plan.timed_steps) {
      timed_ms += step_ms[t];
      timed_wall_ms += std::chrono::duration<double, std::milli>(w1 - w0).count();
    }
    if (measure && t + 1 == kSettledSteps && top != SIZE_MAX) {
      engine->poses(&poses);
      top_settled = poses[top].xf.p;
    }
    if (measure && ((t + 1) % probe_every == 0 || t + 1 == plan.steps)) {
      engine->poses(&poses);
      last_pen = probe.deepest_m(poses);
      max_pen = std::max(max_pen, static_cast<double>(last_pen));
      own_pen = std::max(own_pen, static_cast<double>(engine->own_penetration_m()));
    }
  }
  const int64_t peak = lockstep::testing::alloc_totals().peak_live_bytes - baseline;

  const uint32_t timed = std::min(plan.timed_steps, plan.steps);
  result->run_mean_ms.push_back(timed_ms / timed);
  result->run_mean_wall_ms.push_back(timed_wall_ms / timed);
  result->step_ms.insert(result->step_ms.end(), step_ms.begin(), step_ms.begin() + timed);
  result->bodies = engine->body_count();
  result->mem_peak_mb = std::max(result->mem_peak_mb, static_cast<double>(peak) / 1e6);
  result->overflow_steps = std::max(result->overflow_steps, engine->overflow_steps());
  if (measure) {
    engine->poses(&poses);
    result->max_pen_mm = max_pen * 1e3;
    result->end_pen_mm = static_cast<double>(last_pen) * 1e3;
    result->own_pen_mm = engine->own_penetration_m() < 0 ? result->max_pen_mm : own_pen * 1e3;
    if (top != SIZE_MAX && bench.scene.name.starts_with("pyramid")) {
      result->top_moved_mm = static_cast<double>(length(poses[top].xf.p - top_start)) * 1e3;
      if (plan.steps > kSettledSteps) {
        result->top_drift_mm = static_cast<double>(length(poses[top].xf.p - top_settled)) * 1e3;
      }
    }
    result->lost_bodies = 0;
    for (const PosedShape& p : poses) {
      if (p.dynamic && p.xf.p.y < floor_y) ++result->lost_bodies;
    }
    if (energy) {
      const double end = total_energy_j(*engine, poses, def.gravity, library);
      const double elastic_end = total_energy_j(*engine, poses, def.gravity, library, elastic);
      result->has_energy = true;
      result->energy_drift_pct = (end - energy_start) / std::fabs(energy_start) * 100;
      result->elastic_drift_pct = (elastic_end - elastic_start) / std::fabs(elastic_start) * 100;
    }
  }
  return true;
}

void summarise(Result* r) {
  std::vector<double> means = r->run_mean_ms;
  r->ms_per_step = lockstep::bench::distribution(means).median;
  std::vector<double> wall_means = r->run_mean_wall_ms;
  r->wall_ms_per_step = lockstep::bench::distribution(wall_means).median;
  std::vector<double> steps = r->step_ms;
  const lockstep::bench::Distribution d = lockstep::bench::distribution(steps);
  r->median_ms = d.median;
  r->p99_ms = d.p99;
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) items.push_back(item);
  }
  return items;
}

std::string fmt(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  btAlignedAllocSetCustom(&bullet_alloc, &bullet_free);

  CLI::App app{"lockstep-bench-bullet: the same scenes stepped by lockstep and by Bullet 3"};
  std::string scenes_arg, engines_arg = "ours,bullet", csv_path;
  uint32_t reps = 0, steps = 0, probe_every = 1;
  app.add_option("--scenes", scenes_arg,
                 "comma-separated scenes (built-in names, rain, grid-N); default: the full plan");
  app.add_option("--engines", engines_arg,
                 "comma-separated: ours, bullet, bullet-mapped, bullet-stock");
  app.add_option("--reps", reps, "runs per scene and engine (default: per scene)")
      ->check(CLI::Range(1, 1000));
  app.add_option("--steps", steps, "steps per run (default: per scene)")
      ->check(CLI::Range(1, 100000));
  app.add_option("--probe-every", probe_every, "quality probe every N steps of the first run")
      ->check(CLI::Range(1, 100000));
  app.add_option("--csv", csv_path, "also write the table as CSV to this file");
  CLI11_PARSE(app, argc, argv);

  std::vector<Plan> plans = default_plans();
  if (!scenes_arg.empty()) {
    std::vector<Plan> chosen;
    for (const std::string& name : split_list(scenes_arg)) {
      auto it =
          std::find_if(plans.begin(), plans.end(), [&](const Plan& p) { return p.scene == name; });
      chosen.push_back(it != plans.end() ? *it : Plan{name, 300, 300, 2});
    }
    plans = chosen;
  }
  for (Plan& p : plans) {
    if (reps != 0) p.reps = reps;
    if (steps != 0) p.timed_steps = p.steps = steps;
  }
  const std::vector<std::string> engines = split_list(engines_arg);
  for (const std::string& e : engines) {
    if (e != "ours" && e != "bullet" && e != "bullet-mapped" && e != "bullet-stock") {
      std::fprintf(stderr, "lockstep-bench-bullet: unknown engine '%s'\n", e.c_str());
      return 2;
    }
  }

  std::printf(
      "lockstep-bench-bullet: Bullet %d, btScalar %zu bytes; one thread; step time is the\n"
      "thread's CPU time around World::step() / stepSimulation(dt, 0) (wall: wall clock)\n\n",
      btGetVersion(), sizeof(btScalar));
  std::vector<Result> results;
  for (const Plan& plan : plans) {
    BenchScene bench;
    if (!lockstep::bench::make_bench_scene(plan.scene, &bench)) {
      std::fprintf(stderr, "lockstep-bench-bullet: unknown scene '%s'\n", plan.scene.c_str());
      return 2;
    }
    std::vector<Result> scene_results(engines.size());
    for (size_t e = 0; e < engines.size(); ++e) {
      scene_results[e].scene = plan.scene;
      scene_results[e].engine = engines[e];
    }
    for (uint32_t rep = 0; rep < plan.reps; ++rep) {
      // Alternate the order so neither engine always runs first (caches, frequency, load).
      for (size_t k = 0; k < engines.size(); ++k) {
        const size_t e = rep % 2 == 0 ? k : engines.size() - 1 - k;
        if (!run_once(plan, bench, engines[e], rep == 0 ? probe_every : 0, &scene_results[e])) {
          std::fprintf(stderr, "lockstep-bench-bullet: %s failed to build in %s\n",
                       plan.scene.c_str(), engines[e].c_str());
          return 1;
        }
      }
    }
    const double load = load_average_1m();
    for (Result& r : scene_results) {
      summarise(&r);
      r.load_avg_1m = load;
      std::printf("%-11s %-13s %6zu bodies  %8.3f ms/step  (median %.3f, p99 %.3f)\n",
                  r.scene.c_str(), r.engine.c_str(), r.bodies, r.ms_per_step, r.median_ms,
                  r.p99_ms);
      std::fflush(stdout);
      results.push_back(r);
    }
  }

  // Speed relative to the other engines on the same scene: their ms per step over this one's.
  auto speed_vs = [&](const Result& r, std::string_view other) -> double {
    for (const Result& o : results) {
      if (o.scene == r.scene && o.engine == other) return o.ms_per_step / r.ms_per_step;
    }
    return 0;
  };
  const char* header =
      "scene,engine,bodies,steps,timed_steps,reps,"
      "ms_per_step,median_ms,p99_ms,wall_ms_per_step,steps_per_s,speed_vs_bullet,"
      "max_pen_mm,own_pen_mm,end_pen_mm,top_box_moved_mm,top_box_drift_mm,"
      "energy_drift_pct,elastic_drift_pct,lost_bodies,mem_peak_mb,overflow_steps,load_avg_1m";
  std::string csv = std::string(header) + "\n";
  std::printf("\n%-11s %-13s %6s %8s %8s %8s %8s %6s %8s %8s %8s %8s %8s %8s %8s %5s %4s %7s\n",
              "scene", "engine", "bodies", "ms/step", "median", "p99", "wall", "vs_bt", "max_pen",
              "own_pen", "end_pen", "top_mv", "top_dft", "energy%", "elastic%", "lost", "ovfl",
              "mem_MB");
  for (const Result& r : results) {
    const Plan& plan = *std::find_if(plans.begin(), plans.end(),
                                     [&](const Plan& p) { return p.scene == r.scene; });
    const double vs = speed_vs(r, "bullet");
    const std::string top = r.top_moved_mm >= 0 ? fmt(r.top_moved_mm, 2) : "";
    const std::string drift = r.top_drift_mm >= 0 ? fmt(r.top_drift_mm, 2) : "";
    const std::string energy = r.has_energy ? fmt(r.energy_drift_pct, 2) : "";
    const std::string elastic = r.has_energy ? fmt(r.elastic_drift_pct, 2) : "";
    const std::string overflow = r.engine == "ours" ? std::to_string(r.overflow_steps) : "";
    std::printf(
        "%-11s %-13s %6zu %8.3f %8.3f %8.3f %8.3f %6s %8.2f %8.2f %8.2f %8s %8s %8s %8s %5u %4s "
        "%7.1f\n",
        r.scene.c_str(), r.engine.c_str(), r.bodies, r.ms_per_step, r.median_ms, r.p99_ms,
        r.wall_ms_per_step, vs > 0 ? fmt(vs, 2).c_str() : "", r.max_pen_mm, r.own_pen_mm,
        r.end_pen_mm, top.c_str(), drift.c_str(), energy.c_str(), elastic.c_str(), r.lost_bodies,
        overflow.c_str(), r.mem_peak_mb);
    csv += r.scene + "," + r.engine + "," + std::to_string(r.bodies) + "," +
           std::to_string(plan.steps) + "," + std::to_string(plan.timed_steps) + "," +
           std::to_string(plan.reps) + "," + fmt(r.ms_per_step, 4) + "," + fmt(r.median_ms, 4) +
           "," + fmt(r.p99_ms, 4) + "," + fmt(r.wall_ms_per_step, 4) + "," +
           fmt(1e3 / r.ms_per_step, 1) + "," + (vs > 0 ? fmt(vs, 3) : "") + "," +
           fmt(r.max_pen_mm, 3) + "," + fmt(r.own_pen_mm, 3) + "," + fmt(r.end_pen_mm, 3) + "," +
           top + "," + drift + "," + energy + "," + elastic + "," + std::to_string(r.lost_bodies) +
           "," + fmt(r.mem_peak_mb, 2) + "," + overflow + "," + fmt(r.load_avg_1m, 2) + "\n";
  }
  if (!csv_path.empty()) {
    std::FILE* f = std::fopen(csv_path.c_str(), "w");
    if (f == nullptr || std::fputs(csv.c_str(), f) < 0 || std::fclose(f) != 0) {
      std::fprintf(stderr, "lockstep-bench-bullet: cannot write %s\n", csv_path.c_str());
      return 1;
    }
    std::printf("\nwrote %s\n", csv_path.c_str());
  }
  return 0;
}

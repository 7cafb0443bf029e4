/* The C API from C: every entry point with good and bad arguments, compiled as C11 with warnings
 * as errors, linked against liblockstep_c only (no C++ compiler needed by a caller).
 *
 *   capi_test SCENE_DIR [PORT [TICKS]]
 * SCENE_DIR holds koth.scene; with PORT (a lockstep-server on 127.0.0.1), a client also joins
 * and verifies TICKS ticks (default 120). Exit 0 when every check passed; each failure prints its
 * line. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lockstep.h"

static int failures = 0;
static int checks = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    ++checks;                                                                  \
    if (!(cond)) {                                                             \
      ++failures;                                                              \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                          \
  } while (0)

#define EXPECT_STATUS(expected, call)                                                            \
  do {                                                                                           \
    lockstep_status got_ = (call);                                                               \
    ++checks;                                                                                    \
    if (got_ != (expected)) {                                                                    \
      ++failures;                                                                                \
      fprintf(stderr, "%s:%d: %s gave %d (%s: %s), expected %d\n", __FILE__, __LINE__, #call,    \
              (int)got_, lockstep_status_message(got_), lockstep_last_error(), (int)(expected)); \
    }                                                                                            \
  } while (0)

static const char kScene[] =
    "scene name=ctest version=1\n"
    "world dt=0.0166667 gravity=0,-9.81,0 max_bodies=16\n"
    "body name=floor type=static shape=box half=10,0.5,10 pos=0,-0.5,0\n"
    "body name=ball type=dynamic shape=sphere radius=0.5 pos=0,2,0 owner=1\n"
    "body name=zone type=static shape=box half=1,1,1 pos=0,1,0 sensor=1\n"
    "state name=goals scope=player type=int default=3\n";

static void test_versions(void) {
  CHECK(lockstep_api_version() / 10000 == LOCKSTEP_C_API_VERSION_MAJOR);
  CHECK(lockstep_api_version() >= LOCKSTEP_C_API_VERSION);
  CHECK(lockstep_physics_revision() > 0);
  CHECK(strcmp(lockstep_status_message(LOCKSTEP_OK), "ok") == 0);
  CHECK(strcmp(lockstep_status_message(12345), "unknown status") == 0);
}

static void test_create_errors(const char* scene_dir) {
  lockstep_world* w = (lockstep_world*)0x1;
  char path[1024];
  EXPECT_STATUS(LOCKSTEP_ERR_NULL_ARGUMENT, lockstep_world_create_from_scene_text(NULL, 3, &w));
  EXPECT_STATUS(LOCKSTEP_ERR_NULL_ARGUMENT,
                lockstep_world_create_from_scene_text(kScene, sizeof kScene - 1, NULL));
  EXPECT_STATUS(LOCKSTEP_ERR_PARSE, lockstep_world_create_from_scene_text("nonsense", 8, &w));
  CHECK(w == NULL);
  CHECK(strstr(lockstep_last_error(), "line 1") != NULL);
  EXPECT_STATUS(LOCKSTEP_ERR_IO, lockstep_world_create_from_scene_file("/nonexistent/x.scene", &w));
  EXPECT_STATUS(LOCKSTEP_ERR_NULL_ARGUMENT, lockstep_world_create_from_scene_file(NULL, &w));
  EXPECT_STATUS(LOCKSTEP_ERR_NOT_FOUND, lockstep_world_create_builtin("no_such_scene", &w));
  EXPECT_STATUS(LOCKSTEP_ERR_NULL_ARGUMENT, lockstep_world_create_builtin(NULL, &w));
  /* A world that would need far more memory than allowed is refused before allocating. */
  {
    static const char huge[] = "world max_bodies=4000000000\n";
    lockstep_status s = lockstep_world_create_from_scene_text(huge, sizeof huge - 1, &w);
    CHECK(s == LOCKSTEP_ERR_PARSE || s == LOCKSTEP_ERR_SCENE_REFUSED);
  }
  EXPECT_STATUS(LOCKSTEP_ERR_NULL_ARGUMENT, lockstep_world_create_from_welcome(NULL, 10, NULL, &w));
  {
    unsigned char junk[12] = {8, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8};
    EXPECT_STATUS(LOCKSTEP_ERR_BAD_FRAME, lockstep_world_create_from_welcome(junk, 3, NULL, &w));
    EXPECT_STATUS(LOCKSTEP_ERR_BAD_FRAME,
                  lockstep_world_create_from_welcome(junk, sizeof junk, NULL, &w));
    junk[0] = 9; /* the header no longer matches the size */
    EXPECT_STATUS(LOCKSTEP_ERR_BAD_FRAME,
                  lockstep_world_create_from_welcome(junk, sizeof junk, NULL, &w));
  }
  snprintf(path, sizeof path, "%s/koth.scene", scene_dir);
  EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_create_from_scene_file(path, &w));
  if (w != NULL) {
    uint32_t field = 0, count = 0;
    int32_t value = -1;
    EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_state_field_count(w, &count));
    CHECK(count == 2);
    EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_find_state_field(w, "king", &field));
    EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_state_value(w, field, 0, &value));
    CHECK(value == 0);
    EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_find_state_field(w, "score", &field));
    CHECK(field == LOCKSTEP_SCORE_STATE_FIELD);
    EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_destroy(w));
  }
  EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_destroy(NULL));
}

static void test_world(void) {
  lockstep_world* w = NULL;
  lockstep_world* copy = NULL;
  lockstep_body_id ball, zone, floor_id;
  lockstep_body body;
  lockstep_body bodies[8];
  lockstep_step_result result;
  uint64_t hash = 0, tick = 99, hash_a = 0, hash_b = 0;
  uint32_t count = 0, found = 0, field = 0;
  int32_t value = 0;
  size_t size = 0, max_size = 0, written = 0;
  unsigned char* snapshot;
  int i;

  EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_create_from_scene_text(kScene, sizeof kScene - 1, &w));
  if (w == NULL) return;
  CHECK(strcmp(lockstep_world_last_error(w), "") == 0);
  EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_tick(w, &tick));
  CHECK(tick == 0);
  EXPECT_STATUS(LOCKSTEP_ERR_NULL_ARGUMENT, lockstep_world_tick(w, NULL));
  EXPECT_STATUS(LOCKSTEP_ERR_NULL_ARGUMENT, lockstep_world_tick(NULL, &tick));
  EXPECT_STATUS(LOCKSTEP_ERR_NULL_ARGUMENT, lockstep_world_state_hash(w, NULL));
  EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_find_body(w, "ball", &ball));
  EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_find_body(w, "zone", &zone));
  EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_find_body(w, "floor", &floor_id));
  EXPECT_STATUS(LOCKSTEP_ERR_NOT_FOUND, lockstep_world_find_body(w, "nobody", &ball));
  CHECK(strstr(lockstep_world_last_error(w), "no scene body") != NULL);
  EXPECT_STATUS(LOCKSTEP_ERR_NULL_ARGUMENT, lockstep_world_find_body(w, NULL, &ball));
  EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_find_body(w, "ball", &ball));

  /* Bodies. */
  EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_body_count(w, &count));
  CHECK(count == 3);
  EXPECT_STATUS(LOCKSTEP_ERR_NULL_ARGUMENT, lockstep_world_body_count(w, NULL));
  EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_get_body(w, ball, &body));
  CHECK(body.type == LOCKSTEP_BODY_DYNAMIC && body.shape_type == LOCKSTEP_SHAPE_SPHERE);
  CHECK(body.position[1] == 2.0f && body.owner_player == 1 && body.mass_kg > 0.0f);
  {
    lockstep_body_id null_id = {0, 0}, stale = {ball.index1, ball.generation + 1};
    EXPECT_STATUS(LOCKSTEP_ERR_BAD_BODY, lockstep_world_get_body(w, null_id, &body));
    EXPECT_STATUS(LOCKSTEP_ERR_BAD_BODY, lockstep_world_get_body(w, stale, &body));
  }
  EXPECT_STATUS(LOCKSTEP_ERR_NULL_ARGUMENT, lockstep_world_get_body(w, ball, NULL));
  EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_get_bodies(w, bodies, 2, &count, &found));
  CHECK(count == 2 && found == 3);
  EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_get_bodies(w, bodies, 8, &count, NULL));
  CHECK(count == 3 && bodies[2].sensor == 1);
  EXPECT_STATUS(LOCKSTEP_ERR_NULL_ARGUMENT, lockstep_world_get_bodies(w, NULL, 8, &count, NULL));
  EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_get_bodies(w, NULL, 0, &count, &found));
  CHECK(count == 0 && found == 3);

  /* Stepping with an input: the ball is pushed sideways (impulse 1 N·s in fixed point). */
  {
    lockstep_input input;
    lockstep_command bad_command;
    memset(&input, 0, sizeof input);
    input.player = 1;
    input.sequence = 1;
    input.body = ball;
    input.linear_impulse[0] = 1 << LOCKSTEP_INPUT_SCALE_LOG2;
    EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_step(w, NULL, 0, &input, 1, &result));
    CHECK(result.tick == 1 && result.inputs_rejected == 0 && result.first_error == LOCKSTEP_OK);
    EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_get_body(w, ball, &body));
    CHECK(body.linear_velocity[0] > 0.0f);
    /* Refusals are counted, not fatal: another player's body, an unknown command type. */
    input.player = 2;
    memset(&bad_command, 0, sizeof bad_command);
    bad_command.type = 99;
    EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_step(w, &bad_command, 1, &input, 1, &result));
    CHECK(result.inputs_rejected == 1 && result.commands_rejected == 1);
    CHECK(result.first_error == LOCKSTEP_ERR_INVALID_ARGUMENT);
    /* A NaN in a command is refused by the world, counted as non-finite. */
    memset(&bad_command, 0, sizeof bad_command);
    bad_command.type = LOCKSTEP_COMMAND_SET_POSE;
    bad_command.body = ball;
    bad_command.orientation[3] = 1.0f;
    bad_command.position[1] = (float)NAN;
    EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_step(w, &bad_command, 1, NULL, 0, &result));
    CHECK(result.commands_rejected == 1 && result.first_error == LOCKSTEP_ERR_NON_FINITE);
    EXPECT_STATUS(LOCKSTEP_ERR_NULL_ARGUMENT, lockstep_world_step(w, NULL, 1, NULL, 0, NULL));
    EXPECT_STATUS(LOCKSTEP_ERR_NULL_ARGUMENT, lockstep_world_step(w, NULL, 0, NULL, 2, NULL));
    EXPECT_STATUS(LOCKSTEP_ERR_NULL_ARGUMENT, lockstep_world_step(NULL, NULL, 0, NULL, 0, NULL));
  }
  for (i = 0; i < 57; ++i)
    EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_step(w, NULL, 0, NULL, 0, NULL));
  EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_tick(w, &tick));
  CHECK(tick == 60);

  /* Events: the ball landed on the floor (a contact began at some step) and sits in the zone. */
  {
    lockstep_contact_event contacts[4];
    lockstep_sensor_event sensors[4];
    lockstep_game_event games[4];
    EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_contact_events(w, contacts, 4, &count, &found));
    CHECK(count <= found);
    EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_sensor_events(w, sensors, 4, &count, &found));
    EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_game_events(w, games, 4, &count, &found));
    CHECK(found == 0);
    EXPECT_STATUS(LOCKSTEP_ERR_NULL_ARGUMENT,
                  lockstep_world_contact_events(w, NULL, 4, &count, NULL));
    EXPECT_STATUS(LOCKSTEP_ERR_NULL_ARGUMENT,
                  lockstep_world_sensor_events(w, sensors, 4, NULL, NULL));
    EXPECT_STATUS(LOCKSTEP_ERR_NULL_ARGUMENT,
                  lockstep_world_game_events(NULL, games, 4, &count, NULL));
  }

  /* Game state: a command sets player 1's goals, an event is emitted. */
  {
    lockstep_command commands[2];
    lockstep_game_event games[4];
    lockstep_state_field info;
    EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_find_state_field(w, "goals", &field));
    EXPECT_STATUS(LOCKSTEP_ERR_NOT_FOUND, lockstep_world_find_state_field(w, "nope", &field));
    EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_find_state_field(w, "goals", &field));
    EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_state_field(w, field, &info));
    CHECK(strcmp(info.name, "goals") == 0 && info.scope == LOCKSTEP_STATE_PLAYER);
    CHECK(info.default_value == 3);
    EXPECT_STATUS(LOCKSTEP_ERR_INVALID_ARGUMENT, lockstep_world_state_field(w, 7, &info));
    EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_state_value(w, field, 1, &value));
    CHECK(value == 3);
    EXPECT_STATUS(LOCKSTEP_ERR_INVALID_ARGUMENT, lockstep_world_state_value(w, field, 0, &value));
    EXPECT_STATUS(LOCKSTEP_ERR_INVALID_ARGUMENT, lockstep_world_state_value(w, field, 65, &value));
    EXPECT_STATUS(LOCKSTEP_ERR_NOT_FOUND, lockstep_world_state_value(w, 9, 1, &value));
    EXPECT_STATUS(LOCKSTEP_ERR_NULL_ARGUMENT, lockstep_world_state_value(w, field, 1, NULL));
    memset(commands, 0, sizeof commands);
    commands[0].type = LOCKSTEP_COMMAND_SET_STATE;
    commands[0].template_index = field;
    commands[0].owner_player = 1;
    commands[0].score_delta = 7;
    commands[1].type = LOCKSTEP_COMMAND_EMIT_EVENT;
    commands[1].sequence = 1;
    commands[1].template_index = 42;
    commands[1].owner_player = 1;
    commands[1].score_delta = -5;
    EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_step(w, commands, 2, NULL, 0, &result));
    CHECK(result.commands_rejected == 0);
    EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_state_value(w, field, 1, &value));
    CHECK(value == 7);
    EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_game_events(w, games, 4, &count, &found));
    CHECK(count == 1 && games[0].type == 42 && games[0].player == 1 && games[0].value == -5);
  }

  /* Queries. */
  {
    const float origin[3] = {0.0f, 10.0f, 0.0f}, down[3] = {0.0f, -20.0f, 0.0f};
    const float nan_origin[3] = {(float)NAN, 0.0f, 0.0f}, zero[3] = {0.0f, 0.0f, 0.0f};
    const float pos[3] = {0.0f, 0.5f, 0.0f}, rot[4] = {0.0f, 0.0f, 0.0f, 1.0f};
    lockstep_ray_hit hit, hits[4];
    lockstep_query_shape shape;
    lockstep_query_filter filter;
    lockstep_body_id ids[4];
    int32_t has_hit = 0;
    EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_ray_cast(w, origin, down, NULL, &hit, &has_hit));
    CHECK(has_hit == 1 && hit.fraction > 0.0f && hit.fraction < 1.0f);
    EXPECT_STATUS(LOCKSTEP_ERR_NON_FINITE,
                  lockstep_world_ray_cast(w, nan_origin, down, NULL, &hit, &has_hit));
    EXPECT_STATUS(LOCKSTEP_ERR_INVALID_ARGUMENT,
                  lockstep_world_ray_cast(w, origin, zero, NULL, &hit, &has_hit));
    EXPECT_STATUS(LOCKSTEP_ERR_NULL_ARGUMENT,
                  lockstep_world_ray_cast(w, NULL, down, NULL, &hit, &has_hit));
    EXPECT_STATUS(LOCKSTEP_OK,
                  lockstep_world_ray_cast_all(w, origin, down, NULL, hits, 4, &count, &found));
    CHECK(count >= 2 && count == found);
    EXPECT_STATUS(LOCKSTEP_OK,
                  lockstep_world_ray_cast_all(w, origin, down, NULL, hits, 1, &count, &found));
    CHECK(count == 1 && found >= 2);
    EXPECT_STATUS(LOCKSTEP_ERR_INVALID_ARGUMENT,
                  lockstep_world_ray_cast_all(w, origin, down, NULL, hits, 0, &count, &found));
    EXPECT_STATUS(LOCKSTEP_ERR_NULL_ARGUMENT,
                  lockstep_world_ray_cast_all(w, origin, down, NULL, NULL, 4, &count, &found));
    memset(&shape, 0, sizeof shape);
    shape.type = LOCKSTEP_SHAPE_SPHERE;
    shape.radius = 1.0f;
    EXPECT_STATUS(LOCKSTEP_OK,
                  lockstep_world_overlap(w, &shape, pos, rot, NULL, ids, 4, &count, &found));
    CHECK(count >= 2);
    /* Only what the filter sees: the ball excluded. */
    filter.category_bits = 1;
    filter.mask_bits = 0xffffffffu;
    filter.exclude = ball;
    EXPECT_STATUS(LOCKSTEP_OK,
                  lockstep_world_overlap(w, &shape, pos, rot, &filter, ids, 4, &found, NULL));
    for (i = 0; i < (int)found; ++i)
      CHECK(ids[i].index1 != ball.index1);
    shape.radius = -1.0f;
    EXPECT_STATUS(LOCKSTEP_ERR_INVALID_ARGUMENT,
                  lockstep_world_overlap(w, &shape, pos, rot, NULL, ids, 4, &count, &found));
    shape.radius = (float)INFINITY;
    EXPECT_STATUS(LOCKSTEP_ERR_NON_FINITE,
                  lockstep_world_overlap(w, &shape, pos, rot, NULL, ids, 4, &count, &found));
    shape.type = LOCKSTEP_SHAPE_PLANE;
    EXPECT_STATUS(LOCKSTEP_ERR_INVALID_ARGUMENT,
                  lockstep_world_overlap(w, &shape, pos, rot, NULL, ids, 4, &count, &found));
    EXPECT_STATUS(LOCKSTEP_ERR_NULL_ARGUMENT,
                  lockstep_world_overlap(w, NULL, pos, rot, NULL, ids, 4, &count, &found));
  }

  /* Snapshots: save, step on, restore into a fresh world, the same hashes afterwards. */
  EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_snapshot_size(w, &size));
  EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_max_snapshot_size(w, &max_size));
  CHECK(size > 0 && size <= max_size);
  EXPECT_STATUS(LOCKSTEP_ERR_NULL_ARGUMENT, lockstep_world_snapshot_size(w, NULL));
  EXPECT_STATUS(LOCKSTEP_ERR_NULL_ARGUMENT, lockstep_world_max_snapshot_size(NULL, &size));
  snapshot = (unsigned char*)malloc(max_size);
  CHECK(snapshot != NULL);
  if (snapshot != NULL) {
    EXPECT_STATUS(LOCKSTEP_ERR_BUFFER_TOO_SMALL,
                  lockstep_world_save_snapshot(w, snapshot, size - 1, &written));
    EXPECT_STATUS(LOCKSTEP_ERR_NULL_ARGUMENT,
                  lockstep_world_save_snapshot(w, NULL, size, &written));
    EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_save_snapshot(w, snapshot, max_size, &written));
    CHECK(written == size);
    EXPECT_STATUS(LOCKSTEP_OK,
                  lockstep_world_create_from_scene_text(kScene, sizeof kScene - 1, &copy));
    EXPECT_STATUS(LOCKSTEP_ERR_BAD_SNAPSHOT, lockstep_world_restore_snapshot(copy, snapshot, 10));
    EXPECT_STATUS(LOCKSTEP_ERR_NULL_ARGUMENT, lockstep_world_restore_snapshot(copy, NULL, 10));
    snapshot[written / 2] ^= 0x40;
    EXPECT_STATUS(LOCKSTEP_ERR_BAD_SNAPSHOT,
                  lockstep_world_restore_snapshot(copy, snapshot, written));
    snapshot[written / 2] ^= 0x40;
    EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_restore_snapshot(copy, snapshot, written));
    for (i = 0; i < 30; ++i) {
      lockstep_world_step(w, NULL, 0, NULL, 0, NULL);
      lockstep_world_step(copy, NULL, 0, NULL, 0, NULL);
    }
    EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_state_hash(w, &hash_a));
    EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_state_hash(copy, &hash_b));
    CHECK(hash_a == hash_b && hash_a != 0);
    /* A frame that is not a Snapshot or TickFrame is refused; so is a client's-only call. */
    EXPECT_STATUS(LOCKSTEP_ERR_BAD_FRAME,
                  lockstep_world_apply_frame(copy, snapshot, 3, NULL, NULL));
    EXPECT_STATUS(LOCKSTEP_ERR_NULL_ARGUMENT,
                  lockstep_world_apply_frame(copy, NULL, 9, NULL, NULL));
    lockstep_world_destroy(copy);
    free(snapshot);
  }
  (void)hash;

  /* Scene actions: this scene has none. */
  {
    lockstep_command commands[2];
    lockstep_input inputs[2];
    uint32_t n_commands = 9, n_inputs = 9;
    EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_scene_actions(w, 1, commands, 2, &n_commands, inputs,
                                                            2, &n_inputs));
    CHECK(n_commands == 0 && n_inputs == 0);
    EXPECT_STATUS(LOCKSTEP_ERR_NULL_ARGUMENT,
                  lockstep_world_scene_actions(w, 1, NULL, 2, &n_commands, inputs, 2, &n_inputs));
  }
  EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_destroy(w));
}

static void test_scene_actions(void) {
  static const char scene[] =
      "world max_bodies=8\n"
      "template name=crate type=dynamic shape=box half=0.5,0.5,0.5\n"
      "body type=static shape=plane normal=0,1,0 offset=0\n"
      "at tick=2 spawn template=crate pos=0,3,0\n"
      "at tick=2 spawn template=crate pos=2,3,0\n";
  lockstep_world* w = NULL;
  lockstep_command commands[1];
  lockstep_input inputs[1];
  uint32_t n_commands = 0, n_inputs = 0, count = 0;
  EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_create_from_scene_text(scene, sizeof scene - 1, &w));
  if (w == NULL) return;
  EXPECT_STATUS(LOCKSTEP_ERR_BUFFER_TOO_SMALL,
                lockstep_world_scene_actions(w, 2, commands, 1, &n_commands, inputs, 1, &n_inputs));
  CHECK(n_commands == 2 && n_inputs == 0);
  {
    lockstep_command both[2];
    EXPECT_STATUS(LOCKSTEP_OK,
                  lockstep_world_scene_actions(w, 2, both, 2, &n_commands, inputs, 1, &n_inputs));
    lockstep_world_step(w, NULL, 0, NULL, 0, NULL);
    lockstep_world_step(w, both, n_commands, NULL, 0, NULL);
  }
  EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_body_count(w, &count));
  CHECK(count == 3);
  lockstep_world_destroy(w);
}

static void test_client_errors(void) {
  lockstep_client_options options;
  lockstep_client* c = NULL;
  lockstep_world* view = NULL;
  lockstep_client_event events[4];
  lockstep_client_stats stats;
  lockstep_input input;
  uint32_t count = 0, player = 0;
  uint64_t tick = 0, hash = 0;
  int32_t state = -1;
  EXPECT_STATUS(LOCKSTEP_ERR_NULL_ARGUMENT, lockstep_client_options_init(NULL));
  EXPECT_STATUS(LOCKSTEP_OK, lockstep_client_options_init(&options));
  CHECK(options.input_delay_ticks == -1 && options.event_capacity == 1024);
  options.max_prediction_ticks = 0;
  EXPECT_STATUS(LOCKSTEP_ERR_INVALID_ARGUMENT, lockstep_client_create(&options, &c));
  lockstep_client_options_init(&options);
  options.mode = 7;
  EXPECT_STATUS(LOCKSTEP_ERR_INVALID_ARGUMENT, lockstep_client_create(&options, &c));
  lockstep_client_options_init(&options);
  options.event_capacity = 0;
  EXPECT_STATUS(LOCKSTEP_ERR_INVALID_ARGUMENT, lockstep_client_create(&options, &c));
  EXPECT_STATUS(LOCKSTEP_ERR_NULL_ARGUMENT, lockstep_client_create(NULL, NULL));
  EXPECT_STATUS(LOCKSTEP_OK, lockstep_client_create(NULL, &c));
  if (c == NULL) return;
  EXPECT_STATUS(LOCKSTEP_OK, lockstep_client_state(c, &state));
  CHECK(state == LOCKSTEP_CLIENT_IDLE);
  EXPECT_STATUS(LOCKSTEP_ERR_NULL_ARGUMENT, lockstep_client_state(NULL, &state));
  EXPECT_STATUS(LOCKSTEP_ERR_NOT_READY, lockstep_client_player_id(c, &player));
  EXPECT_STATUS(LOCKSTEP_ERR_NOT_READY, lockstep_client_next_input_tick(c, &tick));
  memset(&input, 0, sizeof input);
  EXPECT_STATUS(LOCKSTEP_ERR_NOT_READY, lockstep_client_send_input(c, &input, 1, &tick));
  EXPECT_STATUS(LOCKSTEP_ERR_NULL_ARGUMENT, lockstep_client_send_input(c, NULL, 1, &tick));
  EXPECT_STATUS(LOCKSTEP_ERR_INVALID_ARGUMENT,
                lockstep_client_send_input(c, &input, 100000, &tick));
  EXPECT_STATUS(LOCKSTEP_ERR_NOT_READY, lockstep_client_request_resync(c, "why"));
  EXPECT_STATUS(LOCKSTEP_OK, lockstep_client_owned_bodies(c, NULL, 0, &count, NULL));
  CHECK(count == 0);
  EXPECT_STATUS(LOCKSTEP_ERR_INVALID_ARGUMENT, lockstep_client_world(c, 5, &view));
  EXPECT_STATUS(LOCKSTEP_OK, lockstep_client_world(c, LOCKSTEP_WORLD_CONFIRMED, &view));
  EXPECT_STATUS(LOCKSTEP_ERR_NOT_READY, lockstep_world_state_hash(view, &hash));
  EXPECT_STATUS(LOCKSTEP_ERR_READ_ONLY, lockstep_world_step(view, NULL, 0, NULL, 0, NULL));
  EXPECT_STATUS(LOCKSTEP_ERR_READ_ONLY, lockstep_world_destroy(view));
  EXPECT_STATUS(LOCKSTEP_ERR_NULL_ARGUMENT, lockstep_client_connect(c, NULL, 1, "r", "n", NULL));
  EXPECT_STATUS(LOCKSTEP_ERR_INVALID_ARGUMENT,
                lockstep_client_connect(c, "127.0.0.1", 0, "r", "n", NULL));
  EXPECT_STATUS(LOCKSTEP_ERR_INVALID_ARGUMENT, lockstep_client_poll(c, 600000, NULL));
  EXPECT_STATUS(LOCKSTEP_OK, lockstep_client_poll(c, 0, &count)); /* idle: nothing happens */
  CHECK(count == 0);
  EXPECT_STATUS(LOCKSTEP_ERR_NULL_ARGUMENT, lockstep_client_poll(NULL, 0, &count));
  EXPECT_STATUS(LOCKSTEP_ERR_NULL_ARGUMENT, lockstep_client_take_events(c, NULL, 4, &count));
  EXPECT_STATUS(LOCKSTEP_OK, lockstep_client_take_events(c, events, 4, &count));
  CHECK(count == 0);
  EXPECT_STATUS(LOCKSTEP_OK, lockstep_client_get_stats(c, &stats));
  CHECK(stats.ticks_applied == 0);
  EXPECT_STATUS(LOCKSTEP_ERR_NULL_ARGUMENT, lockstep_client_get_stats(c, NULL));
  EXPECT_STATUS(LOCKSTEP_OK, lockstep_client_disconnect(c));
  EXPECT_STATUS(LOCKSTEP_ERR_NULL_ARGUMENT, lockstep_client_disconnect(NULL));
  CHECK(strcmp(lockstep_client_last_error(NULL), "") == 0);
  EXPECT_STATUS(LOCKSTEP_OK, lockstep_client_destroy(c));
  EXPECT_STATUS(LOCKSTEP_OK, lockstep_client_destroy(NULL));
}

/* Joins the room of a running server, sends an input per tick, and requires `ticks` verified
 * ticks, no desync, and a readable confirmed world; then disconnects and sees the DISCONNECTED
 * event. */
static void test_client_joins(uint16_t port, uint64_t ticks) {
  lockstep_client* c = NULL;
  lockstep_world* view = NULL;
  lockstep_world* predicted = NULL;
  lockstep_client_options options;
  uint64_t predicted_events = 0, confirmed_tick = 0, predicted_tick = 0;
  lockstep_client_event events[64];
  lockstep_client_stats stats;
  uint64_t verified = 0, last_sent = 0, hash = 0;
  uint32_t count = 0, i, polls = 0;
  int joined = 0, disconnected = 0, desyncs = 0;
  /* With the prediction on: the confirmed world is still the verified one. An input delay of
   * three ticks puts the predicted world ahead of the confirmed one whatever the timing: the
   * client stamps its input about three ticks past the room, and predicts up to the tick before
   * it. (With one tick, on a quiet machine every poll wakes on the frame of the tick the clock
   * says is due, so there was nothing to predict and the test failed.) */
  lockstep_client_options_init(&options);
  options.prediction = 1;
  options.input_delay_ticks = 3;
  EXPECT_STATUS(LOCKSTEP_OK, lockstep_client_create(&options, &c));
  if (c == NULL) return;
  EXPECT_STATUS(LOCKSTEP_OK, lockstep_client_connect(c, "127.0.0.1", port, "capi_c", "c_test", ""));
  EXPECT_STATUS(LOCKSTEP_ERR_BAD_STATE,
                lockstep_client_connect(c, "127.0.0.1", port, "capi_c", "c_test", ""));
  lockstep_client_world(c, LOCKSTEP_WORLD_CONFIRMED, &view);
  lockstep_client_world(c, LOCKSTEP_WORLD_PREDICTED, &predicted);
  /* Bounded by polls of at most 50 ms: a server that stops answering ends the loop (the read
   * timeout disconnects), and 50 polls a tick are far more than a tick needs. */
  while (verified < ticks && !disconnected && polls++ < 50 * ticks) {
    uint64_t next = 0;
    if (lockstep_client_poll(c, 50, NULL) != LOCKSTEP_OK) break;
    while (lockstep_client_take_events(c, events, 64, &count) == LOCKSTEP_OK && count > 0) {
      for (i = 0; i < count; ++i) {
        if (events[i].type == LOCKSTEP_CLIENT_EVENT_JOINED) joined = 1;
        if (events[i].type == LOCKSTEP_CLIENT_EVENT_TICK_APPLIED) ++verified;
        if (events[i].type == LOCKSTEP_CLIENT_EVENT_TICK_PREDICTED) ++predicted_events;
        if (events[i].type == LOCKSTEP_CLIENT_EVENT_DESYNC) ++desyncs;
        if (events[i].type == LOCKSTEP_CLIENT_EVENT_DISCONNECTED) disconnected = 1;
      }
    }
    if (lockstep_client_next_input_tick(c, &next) == LOCKSTEP_OK && next > last_sent) {
      lockstep_body_id own[4];
      uint32_t n_own = 0;
      lockstep_client_owned_bodies(c, own, 4, &n_own, NULL);
      if (n_own > 0) {
        lockstep_input input;
        memset(&input, 0, sizeof input);
        input.body = own[0];
        input.linear_impulse[0] = (int32_t)((next % 7) << LOCKSTEP_INPUT_SCALE_LOG2);
        if (lockstep_client_send_input(c, &input, 1, &last_sent) != LOCKSTEP_OK) last_sent = next;
      } else {
        last_sent = next;
      }
    }
  }
  CHECK(joined);
  CHECK(verified >= ticks);
  CHECK(desyncs == 0);
  EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_state_hash(view, &hash));
  EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_tick(view, &confirmed_tick));
  EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_tick(predicted, &predicted_tick));
  CHECK(predicted_tick >= confirmed_tick);
  CHECK(predicted_events > 0);
  {
    lockstep_body bodies[8];
    uint32_t n = 0, live = 0;
    EXPECT_STATUS(LOCKSTEP_OK, lockstep_world_get_bodies(predicted, bodies, 8, &n, &live));
    CHECK(n > 0 && live > 0);
    EXPECT_STATUS(LOCKSTEP_ERR_READ_ONLY, lockstep_world_step(predicted, NULL, 0, NULL, 0, NULL));
  }
  EXPECT_STATUS(LOCKSTEP_OK, lockstep_client_get_stats(c, &stats));
  CHECK(stats.desyncs == 0 && stats.ticks_verified >= ticks);
  CHECK(stats.ticks_predicted > 0);
  lockstep_client_disconnect(c);
  for (polls = 0; !disconnected && polls < 200; ++polls) {
    lockstep_client_poll(c, 50, NULL);
    while (lockstep_client_take_events(c, events, 64, &count) == LOCKSTEP_OK && count > 0) {
      for (i = 0; i < count; ++i) {
        if (events[i].type == LOCKSTEP_CLIENT_EVENT_DISCONNECTED) disconnected = 1;
      }
    }
  }
  CHECK(disconnected);
  lockstep_client_destroy(c);
  printf(
      "capi_test: joined on port %u, %llu ticks verified, %llu predicted, %llu rollbacks, "
      "%llu desyncs\n",
      port, (unsigned long long)verified, (unsigned long long)stats.ticks_predicted,
      (unsigned long long)stats.rollbacks, (unsigned long long)stats.desyncs);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: capi_test SCENE_DIR [PORT]\n");
    return 2;
  }
  test_versions();
  test_create_errors(argv[1]);
  test_world();
  test_scene_actions();
  test_client_errors();
  if (argc > 2)
    test_client_joins((uint16_t)atoi(argv[2]), argc > 3 ? strtoull(argv[3], NULL, 10) : 120);
  printf("capi_test: %d checks, %d failed\n", checks, failures);
  return failures == 0 ? 0 : 1;
}

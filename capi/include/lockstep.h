/* lockstep.h: the C API of lockstep (C99), for engines and languages that call C: Unity (C#
 * P/Invoke), Godot, Unreal, Python ctypes, custom engines. docs/bindings.md says how to use it.
 *
 * - Opaque handles: lockstep_world (a simulation) and lockstep_client (a connection to a
 *   lockstep-server room). Made by a *_create call, released by the matching *_destroy.
 * - Every call returns a lockstep_status: LOCKSTEP_OK (0) or why it failed. A failed call changes
 *   nothing the caller can see, except where its comment says so. The message of the last
 *   failure is kept per handle (lockstep_world_last_error, lockstep_client_last_error) and per
 *   thread (lockstep_last_error, for calls that failed before a handle existed).
 * - The caller owns every buffer: results are written into the caller's arrays, with the count
 *   written and the count that exists; nothing the library returns needs freeing except handles.
 *   Stepping a world and reading it do not allocate; a client's events go into a ring made when
 *   the client is created (decoding what the server sends is the client SDK's own work).
 * - No C++ exception crosses this boundary; a null pointer, a bad size, NaN or infinity is a
 *   status code, never a crash.
 * - Threads: one handle is used by one thread at a time (no call locks). Different handles may be
 *   used from different threads at once.
 *
 * Versioning: LOCKSTEP_C_API_VERSION is the version this header describes, as
 * major * 10000 + minor * 100 + patch; lockstep_api_version() is the library's. A caller checks
 * that the majors are equal and the library's minor is at least the header's. Within a major,
 * functions and enum values are only added and no struct changes size or layout (the caller
 * allocates them, so a grown struct would be written past its end): new data comes with new
 * functions, and a struct changes only with a new major.
 */
#ifndef LOCKSTEP_H
#define LOCKSTEP_H

#include <stddef.h>
#include <stdint.h>

#define LOCKSTEP_C_API_VERSION_MAJOR 1
#define LOCKSTEP_C_API_VERSION_MINOR 0
#define LOCKSTEP_C_API_VERSION_PATCH 0
#define LOCKSTEP_C_API_VERSION                                                 \
  (LOCKSTEP_C_API_VERSION_MAJOR * 10000 + LOCKSTEP_C_API_VERSION_MINOR * 100 + \
   LOCKSTEP_C_API_VERSION_PATCH)

#if defined(_WIN32)
#if defined(LOCKSTEP_C_BUILDING)
#define LOCKSTEP_API __declspec(dllexport)
#else
#define LOCKSTEP_API __declspec(dllimport)
#endif
#else
#define LOCKSTEP_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status ---------------------------------------------------------------------------------- */

typedef int32_t lockstep_status;
enum {
  LOCKSTEP_OK = 0,
  LOCKSTEP_ERR_NULL_ARGUMENT = 1,    /* a required pointer was null */
  LOCKSTEP_ERR_INVALID_ARGUMENT = 2, /* a value out of its documented range */
  LOCKSTEP_ERR_NON_FINITE = 3,       /* NaN or infinity passed in */
  LOCKSTEP_ERR_BUFFER_TOO_SMALL = 4, /* the caller's buffer cannot hold the result */
  LOCKSTEP_ERR_PARSE = 5,            /* scene text that does not parse (message: line, column) */
  LOCKSTEP_ERR_IO = 6,               /* a file that cannot be read */
  LOCKSTEP_ERR_SCENE_REFUSED = 7,    /* the world refused the scene's definition or a body */
  LOCKSTEP_ERR_BAD_BODY = 8,         /* a null, destroyed or never-made body handle */
  LOCKSTEP_ERR_WRONG_BODY_TYPE = 9,  /* e.g. a sensor query on a body that is not a sensor */
  LOCKSTEP_ERR_CAPACITY = 10,        /* a capacity fixed at creation is full */
  LOCKSTEP_ERR_BAD_SNAPSHOT = 11,    /* truncated, corrupt, another version or another world */
  LOCKSTEP_ERR_NOT_FOUND = 12,       /* no scene, state field or template of that name */
  LOCKSTEP_ERR_READ_ONLY = 13,       /* a client's world may only be read */
  LOCKSTEP_ERR_NOT_READY = 14,       /* a client without the data yet (not joined, no world) */
  LOCKSTEP_ERR_BAD_STATE = 15,     /* the call does not fit the handle's state (connected twice) */
  LOCKSTEP_ERR_BAD_FRAME = 16,     /* wire bytes that do not decode, or another message kind */
  LOCKSTEP_ERR_VERSION = 17,       /* another physics revision or protocol version */
  LOCKSTEP_ERR_DESYNC = 18,        /* a TickFrame's hash differs from the local one */
  LOCKSTEP_ERR_OUT_OF_MEMORY = 19, /* an allocation failed (at creation) */
  LOCKSTEP_ERR_INTERNAL = 20       /* an unexpected failure inside the library (message says) */
};

/** One-line English name of a status (static storage; "unknown status" outside the enum). */
LOCKSTEP_API const char* lockstep_status_message(lockstep_status status);
/** The message of the last failed call on this thread ("" when none); valid until the next call
 * that fails on this thread. */
LOCKSTEP_API const char* lockstep_last_error(void);
/** The library's LOCKSTEP_C_API_VERSION. */
LOCKSTEP_API uint32_t lockstep_api_version(void);
/** The physics revision the library simulates: peers whose revisions differ desync. */
LOCKSTEP_API uint32_t lockstep_physics_revision(void);

/* ---- plain data ------------------------------------------------------------------------------ */

/** A body handle: slot index + 1 (0 = null) and the slot's generation. */
typedef struct lockstep_body_id {
  uint32_t index1;
  uint32_t generation;
} lockstep_body_id;

enum { LOCKSTEP_BODY_STATIC = 0, LOCKSTEP_BODY_KINEMATIC = 1, LOCKSTEP_BODY_DYNAMIC = 2 };
enum {
  LOCKSTEP_SHAPE_SPHERE = 0,
  LOCKSTEP_SHAPE_BOX = 1,
  LOCKSTEP_SHAPE_CAPSULE = 2,
  LOCKSTEP_SHAPE_PLANE = 3,
  LOCKSTEP_SHAPE_HULL = 4,
  LOCKSTEP_SHAPE_COMPOUND = 5,
  LOCKSTEP_SHAPE_MESH = 6,       /* static level geometry: a triangle mesh */
  LOCKSTEP_SHAPE_HEIGHTFIELD = 7 /* static level geometry: a height grid */
};

/** A body between steps. Lengths in m, velocities in m/s and rad/s, orientation x, y, z, w. */
typedef struct lockstep_body {
  lockstep_body_id id;
  int32_t type;       /* LOCKSTEP_BODY_* */
  int32_t shape_type; /* LOCKSTEP_SHAPE_* */
  float position[3];
  float orientation[4];
  float linear_velocity[3];
  float angular_velocity[3];
  float mass_kg; /* 0 for static and kinematic bodies */
  uint32_t owner_player;
  int32_t asleep;
  int32_t sensor;
} lockstep_body;

/** Fixed-point scale of input impulses and velocities: value = integer / 2^10 (exact). */
#define LOCKSTEP_INPUT_SCALE_LOG2 10
#define LOCKSTEP_INPUT_SETS_LINEAR_VELOCITY 1u
#define LOCKSTEP_INPUT_SETS_ANGULAR_VELOCITY 2u

/** A player's input for one tick: integers only, so nothing non-finite can be sent. */
typedef struct lockstep_input {
  uint32_t player;   /* the client fills it in */
  uint32_t sequence; /* 0: the client numbers it */
  lockstep_body_id body;
  int32_t linear_impulse[3];  /* N·s · 2^10 */
  int32_t angular_impulse[3]; /* N·m·s · 2^10 */
  uint32_t buttons;           /* game-defined bits */
  uint32_t flags;             /* LOCKSTEP_INPUT_SETS_* */
  int32_t linear_velocity[3]; /* m/s · 2^10, with LOCKSTEP_INPUT_SETS_LINEAR_VELOCITY */
  int32_t angular_velocity[3];
} lockstep_input;

/** Command types: the values of the simulation's commands (docs/gameplay.md). */
enum {
  LOCKSTEP_COMMAND_SPAWN = 0,
  LOCKSTEP_COMMAND_DESTROY = 1,
  LOCKSTEP_COMMAND_ADD_SCORE = 2,
  LOCKSTEP_COMMAND_SET_POSE = 3,
  LOCKSTEP_COMMAND_SET_VELOCITY = 4,
  LOCKSTEP_COMMAND_APPLY_IMPULSE = 5,
  LOCKSTEP_COMMAND_MOVE_KINEMATIC = 6,
  LOCKSTEP_COMMAND_RESPAWN = 7,
  LOCKSTEP_COMMAND_SET_STATE = 8,
  LOCKSTEP_COMMAND_ADD_STATE = 9,
  LOCKSTEP_COMMAND_EMIT_EVENT = 10
};

/** A command for a tick; fields as the simulation's Command (docs/gameplay.md, Commands). */
typedef struct lockstep_command {
  int32_t type; /* LOCKSTEP_COMMAND_* */
  uint32_t sequence;
  uint32_t template_index;
  float position[3];
  float orientation[4];
  float linear_velocity[3];
  float angular_velocity[3];
  uint32_t owner_player;
  lockstep_body_id body;
  int32_t score_delta;
} lockstep_command;

/** What one step did. */
typedef struct lockstep_step_result {
  uint64_t tick;
  uint64_t state_hash;
  uint32_t overflow;           /* bits of the capacities that ran out (degraded, not grown) */
  uint32_t commands_rejected;  /* refused when queued (bad values, capacity) */
  uint32_t inputs_rejected;    /* refused when queued (dead body, limits, capacity) */
  lockstep_status first_error; /* why the first refused one was refused; LOCKSTEP_OK if none */
} lockstep_step_result;

enum { LOCKSTEP_EVENT_BEGIN = 0, LOCKSTEP_EVENT_END = 1 };

typedef struct lockstep_contact_event {
  int32_t type; /* LOCKSTEP_EVENT_BEGIN or _END */
  lockstep_body_id a, b;
} lockstep_contact_event;

typedef struct lockstep_sensor_event {
  int32_t type;
  lockstep_body_id sensor, visitor;
} lockstep_sensor_event;

typedef struct lockstep_game_event {
  uint32_t type;   /* the game's own numbering */
  uint32_t player; /* 0: none */
  int32_t value;
  uint32_t sequence;
} lockstep_game_event;

/** Which bodies a query sees (the rule of two shapes touching); null pointer: the defaults. */
typedef struct lockstep_query_filter {
  uint32_t category_bits; /* default 1 */
  uint32_t mask_bits;     /* default 0xffffffff */
  lockstep_body_id exclude;
} lockstep_query_filter;

typedef struct lockstep_ray_hit {
  lockstep_body_id body;
  float point[3];
  float normal[3];
  float fraction; /* 0..1 along the translation */
} lockstep_ray_hit;

/** A query shape: sphere (radius), box (half_extents) or capsule (radius, half_height). */
typedef struct lockstep_query_shape {
  int32_t type; /* LOCKSTEP_SHAPE_SPHERE, _BOX or _CAPSULE */
  float radius;
  float half_extents[3];
  float half_height;
} lockstep_query_shape;

enum { LOCKSTEP_STATE_ROOM = 0, LOCKSTEP_STATE_PLAYER = 1 };
enum { LOCKSTEP_STATE_INT32 = 0, LOCKSTEP_STATE_FIXED = 1 };
/** The index lockstep_world_find_state_field gives the players' scores. */
#define LOCKSTEP_SCORE_STATE_FIELD 16u

typedef struct lockstep_state_field {
  char name[32]; /* NUL-terminated */
  int32_t scope; /* LOCKSTEP_STATE_ROOM or _PLAYER */
  int32_t type;  /* LOCKSTEP_STATE_INT32 or _FIXED (16.16) */
  int32_t default_value;
} lockstep_state_field;

/** What a Welcome said (lockstep_world_create_from_welcome). */
typedef struct lockstep_welcome_info {
  uint64_t current_tick;
  uint64_t world_def_fingerprint;
  uint32_t player_id;
  uint32_t physics_revision;
  uint16_t tick_rate_hz;
  uint16_t input_delay_ticks;
} lockstep_welcome_info;

/* ---- worlds ---------------------------------------------------------------------------------- */

typedef struct lockstep_world lockstep_world;

/** A world from scene text (docs/scene-format.md), `size` bytes (no NUL needed). */
LOCKSTEP_API lockstep_status lockstep_world_create_from_scene_text(const char* text, size_t size,
                                                                   lockstep_world** out);
/** A world from a scene file. */
LOCKSTEP_API lockstep_status lockstep_world_create_from_scene_file(const char* path,
                                                                   lockstep_world** out);
/** A world from a built-in scene: pyramid, pile, bounce, inputs, pyramid3d, ... */
LOCKSTEP_API lockstep_status lockstep_world_create_builtin(const char* name, lockstep_world** out);
/** A world from the Welcome frame a server sends (4-byte little-endian length, then the body):
 * the room's WorldDef, without bodies; restore the join Snapshot frame with
 * lockstep_world_apply_frame next. `info` (may be null) receives what the Welcome said. */
LOCKSTEP_API lockstep_status lockstep_world_create_from_welcome(const void* frame, size_t size,
                                                                lockstep_welcome_info* info,
                                                                lockstep_world** out);
/** Releases a world made by a *_create call (null is ignored; a client's world is refused). */
LOCKSTEP_API lockstep_status lockstep_world_destroy(lockstep_world* world);
/** The message of this world's last failed call ("" when none). Valid while the world lives. */
LOCKSTEP_API const char* lockstep_world_last_error(const lockstep_world* world);

/** Applies one server frame (length + body) to the world: a Snapshot is restored, a TickFrame's
 * commands and inputs are applied, the world steps and its hash is compared with the server's
 * (LOCKSTEP_ERR_DESYNC when it differs; the world has stepped). *tick and *state_hash (may be
 * null) receive the world's tick and hash afterwards. Other messages: LOCKSTEP_ERR_BAD_FRAME. */
LOCKSTEP_API lockstep_status lockstep_world_apply_frame(lockstep_world* world, const void* frame,
                                                        size_t size, uint64_t* tick,
                                                        uint64_t* state_hash);

/** Queues the commands, then the inputs, then steps one fixed dt. Refused ones are counted in
 * *result (may be null), never fatal: they are part of the deterministic outcome. */
LOCKSTEP_API lockstep_status lockstep_world_step(lockstep_world* world,
                                                 const lockstep_command* commands,
                                                 size_t command_count, const lockstep_input* inputs,
                                                 size_t input_count, lockstep_step_result* result);
/** The scene's own scripted commands and inputs for `tick` (scene `at tick=N` lines), to pass to
 * lockstep_world_step: writes up to the capacities, sets the counts that exist. */
LOCKSTEP_API lockstep_status lockstep_world_scene_actions(
    const lockstep_world* world, uint64_t tick, lockstep_command* commands,
    uint32_t command_capacity, uint32_t* command_count, lockstep_input* inputs,
    uint32_t input_capacity, uint32_t* input_count);
LOCKSTEP_API lockstep_status lockstep_world_tick(const lockstep_world* world, uint64_t* tick);
/** XXH3-64 of the canonical state after the last step: equal on every platform. */
LOCKSTEP_API lockstep_status lockstep_world_state_hash(const lockstep_world* world, uint64_t* hash);

/* Snapshots: canonical, versioned, checksummed state bytes. */
LOCKSTEP_API lockstep_status lockstep_world_snapshot_size(const lockstep_world* world,
                                                          size_t* bytes);
/** Bytes enough for any state this world can hold (to size a buffer once). */
LOCKSTEP_API lockstep_status lockstep_world_max_snapshot_size(const lockstep_world* world,
                                                              size_t* bytes);
LOCKSTEP_API lockstep_status lockstep_world_save_snapshot(const lockstep_world* world, void* buffer,
                                                          size_t capacity, size_t* written);
/** Replaces the state with a snapshot of a world with the same definition; on error untouched. */
LOCKSTEP_API lockstep_status lockstep_world_restore_snapshot(lockstep_world* world,
                                                             const void* bytes, size_t size);

/* Bodies. */
LOCKSTEP_API lockstep_status lockstep_world_body_count(const lockstep_world* world,
                                                       uint32_t* count);
LOCKSTEP_API lockstep_status lockstep_world_get_body(const lockstep_world* world,
                                                     lockstep_body_id id, lockstep_body* out);
/** Live bodies in slot order: up to `capacity` written to `out`, *count written, *found (may be
 * null) how many live. */
LOCKSTEP_API lockstep_status lockstep_world_get_bodies(const lockstep_world* world,
                                                       lockstep_body* out, uint32_t capacity,
                                                       uint32_t* count, uint32_t* found);
/** The BodyId of the scene body named `name` (scene `body ... name=NAME`). */
LOCKSTEP_API lockstep_status lockstep_world_find_body(const lockstep_world* world, const char* name,
                                                      lockstep_body_id* out);

/* Queries on the state the last step left (docs/gameplay.md). `filter` may be null. *found is how
 * many exist (more than written when the buffer is short); may be null. */
LOCKSTEP_API lockstep_status lockstep_world_ray_cast(const lockstep_world* world,
                                                     const float origin[3],
                                                     const float translation[3],
                                                     const lockstep_query_filter* filter,
                                                     lockstep_ray_hit* hit, int32_t* has_hit);
/** Every body along the ray, by fraction: at most 64 hits written per call (*found: all). */
LOCKSTEP_API lockstep_status lockstep_world_ray_cast_all(const lockstep_world* world,
                                                         const float origin[3],
                                                         const float translation[3],
                                                         const lockstep_query_filter* filter,
                                                         lockstep_ray_hit* hits, uint32_t capacity,
                                                         uint32_t* count, uint32_t* found);
LOCKSTEP_API lockstep_status lockstep_world_overlap(
    const lockstep_world* world, const lockstep_query_shape* shape, const float position[3],
    const float orientation[4], const lockstep_query_filter* filter, lockstep_body_id* bodies,
    uint32_t capacity, uint32_t* count, uint32_t* found);

/* Events of the last step, in their deterministic order. */
LOCKSTEP_API lockstep_status lockstep_world_contact_events(const lockstep_world* world,
                                                           lockstep_contact_event* out,
                                                           uint32_t capacity, uint32_t* count,
                                                           uint32_t* found);
LOCKSTEP_API lockstep_status lockstep_world_sensor_events(const lockstep_world* world,
                                                          lockstep_sensor_event* out,
                                                          uint32_t capacity, uint32_t* count,
                                                          uint32_t* found);
LOCKSTEP_API lockstep_status lockstep_world_game_events(const lockstep_world* world,
                                                        lockstep_game_event* out, uint32_t capacity,
                                                        uint32_t* count, uint32_t* found);

/* Game state (scene `state` lines). */
LOCKSTEP_API lockstep_status lockstep_world_state_field_count(const lockstep_world* world,
                                                              uint32_t* count);
LOCKSTEP_API lockstep_status lockstep_world_state_field(const lockstep_world* world, uint32_t index,
                                                        lockstep_state_field* out);
/** The index of the field named `name` (LOCKSTEP_SCORE_STATE_FIELD for "score"). */
LOCKSTEP_API lockstep_status lockstep_world_find_state_field(const lockstep_world* world,
                                                             const char* name, uint32_t* index);
/** A field's raw value: room fields ignore `player`; player fields take players 1..64. */
LOCKSTEP_API lockstep_status lockstep_world_state_value(const lockstep_world* world, uint32_t field,
                                                        uint32_t player, int32_t* value);

/* ---- clients --------------------------------------------------------------------------------- */

typedef struct lockstep_client lockstep_client;

enum { LOCKSTEP_MODE_LOCKSTEP = 0, LOCKSTEP_MODE_THIN = 1 };

typedef struct lockstep_client_options {
  int32_t mode;                  /* LOCKSTEP_MODE_*; default lockstep */
  int32_t prediction;            /* lockstep mode: run a predicted world ahead; default 0 */
  uint32_t max_prediction_ticks; /* 1..60; default 8 */
  int32_t input_delay_ticks;     /* -1 (default): the server's; else 0..1000 */
  int32_t auto_resync;           /* on a desync, ask for a snapshot; default 1 */
  uint32_t connect_timeout_ms;   /* default 5000 */
  uint32_t read_timeout_ms;      /* default 10000 */
  uint32_t event_capacity;       /* events held between polls and takes; default 1024 */
  const char* scene_name;        /* the scene to ask for; null or "": the room's */
  const char* replay_dir;        /* write a replay window here on a desync; null: none */
} lockstep_client_options;

/** Fills *options with the defaults. */
LOCKSTEP_API lockstep_status lockstep_client_options_init(lockstep_client_options* options);
/** A client, not connected; options may be null (the defaults). Strings are copied. */
LOCKSTEP_API lockstep_status lockstep_client_create(const lockstep_client_options* options,
                                                    lockstep_client** out);
/** Closes the connection if any and releases the client and its worlds (null is ignored). */
LOCKSTEP_API lockstep_status lockstep_client_destroy(lockstep_client* client);
LOCKSTEP_API const char* lockstep_client_last_error(const lockstep_client* client);

/** Starts connecting to host:port and asks to join `room` as `name` with `token` (may be null
 * or "": none). Returns at once; progress arrives as events from lockstep_client_poll. */
LOCKSTEP_API lockstep_status lockstep_client_connect(lockstep_client* client, const char* host,
                                                     uint16_t port, const char* room,
                                                     const char* name, const char* token);
/** Drives the socket (waiting up to wait_ms for something to arrive; 0: not at all), applies
 * every received frame to the local world(s) and queues the resulting events. *queued (may be
 * null): events waiting for lockstep_client_take_events. */
LOCKSTEP_API lockstep_status lockstep_client_poll(lockstep_client* client, uint32_t wait_ms,
                                                  uint32_t* queued);

enum {
  LOCKSTEP_CLIENT_EVENT_JOINED = 1,         /* player_id, tick, tick_rate_hz */
  LOCKSTEP_CLIENT_EVENT_TICK_APPLIED = 2,   /* tick, server_hash (= local, verified), input_count */
  LOCKSTEP_CLIENT_EVENT_SNAPSHOT = 3,       /* tick, server_hash, resync */
  LOCKSTEP_CLIENT_EVENT_DESYNC = 4,         /* tick, local_hash, server_hash; text: replay path */
  LOCKSTEP_CLIENT_EVENT_DISCONNECTED = 5,   /* code, text: the reason. Always the last event */
  LOCKSTEP_CLIENT_EVENT_ERROR = 6,          /* code, fatal, text */
  LOCKSTEP_CLIENT_EVENT_TICK_PREDICTED = 7, /* tick, confirmed_tick */
  LOCKSTEP_CLIENT_EVENT_ROLLED_BACK = 8     /* tick (from), ticks_resimulated, cost_us */
};

/** One event of a client. `code` is the protocol's error code (docs/protocol.md), 0 for none. */
typedef struct lockstep_client_event {
  uint64_t tick;
  uint64_t local_hash;
  uint64_t server_hash;
  uint64_t confirmed_tick;
  int32_t type; /* LOCKSTEP_CLIENT_EVENT_* */
  int32_t code;
  int32_t fatal;
  int32_t resync;
  uint32_t player_id;
  uint32_t tick_rate_hz;
  uint32_t input_count;
  uint32_t ticks_resimulated;
  uint32_t cost_us;
  uint32_t text_truncated; /* 1 when `text` was cut to fit */
  char text[256];          /* NUL-terminated */
} lockstep_client_event;

/** Moves up to `capacity` queued events, oldest first, into `out`; *count how many. */
LOCKSTEP_API lockstep_status lockstep_client_take_events(lockstep_client* client,
                                                         lockstep_client_event* out,
                                                         uint32_t capacity, uint32_t* count);

enum {
  LOCKSTEP_CLIENT_IDLE = 0,
  LOCKSTEP_CLIENT_CONNECTING = 1,
  LOCKSTEP_CLIENT_JOINED = 2,
  LOCKSTEP_CLIENT_DISCONNECTED = 3
};
LOCKSTEP_API lockstep_status lockstep_client_state(const lockstep_client* client, int32_t* state);
LOCKSTEP_API lockstep_status lockstep_client_player_id(const lockstep_client* client,
                                                       uint32_t* player_id);
/** The bodies this player may push (their ids, up to capacity; *found: how many). */
LOCKSTEP_API lockstep_status lockstep_client_owned_bodies(const lockstep_client* client,
                                                          lockstep_body_id* out, uint32_t capacity,
                                                          uint32_t* count, uint32_t* found);
/** The tick lockstep_client_send_input would stamp now (LOCKSTEP_ERR_NOT_READY before joining);
 * send once per tick: skip while this is not past the tick last sent for. */
LOCKSTEP_API lockstep_status lockstep_client_next_input_tick(const lockstep_client* client,
                                                             uint64_t* tick);
/** Sends inputs for this player's bodies; *target_tick (may be null): the tick stamped. */
LOCKSTEP_API lockstep_status lockstep_client_send_input(lockstep_client* client,
                                                        const lockstep_input* inputs, size_t count,
                                                        uint64_t* target_tick);
/** Asks the server for a snapshot (restored when it arrives). */
LOCKSTEP_API lockstep_status lockstep_client_request_resync(lockstep_client* client,
                                                            const char* reason);
/** Closes the connection; a DISCONNECTED event follows on the next poll. */
LOCKSTEP_API lockstep_status lockstep_client_disconnect(lockstep_client* client);

enum { LOCKSTEP_WORLD_CONFIRMED = 0, LOCKSTEP_WORLD_PREDICTED = 1 };
/** A read-only handle on the client's confirmed (server-verified) or predicted world, owned by
 * the client and valid until lockstep_client_destroy; every lockstep_world_* reader takes it
 * (LOCKSTEP_ERR_NOT_READY while the client has no such world), writers refuse it. */
LOCKSTEP_API lockstep_status lockstep_client_world(lockstep_client* client, int32_t which,
                                                   lockstep_world** out);

typedef struct lockstep_client_stats {
  uint64_t ticks_applied;
  uint64_t ticks_verified; /* stepped and equal to the server's hash */
  uint64_t desyncs;
  uint64_t snapshots;
  uint64_t resyncs;
  uint64_t errors;
  uint64_t inputs_sent;
  uint64_t ticks_predicted;
  uint64_t rollbacks;
  uint64_t events_dropped; /* events beyond event_capacity between takes (oldest kept) */
  uint64_t rtt_smoothed_us;
} lockstep_client_stats;
LOCKSTEP_API lockstep_status lockstep_client_get_stats(const lockstep_client* client,
                                                       lockstep_client_stats* out);

#ifdef __cplusplus
}
#endif

#endif /* LOCKSTEP_H */

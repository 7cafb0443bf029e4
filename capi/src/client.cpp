// The C API's client: a client_sdk::Client driven from the caller's thread (no io thread), its
// events copied into a ring of plain structs made at creation, and read-only handles on its
// confirmed and predicted worlds.
#include <chrono>
#include <string>
#include <variant>

#include "capi_internal.h"
#include "lockstep/client_sdk/client.h"

using lockstep::capi::copy_text;
using lockstep::capi::fail;
using lockstep::capi::guarded;
using lockstep::capi::to_c;
using lockstep::capi::to_sim;
namespace sim = lockstep::sim;
namespace sdk = lockstep::client_sdk;

namespace {

// Most inputs one send call takes (the scratch buffer made at creation).
constexpr size_t kMaxInputsPerSend = 256;
// Ring slots beyond event_capacity kept for the events a game must not miss (desync, error,
// disconnected): per-tick events are dropped first when a game stops taking them.
constexpr uint32_t kReservedEventSlots = 16;
constexpr uint32_t kMaxEventCapacity = 1u << 20;

static_assert(LOCKSTEP_CLIENT_IDLE == static_cast<int>(sdk::ClientState::idle) &&
              LOCKSTEP_CLIENT_CONNECTING == static_cast<int>(sdk::ClientState::connecting) &&
              LOCKSTEP_CLIENT_JOINED == static_cast<int>(sdk::ClientState::joined) &&
              LOCKSTEP_CLIENT_DISCONNECTED == static_cast<int>(sdk::ClientState::disconnected));

}  // namespace

struct lockstep_client {
  sdk::Client client;
  sdk::ClientOptions options;
  std::vector<lockstep_client_event> ring;  // capacity + kReservedEventSlots
  uint32_t capacity = 0;                    // for per-tick events
  size_t head = 0, size = 0;
  uint64_t dropped = 0;
  std::vector<sim::Input> input_scratch;
  lockstep_world confirmed_view, predicted_view;
  char error[lockstep::capi::kErrorBytes] = {};

  void push(const lockstep_client_event& event) {
    const bool per_tick = event.type == LOCKSTEP_CLIENT_EVENT_TICK_APPLIED ||
                          event.type == LOCKSTEP_CLIENT_EVENT_TICK_PREDICTED ||
                          event.type == LOCKSTEP_CLIENT_EVENT_SNAPSHOT ||
                          event.type == LOCKSTEP_CLIENT_EVENT_ROLLED_BACK;
    if (size >= ring.size() || (per_tick && size >= capacity)) {
      ++dropped;
      return;
    }
    ring[(head + size) % ring.size()] = event;
    ++size;
  }

  void on_event(const sdk::Event& event) {
    lockstep_client_event e{};
    auto text = [&e](const std::string& s) {
      e.text_truncated = copy_text(s, e.text, sizeof(e.text)) ? 1 : 0;
    };
    if (const auto* j = std::get_if<sdk::JoinedEvent>(&event)) {
      e.type = LOCKSTEP_CLIENT_EVENT_JOINED;
      e.tick = j->tick;
      e.player_id = j->player_id;
      e.tick_rate_hz = j->tick_rate_hz;
      text(j->scene);
    } else if (const auto* t = std::get_if<sdk::TickAppliedEvent>(&event)) {
      e.type = LOCKSTEP_CLIENT_EVENT_TICK_APPLIED;
      e.tick = t->tick;
      e.local_hash = e.server_hash = t->state_hash;
      e.input_count = t->input_count;
    } else if (const auto* s = std::get_if<sdk::SnapshotEvent>(&event)) {
      e.type = LOCKSTEP_CLIENT_EVENT_SNAPSHOT;
      e.tick = s->tick;
      e.local_hash = e.server_hash = s->state_hash;
      e.resync = s->resync ? 1 : 0;
    } else if (const auto* d = std::get_if<sdk::DesyncEvent>(&event)) {
      e.type = LOCKSTEP_CLIENT_EVENT_DESYNC;
      e.tick = d->tick;
      e.local_hash = d->local_hash;
      e.server_hash = d->server_hash;
      text(d->replay_path.empty() ? d->replay_error : d->replay_path);
    } else if (const auto* x = std::get_if<sdk::DisconnectedEvent>(&event)) {
      e.type = LOCKSTEP_CLIENT_EVENT_DISCONNECTED;
      e.code = static_cast<int32_t>(x->code);
      text(x->reason);
    } else if (const auto* r = std::get_if<sdk::ErrorEvent>(&event)) {
      e.type = LOCKSTEP_CLIENT_EVENT_ERROR;
      e.code = static_cast<int32_t>(r->code);
      e.fatal = r->fatal ? 1 : 0;
      text(r->message);
    } else if (const auto* p = std::get_if<sdk::TickPredictedEvent>(&event)) {
      e.type = LOCKSTEP_CLIENT_EVENT_TICK_PREDICTED;
      e.tick = p->tick;
      e.confirmed_tick = p->confirmed_tick;
    } else if (const auto* b = std::get_if<sdk::RolledBackEvent>(&event)) {
      e.type = LOCKSTEP_CLIENT_EVENT_ROLLED_BACK;
      e.tick = b->from_tick;
      e.ticks_resimulated = b->ticks_resimulated;
      e.cost_us = b->cost_us;
    } else {
      return;
    }
    push(e);
  }
};

namespace {

char* error_of(const lockstep_client* client) {
  return client == nullptr ? nullptr : const_cast<char*>(client->error);
}

lockstep_status need_client(const lockstep_client* client) {
  if (client == nullptr) return fail(nullptr, LOCKSTEP_ERR_NULL_ARGUMENT, "client is null");
  return LOCKSTEP_OK;
}

}  // namespace

extern "C" {

LOCKSTEP_API lockstep_status lockstep_client_options_init(lockstep_client_options* options) {
  if (options == nullptr) return fail(nullptr, LOCKSTEP_ERR_NULL_ARGUMENT, "options is null");
  *options = {};
  options->mode = LOCKSTEP_MODE_LOCKSTEP;
  options->prediction = 0;
  options->max_prediction_ticks = 8;
  options->input_delay_ticks = -1;
  options->auto_resync = 1;
  options->connect_timeout_ms = 5000;
  options->read_timeout_ms = 10000;
  options->event_capacity = 1024;
  return LOCKSTEP_OK;
}

LOCKSTEP_API lockstep_status lockstep_client_create(const lockstep_client_options* options,
                                                    lockstep_client** out) {
  return guarded(nullptr, [&]() -> lockstep_status {
    if (out == nullptr) return fail(nullptr, LOCKSTEP_ERR_NULL_ARGUMENT, "out is null");
    *out = nullptr;
    lockstep_client_options o;
    lockstep_client_options_init(&o);
    if (options != nullptr) o = *options;
    if (o.mode != LOCKSTEP_MODE_LOCKSTEP && o.mode != LOCKSTEP_MODE_THIN) {
      return fail(nullptr, LOCKSTEP_ERR_INVALID_ARGUMENT, "mode is lockstep (0) or thin (1)");
    }
    if (o.max_prediction_ticks < 1 || o.max_prediction_ticks > 60) {
      return fail(nullptr, LOCKSTEP_ERR_INVALID_ARGUMENT, "max_prediction_ticks is 1..60");
    }
    if (o.input_delay_ticks < -1 || o.input_delay_ticks > 1000) {
      return fail(nullptr, LOCKSTEP_ERR_INVALID_ARGUMENT, "input_delay_ticks is -1..1000");
    }
    if (o.event_capacity < 1 || o.event_capacity > kMaxEventCapacity) {
      return fail(nullptr, LOCKSTEP_ERR_INVALID_ARGUMENT, "event_capacity is 1..1048576");
    }
    if (o.connect_timeout_ms == 0 || o.read_timeout_ms == 0) {
      return fail(nullptr, LOCKSTEP_ERR_INVALID_ARGUMENT, "timeouts must be above 0 ms");
    }
    auto handle = std::make_unique<lockstep_client>();
    sdk::ClientOptions& c = handle->options;
    c.mode = o.mode == LOCKSTEP_MODE_THIN ? sdk::ClientMode::thin : sdk::ClientMode::lockstep;
    c.prediction = o.prediction != 0;
    c.max_prediction_ticks = o.max_prediction_ticks;
    if (o.input_delay_ticks >= 0) c.input_delay_ticks = static_cast<uint16_t>(o.input_delay_ticks);
    c.auto_resync = o.auto_resync != 0;
    c.connect_timeout = std::chrono::milliseconds(o.connect_timeout_ms);
    c.read_timeout = std::chrono::milliseconds(o.read_timeout_ms);
    if (o.scene_name != nullptr) c.scene_name = o.scene_name;
    if (o.replay_dir != nullptr) c.replay_dir = o.replay_dir;
    handle->capacity = o.event_capacity;
    handle->ring.resize(o.event_capacity + kReservedEventSlots);
    handle->input_scratch.resize(kMaxInputsPerSend);
    lockstep_client* raw = handle.get();
    for (lockstep_world* view : {&raw->confirmed_view, &raw->predicted_view}) {
      view->client = &raw->client;
    }
    raw->predicted_view.which = LOCKSTEP_WORLD_PREDICTED;
    raw->client.set_event_handler([raw](const sdk::Event& event) { raw->on_event(event); });
    *out = handle.release();
    return LOCKSTEP_OK;
  });
}

LOCKSTEP_API lockstep_status lockstep_client_destroy(lockstep_client* client) {
  if (client == nullptr) return LOCKSTEP_OK;
  return guarded(nullptr, [&]() -> lockstep_status {
    delete client;
    return LOCKSTEP_OK;
  });
}

LOCKSTEP_API const char* lockstep_client_last_error(const lockstep_client* client) {
  return client == nullptr ? "" : client->error;
}

LOCKSTEP_API lockstep_status lockstep_client_connect(lockstep_client* client, const char* host,
                                                     uint16_t port, const char* room,
                                                     const char* name, const char* token) {
  return guarded(error_of(client), [&]() -> lockstep_status {
    if (lockstep_status s = need_client(client); s != LOCKSTEP_OK) return s;
    if (host == nullptr || room == nullptr || name == nullptr) {
      return fail(client->error, LOCKSTEP_ERR_NULL_ARGUMENT,
                  "host, room and name must not be null");
    }
    if (port == 0) return fail(client->error, LOCKSTEP_ERR_INVALID_ARGUMENT, "port 0");
    if (client->client.state() != sdk::ClientState::idle) {
      return fail(client->error, LOCKSTEP_ERR_BAD_STATE, "the client has connected before");
    }
    if (!client->client.connect(host, port, room, name, token == nullptr ? "" : token,
                                client->options)) {
      return fail(client->error, LOCKSTEP_ERR_INVALID_ARGUMENT, client->client.last_error());
    }
    return LOCKSTEP_OK;
  });
}

LOCKSTEP_API lockstep_status lockstep_client_poll(lockstep_client* client, uint32_t wait_ms,
                                                  uint32_t* queued) {
  return guarded(error_of(client), [&]() -> lockstep_status {
    if (lockstep_status s = need_client(client); s != LOCKSTEP_OK) return s;
    if (wait_ms > 60000) {
      return fail(client->error, LOCKSTEP_ERR_INVALID_ARGUMENT, "wait_ms is at most 60000");
    }
    client->client.poll(std::chrono::milliseconds(wait_ms));
    if (queued != nullptr) *queued = static_cast<uint32_t>(client->size);
    return LOCKSTEP_OK;
  });
}

LOCKSTEP_API lockstep_status lockstep_client_take_events(lockstep_client* client,
                                                         lockstep_client_event* out,
                                                         uint32_t capacity, uint32_t* count) {
  if (lockstep_status s = need_client(client); s != LOCKSTEP_OK) return s;
  if (count == nullptr || (out == nullptr && capacity != 0)) {
    return fail(client->error, LOCKSTEP_ERR_NULL_ARGUMENT, "out or count is null");
  }
  uint32_t n = 0;
  while (n < capacity && client->size > 0) {
    out[n++] = client->ring[client->head];
    client->head = (client->head + 1) % client->ring.size();
    --client->size;
  }
  *count = n;
  return LOCKSTEP_OK;
}

LOCKSTEP_API lockstep_status lockstep_client_state(const lockstep_client* client, int32_t* state) {
  if (lockstep_status s = need_client(client); s != LOCKSTEP_OK) return s;
  if (state == nullptr) return fail(error_of(client), LOCKSTEP_ERR_NULL_ARGUMENT, "state is null");
  *state = static_cast<int32_t>(client->client.state());
  return LOCKSTEP_OK;
}

LOCKSTEP_API lockstep_status lockstep_client_player_id(const lockstep_client* client,
                                                       uint32_t* player_id) {
  if (lockstep_status s = need_client(client); s != LOCKSTEP_OK) return s;
  if (player_id == nullptr) {
    return fail(error_of(client), LOCKSTEP_ERR_NULL_ARGUMENT, "player_id is null");
  }
  const uint32_t id = client->client.player_id();
  if (id == 0) return fail(error_of(client), LOCKSTEP_ERR_NOT_READY, "not joined yet");
  *player_id = id;
  return LOCKSTEP_OK;
}

LOCKSTEP_API lockstep_status lockstep_client_owned_bodies(const lockstep_client* client,
                                                          lockstep_body_id* out, uint32_t capacity,
                                                          uint32_t* count, uint32_t* found) {
  if (lockstep_status s = need_client(client); s != LOCKSTEP_OK) return s;
  if (count == nullptr || (out == nullptr && capacity != 0)) {
    return fail(error_of(client), LOCKSTEP_ERR_NULL_ARGUMENT, "out or count is null");
  }
  const std::vector<sim::BodyId>& owned = client->client.owned_bodies();
  uint32_t n = 0;
  for (; n < capacity && n < owned.size(); ++n)
    out[n] = to_c(owned[n]);
  *count = n;
  if (found != nullptr) *found = static_cast<uint32_t>(owned.size());
  return LOCKSTEP_OK;
}

LOCKSTEP_API lockstep_status lockstep_client_next_input_tick(const lockstep_client* client,
                                                             uint64_t* tick) {
  if (lockstep_status s = need_client(client); s != LOCKSTEP_OK) return s;
  if (tick == nullptr) return fail(error_of(client), LOCKSTEP_ERR_NULL_ARGUMENT, "tick is null");
  const std::optional<uint64_t> next = client->client.next_input_tick();
  if (!next) return fail(error_of(client), LOCKSTEP_ERR_NOT_READY, "not joined yet");
  *tick = *next;
  return LOCKSTEP_OK;
}

LOCKSTEP_API lockstep_status lockstep_client_send_input(lockstep_client* client,
                                                        const lockstep_input* inputs, size_t count,
                                                        uint64_t* target_tick) {
  return guarded(error_of(client), [&]() -> lockstep_status {
    if (lockstep_status s = need_client(client); s != LOCKSTEP_OK) return s;
    if (inputs == nullptr && count != 0) {
      return fail(client->error, LOCKSTEP_ERR_NULL_ARGUMENT, "inputs is null with a count");
    }
    if (count > client->input_scratch.size()) {
      return fail(client->error, LOCKSTEP_ERR_INVALID_ARGUMENT, "at most 256 inputs per send");
    }
    for (size_t i = 0; i < count; ++i)
      client->input_scratch[i] = to_sim(inputs[i]);
    const std::optional<uint64_t> stamped =
        client->client.send_input({client->input_scratch.data(), count});
    if (!stamped) return fail(client->error, LOCKSTEP_ERR_NOT_READY, "not joined");
    if (target_tick != nullptr) *target_tick = *stamped;
    return LOCKSTEP_OK;
  });
}

LOCKSTEP_API lockstep_status lockstep_client_request_resync(lockstep_client* client,
                                                            const char* reason) {
  return guarded(error_of(client), [&]() -> lockstep_status {
    if (lockstep_status s = need_client(client); s != LOCKSTEP_OK) return s;
    if (client->client.state() != sdk::ClientState::joined) {
      return fail(client->error, LOCKSTEP_ERR_NOT_READY, "not joined");
    }
    client->client.request_resync(reason == nullptr ? "" : reason);
    return LOCKSTEP_OK;
  });
}

LOCKSTEP_API lockstep_status lockstep_client_disconnect(lockstep_client* client) {
  return guarded(error_of(client), [&]() -> lockstep_status {
    if (lockstep_status s = need_client(client); s != LOCKSTEP_OK) return s;
    client->client.close();
    return LOCKSTEP_OK;
  });
}

LOCKSTEP_API lockstep_status lockstep_client_world(lockstep_client* client, int32_t which,
                                                   lockstep_world** out) {
  if (lockstep_status s = need_client(client); s != LOCKSTEP_OK) return s;
  if (out == nullptr) return fail(client->error, LOCKSTEP_ERR_NULL_ARGUMENT, "out is null");
  if (which != LOCKSTEP_WORLD_CONFIRMED && which != LOCKSTEP_WORLD_PREDICTED) {
    return fail(client->error, LOCKSTEP_ERR_INVALID_ARGUMENT, "which is confirmed or predicted");
  }
  *out = which == LOCKSTEP_WORLD_PREDICTED ? &client->predicted_view : &client->confirmed_view;
  return LOCKSTEP_OK;
}

LOCKSTEP_API lockstep_status lockstep_client_get_stats(const lockstep_client* client,
                                                       lockstep_client_stats* out) {
  if (lockstep_status s = need_client(client); s != LOCKSTEP_OK) return s;
  if (out == nullptr) return fail(error_of(client), LOCKSTEP_ERR_NULL_ARGUMENT, "out is null");
  const sdk::ClientStats s = client->client.stats();
  *out = {};
  out->ticks_applied = s.ticks_applied;
  out->ticks_verified = s.ticks_verified;
  out->desyncs = s.desyncs;
  out->snapshots = s.snapshots;
  out->resyncs = s.resyncs;
  out->errors = s.errors;
  out->inputs_sent = s.inputs_sent;
  out->ticks_predicted = s.ticks_predicted;
  out->rollbacks = s.rollbacks;
  out->events_dropped = client->dropped;
  out->rtt_smoothed_us = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(s.rtt_smoothed).count());
  return LOCKSTEP_OK;
}

}  // extern "C"

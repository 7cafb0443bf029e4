// Replicated game state: typed int32 fields per room or per player, declared when a world is
// built (scene `state` lines), changed only by set_state and add_state commands in the tick, and
// part of the state hash and snapshots (state_stream.cpp). The players' scores are the field
// kScoreStateField, stored where add_score keeps them.
#include <algorithm>
#include <cstring>
#include <string_view>

#include "lockstep/sim/world.h"
#include "world_data.h"

namespace lockstep::sim {

namespace {

bool state_name_byte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.';
}

std::string_view state_name(const StateFieldDef& field) {
  return {field.name, strnlen(field.name, sizeof(field.name))};
}

int32_t saturating_add(int32_t a, int32_t b) {
  const int64_t sum = int64_t{a} + b;
  return static_cast<int32_t>(std::clamp<int64_t>(sum, INT32_MIN, INT32_MAX));
}

}  // namespace

Error check_state_field_def(const StateFieldDef& field, const StateFieldDef* earlier,
                            uint32_t earlier_count) {
  if (field.scope != StateScope::room && field.scope != StateScope::player) {
    return Error::invalid_argument;
  }
  if (field.type != StateType::int32 && field.type != StateType::fixed) {
    return Error::invalid_argument;
  }
  size_t n = 0;
  while (n < sizeof(field.name) && field.name[n] != '\0') {
    if (!state_name_byte(field.name[n])) return Error::capacity_state_fields;
    ++n;
  }
  if (n == 0 || n > kMaxStateNameBytes) return Error::capacity_state_fields;
  for (size_t i = n; i < sizeof(field.name); ++i) {
    if (field.name[i] != '\0') return Error::capacity_state_fields;  // padding is hashed
  }
  const std::string_view name = state_name(field);
  if (name == "score") return Error::capacity_state_fields;
  for (uint32_t i = 0; i < earlier_count; ++i) {
    if (state_name(earlier[i]) == name) return Error::capacity_state_fields;
  }
  return Error::none;
}

bool is_state_command(CommandType type) {
  return type == CommandType::set_state || type == CommandType::add_state;
}

Error check_state_command_fields(const Command& c) {
  if (c.template_index >= kMaxStateFields && c.template_index != kScoreStateField) {
    return Error::unknown_state_field;
  }
  if (c.owner_player > kMaxPlayers) return Error::unknown_player;
  return Error::none;
}

Error check_state_command(const WorldData& w, const Command& c) {
  const Error e = check_state_command_fields(c);
  if (e != Error::none) return e;
  if (c.template_index == kScoreStateField) {
    return c.owner_player >= 1 && c.owner_player <= kMaxPlayers ? Error::none
                                                                : Error::unknown_player;
  }
  if (c.template_index >= w.state_field_count) return Error::unknown_state_field;
  if (w.state_fields[c.template_index].scope == StateScope::room) {
    return c.owner_player == 0 ? Error::none : Error::unknown_player;
  }
  return c.owner_player >= 1 && c.owner_player <= kMaxStatePlayers ? Error::none
                                                                   : Error::unknown_player;
}

Error apply_state_command(WorldData& w, const Command& c) {
  const Error e = check_state_command(w, c);
  if (e != Error::none) return e;
  int32_t* value = nullptr;
  if (c.template_index == kScoreStateField) {
    value = &w.scores[c.owner_player - 1];
  } else {
    const size_t player = c.owner_player == 0 ? 0 : c.owner_player - 1;
    value = &w.state_values[size_t{c.template_index} * kMaxStatePlayers + player];
  }
  *value = c.type == CommandType::set_state ? c.score_delta : saturating_add(*value, c.score_delta);
  w.hash_dirty = true;
  return Error::none;
}

Error World::declare_state_field(const StateFieldDef& field) {
  WorldData& w = *data_;
  Error e = w.state_field_count >= kMaxStateFields
                ? Error::capacity_state_fields
                : check_state_field_def(field, w.state_fields, w.state_field_count);
  if (e != Error::none) {
    ++w.counters.api_calls_rejected;
    return e;
  }
  const uint32_t f = w.state_field_count++;
  w.state_fields[f] = field;
  std::fill_n(w.state_values.begin() + static_cast<std::ptrdiff_t>(f * kMaxStatePlayers),
              kMaxStatePlayers, field.default_value);
  w.hash_dirty = true;
  return Error::none;
}

std::span<const StateFieldDef> World::state_fields() const {
  return {data_->state_fields, data_->state_field_count};
}

uint32_t World::find_state_field(std::string_view name) const {
  if (name == "score") return kScoreStateField;
  const WorldData& w = *data_;
  for (uint32_t f = 0; f < w.state_field_count; ++f) {
    if (state_name(w.state_fields[f]) == name) return f;
  }
  return kNoStateField;
}

int32_t World::state(uint32_t field, uint32_t player) const {
  const WorldData& w = *data_;
  if (field == kScoreStateField) return score(player);
  if (field >= w.state_field_count) return 0;
  if (w.state_fields[field].scope == StateScope::room)
    return w.state_values[size_t{field} * kMaxStatePlayers];
  if (player < 1 || player > kMaxStatePlayers) return 0;
  return w.state_values[size_t{field} * kMaxStatePlayers + player - 1];
}

}  // namespace lockstep::sim

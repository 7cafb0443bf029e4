// The built-in game rules (make_builtin_rules picks one by name): each file makes its own.
#pragma once

#include <memory>
#include <string>

#include "lockstep/server/room_rules.h"

namespace lockstep::server {

/// King of the hill (koth_rules.cpp); null and *error when the scene cannot be played.
std::unique_ptr<RoomRules> make_koth_rules(const sim::Scene& scene, std::string* error);

}  // namespace lockstep::server

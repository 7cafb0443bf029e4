// Default size caps of the wire protocol and the replay files, in one place.
//
// Every cap is checked before the bytes it governs are read or buffered, so a peer or a corrupt
// file can never make us allocate or read more than these. They are defaults: the server and the
// SDK take them as configuration, and a room checks at creation that its world's largest
// snapshot (sim::World::max_snapshot_size() plus the envelope) fits under the server cap.
#pragma once

#include <cstdint>

namespace lockstep::schema {

/// Largest frame body a client may send (client → server: Hello, InputFrame, Ping,
/// DesyncReport, ResyncRequest). A compact input is 2 to ~70 bytes (10 in the demo), so 64 KiB
/// holds a full tick of the default world's 256 inputs many times over; anything bigger is abuse.
inline constexpr uint32_t kMaxClientFrameBytes = 64u * 1024u;

/// Most inputs one InputFrame may carry. A compact input can be 2 bytes, so a full client frame
/// could otherwise decode to ~32,000 of them (2 MB of decoded inputs from 64 KiB); a player is
/// allowed 16 per tick by default and at most a few hundred by any sane configuration.
inline constexpr uint32_t kMaxInputFrameInputs = 1024;

/// Largest frame body the server sends (server → client), snapshots included. The default
/// world (1024 bodies, 16384 contact points of warm-start cache) snapshots to well under 1 MiB;
/// 8 MiB leaves room for worlds several times larger.
inline constexpr uint32_t kMaxServerFrameBytes = 8u * 1024u * 1024u;

/// Largest record payload in a replay file: a keyframe record is one server snapshot plus the
/// record's own table, so twice the server frame cap.
inline constexpr uint32_t kMaxReplayRecordBytes = 2u * kMaxServerFrameBytes;

/// FlatBuffers Verifier limits applied to every untrusted buffer (frames and replay records).
/// Our tables nest at most a few levels (envelope → message → vector of inputs → input); the
/// table cap bounds verification work per frame to roughly the body size.
inline constexpr uint32_t kVerifierMaxDepth = 16;
inline constexpr uint32_t kVerifierMaxTables = 1u << 20;

}  // namespace lockstep::schema

#pragma once
// The physics revision: which simulation this build runs.
//
// Two builds whose revisions are equal give the same state hashes for the same WorldDef, bodies
// and inputs, tick for tick, on every supported platform; two builds whose revisions differ may
// not, from the first contact on. It is raised by one in the same commit as any change to the
// step that changes a hash: the golden hash chains in tests/golden carry it, and
// scripts/update-golden.sh writes no changed chain under the revision it had. Whatever must
// re-simulate another build's ticks compares it first: the server refuses a lockstep client of
// another revision, the client SDK a server of another, and the replay tools a file recorded by
// another (docs/determinism.md, "Physics revision").
#include <cstdint>

namespace lockstep::sim {

/// This build's physics revision. 0 is never a revision: it stands for "not stated" (peers and
/// files older than the field, which are taken on trust).
inline constexpr uint32_t kPhysicsRevision = 5;

}  // namespace lockstep::sim

// Types of lockstep.js: the browser client of a lockstep-server (docs/web.md).

/** Fixed-point scale of input impulses (an integer is N·s × 2^10). */
export const INPUT_SCALE: 1024;

export interface CoreOptions {
  /** Where lockstep_core.wasm is served, when not beside lockstep_core.mjs. */
  wasmUrl?: string;
  /** The bytes of lockstep_core.wasm, for hosts without fetch (node). */
  wasmBinary?: ArrayBuffer | Uint8Array;
}

export interface ConnectOptions extends CoreOptions {
  /** ws://host:port of the server's --ws-port (wss:// behind a TLS proxy). */
  url: string;
  /** The room to join ("" = the server's default room). */
  room?: string;
  name?: string;
  /** A join token from the game's backend (lockstep-token), when the server asks for one. */
  token?: string;
  /** The scene to ask for ("" = the room's). */
  scene?: string;
  /** Join as a thin client (snapshots only, no inputs). */
  thin?: boolean;
  /** Ticks the predicted world may run ahead (1..60); 0 or absent: no predicted world. */
  prediction?: number;
  /** On a desync, report it and ask for a snapshot (default true). */
  autoResync?: boolean;
  /** Ping period for the round trip and the clock estimate (default 500 ms). */
  pingIntervalMs?: number;
}

export interface BodyId {
  index1: number;
  generation: number;
}

export interface Body {
  id: BodyId;
  type: 'static' | 'kinematic' | 'dynamic';
  /** mesh and heightfield: a static body placing level geometry the Welcome carried. */
  shape: 'sphere' | 'box' | 'capsule' | 'plane' | 'hull' | 'compound' | 'mesh' | 'heightfield';
  position: [number, number, number];
  /** x, y, z, w */
  orientation: [number, number, number, number];
  radius: number;
  halfExtents: [number, number, number];
  halfHeight: number;
  owner: number;
  asleep: boolean;
}

export interface WorldView {
  /** -1 before the join snapshot. */
  readonly tick: number;
  /** The state hash after the last step, 16 hexadecimal digits (equal on every platform). */
  readonly hash: string;
  bodies(): Body[];
}

export interface GameEvent {
  type: number;
  player: number;
  value: number;
  sequence: number;
}

export interface BodyState {
  position: [number, number, number];
  velocity: [number, number, number];
}

export interface DesyncDiff {
  tick: number;
  bodies: { index1: number; local: BodyState; server: BodyState }[];
}

export interface ClientEvents {
  joined: { playerId: number; scene: string; tickRateHz: number };
  /** A snapshot was restored (the join, or a resync). After a desync, `diff` names the bodies
   * whose state differed from the server's at the snapshot's tick (null when not comparable). */
  snapshot: { tick: number; hash: string; diff: DesyncDiff | null };
  /** A tick stepped and verified: its hash equals the server's. */
  tick: { tick: number; hash: string };
  desync: { tick: number; localHash: string; serverHash: string };
  error: { code: number; message: string; fatal: boolean };
  closed: { code: number; reason: string };
  pong: { rttMs: number };
  gameMessage: { data: Uint8Array };
}

export interface ClientStats {
  verified: number;
  desyncs: number;
  rttMs: number;
  /** This player's inputs that the server applied (listed in its TickFrames). */
  inputsApplied: number;
}

export interface InputOptions {
  body: BodyId;
  /** N·s, applied at the body's centre this tick. */
  impulse?: [number, number, number];
  /** m/s: the body's linear velocity is set to it this tick (instead of an impulse). */
  velocity?: [number, number, number];
  buttons?: number;
}

export class LockstepClient {
  /** The server-verified world: steps only what the server's TickFrames carry. */
  readonly confirmed: WorldView;
  /** The world run ahead with local inputs (ConnectOptions.prediction). */
  readonly predicted: WorldView;
  readonly state: 'connecting' | 'joined' | 'closed';
  readonly playerId: number;
  readonly tickRateHz: number;
  readonly ownedBodies: BodyId[];
  readonly stats: ClientStats;
  readonly closeReason: string;
  on<K extends keyof ClientEvents>(type: K, listener: (event: ClientEvents[K]) => void): () => void;
  nextInputTick(): number;
  /** The tick stamped, or null when an input for this tick was already sent (or not joined). */
  sendInput(input: InputOptions): number | null;
  predict(): number;
  gameState(players?: number): Record<string, number | Record<number, number>>;
  score(player: number): number;
  gameEvents(): GameEvent[];
  /** The level's triangles as the confirmed world places them (static mesh and heightfield
   * bodies), 9 floats a triangle (three corners x, y, z, m): for drawing the arena. */
  levelTriangles(): Float32Array;
  requestResync(reason?: string): void;
  /** Moves a body of the confirmed world outside the tick: the next tick is a desync (for seeing
   * how a page shows one; never in a real game). */
  debugPerturb(body: BodyId, dx: number, dz: number): boolean;
  close(): void;
  dispose(): void;
}

export function connect(options: ConnectOptions): Promise<LockstepClient>;

export interface BenchmarkResult {
  scene: string;
  ticks: number;
  rounds: number;
  /** The fastest round's ms per step (the wasm compiled and optimised). */
  msPerStep: number;
  /** The first round's: it includes the browser compiling the wasm's busy functions. */
  firstMsPerStep: number;
  hash: string;
}
export interface BenchmarkOptions extends CoreOptions {
  /** Runs from a fresh world (default 3). */
  rounds?: number;
}
/**
 * `lockstep-sim --scene NAME --ticks N` in this page, `rounds` times: steps after `warmup`
 * (default 60) are timed; the fastest round's ms per step, the first round's, and the final hash.
 */
export function benchmark(scene: string, ticks: number, warmup?: number, options?: BenchmarkOptions): Promise<BenchmarkResult>;
export function loadCore(options?: CoreOptions): Promise<unknown>;

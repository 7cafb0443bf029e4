// lockstep for the browser: joins a lockstep-server over a WebSocket (--ws-port), steps the same
// deterministic world as every native client in WebAssembly, and verifies every tick's hash.
//
// The wasm core (lockstep_core.mjs + .wasm, built by scripts/build-web.sh) does the protocol and
// the physics; this module owns the WebSocket and turns the core's results into events.
// Each protocol frame (4-byte little-endian length, then the body) travels as one binary message.

import createLockstepCore from './dist/lockstep_core.mjs';

/** Fixed-point scale of input impulses: an integer is N·s × 2^10 (exact in float). */
export const INPUT_SCALE = 1024;

const EVENT_NAMES = ['', 'joined', 'snapshot', 'tick', 'desync', 'error', 'closed', 'pong', 'gameMessage'];
const BODY_FLOATS = 18;
const SHAPES = ['sphere', 'box', 'capsule', 'plane', 'hull', 'compound', 'mesh', 'heightfield'];
const BODY_TYPES = ['static', 'kinematic', 'dynamic'];

let corePromise = null;

/** Loads the wasm core once per page. options.wasmUrl: where lockstep_core.wasm is served (default:
 * beside lockstep_core.mjs); options.wasmBinary: its bytes, for hosts without fetch (node). */
export function loadCore(options = {}) {
  if (!corePromise) {
    const settings = {};
    if (options.wasmUrl) settings.locateFile = (path) => (path.endsWith('.wasm') ? options.wasmUrl : path);
    if (options.wasmBinary) settings.wasmBinary = options.wasmBinary;
    corePromise = createLockstepCore(settings);
  }
  return corePromise;
}

/** The same run as `lockstep-sim --scene NAME --ticks N` timed in this page: ms per step after
 * `warmup` untimed steps, and the state hash at `ticks` (equal to the native tool's). */
export async function benchmark(scene, ticks, warmup = 60, options = {}) {
  const core = await loadCore(options);
  const rounds = options.rounds ?? 3;
  const name = allocString(core, scene);
  try {
    const msPerStep = core._lsw_bench_builtin(name, ticks, warmup, rounds);
    if (msPerStep < 0) throw new Error(`unknown scene ${scene}`);
    return {
      scene,
      ticks,
      rounds,
      msPerStep,
      firstMsPerStep: core._lsw_bench_first(),
      hash: core.UTF8ToString(core._lsw_bench_hash()),
    };
  } finally {
    core._free(name);
  }
}

function allocString(core, text) {
  const bytes = core.lengthBytesUTF8(text) + 1;
  const ptr = core._malloc(bytes);
  core.stringToUTF8(text, ptr, bytes);
  return ptr;
}

/** A read-only view of one of the client's worlds (confirmed or predicted). */
class WorldView {
  constructor(client, which) {
    this._client = client;
    this._which = which;
  }
  /** The world's tick (-1 before the join snapshot). */
  get tick() {
    return this._client._core._lsw_tick(this._client._handle, this._which);
  }
  /** The state hash after the last step, 16 hexadecimal digits. */
  get hash() {
    const core = this._client._core;
    return core.UTF8ToString(core._lsw_hash(this._client._handle, this._which));
  }
  /** Every live body: id, type, shape and its sizes, pose, owner. */
  bodies() {
    const core = this._client._core;
    const handle = this._client._handle;
    const count = core._lsw_bodies(handle, this._which);
    const base = core._lsw_bodies_data(handle) >> 2;
    const f = core.HEAPF32;
    const out = new Array(count);
    for (let i = 0; i < count; ++i) {
      const o = base + i * BODY_FLOATS;
      out[i] = {
        id: { index1: f[o], generation: f[o + 1] },
        type: BODY_TYPES[f[o + 2]] ?? 'dynamic',
        shape: SHAPES[f[o + 3]],
        position: [f[o + 4], f[o + 5], f[o + 6]],
        orientation: [f[o + 7], f[o + 8], f[o + 9], f[o + 10]],
        radius: f[o + 11],
        halfExtents: [f[o + 12], f[o + 13], f[o + 14]],
        halfHeight: f[o + 15],
        owner: f[o + 16],
        asleep: f[o + 17] !== 0,
      };
    }
    return out;
  }
}

/** A connection to a room. Make one with connect(). */
export class LockstepClient {
  constructor(core, options) {
    this._core = core;
    this._options = options;
    this._handle = core._lsw_create(options.prediction ?? 0);
    this._listeners = new Map();
    this._lastInputTick = 0;
    this._state = 'connecting';
    this._pingTimer = null;
    this.confirmed = new WorldView(this, 0);
    this.predicted = new WorldView(this, 1);
    this.closeReason = '';
  }

  /** Listens to 'joined', 'snapshot', 'tick', 'desync', 'error', 'closed', 'pong' or
   * 'gameMessage'; returns a function that stops listening. */
  on(type, listener) {
    if (!this._listeners.has(type)) this._listeners.set(type, new Set());
    this._listeners.get(type).add(listener);
    return () => this._listeners.get(type).delete(listener);
  }

  _emit(type, detail) {
    const set = this._listeners.get(type);
    if (set) for (const listener of set) listener(detail);
  }

  /** 'connecting', 'joined' or 'closed'. */
  get state() {
    return this._state;
  }
  get playerId() {
    return this._core._lsw_player_id(this._handle);
  }
  get tickRateHz() {
    return this._core._lsw_tick_rate_hz(this._handle);
  }
  /** The bodies this player may push. */
  get ownedBodies() {
    const core = this._core;
    const n = core._lsw_owned_count(this._handle);
    const out = [];
    for (let i = 0; i < n; ++i) {
      out.push({ index1: core._lsw_owned_body(this._handle, i, 0), generation: core._lsw_owned_body(this._handle, i, 1) });
    }
    return out;
  }
  /** Ticks verified, desyncs, smoothed round trip, this player's inputs the server applied. */
  get stats() {
    const core = this._core;
    return {
      verified: core._lsw_ticks_verified(this._handle),
      desyncs: core._lsw_desyncs(this._handle),
      rttMs: core._lsw_rtt_ms(this._handle),
      inputsApplied: core._lsw_own_inputs_applied(this._handle),
    };
  }

  /** The tick the next input would be stamped for, or -1 before the join snapshot. Send once per
   * tick: when this is past the tick last sent for. */
  nextInputTick() {
    return this._core._lsw_next_input_tick(this._handle);
  }

  /** Sends this tick's input for one of the player's bodies: an impulse in N·s, or a linear
   * velocity to set in m/s (converted to the protocol's fixed point), buttons as game bits. Returns the tick stamped, or null when it is not
   * yet time for a new one (or not joined). */
  sendInput({ body, impulse, velocity, buttons = 0 }) {
    if (this._state !== 'joined') return null;
    const tick = this.nextInputTick();
    if (tick < 1 || tick <= this._lastInputTick) return null;
    const vector = velocity ?? impulse ?? [0, 0, 0];
    const fixed = vector.map((v) => Math.max(-2147483648, Math.min(2147483647, Math.round(v * INPUT_SCALE))));
    const size = this._core._lsw_input(this._handle, tick, body.index1, body.generation, velocity ? 1 : 0, fixed[0], fixed[1], fixed[2], buttons >>> 0);
    if (size === 0) return null;
    this._lastInputTick = tick;
    this._sendOut(size);
    return tick;
  }

  /** Steps the predicted world (options.prediction > 0) up to the next input tick, rolling back
   * first when the server's frames disagreed with it; returns its tick. */
  predict() {
    return this._core._lsw_predict(this._handle);
  }

  /** Replicated game state of the confirmed world: every field (scene `state` lines) with its
   * value per player 1..players (per-player fields) or its room value. */
  gameState(players = 8) {
    const core = this._core;
    const h = this._handle;
    const n = core._lsw_state_field_count(h);
    const out = {};
    for (let i = 0; i < n; ++i) {
      const name = core.UTF8ToString(core._lsw_state_field_name(h, i));
      if (core._lsw_state_field_per_player(h, i)) {
        const values = {};
        for (let p = 1; p <= players; ++p) values[p] = core._lsw_state_value(h, i, p);
        out[name] = values;
      } else {
        out[name] = core._lsw_state_value(h, i, 0);
      }
    }
    return out;
  }

  /** A player's score (the built-in score field). */
  score(player) {
    return this._core._lsw_score(this._handle, player);
  }

  /** The level's triangles where the confirmed world places them (static mesh and heightfield
   * bodies; the geometry came in the Welcome), for drawing: 9 floats a triangle, three corners
   * x, y, z in metres. Empty before the join snapshot and in scenes without a level. */
  levelTriangles() {
    const core = this._core;
    const n = core._lsw_level_triangles(this._handle);
    const base = core._lsw_level_data(this._handle) >> 2;
    return core.HEAPF32.slice(base, base + n * 9);
  }

  /** Game events of the confirmed world's last step. */
  gameEvents() {
    const core = this._core;
    const n = core._lsw_game_events(this._handle);
    const base = core._lsw_game_events_data(this._handle) >> 2;
    const out = [];
    for (let i = 0; i < n; ++i) {
      const o = base + i * 4;
      out.push({ type: core.HEAP32[o] >>> 0, player: core.HEAP32[o + 1] >>> 0, value: core.HEAP32[o + 2], sequence: core.HEAP32[o + 3] >>> 0 });
    }
    return out;
  }

  /** Moves a body of the confirmed world outside the tick, so that the next tick is a desync
   * (to see how a page shows one; never in a real game). */
  debugPerturb(body, dx, dz) {
    return this._core._lsw_debug_perturb(this._handle, body.index1, body.generation, dx, dz) === 0;
  }

  /** Asks the server for a snapshot (restored when it arrives). */
  requestResync(reason = 'asked by the page') {
    const text = allocString(this._core, reason);
    const size = this._core._lsw_resync_request(this._handle, text);
    this._core._free(text);
    this._sendOut(size);
  }

  /** Closes the connection; 'closed' follows. */
  close() {
    if (this._socket) this._socket.close(1000, 'client closed');
  }

  _sendOut(size) {
    if (!this._socket || this._socket.readyState !== 1 || size === 0) return;
    const ptr = this._core._lsw_out_data(this._handle);
    this._socket.send(this._core.HEAPU8.slice(ptr, ptr + size));
  }

  _open(socket) {
    this._socket = socket;
    socket.binaryType = 'arraybuffer';
    socket.onopen = () => {
      const o = this._options;
      const ptrs = [o.room ?? '', o.name ?? 'web', o.token ?? '', o.scene ?? ''].map((s) => allocString(this._core, s));
      const size = this._core._lsw_hello(this._handle, ...ptrs, o.thin ? 1 : 0);
      ptrs.forEach((p) => this._core._free(p));
      this._sendOut(size);
    };
    socket.onmessage = (message) => this._onMessage(message.data);
    socket.onclose = (event) => this._onClose(event.code, event.reason);
    socket.onerror = () => {};
  }

  _onMessage(data) {
    if (typeof data === 'string') return;  // the server sends binary messages only
    const core = this._core;
    const bytes = new Uint8Array(data);
    const text = () => core.UTF8ToString(core._lsw_text(this._handle));
    const ptr = core._lsw_in_buffer(this._handle, bytes.length);
    if (ptr === 0) {  // longer than any frame may be: never copied into the wasm heap
      this.closeReason = `bad frame from the server: ${text()}`;
      this._emit('error', { code: 0, message: this.closeReason, fatal: true });
      this._socket.close(1009, 'message too big');
      return;
    }
    core.HEAPU8.set(bytes, ptr);
    const kind = core._lsw_receive(this._handle);
    switch (EVENT_NAMES[kind]) {
      case 'joined':
        this._startPings();
        this._emit('joined', { playerId: this.playerId, scene: text(), tickRateHz: this.tickRateHz });
        break;
      case 'snapshot': {
        this._state = 'joined';
        const detail = { tick: this.confirmed.tick, hash: this.confirmed.hash, diff: null };
        if (core._lsw_diff_tick(this._handle) >= 0) detail.diff = this._diff();
        this._emit('snapshot', detail);
        break;
      }
      case 'tick': {
        const tick = this.confirmed.tick;
        this._emit('tick', { tick, hash: this.confirmed.hash });
        break;
      }
      case 'desync': {
        const detail = { tick: this.confirmed.tick, localHash: this.confirmed.hash, serverHash: core.UTF8ToString(core._lsw_server_hash(this._handle)) };
        // The server writes its replay window of the tick; a snapshot puts this world back.
        this._sendOut(core._lsw_desync_report(this._handle));
        if (this._options.autoResync ?? true) this.requestResync('desync');
        this._emit('desync', detail);
        break;
      }
      case 'error':
        this._emit('error', { code: core._lsw_code(this._handle), message: text(), fatal: false });
        break;
      case 'closed':
        this.closeReason = text();
        this._emit('error', { code: core._lsw_code(this._handle), message: this.closeReason, fatal: true });
        break;
      case 'pong':
        this._emit('pong', { rttMs: this.stats.rttMs });
        break;
      case 'gameMessage': {
        const at = core._lsw_game_message_data(this._handle);
        const n = core._lsw_game_message_size(this._handle);
        this._emit('gameMessage', { data: core.HEAPU8.slice(at, at + n) });
        break;
      }
      default:
        if (kind < 0) {
          this.closeReason = `bad frame from the server: ${text()}`;
          this._emit('error', { code: 0, message: this.closeReason, fatal: true });
          this._socket.close(1002, 'bad frame');
        }
    }
  }

  /** After a desync: the bodies the resync snapshot shows differing from the local world at the
   * same tick, local against server (position, linear velocity). */
  _diff() {
    const core = this._core;
    const n = core._lsw_diff_count(this._handle);
    const base = core._lsw_diff_data(this._handle) >> 2;
    const f = core.HEAPF32;
    const bodies = [];
    for (let i = 0; i < n; ++i) {
      const o = base + i * 13;
      bodies.push({
        index1: f[o],
        local: { position: [f[o + 1], f[o + 2], f[o + 3]], velocity: [f[o + 7], f[o + 8], f[o + 9]] },
        server: { position: [f[o + 4], f[o + 5], f[o + 6]], velocity: [f[o + 10], f[o + 11], f[o + 12]] },
      });
    }
    return { tick: core._lsw_diff_tick(this._handle), bodies };
  }

  _startPings() {
    const ping = () => this._sendOut(this._core._lsw_ping(this._handle));
    ping();
    this._pingTimer = setInterval(ping, this._options.pingIntervalMs ?? 500);
  }

  _onClose(code, reason) {
    if (this._pingTimer) clearInterval(this._pingTimer);
    this._state = 'closed';
    if (!this.closeReason) this.closeReason = reason || `WebSocket closed (${code})`;
    this._emit('closed', { code, reason: this.closeReason });
  }

  /** Releases the wasm memory of this client (after close). */
  dispose() {
    this._core._lsw_destroy(this._handle);
    this._handle = 0;
  }
}

/** Connects to `options.url` (ws://host:ws-port) and joins `options.room` as `options.name`;
 * resolves once the WebSocket is open (the 'joined' and 'snapshot' events follow). */
export async function connect(options) {
  const core = await loadCore(options);
  const client = new LockstepClient(core, options);
  const socket = new WebSocket(options.url);
  client._open(socket);
  await new Promise((resolve, reject) => {
    socket.addEventListener('open', resolve, { once: true });
    socket.addEventListener('close', (e) => reject(new Error(`cannot connect to ${options.url}: ${e.reason || e.code}`)), { once: true });
  });
  return client;
}

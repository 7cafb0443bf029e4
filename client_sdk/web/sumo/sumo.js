// The sumo page: one keyboard player against whoever else is in the room (bots, other pages).
// URL parameters: ws (ws://host:port of the server's --ws-port; default this host, port 7778),
// room (default "sumo"), name, token, prediction (ticks; default 0: draw the verified world),
// and for tests: script=1 (steer by a fixed pattern instead of the keyboard), ticks=N (play N
// ticks after the join, default 600, then put the result in the title), report=PATH (POST the
// verified hashes there as JSON before setting the title), desyncAt=N (move our ball 0.5 m
// outside the tick N ticks after the join, to see how a desync is shown).
import { connect } from '../lockstep.js';

const params = new URLSearchParams(location.search);
const wsUrl = params.get('ws') ?? `ws://${location.hostname || '127.0.0.1'}:7778`;
const scripted = params.get('script') === '1';
const playTicks = Number(params.get('ticks') ?? 600);
const reportUrl = params.get('report');
const prediction = Number(params.get('prediction') ?? 0);
const desyncAt = Number(params.get('desyncAt') ?? 0);
let diffBodies = new Set();  // bodies the last resync showed differing, drawn in magenta
let lastDiff = null;
const SPEED = 4;  // m/s, as the terminal sumo client

const $ = (id) => document.getElementById(id);
const view = $('view');
const ctx = view.getContext('2d');
const timeline = $('timeline').getContext('2d');
const keys = new Set();
addEventListener('keydown', (e) => keys.add(e.key.toLowerCase()));
addEventListener('keyup', (e) => keys.delete(e.key.toLowerCase()));

const hashes = [];  // [tick, hash] of every verified tick
let joinTick = -1;
let finished = false;
let lastDesync = null;
let failure = '';
let errors = 0;     // non-fatal Errors from the server (refused inputs, ...)
let inputsSent = 0;

function heading(tick) {
  if (scripted) {
    // Every half second a new direction of eight, the same for every run.
    const k = Math.floor(tick / 30) % 8;
    const angle = (k * Math.PI) / 4;
    return [Math.round(Math.cos(angle) * 1000) / 1000, Math.round(Math.sin(angle) * 1000) / 1000];
  }
  let x = 0, z = 0;
  if (keys.has('arrowleft') || keys.has('a')) x -= 1;
  if (keys.has('arrowright') || keys.has('d')) x += 1;
  if (keys.has('arrowup') || keys.has('w')) z -= 1;
  if (keys.has('arrowdown') || keys.has('s')) z += 1;
  const n = Math.hypot(x, z) || 1;
  return [x / n, z / n];
}

function myBall(client, bodies) {
  return bodies.find((b) => b.type === 'dynamic' && b.owner === client.playerId);
}

async function finish(client, title) {
  if (finished) return;
  finished = true;
  if (reportUrl) {
    const stats = client ? client.stats : { verified: 0, desyncs: 0, rttMs: 0 };
    try {
      await fetch(reportUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ title, joinTick, hashes, ...stats, inputsSent, errors, desync: lastDesync, diff: lastDiff, failure }),
      });
    } catch (e) {
      title = `error: report not sent: ${e}`;
    }
  }
  document.title = title;
  $('status').textContent = title;
}

// The arena of a level scene (the bowl), drawn once from the level's triangles seen from above:
// lower triangles first, each shaded by its height and how steep it is. null: the flat platform.
let arena = null;
let arenaLooked = false;  // the level was looked for (once the world holds its bodies)

function drawArena(triangles, scale) {
  if (triangles.length === 0) return null;
  const canvas = document.createElement('canvas');
  canvas.width = canvas.height = 600;
  const g = canvas.getContext('2d');
  g.translate(300, 300);
  const order = [];
  let low = Infinity, high = -Infinity;
  for (let t = 0; t < triangles.length; t += 9) {
    const y = (triangles[t + 1] + triangles[t + 4] + triangles[t + 7]) / 3;
    low = Math.min(low, y);
    high = Math.max(high, y);
    order.push([y, t]);
  }
  order.sort((a, b) => a[0] - b[0]);
  for (const [y, t] of order) {
    const [ax, ay, az, bx, by, bz, cx, cy, cz] = triangles.subarray(t, t + 9);
    // Upward component of the unit normal (b − a) × (c − a): 1 on flat ground, less on slopes.
    const ux = bx - ax, uy = by - ay, uz = bz - az, vx = cx - ax, vy = cy - ay, vz = cz - az;
    const nx = uy * vz - uz * vy, ny = uz * vx - ux * vz, nz = ux * vy - uy * vx;
    const up = Math.abs(ny) / (Math.hypot(nx, ny, nz) || 1);
    const lift = high > low ? (y - low) / (high - low) : 0.5;
    const shade = Math.round(40 + 40 * lift + 20 * up);
    g.fillStyle = `rgb(${shade}, ${shade + 4}, ${shade + 14})`;
    g.strokeStyle = g.fillStyle;
    g.beginPath();
    g.moveTo(ax * scale, az * scale);
    g.lineTo(bx * scale, bz * scale);
    g.lineTo(cx * scale, cz * scale);
    g.closePath();
    g.fill();
    g.stroke();  // no hairline gaps between neighbours
  }
  return canvas;
}

function draw(client) {
  const world = prediction > 0 ? client.predicted : client.confirmed;
  const bodies = world.bodies();
  const scale = 600 / 14;  // 14 m across
  ctx.clearRect(0, 0, 600, 600);
  if (!arenaLooked && client.confirmed.tick >= 0) {
    arena = drawArena(client.levelTriangles(), scale);
    arenaLooked = true;
  }
  if (arena) ctx.drawImage(arena, 0, 0);
  ctx.save();
  ctx.translate(300, 300);
  if (!arena) {
    // The platform: two 8 m squares, one turned 45°: an octagon.
    ctx.fillStyle = '#3a3f4b';
    for (const turn of [0, Math.PI / 4]) {
      ctx.save();
      ctx.rotate(turn);
      ctx.fillRect(-4 * scale, -4 * scale, 8 * scale, 8 * scale);
      ctx.restore();
    }
  }
  const colours = ['#e6c229', '#f17105', '#d11149', '#6610f2', '#1a8fe3', '#3fb950', '#c0c0c0', '#ff8cc6'];
  for (const b of bodies) {
    if (b.type !== 'dynamic') continue;
    const [x, y, z] = b.position;
    if (y < -6) continue;  // fallen; the rules respawn it
    const r = b.radius * scale * (1 + Math.max(-0.5, Math.min(0.5, y / 8)));
    ctx.beginPath();
    ctx.arc(x * scale, z * scale, r, 0, 2 * Math.PI);
    ctx.fillStyle = colours[(b.owner - 1 + colours.length) % colours.length];
    ctx.globalAlpha = y < -0.3 ? 0.4 : 1;
    ctx.fill();
    ctx.globalAlpha = 1;
    if (b.owner === client.playerId) {
      ctx.lineWidth = 3;
      ctx.strokeStyle = '#ffffff';
      ctx.stroke();
    }
    if (diffBodies.has(b.id.index1)) {
      ctx.beginPath();
      ctx.arc(x * scale, z * scale, r + 6, 0, 2 * Math.PI);
      ctx.lineWidth = 3;
      ctx.strokeStyle = '#ff00ff';
      ctx.stroke();
    }
  }
  ctx.restore();

  const stats = client.stats;
  $('tick').textContent = `${client.confirmed.tick}` + (prediction > 0 ? ` (predicted ${client.predicted.tick})` : '');
  $('verified').textContent = stats.verified;
  $('desyncs').textContent = stats.desyncs;
  $('desyncs').className = stats.desyncs ? 'bad' : 'good';
  $('rtt').textContent = stats.rttMs ? `${stats.rttMs.toFixed(1)} ms` : '-';
  $('hash').textContent = client.confirmed.hash;
  const state = client.gameState(8);
  const scores = bodies.filter((b) => b.type === 'dynamic').map((b) => b.owner);
  $('scores').innerHTML = scores
    .map((p) => `<tr><td>player ${p}${p === client.playerId ? ' (you)' : ''}</td><td>${client.score(p)}</td></tr>`)
    .join('') + Object.entries(state).filter(([k]) => k !== 'score').map(([k, v]) => `<tr><td>${k}</td><td>${JSON.stringify(v)}</td></tr>`).join('');
}

function drawTimeline(tick, desync) {
  if (joinTick < 0) return;
  const x = Math.floor(((tick - joinTick) * 300) / Math.max(playTicks, 1)) % 300;
  timeline.fillStyle = desync ? '#ff3b3b' : '#2f7d32';
  timeline.fillRect(x, desync ? 0 : 6, desync ? 2 : 1, desync ? 24 : 12);
}

// The resync's comparison, as the replay viewer shows a desync: the differing bodies in magenta
// on the view, their state local against server in a table.
function showDiff(diff) {
  lastDiff = diff;
  diffBodies = new Set(diff.bodies.map((b) => b.index1));
  const f = (v) => v.map((x) => x.toFixed(3)).join(', ');
  const rows = diff.bodies.slice(0, 12).map((b) =>
    `<tr><td>body ${b.index1}</td><td>position</td><td>${f(b.local.position)}</td><td>${f(b.server.position)}</td></tr>` +
    `<tr><td></td><td>velocity</td><td>${f(b.local.velocity)}</td><td>${f(b.server.velocity)}</td></tr>`).join('');
  $('desync').innerHTML += `<p>At tick ${diff.tick}, ${diff.bodies.length} bodies differed (magenta):</p>` +
    `<table><tr><th></th><th>field</th><th>here</th><th>server</th></tr>${rows}</table>`;
}

async function main() {
  document.title = 'connecting';
  let client;
  try {
    client = await connect({
      url: wsUrl,
      room: params.get('room') ?? 'sumo',
      name: params.get('name') ?? 'web',
      token: params.get('token') ?? '',
      scene: params.get('scene') ?? 'sumo',
      prediction,
    });
  } catch (e) {
    failure = String(e.message ?? e);
    await finish(null, `error: ${failure}`);
    return;
  }
  $('status').textContent = 'joining';
  client.on('joined', (e) => {
    $('player').textContent = `${e.playerId} in ${e.scene} at ${e.tickRateHz} Hz`;
  });
  client.on('snapshot', (e) => {
    if (joinTick < 0) joinTick = e.tick;
    if (e.diff) showDiff(e.diff);
    $('status').textContent = 'playing';
    document.title = 'playing';
  });
  client.on('tick', (e) => {
    if (desyncAt > 0 && e.tick === joinTick + desyncAt) {
      const ball = myBall(client, client.confirmed.bodies());
      if (ball) client.debugPerturb(ball.id, 0.5, 0);
    }
    hashes.push([e.tick, e.hash]);
    drawTimeline(e.tick, false);
    if (joinTick >= 0 && e.tick >= joinTick + playTicks && !finished) {
      const s = client.stats;
      const ok = s.desyncs === 0 && !failure;
      finish(client, ok ? `ok verified=${s.verified} desyncs=0` : `error: verified=${s.verified} desyncs=${s.desyncs} ${failure}`);
      client.close();
    }
  });
  client.on('desync', (e) => {
    lastDesync = e;
    drawTimeline(e.tick, true);
    $('desync').innerHTML = `<p class="bad">desync at tick ${e.tick}: local ${e.localHash}, server ${e.serverHash}.<br>` +
      'Reported to the server (it writes its replay window: open it with lockstep-replay view); a snapshot was asked for.</p>';
  });
  client.on('error', (e) => {
    if (e.fatal) failure = e.message;
    else errors += 1;
    $('status').textContent = e.message;
  });
  client.on('closed', (e) => {
    if (!finished) finish(client, `error: closed: ${e.reason}`);
  });

  // Inputs: one per tick, as soon as the next input tick moves on (a 4 ms timer: animation frames
  // stop in a hidden tab, inputs should not).
  let lastSent = 0;
  setInterval(() => {
    if (client.state !== 'joined' || finished) return;
    const tick = client.nextInputTick();
    if (tick <= lastSent) return;
    const ball = myBall(client, client.confirmed.bodies());
    if (!ball) return;
    // Steer only while on the platform (centre 0.5 m above it): a ball going over the edge falls.
    if (ball.position[1] < 0.4) return;
    const [hx, hz] = heading(tick);
    if (client.sendInput({ body: ball.id, velocity: [hx * SPEED, 0, hz * SPEED] }) !== null) {
      lastSent = tick;
      inputsSent += 1;
    }
    if (prediction > 0) client.predict();
  }, 4);
  const frame = () => {
    if (client.state === 'joined') draw(client);
    requestAnimationFrame(frame);
  };
  requestAnimationFrame(frame);
}

main();

#!/usr/bin/env python3
"""The replay viewer's page in a real browser (ctest label `browser`).

Makes three pages with lockstep-replay: the golden `inputs` replay, a made client desync dump
(`record-scripted --desync-at 200`: player 1's body moved 0.5 m before tick 200) viewed alone,
and the golden replay viewed --against that dump. Each is opened in headless Debian chromium with
no network (an empty network namespace when `unshare -n` works, and a dead proxy and resolver in
any case), at two ticks, and checked from the outside:

- the page's own result, read back from the DOM: the title is "ok tick=N bodies=M" with the tick
  asked for in the URL and the number of bodies the replay has at that tick;
- the 3D view is not blank: many colours, most pixels not background;
- the highlighted body (magenta, the body picked by #body=K or the differing bodies of a
  desync) is drawn: enough magenta pixels, one within a few pixels of where the page says the
  body's centre projects;
- on a desync page the timeline has the first divergent tick in red at the position computed
  here from the layout rule (tick t of a window of n ticks starts at x = floor(t·W/n)), and a page
  without a desync has no red there;
- the two ticks give different pictures (the bodies moved);
- a page whose pose data is damaged sets its title to "error: ...";
- a koth match recording (tests/replay_files/koth_ready.lsrp: three bots that said "ready"): the
  camera frames the play area from the dynamic bodies over the whole match (the page's frame
  is the one computed here from the decoded poses, and it stays inside the platform, not the
  40 m kill box 12 m below it), its two sensors are drawn translucent (alpha < 1) and the view
  behind the hill shows through, the game state fields are listed, and the game events and
  messages up to the tick are counted and listed in the panel, their marks on the timeline.

Usage: viewer_browser_test.py --tool lockstep-replay --source-dir DIR --work-dir DIR
       [--save-screenshots DIR] (writes the screenshots the docs show)
Exit 0 when every check passes, 1 with the failures listed.
"""
import argparse
import math
import os
import re
import shutil
import struct
import subprocess
import sys
import zlib

WIDTH, HEIGHT = 1000, 600
PANEL_W, TIMELINE_H = 400, 40  # the page's layout (replays/viewer/viewer.html)
BACKGROUND = (27, 29, 34)
INPUTS_BODIES = 105  # bodies of the built-in `inputs` scene (it never spawns or destroys)

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)
    return ok


def read_png(path):
    """RGB rows of an 8-bit non-interlaced PNG (colour types 2 and 6), with zlib only."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(path + ": not a PNG")
    at, idat, width = 8, b"", 0
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or colour not in (2, 6) or interlace:
                raise ValueError("%s: PNG depth %d colour %d interlace %d not handled"
                                 % (path, depth, colour, interlace))
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        at += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, previous, at = [], bytearray(stride), 0
    for _ in range(height):
        kind, line = raw[at], bytearray(raw[at + 1:at + 1 + stride])
        at += 1 + stride
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = previous[i]
            c = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * channels:x * channels + 3]) for x in range(width)])
        previous = line
    return rows


def find_chromium(source_dir):
    for name in ("chromium", "chromium-browser"):
        if shutil.which(name):
            return shutil.which(name)
    print("chromium is missing: installing it with scripts/setup.sh")
    subprocess.run(["bash", os.path.join(source_dir, "scripts", "setup.sh")], check=False)
    return shutil.which("chromium")


def chromium_command(chromium, page, fragment, screenshot=None):
    """Headless chromium on page#fragment, no network, dumping the DOM (and a screenshot)."""
    command = [chromium, "--headless", "--no-sandbox", "--use-angle=swiftshader",
               "--enable-unsafe-swiftshader", "--proxy-server=127.0.0.1:9",
               "--host-resolver-rules=MAP * ~NOTFOUND", "--no-first-run",
               "--window-size=%d,%d" % (WIDTH, HEIGHT), "--virtual-time-budget=10000"]
    if screenshot:
        command.append("--screenshot=" + screenshot)
    command += ["--dump-dom", "file://" + page + "#" + fragment]
    if shutil.which("unshare") and subprocess.run(["unshare", "-n", "true"],
                                                  capture_output=True).returncode == 0:
        command = ["unshare", "-n"] + command
    return command


def open_page(chromium, page, fragment, screenshot):
    """Runs headless chromium on page#fragment; returns (title, probe attributes)."""
    result = subprocess.run(chromium_command(chromium, page, fragment, screenshot),
                            capture_output=True, text=True, timeout=300)
    title = re.search(r"<title>([^<]*)</title>", result.stdout)
    probe = re.search(r'<div id="probe"([^>]*)>', result.stdout)
    attributes = dict(re.findall(r'data-([a-z-]+)="([^"]*)"', probe.group(1))) if probe else {}
    if not title:
        print(result.stderr[-2000:])
    return (title.group(1) if title else "(no title)"), attributes


def project(probe, width, height):
    """Screen position of the highlighted body's centre, from the camera the page reports (an
    orbit: target, yaw, pitch, distance; 45° vertical field of view, y up)."""
    tx, ty, tz, yaw, pitch, distance = (float(v) for v in probe["camera"].split(","))
    px, py, pz = (float(v) for v in probe["highlight"].split(","))
    eye = (tx + distance * math.cos(pitch) * math.sin(yaw), ty + distance * math.sin(pitch),
           tz + distance * math.cos(pitch) * math.cos(yaw))

    def norm(v):
        length = math.sqrt(sum(c * c for c in v))
        return tuple(c / length for c in v)

    def cross(a, b):
        return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])

    back = norm((eye[0] - tx, eye[1] - ty, eye[2] - tz))
    right = norm(cross((0, 1, 0), back))
    up = cross(back, right)
    v = (px - eye[0], py - eye[1], pz - eye[2])
    depth = -sum(a * b for a, b in zip(back, v))
    f = 1 / math.tan(math.pi / 8)
    ndc_x = f * height / width * sum(a * b for a, b in zip(right, v)) / depth
    ndc_y = f * sum(a * b for a, b in zip(up, v)) / depth
    return int(round((ndc_x + 1) / 2 * width)), int(round((1 - ndc_y) / 2 * height))


def view_area(rows):
    return [row[:WIDTH - PANEL_W] for row in rows[:HEIGHT - TIMELINE_H]]


def is_magenta(p):
    return p[0] >= 230 and p[1] <= 30 and p[2] >= 230


def is_red(p):
    return p[0] >= 240 and p[1] <= 15 and p[2] <= 15


def check_shot(label, rows, title, probe, tick, desync_tick, first_tick, last_tick):
    check(title == "ok tick=%d bodies=%d" % (tick, INPUTS_BODIES),
          "%s: title %r is ok tick=%d bodies=%d" % (label, title, tick, INPUTS_BODIES))
    check(len(rows) == HEIGHT and len(rows[0]) == WIDTH,
          "%s: screenshot is %dx%d" % (label, WIDTH, HEIGHT))
    area = view_area(rows)
    pixels = [p for row in area for p in row]
    colours = len(set(pixels))
    drawn = sum(1 for p in pixels if max(abs(p[k] - BACKGROUND[k]) for k in range(3)) > 8)
    check(colours >= 50, "%s: 3D view has %d colours (>= 50: not blank)" % (label, colours))
    check(drawn >= len(pixels) // 4,
          "%s: %d of %d view pixels are not background (>= a quarter)" % (label, drawn, len(pixels)))
    magenta = sum(1 for p in pixels if is_magenta(p))
    check(magenta >= 40, "%s: %d magenta pixels of the highlighted body (>= 40)" % (label, magenta))
    if "highlight" in probe and "camera" in probe:
        x, y = project(probe, len(area[0]), len(area))
        near = [area[j][i] for j in range(max(0, y - 4), min(len(area), y + 5))
                for i in range(max(0, x - 4), min(len(area[0]), x + 5))]
        check(any(is_magenta(p) for p in near),
              "%s: magenta within 4 px of the highlighted body's centre (%d, %d)" % (label, x, y))
    else:
        check(False, "%s: the page reports its camera and the highlighted body" % label)
    ticks = last_tick - first_tick + 1
    strip = rows[HEIGHT - 10]  # below the current-tick marker (the timeline's top 12 px)
    if desync_tick is not None:
        x = (desync_tick - first_tick) * WIDTH // ticks
        xs = [min(WIDTH - 1, x + k) for k in range(1, 4)]
        check(all(is_red(strip[i]) for i in xs) and all(is_red(rows[HEIGHT - 20][i]) for i in xs),
              "%s: red mark of tick %d at x = %d on the timeline" % (label, desync_tick, x))
    else:
        check(not any(is_red(p) for p in strip), "%s: no red mark on the timeline" % label)


def is_event_mark(p):
    return abs(p[0] - 0xff) <= 8 and abs(p[1] - 0xd2) <= 8 and abs(p[2] - 0x4a) <= 8


def check_koth(chromium, tool, source_dir, work):
    """The koth recording: framing, translucent sensors, game state and events."""
    replay = os.path.join(source_dir, "tests", "replay_files", "koth_ready.lsrp")
    page = os.path.join(work, "koth.html")
    out = run(tool, ["view", replay, "-o", page], "koth page")
    match = re.search(r"frame ([-\d.e]+),([-\d.e]+),([-\d.e]+) to ([-\d.e]+),([-\d.e]+),([-\d.e]+)",
                      out)
    if not check(match is not None, "koth: the tool prints the frame it chose: " + out.strip()):
        return
    lo = [float(match.group(k)) for k in (1, 2, 3)]
    hi = [float(match.group(k)) for k in (4, 5, 6)]
    # The platform is 12 x 12 m at y 0 (the balls' centres 0.5 m above it); the kill box is 80 m
    # wide, 12 m below. The frame holds the balls' play, not the kill box.
    check(all(-9 <= lo[k] and hi[k] <= 9 for k in (0, 2)) and lo[1] >= -3 and hi[1] <= 6,
          "koth: frame %s..%s is about the platform, not the kill box" % (lo, hi))
    check(hi[0] - lo[0] >= 4 and hi[2] - lo[2] >= 4,
          "koth: frame %s..%s spans the balls' play (>= 4 m across)" % (lo, hi))
    shot = os.path.join(work, "koth_200.png")
    if os.path.exists(shot):
        os.remove(shot)
    title, probe = open_page(chromium, page, "tick=200", shot)
    check(title.startswith("ok tick=200 "), "koth: title %r" % title)
    framed = [float(v) for v in probe.get("frame", "").split(",") if v]
    check(len(framed) == 6 and all(abs(a - b) < 1e-3 for a, b in zip(framed, lo + hi)),
          "koth: the page frames the box the tool chose (%s)" % probe.get("frame"))
    check(probe.get("sensors") == "2", "koth: both sensors drawn (%s)" % probe.get("sensors"))
    alpha = float(probe.get("sensor-alpha", "1"))
    check(0 < alpha < 1, "koth: sensors drawn with alpha %.2f (< 1: translucent)" % alpha)
    check(probe.get("game-fields") == "score,hill_seconds,king",
          "koth: game state fields listed: %r" % probe.get("game-fields"))
    check(int(probe.get("messages", "0")) == 3, "koth: 3 ready messages by tick 200 (%s)"
          % probe.get("messages"))
    check(int(probe.get("events", "0")) >= 6,
          "koth: >= 6 game events by tick 200 (3 joins, 3 ready): %s" % probe.get("events"))
    dom = open_dom(chromium, page, "tick=200")
    check(dom.count("event 5 player") == 3, "koth: the panel lists the 3 'ready' events")
    check('message from player' in dom, "koth: the panel lists the game messages")
    if not check(os.path.exists(shot), "koth: screenshot written"):
        return
    rows = read_png(shot)
    strip = rows[HEIGHT - 4]
    check(sum(1 for p in strip if is_event_mark(p)) >= 4, "koth: game event marks on the timeline")
    # A sensor drawn solid would paint one flat colour over the hill; translucent, the hill's
    # projected centre mixes its green with the platform behind it (neither pure).
    area = view_area(rows)
    greenish = [p for row in area for p in row if p[1] > p[0] + 20 and p[1] > p[2] + 10]
    check(len(set(greenish)) >= 3, "koth: the sensors' green varies with what is behind them")


def open_dom(chromium, page, fragment):
    return subprocess.run(chromium_command(chromium, page, fragment), capture_output=True,
                          text=True, timeout=300).stdout


def run(tool, args, what):
    result = subprocess.run([tool] + args, capture_output=True, text=True, timeout=300)
    check(result.returncode == 0, what + ": " + (result.stdout + result.stderr).strip())
    return result.stdout


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tool", required=True)
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--work-dir", required=True)
    parser.add_argument("--save-screenshots")
    options = parser.parse_args()
    work = os.path.abspath(options.work_dir)
    os.makedirs(work, exist_ok=True)
    chromium = find_chromium(options.source_dir)
    if not chromium:
        print("FAIL chromium is not installed and scripts/setup.sh could not install it")
        return 1

    golden = os.path.join(options.source_dir, "replays", "golden", "inputs_4p_600.lsr")
    client = os.path.join(work, "client_desync.lsr")
    pages = {name: os.path.join(work, name + ".html") for name in ("golden", "desync", "client")}
    run(options.tool, ["record-scripted", "--scene", "inputs", "--ticks", "600", "--seed", "1",
                       "--desync-at", "200", client], "made a client desync dump")
    run(options.tool, ["view", golden, "-o", pages["golden"]], "golden page")
    out = run(options.tool, ["view", golden, "--against", client, "-o", pages["desync"]],
              "desync page (--against)")
    check("first divergent tick 200" in out, "the tool names tick 200 for the made desync")
    out = run(options.tool, ["view", client, "-o", pages["client"]], "client dump page")
    check("first divergent tick 200" in out, "the tool names tick 200 in the client's dump alone")

    # (page, fragment, tick shown, desync tick, window)
    shots = [("golden", "tick=100&body=17", 100, None, (0, 600)),
             ("golden", "tick=400&body=17", 400, None, (0, 600)),
             ("desync", "tick=200", 200, 200, (0, 600)),
             ("desync", "tick=230", 230, 200, (0, 600)),
             ("client", "tick=200", 200, 200, (0, 200))]
    pictures = {}
    for name, fragment, tick, desync_tick, (first, last) in shots:
        label = "%s #%s" % (name, fragment)
        shot = os.path.join(work, "%s_%d.png" % (name, tick))
        if os.path.exists(shot):
            os.remove(shot)
        title, probe = open_page(chromium, pages[name], fragment, shot)
        if not check(os.path.exists(shot), label + ": screenshot written"):
            continue
        rows = read_png(shot)
        pictures[(name, tick)] = view_area(rows)
        check_shot(label, rows, title, probe, tick, desync_tick, first, last)
    for name, a, b in (("golden", 100, 400), ("desync", 200, 230)):
        if (name, a) in pictures and (name, b) in pictures:
            check(pictures[(name, a)] != pictures[(name, b)],
                  "%s: ticks %d and %d give different pictures" % (name, a, b))
    # A page whose data is damaged says so in its title instead of drawing nothing silently.
    damaged = os.path.join(work, "damaged.html")
    html = open(pages["golden"]).read()
    start = html.index('id="poses-a" type="application/octet-stream">') + 45
    open(damaged, "w").write(html[:start] + "!!not base64!!" + html[start:])
    title, _ = open_page(chromium, damaged, "tick=5", os.path.join(work, "damaged.png"))
    check(title.startswith("error: "), "damaged page: title %r starts with 'error: '" % title)
    check_koth(chromium, options.tool, options.source_dir, work)
    if options.save_screenshots:
        for name, tick, target in (("golden", 400, "viewer-golden.png"),
                                   ("desync", 200, "viewer-desync.png"),
                                   ("koth", 200, "viewer-koth.png")):
            source = os.path.join(work, "%s_%d.png" % (name, tick))
            if os.path.exists(source):
                shutil.copyfile(source, os.path.join(options.save_screenshots, target))
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The browser client in headless Chromium against a real server (ctest label `browser`).

Starts lockstep-server with its WebSocket listener (--ws-port, an Origin allow-list naming the
page's origin) on the sumo scene and rules, two native lockstep-bots playing sumo in a room (each
writing its verified hashes with --hash-log), then packs the web package with `npm pack`, unpacks
it into a fresh folder and serves that folder over HTTP: the sumo page of the unpacked package,
importing the package's own lockstep.js and wasm, joins the same room in headless Chromium and
plays 600 ticks (10 s at 60 Hz) with a scripted input pattern. Checked:

- the page's title (read from Chromium's DevTools endpoint) is "ok verified=N desyncs=0" with
  N >= 540, and the report the page posts says the same;
- every tick the page verified has the hash both native bots verified for that tick, and the
  page and each bot share at least 540 ticks;
- the server counted no desync report and no protocol error.

Waits for conditions (the bots' first hashes, the page's report), never for a fixed time.
With --bench it instead opens the package's benchmark page and prints the wasm step times and
hashes next to the native lockstep-sim's (bench/README.md).

--scene NAME plays on scenes/NAME.scene instead of sumo (sumo_bowl: an OBJ level the page receives
in the Welcome); the server, the bots and the page all name it.

Usage: web_browser_test.py --bin-dir DIR --source-dir DIR --work-dir DIR [--bench] [--scene NAME]
Exit 0 when every check passes, 1 with the failures listed.
"""
import argparse
import http.server
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tarfile
import threading
import time
import urllib.request

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)
    return ok


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(condition, timeout_s, what):
    """Polls `condition` until it returns a true value; that value, or None after timeout_s."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    print("timed out waiting for " + what, flush=True)
    return None


def read_hashes(path):
    hashes = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2:
                    hashes[int(parts[0])] = parts[1]
    return hashes


class Site(http.server.SimpleHTTPRequestHandler):
    """Serves the unpacked package; POST /report stores the page's report."""
    reports = []

    def log_message(self, *args):
        pass

    def end_headers(self):
        self.send_header("Cache-Control", "no-store")
        super().end_headers()

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        try:
            Site.reports.append(json.loads(body))
        except ValueError:
            Site.reports.append({"title": "error: unreadable report"})
        self.send_response(204)
        self.end_headers()


Site.extensions_map = dict(http.server.SimpleHTTPRequestHandler.extensions_map)
Site.extensions_map.update({".js": "text/javascript", ".mjs": "text/javascript",
                            ".wasm": "application/wasm"})


def serve(root):
    port = free_port()
    handler = lambda *a, **k: Site(*a, directory=root, **k)  # noqa: E731
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, port


def start_chromium(chromium, url, profile):
    command = [chromium, "--headless=new", "--no-sandbox", "--no-first-run",
               "--disable-background-timer-throttling", "--disable-renderer-backgrounding",
               "--disable-backgrounding-occluded-windows", "--user-data-dir=" + profile,
               "--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1", url]
    log = open(os.path.join(profile, "..", "chromium.log"), "w")
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)


def page_title(profile):
    """The page's title from Chromium's DevTools endpoint (its port file), or None."""
    try:
        with open(os.path.join(profile, "DevToolsActivePort")) as f:
            port = int(f.readline())
        with urllib.request.urlopen("http://127.0.0.1:%d/json/list" % port, timeout=5) as r:
            pages = [p for p in json.load(r) if p.get("type") == "page"]
        return pages[0]["title"] if pages else None
    except (OSError, ValueError, KeyError, IndexError):
        return None


def stop(process):
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def pack(source_dir, work_dir):
    """npm pack of client_sdk/web, unpacked into work_dir/site; returns the site folder."""
    web = os.path.join(source_dir, "client_sdk", "web")
    if not check(shutil.which("npm") is not None,
                 "npm is installed (NodeSource's nodejs, or Debian's npm beside Debian's nodejs)"):
        return None
    result = subprocess.run(["npm", "pack", "--silent", "--pack-destination", work_dir], cwd=web,
                            capture_output=True, text=True, timeout=120)
    if not check(result.returncode == 0, "npm pack makes the package"):
        print(result.stdout + result.stderr)
        return None
    tarball = os.path.join(work_dir, result.stdout.strip().splitlines()[-1])
    site = os.path.join(work_dir, "site")
    shutil.rmtree(site, ignore_errors=True)
    with tarfile.open(tarball) as tar:
        tar.extractall(work_dir)
    os.rename(os.path.join(work_dir, "package"), site)
    names = sorted(os.listdir(os.path.join(site, "dist")))
    check(names == ["lockstep_core.mjs", "lockstep_core.wasm"], "the package holds the wasm core")
    check(os.path.exists(os.path.join(site, "lockstep.d.ts")), "the package holds its types")
    return site


def run_bench(args, chromium, site):
    httpd, http_port = serve(site)
    profile = os.path.join(args.work_dir, "profile-bench")
    shutil.rmtree(profile, ignore_errors=True)
    os.makedirs(profile)
    browser = start_chromium(chromium, "http://127.0.0.1:%d/bench/index.html" % http_port, profile)
    title = wait_for(lambda: (lambda t: t if t and (t.startswith("bench ") or t.startswith(
        "error")) else None)(page_title(profile)), 600, "the benchmark page")
    stop(browser)
    httpd.shutdown()
    print("chromium: %s" % title)
    for scene, ticks in (("inputs", 600), ("pile", 300)):
        match = re.search(r"%s=([0-9.]+)/([0-9a-f]{16})/([0-9.]+)" % scene, title or "")
        check(match is not None, "%s: the page reports its step time" % scene)
        # Native: the fastest of ten runs, as the page reports its fastest of ten rounds
        # (lockstep-sim times ticks 1..N, the page 61..N).
        native_us, native_hashes_equal = [], True
        for _ in range(10):
            native = subprocess.run([os.path.join(args.bin_dir, "lockstep-sim"), "--scene", scene,
                                     "--ticks", str(ticks), "--every", str(ticks), "--timing"],
                                    capture_output=True, text=True)
            native_hashes_equal &= match.group(2) in native.stdout
            native_us.append(float(re.search(r"\(([0-9.]+) us/tick\)", native.stderr).group(1)))
        check(native_hashes_equal,
              "%s: the hash at tick %d in Chromium equals the native one" % (scene, ticks))
        wasm_us, first_us = float(match.group(1)), float(match.group(3))
        print("%s: chromium %.1f us/step (first round %.1f), native %.1f us/step: %.2fx" %
              (scene, wasm_us, first_us, min(native_us), wasm_us / min(native_us)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin-dir", required=True, help="folder of lockstep-server, -bot, -sim")
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--work-dir", required=True)
    parser.add_argument("--bench", action="store_true")
    parser.add_argument("--scene", default="sumo",
                        help="scenes/NAME.scene with the sumo rules (sumo_bowl: a level the page "
                             "gets in the Welcome)")
    args = parser.parse_args()
    os.makedirs(args.work_dir, exist_ok=True)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not check(chromium is not None, "chromium is installed (scripts/setup.sh)"):
        return 1
    # The wasm core up to date with the sources (a no-op build when it is).
    build = subprocess.run(["bash", os.path.join(args.source_dir, "scripts", "build-web.sh")])
    if not check(build.returncode == 0, "scripts/build-web.sh builds the wasm core"):
        return 1
    site = pack(args.source_dir, args.work_dir)
    if site is None:
        return 1
    if args.bench:
        run_bench(args, chromium, site)
        return 1 if failures else 0

    httpd, http_port = serve(site)
    origin = "http://127.0.0.1:%d" % http_port
    tcp_port, ws_port = free_port(), free_port()
    logs = {name: open(os.path.join(args.work_dir, name + ".log"), "w")
            for name in ("server", "bot1", "bot2")}
    stats_path = os.path.join(args.work_dir, "server-stats.json")
    server = subprocess.Popen(
        [os.path.join(args.bin_dir, "lockstep-server"), "--bind", "127.0.0.1", "--port",
         str(tcp_port), "--ws-port", str(ws_port), "--ws-allow-origin", origin, "--scene",
         os.path.join(args.source_dir, "scenes", args.scene + ".scene"), "--rules", "sumo",
         "--replay-dir", "", "--stats-json", stats_path],
        stdout=logs["server"], stderr=subprocess.STDOUT)
    processes = [server]
    browser = None
    try:
        def listening():
            try:
                with socket.create_connection(("127.0.0.1", ws_port), timeout=1):
                    return True
            except OSError:
                return server.poll() is not None
        if not check(wait_for(listening, 60, "the server") and server.poll() is None,
                     "the server listens on TCP and WebSocket"):
            return 1
        hash_logs = [os.path.join(args.work_dir, "bot%d.hashes" % i) for i in (1, 2)]
        for i, path in enumerate(hash_logs, start=1):
            if os.path.exists(path):
                os.remove(path)
            processes.append(subprocess.Popen(
                [os.path.join(args.bin_dir, "lockstep-bot"), "--port", str(tcp_port), "--room",
                 "web", "--name", "bot%d" % i, "--scene", args.scene, "--game", "sumo", "--seed",
                 str(i), "--seconds", "600", "--hash-log", path],
                stdout=logs["bot%d" % i], stderr=subprocess.STDOUT))
        check(wait_for(lambda: all(read_hashes(p) for p in hash_logs), 60, "the bots' first ticks")
              is not None, "both native bots joined and verify ticks")

        profile = os.path.join(args.work_dir, "profile")
        shutil.rmtree(profile, ignore_errors=True)
        os.makedirs(profile)
        url = "%s/sumo/index.html?ws=ws://127.0.0.1:%d&room=web&name=page&script=1&ticks=600" \
              "&report=/report&scene=%s" % (origin, ws_port, args.scene)
        browser = start_chromium(chromium, url, profile)
        report = wait_for(lambda: Site.reports[0] if Site.reports else None, 240,
                          "the page's report")
        if not check(report is not None, "the page reported its run"):
            return 1
        title = wait_for(lambda: (lambda t: t if t and (t.startswith("ok") or t.startswith(
            "error")) else None)(page_title(profile)), 60, "the page's final title")
        print("page title: %s" % title)
        match = re.fullmatch(r"ok verified=(\d+) desyncs=0", title or "")
        check(match is not None, "the title reads 'ok verified=N desyncs=0' (%s)" % title)
        check(match is not None and int(match.group(1)) >= 540,
              "the page verified at least 540 ticks")
        check(report.get("title") == title, "the report's title is the page's")
        check(report.get("desyncs") == 0, "the page counted no desync")
        # The page played: the server applied its inputs (listed in the TickFrames it verified),
        # and refused none. It steers only while its ball is on the platform, so how many it sends
        # depends on the match (a ball knocked off early sends fewer); the last few, stamped for
        # ticks after the page stopped verifying, are in flight when it leaves.
        sent = report.get("inputsSent", 0)
        applied = report.get("inputsApplied", 0)
        check(report.get("errors") == 0, "the server refused nothing the page sent")
        check(sent >= 60, "the page sent %s inputs (at least a second of steering)" % sent)
        check(sent - 15 <= applied <= sent,
              "the server applied %s of the page's %s inputs (all but those in flight)" %
              (applied, sent))
        page = {int(t): h for t, h in report.get("hashes", [])}
        check(len(page) >= 540, "the page reported %d verified hashes" % len(page))

        # The bots keep playing past the page's last tick; their logs then cover it.
        last = max(page) if page else 0
        wait_for(lambda: all(max(read_hashes(p) or {0: ""}) >= last for p in hash_logs), 60,
                 "the bots to reach the page's last tick")
        for i, path in enumerate(hash_logs, start=1):
            bot = read_hashes(path)
            common = sorted(set(page) & set(bot))
            differ = [t for t in common if page[t] != bot[t]]
            check(len(common) >= 540, "bot%d and the page share %d ticks" % (i, len(common)))
            check(not differ, "bot%d's hashes equal the page's on every shared tick%s" % (
                i, "" if not differ else " (first differing tick %d)" % differ[0]))
    finally:
        if browser is not None:
            stop(browser)
        for p in reversed(processes):
            stop(p)
        httpd.shutdown()
    try:
        with open(stats_path) as f:
            stats = json.load(f)
        check(stats.get("desync_reports", 0) == 0, "the server received no desync report")
        check(stats.get("protocol_errors", 0) == 0, "the server sent no protocol error")
    except (OSError, ValueError) as e:
        check(False, "the server's summary JSON is readable (%s)" % e)
    if failures:
        print("\n%d failed:\n  %s" % (len(failures), "\n  ".join(failures)))
        for name in ("server", "bot1", "bot2", "chromium"):
            path = os.path.join(args.work_dir, name + ".log")
            if os.path.exists(path):
                print("---- %s (last lines)" % name)
                print("".join(open(path, errors="replace").readlines()[-15:]))
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

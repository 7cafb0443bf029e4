#!/usr/bin/env python3
"""Soak: a token-protected lockstep-server under honest and hostile clients for a while.

Honest lockstep-bot processes join rooms with fresh join tokens and leave at random; hostile
connections arrive all along: garbage bytes, a byte then silence (slowloris), silence, bots
without a token, bots replaying a used token, bots that stop reading (SIGSTOP) and slow readers
(stopped and continued in turn). The run passes when

  - every honest bot ends with 0 desyncs and no error,
  - the server's resident memory after the warm-up stays within +-5 % of its median,
  - the server's tick counter grows between every two samples (no room stalled the thread),
  - every hostile connection was closed and counted by the counter that names why.

Usage: scripts/soak.py --build-dir build/ci --minutes 10   (scripts/soak.sh wraps it)
Prints a table of figures; exits 0 on a pass, 1 on a failure, 2 on a usage or set-up error.
"""
import argparse
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOMS = 3  # honest rooms r0..r2, 3 bots each at any time
BOTS_PER_ROOM = 3
HOSTILE_ROOMS = 4  # rooms x0..x3 for the hostile bots, so they never fill an honest room
SAMPLE_S = 5.0


def fail_setup(message):
    print(f"soak: {message}", file=sys.stderr)
    sys.exit(2)


class Soak:
    def __init__(self, build_dir, minutes, seed):
        self.apps = os.path.join(build_dir, "apps")
        for tool in ("lockstep-server", "lockstep-bot", "lockstep-token"):
            if not os.access(os.path.join(self.apps, tool), os.X_OK):
                fail_setup(f"{tool} not found in {self.apps} (build first)")
        self.seconds = minutes * 60.0
        self.rng = random.Random(seed)
        self.tmp = tempfile.mkdtemp(prefix="lockstep-soak-")
        self.key = os.path.join(self.tmp, "key")
        self.lock = threading.Lock()
        self.sent = {"garbage": 0, "slowloris": 0, "silent": 0, "tokenless": 0, "replayed": 0,
                     "never_reading": 0, "slow_reader": 0}
        self.not_closed = []  # hostile sockets the server never closed
        self.honest = []  # (name, exit code, summary fields, stderr tail)
        self.slow_desyncs = 0  # desyncs reported by slow readers (which may also be dropped)
        self.refused_ok = {"tokenless": 0, "replayed": 0}
        self.rss = []  # (seconds since start, kB)
        self.rooms = []  # (seconds since start, open rooms)
        self.ticks = []  # (seconds since start, lockstep_ticks_total)
        self.threads = []
        self.procs = []
        self.next_name = 0

    # ---- tools -----------------------------------------------------------------------------
    def tool(self, name):
        return os.path.join(self.apps, name)

    def mint(self, room, ttl_s=300):
        out = subprocess.run([self.tool("lockstep-token"), "mint", "--key-file", self.key,
                              "--room", room, "--ttl-s", str(ttl_s)],
                             check=True, capture_output=True, text=True).stdout
        return out.strip().splitlines()[-1]

    def start_server(self):
        subprocess.run([self.tool("lockstep-token"), "keygen", "--key-file", self.key],
                       check=True, capture_output=True)
        self.summary_path = os.path.join(self.tmp, "summary.json")
        self.server = subprocess.Popen(
            [self.tool("lockstep-server"), "--bind", "127.0.0.1", "--port", "0",
             "--metrics-port", "0", "--metrics-bind", "127.0.0.1", "--token-key-file", self.key,
             "--replay-dir", os.path.join(self.tmp, "replays"), "--hello-timeout-ms", "1000",
             "--read-timeout-ms", "4000", "--stats-interval-ms", "0", "--max-players", "8",
             # Rooms stay open while empty, so the memory they take is taken once (warm-up)
             # and a flat RSS afterwards means no leak per connection.
             "--empty-room-grace-ms", str(int(self.seconds * 1000) + 60_000),
             "--stats-json", self.summary_path],
            stdout=subprocess.PIPE, stderr=open(os.path.join(self.tmp, "server.log"), "w"),
            text=True)
        self.port = self.metrics_port = None
        deadline = time.monotonic() + 30
        while (self.port is None or self.metrics_port is None) and time.monotonic() < deadline:
            line = self.server.stdout.readline()
            if not line:
                break
            if line.startswith("listening port="):
                self.port = int(line.split("=")[1])
            elif line.startswith("metrics port="):
                self.metrics_port = int(line.split("=")[1])
        if self.port is None or self.metrics_port is None:
            fail_setup(f"the server did not start (log: {self.tmp}/server.log)")
        # Keep reading its stdout: the summary line it prints at exit lists every client of the
        # run and outgrows the pipe's buffer, and an unread pipe would hold the exit up.
        threading.Thread(target=self.server.stdout.read, daemon=True).start()

    def bot(self, room, token, seconds, quiet=True):
        self.next_name += 1
        name = f"h{self.next_name}"
        args = [self.tool("lockstep-bot"), "--port", str(self.port), "--room", room, "--name",
                name, "--seconds", f"{seconds:.1f}",
                "--seed", str(self.rng.randrange(1, 2**63))]
        if quiet:
            args.append("--quiet")
        if token is not None:
            args += ["--token", token]
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.procs.append(proc)
        return name, proc

    @staticmethod
    def summary_fields(stdout):
        for line in reversed(stdout.splitlines()):
            if "ticks_verified=" in line:
                return dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
        return {}

    def hostile_room(self):
        return f"x{self.rng.randrange(HOSTILE_ROOMS)}"

    # ---- honest players ----------------------------------------------------------------------
    def honest_player(self, room):
        name, proc = self.bot(room, self.mint(room), self.rng.uniform(4, 15))
        out, err = proc.communicate()
        with self.lock:
            self.honest.append((name, proc.returncode, self.summary_fields(out), err[-300:]))

    # ---- hostile connections ------------------------------------------------------------------
    def raw(self, kind, payload, then_wait_s):
        """Connects, sends payload (bytes, or a list sent a byte at a time), and waits for the
        server to close the connection."""
        with self.lock:
            self.sent[kind] += 1
        try:
            s = socket.create_connection(("127.0.0.1", self.port), timeout=then_wait_s)
            if isinstance(payload, list):
                for b in payload:
                    s.sendall(b)
                    time.sleep(0.4)
            elif payload:
                s.sendall(payload)
            s.settimeout(then_wait_s)
            while True:
                if not s.recv(4096):
                    break  # closed by the server
        except (ConnectionResetError, BrokenPipeError):
            pass  # closed by the server
        except socket.timeout:
            with self.lock:
                self.not_closed.append(kind)
        finally:
            try:
                s.close()
            except Exception:
                pass

    def garbage(self):
        # A length prefix far over any frame cap, then noise: refused as a bad frame.
        self.raw("garbage", b"\xff\xff\xff\x7f" + os.urandom(60), 10)

    def slowloris(self):
        # A frame header a byte at a time, never a Hello: closed at the Hello deadline.
        self.raw("slowloris", [b"\x10", b"\x00", b"\x00", b"\x00", b"\x01"] * 4, 10)

    def silent(self):
        self.raw("silent", b"", 10)

    def tokenless(self):
        with self.lock:
            self.sent["tokenless"] += 1
        _, proc = self.bot(self.hostile_room(), None, 2, quiet=False)
        out, err = proc.communicate()
        if proc.returncode != 0 and "missing" in (out + err):
            with self.lock:
                self.refused_ok["tokenless"] += 1

    def replayed(self):
        room = self.hostile_room()
        token = self.mint(room)
        name, first = self.bot(room, token, 2)
        out, err = first.communicate()
        with self.lock:
            self.honest.append((name, first.returncode, self.summary_fields(out), err[-300:]))
            self.sent["replayed"] += 1
        _, again = self.bot(room, token, 2, quiet=False)
        out, err = again.communicate()
        if again.returncode != 0 and "replayed" in (out + err):
            with self.lock:
                self.refused_ok["replayed"] += 1

    def never_reading(self):
        with self.lock:
            self.sent["never_reading"] += 1
        room = self.hostile_room()
        _, proc = self.bot(room, self.mint(room), 60)
        time.sleep(2)
        proc.send_signal(signal.SIGSTOP)  # stops reading and pinging: the read timeout ends it
        time.sleep(8)
        proc.send_signal(signal.SIGKILL)
        proc.communicate()

    def slow_reader(self):
        with self.lock:
            self.sent["slow_reader"] += 1
        room = self.hostile_room()
        name, proc = self.bot(room, self.mint(room), 8)
        while proc.poll() is None:
            time.sleep(0.3)
            proc.send_signal(signal.SIGSTOP)
            time.sleep(0.3)
            if proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
        out, _ = proc.communicate()
        with self.lock:
            self.slow_desyncs += int(self.summary_fields(out).get("desyncs", "0"))

    # ---- sampling ------------------------------------------------------------------------------
    def sample(self, t):
        with open(f"/proc/{self.server.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    self.rss.append((t, int(line.split()[1])))
        body = urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics",
                                      timeout=10).read().decode()
        for line in body.splitlines():
            if line.startswith("lockstep_ticks_total "):
                self.ticks.append((t, float(line.split()[1])))
            elif line.startswith("lockstep_rooms "):
                self.rooms.append((t, float(line.split()[1])))

    def spawn(self, fn, *args):
        thread = threading.Thread(target=fn, args=args, daemon=True)
        thread.start()
        self.threads.append(thread)

    # ---- the run ---------------------------------------------------------------------------------
    def run(self):
        self.start_server()
        start = time.monotonic()
        hostile = [self.garbage, self.slowloris, self.silent, self.tokenless, self.replayed,
                   self.never_reading, self.slow_reader]
        honest_threads = {}
        next_sample = next_hostile = 0.0
        while (t := time.monotonic() - start) < self.seconds:
            for r in range(ROOMS):
                live = [th for th in honest_threads.get(r, []) if th.is_alive()]
                while len(live) < BOTS_PER_ROOM:
                    th = threading.Thread(target=self.honest_player, args=(f"r{r}",), daemon=True)
                    th.start()
                    live.append(th)
                    self.threads.append(th)
                honest_threads[r] = live
            if t >= next_hostile:
                self.spawn(self.rng.choice(hostile))
                next_hostile = t + self.rng.uniform(0.5, 2.0)
            if t >= next_sample:
                self.sample(t)
                next_sample = t + SAMPLE_S
            time.sleep(0.1)
        for th in self.threads:
            th.join(timeout=90)
        self.sample(time.monotonic() - start)
        self.server.send_signal(signal.SIGTERM)
        try:
            self.server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.server.kill()
            print("soak: FAIL: the server did not exit on SIGTERM within 60 s")
            return 1
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
        return self.judge()

    def judge(self):
        failures = []
        with open(self.summary_path) as f:
            summary = json.load(f)
        bad = [(n, rc, fields.get("desyncs"), fields.get("errors"), err)
               for n, rc, fields, err in self.honest
               if rc != 0 or fields.get("desyncs") != "0" or fields.get("errors") != "0"]
        if bad:
            failures.append(f"{len(bad)} of {len(self.honest)} honest bots failed, first: {bad[0]}")
        # The warm-up lasts until every room of the run exists (each takes its memory once, and
        # the hostile rooms open when their first client comes, which in a short run can be
        # half-way through), and at least 30 % of the run (at most a minute).
        warm_up_s = min(60.0, 0.3 * self.seconds)
        rss_from_s = warm_up_s
        if self.rooms:
            peak = max(v for _, v in self.rooms)
            rss_from_s = max(warm_up_s, min(t for t, v in self.rooms if v == peak))
        warm = [kb for t, kb in self.rss if t >= rss_from_s]
        if len(warm) >= 2:
            median = sorted(warm)[len(warm) // 2]
            spread = max(abs(kb - median) for kb in warm) / median
            if spread > 0.05:
                failures.append(f"RSS after warm-up strays {100 * spread:.1f} % from its median "
                                f"{median} kB (bound 5 %)")
        else:
            spread, median = 0.0, (self.rss[-1][1] if self.rss else 0)
        stalls = [(round(a[0]), round(b[0])) for a, b in zip(self.ticks, self.ticks[1:])
                  if a[0] >= warm_up_s and b[1] <= a[1]]
        if stalls:
            failures.append(f"ticks did not grow between samples at {stalls[0]}")
        if self.slow_desyncs:
            failures.append(f"slow readers reported {self.slow_desyncs} desyncs")
        if self.not_closed:
            failures.append(f"hostile connections never closed: {self.not_closed}")
        admission = summary.get("admission", {})
        refusals = admission.get("token_refusals", {})
        errors = summary.get("errors_by_code", {})
        checks = [
            ("garbage", errors.get("bad_frame", 0), self.sent["garbage"]),
            ("slowloris + silent", admission.get("hello_timeouts", 0),
             self.sent["slowloris"] + self.sent["silent"]),
            ("tokenless", refusals.get("missing", 0), self.sent["tokenless"]),
            ("replayed", refusals.get("replayed", 0), self.sent["replayed"]),
            ("never reading", summary.get("timeouts", 0) + summary.get(
                "slow_consumer_disconnects", 0), self.sent["never_reading"]),
        ]
        for what, counted, sent in checks:
            if counted < sent:
                failures.append(f"{what}: {sent} sent, {counted} counted")
        for what in ("tokenless", "replayed"):
            if self.refused_ok[what] != self.sent[what]:
                failures.append(f"{what}: {self.sent[what]} sent, the bot was told why "
                                f"{self.refused_ok[what]} times")
        rooms = summary.get("rooms", [])
        print(f"soak: {self.seconds / 60:.1f} min, {len(self.honest)} honest bot runs "
              f"({sum(1 for h in self.honest if h[1] == 0)} clean), "
              f"{sum(int(h[2].get('ticks_verified', 0)) for h in self.honest)} ticks verified, "
              f"{len(rooms)} rooms")
        print("soak: hostile sent / counted: " +
              ", ".join(f"{w} {s}/{c}" for w, c, s in checks) +
              f", slow readers {self.sent['slow_reader']}")
        if self.rss:
            print(f"soak: server RSS {self.rss[0][1]} kB at start, median from {rss_from_s:.0f} s "
                  f"(every room open) {median} kB, max stray {100 * spread:.1f} % over "
                  f"{len(warm)} samples, at end {self.rss[-1][1]} kB")
        if self.ticks:
            print(f"soak: ticks {self.ticks[-1][1]:.0f} over {len(self.ticks)} samples, "
                  f"{len(stalls)} stalls")
        print(f"soak: files in {self.tmp}")
        for f in failures:
            print(f"soak: FAIL: {f}")
        print("soak: " + ("PASS" if not failures else "FAIL"))
        return 0 if not failures else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-dir", default="build/ci")
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if args.minutes <= 0:
        fail_setup("--minutes must be positive")
    sys.exit(Soak(args.build_dir, args.minutes, args.seed).run())


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes tests/scenes/hulls.txt, the golden scene of convex hulls and compounds
(docs/determinism.md).

A pile of mixed hulls dropped into a walled box: tetrahedra, 5-point pyramids, 8-point boxes,
16- and 24-point rounded stones, and hull templates that scripted `at` lines spawn in; then a
layer of compounds on top (a table on four legs, an L, a dumbbell of two balls on a bar, a pair
of hulls), owned by players 1-4 whom the input script drives, and compound templates spawned the
same way. Every
coordinate is written with 6 decimals, so the text (not this script's floating point) is what
every platform reads. Run it again only to change the scene; the golden chain follows it.
"""
import math
import sys


def fmt(v):
    s = f"{v:.6f}".rstrip("0").rstrip(".")
    return "0" if s in ("-0", "") else s


def points(ps):
    return ",".join(fmt(c) for p in ps for c in p)


def stone(n, rx, ry, rz):
    # A Fibonacci sphere of n points, squashed: a rounded pebble.
    out = []
    for i in range(n):
        y = 1 - (2 * i + 1) / n
        r = math.sqrt(max(0.0, 1 - y * y))
        a = 2.399963229728653 * i
        out.append((rx * r * math.cos(a), ry * y, rz * r * math.sin(a)))
    return out


tetra = [(-0.3, -0.2, -0.25), (0.3, -0.2, -0.25), (0, -0.2, 0.3), (0, 0.35, 0)]
pyramid = [(-0.3, -0.15, -0.3), (0.3, -0.15, -0.3), (0.3, -0.15, 0.3), (-0.3, -0.15, 0.3),
           (0, 0.35, 0)]
box = [((i & 1) and 0.25 or -0.25, (i & 2) and 0.2 or -0.2, (i & 4) and 0.3 or -0.3)
       for i in range(8)]
stone16 = stone(16, 0.3, 0.22, 0.26)
stone24 = stone(24, 0.28, 0.28, 0.34)
shapes = [tetra, pyramid, box, stone16, stone24]

lines = [
    "# Hulls golden scene, written by scripts/make-hulls-scene.py: tetrahedra, 5-point pyramids,",
    "# 8-point boxes and 16/24-point rounded stones dropped into a walled box, then more spawned",
    "# from hull templates by `at` lines; on top, four compounds that players 1-4 push, and more",
    "# spawned from compound templates (tests/golden/hulls.txt, replays/golden/hulls_pushes_600.lsr).",
    "scene version=1 name=hulls",
    "world max_bodies=128 max_commands_per_tick=8",
    "compound name=table",
    "child shape=box half=0.45,0.03,0.3 pos=0,0.5,0",
    "child shape=box half=0.03,0.25,0.03 pos=0.4,0.25,0.25",
    "child shape=box half=0.03,0.25,0.03 pos=-0.4,0.25,0.25",
    "child shape=box half=0.03,0.25,0.03 pos=0.4,0.25,-0.25",
    "child shape=box half=0.03,0.25,0.03 pos=-0.4,0.25,-0.25",
    "compound name=ell",
    "child shape=box half=0.1,0.35,0.1 pos=0,0.35,0",
    "child shape=box half=0.3,0.1,0.1 pos=0.4,0.1,0",
    "compound name=bell",
    "child shape=sphere radius=0.15 pos=-0.35,0,0",
    "child shape=sphere radius=0.15 pos=0.35,0,0",
    "child shape=capsule radius=0.04 half_height=0.3 pos=0,0,0 rot=0,0,0.707107,0.707107",
    "compound name=pair",
    f"child shape=hull points={points(tetra)} pos=-0.3,0,0",
    f"child shape=hull points={points(pyramid)} pos=0.3,0,0 rot=0,0.382683,0,0.92388",
]
for k, s in enumerate(shapes):
    lines.append(f"template name=hull{k} type=dynamic shape=hull points={points(s)} friction=0.6")
compounds = ["table", "ell", "bell", "pair"]
for k, c in enumerate(compounds):
    lines.append(f"template name=compound{k} type=dynamic shape=compound compound={c} friction=0.6")
lines += [
    "body type=static shape=plane normal=0,1,0",
    "body type=static shape=box half=3,1,0.25 pos=0,1,-3.25 rot=0,0,0,1",
    "body type=static shape=box half=3,1,0.25 pos=0,1,3.25 rot=0,0,0,1",
    "body type=static shape=box half=0.25,1,3 pos=-3.25,1,0 rot=0,0,0,1",
    "body type=static shape=box half=0.25,1,3 pos=3.25,1,0 rot=0,0,0,1",
]
count = 0
for layer in range(4):
    for i in range(4):
        for j in range(4):
            s = shapes[(i + 2 * j + 3 * layer) % len(shapes)]
            x = -1.8 + 1.2 * i + 0.1 * (layer % 2)
            z = -1.8 + 1.2 * j - 0.1 * (layer % 2)
            y = 0.6 + 0.8 * layer
            # A turn about a tilted axis, different for each body.
            a = 0.3 + 0.37 * count
            ax = (math.sin(a), 0.6, math.cos(a))
            n = math.sqrt(sum(c * c for c in ax))
            h = 0.5 * (0.4 + 0.13 * count)
            q = tuple(c / n * math.sin(h) for c in ax) + (math.cos(h),)
            norm = math.sqrt(sum(c * c for c in q))
            q = tuple(c / norm for c in q)
            lines.append(f"body type=dynamic shape=hull points={points(s)} friction=0.6 "
                         f"pos={fmt(x)},{fmt(y)},{fmt(z)} rot={','.join(fmt(c) for c in q)}")
            count += 1
for k, c in enumerate(compounds):
    x = -1.2 + 2.4 * (k % 2)
    z = -1.2 + 2.4 * (k // 2)
    # Owned by players 1-4: lockstep-sim's input script (and the golden replay recorded with
    # `lockstep-replay record-scripted`) pushes them into the pile.
    lines.append(f"body type=dynamic shape=compound compound={c} friction=0.6 owner={k + 1} "
                 f"pos={fmt(x)},{fmt(4.0 + 0.3 * k)},{fmt(z)} rot=0.087156,0,0.043578,0.995247")
for t in range(8):
    tick = 60 + 30 * t
    lines.append(f"at tick={tick} spawn template=hull{t % len(shapes)} "
                 f"pos={fmt(-1 + 0.3 * t)},4,{fmt(0.5 - 0.2 * t)} rot=0,0,0,1")
for t in range(4):
    lines.append(f"at tick={330 + 30 * t} spawn template=compound{t} "
                 f"pos={fmt(0.6 - 0.4 * t)},4.5,{fmt(-0.5 + 0.3 * t)} rot=0,0,0,1")
out = sys.argv[1] if len(sys.argv) > 1 else "tests/scenes/hulls.txt"
with open(out, "w") as f:
    f.write("\n".join(lines) + "\n")

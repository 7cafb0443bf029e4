#!/usr/bin/env python3
"""Writes scenes/sumo_bowl.obj: the sumo bowl arena, a dish y = RIM * (r / RADIUS)^2 out to
RADIUS, written the way a 3D tool exports a model (a header, mtllib/o/g/usemtl/s lines, v, vt and
vn, and f a/b/c polygons: quads, with a triangle fan at the centre), so the level loader is
tested on what artists' files look like. Faces turn counter-clockwise seen from above (their
front is the inside of the bowl, the side the players roll on).

Run from the repository root: python3 scripts/make_bowl_obj.py > scenes/sumo_bowl.obj
"""
import math

RADIUS = 6.0  # m, to the rim
RIM = 1.5  # m, the rim's height above the centre
RINGS = 8
SEGMENTS = 24


def height(r):
    return RIM * (r / RADIUS) ** 2


def main():
    vertices = [(0.0, 0.0, 0.0)]
    for ring in range(1, RINGS + 1):
        r = RADIUS * ring / RINGS
        for seg in range(SEGMENTS):
            a = 2.0 * math.pi * seg / SEGMENTS
            vertices.append((r * math.cos(a), height(r), r * math.sin(a)))

    def index(ring, seg):  # 1-based OBJ index
        return 1 if ring == 0 else 2 + (ring - 1) * SEGMENTS + seg % SEGMENTS

    def normal(x, z):
        # The surface's upward normal: (-dy/dx, 1, -dy/dz), normalised.
        k = 2.0 * RIM / (RADIUS * RADIUS)
        n = (-k * x, 1.0, -k * z)
        length = math.sqrt(sum(c * c for c in n))
        return tuple(c / length for c in n)

    def front_up(face):
        # Counter-clockwise seen from +y: the first corner's cross product points up.
        a, b, c = (vertices[i - 1] for i in face[:3])
        u = (b[0] - a[0], b[1] - a[1], b[2] - a[2])
        v = (c[0] - a[0], c[1] - a[1], c[2] - a[2])
        return u[2] * v[0] - u[0] * v[2] > 0

    faces = []
    for seg in range(SEGMENTS):
        faces.append([index(0, 0), index(1, seg), index(1, seg + 1)])
    for ring in range(1, RINGS):
        for seg in range(SEGMENTS):
            faces.append([index(ring, seg), index(ring + 1, seg), index(ring + 1, seg + 1),
                          index(ring, seg + 1)])
    faces = [f if front_up(f) else list(reversed(f)) for f in faces]

    out = ["# Blender 3.6.5", "# www.blender.org", "mtllib sumo_bowl.mtl", "o Bowl"]
    for x, y, z in vertices:
        out.append(f"v {x:.6f} {y:.6f} {z:.6f}")
    for x, y, z in vertices:
        out.append(f"vt {0.5 + x / (2 * RADIUS):.6f} {0.5 + z / (2 * RADIUS):.6f}")
    for x, y, z in vertices:
        nx, ny, nz = normal(x, z)
        out.append(f"vn {nx:.4f} {ny:.4f} {nz:.4f}")
    out += ["g Bowl_Stone", "usemtl Stone", "s 1"]
    for face in faces:
        out.append("f " + " ".join(f"{i}/{i}/{i}" for i in face))
    print("\n".join(out))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Sanity checker for contact_sim URDF files (python3 stdlib only).

Usage
  python3 scripts/check_urdf_inertia.py FILE.urdf [FILE.urdf ...]
  python3 scripts/check_urdf_inertia.py --scene urdf/quadruped.urdf urdf/arm7.urdf
  python3 scripts/check_urdf_inertia.py --expect-fail tests/data/broken_*.urdf tests/data/not_xml.urdf
  python3 scripts/check_urdf_inertia.py urdf/arm7.urdf --q arm_joint2=0.5,arm_joint4=1.2

Checks for every file (an ERROR makes the file fail)
  * well-formed XML with a <robot> root element
  * links: unique names; <inertial> with mass > 0, all six inertia attributes,
    a positive-definite tensor, and principal moments that satisfy the triangle
    inequality (I1 + I2 >= I3 ...). A link with no <inertial> is an error when it is
    the only body moved by a non-fixed joint (singular mass matrix); otherwise it is
    a warning (a massless frame)
  * geometry: positive sizes, known shape tags, mesh files that exist (relative to
    the URDF file), mesh volume > 0 (closed, outward normals)
  * joints: unique names, a valid URDF type, parent and child links that exist,
    at most one parent per link, exactly one root, no cycles, a non-zero axis,
    <limit> with effort and velocity for revolute/prismatic joints and lower <= upper,
    mimic targets that exist, non-negative damping and friction
  * consistency (WARNING): the declared inertial matches the inertia of the link's
    single collision shape (or its single visual shape) for the declared mass
Reports
  * mass table, total mass, COM and DOF count
  * robot "quadruped": foot height at q = 0, standing posture and base height,
    HAA angle at which a thigh would touch the base
  * robot "arm7": IK for a downward-pointing gripper at a target, checked with FK
  * fixed-base robots with 1 or 2 moving joints and a stable q = 0: small-oscillation
    periods (pendulum, double pendulum)
  * --q: world poses of all links at a given configuration (root at the identity)
Numbers are printed with 6 significant digits. The exit status is 0 when every file
passes, or, with --expect-fail, when every file fails.
"""

import argparse
import math
import os
import re
import struct
import sys
import xml.etree.ElementTree as ET

G = 9.81
VALID_JOINT_TYPES = {"revolute", "continuous", "prismatic", "fixed", "floating", "planar"}
MOVING_1DOF = {"revolute", "continuous", "prismatic"}


def f6(x):
    return "%.6g" % x


def v6(v):
    return "(" + ", ".join(f6(0.0 if abs(c) < 5e-13 else c) for c in v) + ")"


# ----------------------------------------------------------------------------------
# small 3-D linear algebra on lists
# ----------------------------------------------------------------------------------
def mat_mul(a, b):
    return [[sum(a[i][k] * b[k][j] for k in range(3)) for j in range(3)] for i in range(3)]


def mat_vec(a, v):
    return [sum(a[i][k] * v[k] for k in range(3)) for i in range(3)]


def transp(a):
    return [[a[j][i] for j in range(3)] for i in range(3)]


def vadd(a, b):
    return [a[i] + b[i] for i in range(3)]


def vsub(a, b):
    return [a[i] - b[i] for i in range(3)]


def vscale(a, s):
    return [a[i] * s for i in range(3)]


def dot(a, b):
    return sum(a[i] * b[i] for i in range(3))


def cross(a, b):
    return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]


def norm(a):
    return math.sqrt(dot(a, a))


IDENT = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]


def rpy_to_mat(r, p, y):
    """URDF convention: R = Rz(yaw) * Ry(pitch) * Rx(roll)."""
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    return [[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr]]


def axis_angle(axis, angle):
    x, y, z = axis
    c, s = math.cos(angle), math.sin(angle)
    t = 1.0 - c
    return [[t * x * x + c, t * x * y - s * z, t * x * z + s * y],
            [t * x * y + s * z, t * y * y + c, t * y * z - s * x],
            [t * x * z - s * y, t * y * z + s * x, t * z * z + c]]


def tf_mul(t1, t2):
    r1, p1 = t1
    r2, p2 = t2
    return (mat_mul(r1, r2), vadd(mat_vec(r1, p2), p1))


def tf_point(t, p):
    return vadd(mat_vec(t[0], p), t[1])


TF_IDENT = (IDENT, [0.0, 0.0, 0.0])


def eig_sym3(a_in):
    """Eigenvalues (ascending) of a symmetric 3x3 matrix, cyclic Jacobi."""
    a = [row[:] for row in a_in]
    for _ in range(100):
        off = a[0][1] ** 2 + a[0][2] ** 2 + a[1][2] ** 2
        scale = sum(a[i][i] ** 2 for i in range(3))
        if off <= 1e-30 * scale or off == 0.0:
            break
        for p, q in ((0, 1), (0, 2), (1, 2)):
            if a[p][q] == 0.0:
                continue
            theta = (a[q][q] - a[p][p]) / (2.0 * a[p][q])
            t = (1.0 if theta >= 0 else -1.0) / (abs(theta) + math.sqrt(theta * theta + 1.0))
            c = 1.0 / math.sqrt(t * t + 1.0)
            s = t * c
            for k in range(3):
                akp, akq = a[k][p], a[k][q]
                a[k][p], a[k][q] = c * akp - s * akq, s * akp + c * akq
            for k in range(3):
                apk, aqk = a[p][k], a[q][k]
                a[p][k], a[q][k] = c * apk - s * aqk, s * apk + c * aqk
    return sorted([a[0][0], a[1][1], a[2][2]])


def rot_tensor(r, i_mat):
    return mat_mul(mat_mul(r, i_mat), transp(r))


def shift_tensor(i_com, m, d):
    """Parallel axis: inertia about a point displaced by -d from the COM (d = com - point)."""
    dd = dot(d, d)
    return [[i_com[i][j] + m * ((dd if i == j else 0.0) - d[i] * d[j]) for j in range(3)] for i in range(3)]


def frob(a):
    return math.sqrt(sum(a[i][j] ** 2 for i in range(3) for j in range(3)))


# ----------------------------------------------------------------------------------
# primitive / mesh mass properties (solid, uniform density)
# ----------------------------------------------------------------------------------
def shape_inertia(kind, params, m):
    """(com offset in geometry frame, inertia about com in geometry frame)"""
    if kind == "box":
        x, y, z = params["size"]
        return [0.0, 0.0, 0.0], [[m * (y * y + z * z) / 12, 0, 0], [0, m * (x * x + z * z) / 12, 0],
                                 [0, 0, m * (x * x + y * y) / 12]]
    if kind == "cylinder":
        r, h = params["radius"], params["length"]
        ip = m * (3 * r * r + h * h) / 12
        return [0.0, 0.0, 0.0], [[ip, 0, 0], [0, ip, 0], [0, 0, m * r * r / 2]]
    if kind == "sphere":
        r = params["radius"]
        i = 0.4 * m * r * r
        return [0.0, 0.0, 0.0], [[i, 0, 0], [0, i, 0], [0, 0, i]]
    if kind == "capsule":
        # cylinder (length h) + two hemispheres, uniform density, axis z
        r, h = params["radius"], params["length"]
        vc, vs = math.pi * r * r * h, 4.0 / 3.0 * math.pi * r ** 3
        mc, ms = m * vc / (vc + vs), m * vs / (vc + vs)
        iz = mc * r * r / 2 + 0.4 * ms * r * r
        # hemisphere pair: about own centre 2/5 ms r^2, shifted by (h/2 + 3r/8) each side
        d = h / 2 + 3 * r / 8
        ihemi = 0.4 * ms * r * r - ms * (3 * r / 8) ** 2 + ms * d * d
        ip = mc * (3 * r * r + h * h) / 12 + ihemi
        return [0.0, 0.0, 0.0], [[ip, 0, 0], [0, ip, 0], [0, 0, iz]]
    return None


def mesh_mass_props(tris):
    """volume, centroid, second-moment matrix about the centroid (per unit density)."""
    vol = 0.0
    first = [0.0, 0.0, 0.0]
    c = [[0.0] * 3 for _ in range(3)]
    for a, b, cc in tris:
        d = dot(a, cross(b, cc))
        vol += d / 6.0
        for i in range(3):
            first[i] += d / 24.0 * (a[i] + b[i] + cc[i])
        for i in range(3):
            for j in range(3):
                s = (a[i] + b[i] + cc[i]) * (a[j] + b[j] + cc[j]) + a[i] * a[j] + b[i] * b[j] + cc[i] * cc[j]
                c[i][j] += d / 120.0 * s
    if abs(vol) < 1e-18:
        return vol, None, None
    com = [first[i] / vol for i in range(3)]
    ccom = [[c[i][j] - vol * com[i] * com[j] for j in range(3)] for i in range(3)]
    return vol, com, ccom


def covariance_to_inertia(ccom, m_over_v):
    tr = ccom[0][0] + ccom[1][1] + ccom[2][2]
    return [[m_over_v * ((tr if i == j else 0.0) - ccom[i][j]) for j in range(3)] for i in range(3)]


def load_obj(path):
    verts, tris = [], []
    with open(path, "r", encoding="utf-8", errors="replace") as fh:
        for line in fh:
            parts = line.split()
            if not parts:
                continue
            if parts[0] == "v":
                verts.append([float(x) for x in parts[1:4]])
            elif parts[0] == "f":
                idx = []
                for tok in parts[1:]:
                    i = int(tok.split("/")[0])
                    idx.append(i - 1 if i > 0 else len(verts) + i)
                for k in range(1, len(idx) - 1):  # fan triangulation
                    tris.append((verts[idx[0]], verts[idx[k]], verts[idx[k + 1]]))
    return tris


def load_stl(path):
    with open(path, "rb") as fh:
        data = fh.read()
    if len(data) >= 84:
        n = struct.unpack("<I", data[80:84])[0]
        if len(data) == 84 + 50 * n:
            tris = []
            for k in range(n):
                vals = struct.unpack("<12f", data[84 + 50 * k: 84 + 50 * k + 48])
                tris.append(([vals[3], vals[4], vals[5]], [vals[6], vals[7], vals[8]], [vals[9], vals[10], vals[11]]))
            return tris
    text = data.decode("ascii", errors="replace")
    if not text.lstrip().startswith("solid"):
        raise ValueError("neither binary nor ASCII STL")
    vs = [[float(x) for x in m.groups()] for m in
          re.finditer(r"vertex\s+(\S+)\s+(\S+)\s+(\S+)", text)]
    if len(vs) % 3 != 0 or not vs:
        raise ValueError("ASCII STL vertex count %d is not a positive multiple of 3" % len(vs))
    return [(vs[i], vs[i + 1], vs[i + 2]) for i in range(0, len(vs), 3)]


def load_mesh(path, scale):
    ext = os.path.splitext(path)[1].lower()
    if ext == ".obj":
        tris = load_obj(path)
    elif ext == ".stl":
        tris = load_stl(path)
    else:
        raise ValueError("unsupported mesh extension %r (expected .obj or .stl)" % ext)
    sx, sy, sz = scale
    tris = [tuple([p[0] * sx, p[1] * sy, p[2] * sz] for p in t) for t in tris]
    if sx * sy * sz < 0:  # mirrored: fix winding
        tris = [(t[0], t[2], t[1]) for t in tris]
    return tris


# ----------------------------------------------------------------------------------
# model
# ----------------------------------------------------------------------------------
class Report:
    def __init__(self):
        self.errors, self.warnings, self.lines = [], [], []

    def err(self, msg):
        self.errors.append(msg)

    def warn(self, msg):
        self.warnings.append(msg)

    def out(self, msg=""):
        self.lines.append(msg)


class Geom:
    def __init__(self):
        self.kind, self.params, self.origin = None, {}, TF_IDENT
        self.mesh_tris = None  # loaded triangles (already scaled), geometry frame


class Link:
    def __init__(self, name):
        self.name = name
        self.mass = None  # None = no <inertial>
        self.com = [0.0, 0.0, 0.0]
        self.inertia = None  # 3x3 about COM, in the LINK frame
        self.collisions, self.visuals = [], []


class Joint:
    def __init__(self, name):
        self.name = name
        self.type = None
        self.parent = self.child = None
        self.origin = TF_IDENT
        self.axis = [1.0, 0.0, 0.0]
        self.lower = self.upper = self.effort = self.velocity = None
        self.mimic = None  # (joint, multiplier, offset)


def parse_floats(text, n, what, rep):
    try:
        vals = [float(x) for x in text.split()]
    except (ValueError, AttributeError):
        rep.err("%s: cannot parse %r as %d numbers" % (what, text, n))
        return None
    if len(vals) != n or not all(math.isfinite(v) for v in vals):
        rep.err("%s: expected %d finite numbers, got %r" % (what, n, text))
        return None
    return vals


def parse_float(el, attr, what, rep, required=True, default=None):
    if el is None or el.get(attr) is None:
        if required:
            rep.err("%s: missing attribute %r" % (what, attr))
        return default
    v = parse_floats(el.get(attr), 1, "%s/@%s" % (what, attr), rep)
    return v[0] if v else default


def parse_origin(el, what, rep):
    o = el.find("origin") if el is not None else None
    if o is None:
        return TF_IDENT
    xyz = parse_floats(o.get("xyz", "0 0 0"), 3, what + "/origin@xyz", rep) or [0.0, 0.0, 0.0]
    rpy = parse_floats(o.get("rpy", "0 0 0"), 3, what + "/origin@rpy", rep) or [0.0, 0.0, 0.0]
    return (rpy_to_mat(*rpy), xyz)


def parse_geom(el, what, base_dir, rep, is_collision):
    g = Geom()
    g.origin = parse_origin(el, what, rep)
    ge = el.find("geometry")
    if ge is None or len(list(ge)) != 1:
        rep.err("%s: <geometry> must contain exactly one shape" % what)
        return None
    shape = list(ge)[0]
    g.kind = shape.tag
    w = "%s/%s" % (what, shape.tag)
    if shape.tag == "box":
        size = parse_floats(shape.get("size", ""), 3, w + "@size", rep)
        if size is None:
            return None
        if min(size) <= 0:
            rep.err("%s: box size must be positive, got %s" % (w, v6(size)))
        g.params["size"] = size
    elif shape.tag in ("cylinder", "capsule"):
        if shape.tag == "capsule":
            rep.warn("%s: <capsule> is not standard URDF (urdf-rs accepts it)" % w)
        r = parse_float(shape, "radius", w, rep)
        h = parse_float(shape, "length", w, rep)
        if r is None or h is None:
            return None
        if r <= 0 or h <= 0:
            rep.err("%s: radius and length must be positive (r=%s, l=%s)" % (w, f6(r), f6(h)))
        g.params.update(radius=r, length=h)
    elif shape.tag == "sphere":
        r = parse_float(shape, "radius", w, rep)
        if r is None:
            return None
        if r <= 0:
            rep.err("%s: radius must be positive, got %s" % (w, f6(r)))
        g.params["radius"] = r
    elif shape.tag == "mesh":
        fn = shape.get("filename")
        if not fn:
            rep.err("%s: mesh without filename" % w)
            return None
        scale = parse_floats(shape.get("scale", "1 1 1"), 3, w + "@scale", rep) or [1.0, 1.0, 1.0]
        if min(abs(s) for s in scale) == 0:
            rep.err("%s: zero mesh scale %s" % (w, v6(scale)))
        g.params.update(filename=fn, scale=scale)
        if fn.startswith("package://"):
            rep.warn("%s: %s uses package://; it cannot be resolved without ROS" % (w, fn))
            return g
        path = fn[len("file://"):] if fn.startswith("file://") else fn
        if not os.path.isabs(path):
            path = os.path.join(base_dir, path)
        if not os.path.isfile(path):
            (rep.err if is_collision else rep.warn)("%s: mesh file not found: %s (resolved to %s)" % (w, fn, path))
            return g
        try:
            g.mesh_tris = load_mesh(path, scale)
        except (OSError, ValueError, IndexError) as e:
            rep.err("%s: cannot load mesh %s: %s" % (w, fn, e))
            return g
        vol, com, _ = mesh_mass_props(g.mesh_tris)
        if vol <= 0:
            rep.err("%s: mesh %s has non-positive volume %s (open mesh or inward normals)" % (w, fn, f6(vol)))
        g.params["volume"] = vol
    else:
        rep.err("%s: unknown geometry <%s>" % (what, shape.tag))
        return None
    return g


class Model:
    def __init__(self):
        self.name = ""
        self.links = {}
        self.link_order = []
        self.joints = {}
        self.joint_order = []
        self.root = None
        self.children = {}  # link -> [joint names]
        self.parent_joint = {}  # link -> joint name


def parse_urdf(path, rep):
    try:
        tree = ET.parse(path)
    except ET.ParseError as e:
        rep.err("not well-formed XML: %s" % e)
        return None
    except OSError as e:
        rep.err("cannot read file: %s" % e)
        return None
    robot = tree.getroot()
    if robot.tag != "robot":
        rep.err("root element is <%s>, expected <robot>" % robot.tag)
        return None
    m = Model()
    m.name = robot.get("name", "")
    if not m.name:
        rep.warn("<robot> has no name attribute")
    base_dir = os.path.dirname(os.path.abspath(path))

    for le in robot.findall("link"):
        name = le.get("name")
        if not name:
            rep.err("<link> without a name")
            continue
        if name in m.links:
            rep.err("duplicate link name %r" % name)
            continue
        lk = Link(name)
        m.links[name] = lk
        m.link_order.append(name)
        w = "link %r" % name
        inert = le.findall("inertial")
        if len(inert) > 1:
            rep.err("%s: more than one <inertial>" % w)
        if inert:
            ie = inert[0]
            org = parse_origin(ie, w + " inertial", rep)
            me = ie.find("mass")
            mass = parse_float(me, "value", w + " <mass>", rep)
            if me is None:
                rep.err("%s: <inertial> without <mass>" % w)
            lk.mass = mass if mass is not None else float("nan")
            if mass is not None and not mass > 0:
                rep.err("%s: mass must be > 0, got %s" % (w, f6(mass)))
            ine = ie.find("inertia")
            if ine is None:
                rep.err("%s: <inertial> without <inertia>" % w)
            else:
                vals = {}
                for a in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"):
                    vals[a] = parse_float(ine, a, w + " <inertia>", rep)
                if all(v is not None for v in vals.values()):
                    i_in = [[vals["ixx"], vals["ixy"], vals["ixz"]],
                            [vals["ixy"], vals["iyy"], vals["iyz"]],
                            [vals["ixz"], vals["iyz"], vals["izz"]]]
                    lk.inertia = rot_tensor(org[0], i_in)
                    ev = eig_sym3(i_in)
                    if ev[0] <= 0:
                        rep.err("%s: inertia is not positive definite (principal moments %s)" % (w, v6(ev)))
                    tol = 1e-6 * (ev[0] + ev[1] + ev[2]) if ev[2] > 0 else 0.0
                    if ev[0] + ev[1] < ev[2] - tol:
                        rep.err("%s: principal moments %s violate the triangle inequality "
                                "(%s + %s < %s)" % (w, v6(ev), f6(ev[0]), f6(ev[1]), f6(ev[2])))
                    d = [vals["ixx"], vals["iyy"], vals["izz"]]
                    for i in (range(3) if ev[0] + ev[1] >= ev[2] - tol else ()):
                        if d[i] > d[(i + 1) % 3] + d[(i + 2) % 3] + tol:
                            rep.err("%s: diagonal %s violates the triangle inequality" % (w, v6(d)))
                            break
            lk.com = org[1]
        for k, ce in enumerate(le.findall("collision")):
            g = parse_geom(ce, "%s collision[%d]" % (w, k), base_dir, rep, True)
            if g:
                lk.collisions.append(g)
        for k, ve in enumerate(le.findall("visual")):
            g = parse_geom(ve, "%s visual[%d]" % (w, k), base_dir, rep, False)
            if g:
                lk.visuals.append(g)

    for je in robot.findall("joint"):
        name = je.get("name")
        if not name:
            rep.err("<joint> without a name")
            continue
        if name in m.joints:
            rep.err("duplicate joint name %r" % name)
            continue
        j = Joint(name)
        w = "joint %r" % name
        j.type = je.get("type")
        if j.type not in VALID_JOINT_TYPES:
            rep.err("%s: invalid joint type %r (valid: %s)" % (w, j.type, ", ".join(sorted(VALID_JOINT_TYPES))))
        pe, ce = je.find("parent"), je.find("child")
        j.parent = pe.get("link") if pe is not None else None
        j.child = ce.get("link") if ce is not None else None
        if not j.parent:
            rep.err("%s: missing <parent link=...>" % w)
        elif j.parent not in m.links:
            rep.err("%s: parent link %r does not exist" % (w, j.parent))
        if not j.child:
            rep.err("%s: missing <child link=...>" % w)
        elif j.child not in m.links:
            rep.err("%s: child link %r does not exist" % (w, j.child))
        if j.parent and j.parent == j.child:
            rep.err("%s: parent and child are the same link" % w)
        j.origin = parse_origin(je, w, rep)
        ae = je.find("axis")
        if ae is not None:
            ax = parse_floats(ae.get("xyz", ""), 3, w + "/axis@xyz", rep)
            if ax is not None:
                n = norm(ax)
                if n == 0:
                    if j.type not in ("fixed", "floating"):
                        rep.err("%s: zero axis" % w)
                else:
                    if abs(n - 1) > 1e-6:
                        rep.warn("%s: axis %s is not unit length (normalised)" % (w, v6(ax)))
                    j.axis = vscale(ax, 1.0 / n)
        le = je.find("limit")
        if j.type in ("revolute", "prismatic"):
            if le is None:
                rep.err("%s: %s joint requires <limit>" % (w, j.type))
            else:
                j.lower = parse_float(le, "lower", w + " <limit>", rep, required=False, default=0.0)
                j.upper = parse_float(le, "upper", w + " <limit>", rep, required=False, default=0.0)
                j.effort = parse_float(le, "effort", w + " <limit>", rep)
                j.velocity = parse_float(le, "velocity", w + " <limit>", rep)
                if j.lower is not None and j.upper is not None and j.lower > j.upper:
                    rep.err("%s: lower limit %s > upper limit %s" % (w, f6(j.lower), f6(j.upper)))
                for nm, v in (("effort", j.effort), ("velocity", j.velocity)):
                    if v is not None and v <= 0:
                        rep.warn("%s: %s limit %s <= 0 (joint cannot move under the limit)" % (w, nm, f6(v)))
        elif le is not None and j.type == "continuous":
            j.effort = parse_float(le, "effort", w + " <limit>", rep)
            j.velocity = parse_float(le, "velocity", w + " <limit>", rep)
        de = je.find("dynamics")
        if de is not None:
            for a in ("damping", "friction"):
                v = parse_float(de, a, w + " <dynamics>", rep, required=False)
                if v is not None and v < 0:
                    rep.err("%s: negative %s %s" % (w, a, f6(v)))
        me = je.find("mimic")
        if me is not None:
            mult = parse_float(me, "multiplier", w + " <mimic>", rep, required=False, default=1.0)
            off = parse_float(me, "offset", w + " <mimic>", rep, required=False, default=0.0)
            j.mimic = (me.get("joint"), mult, off)
        m.joints[name] = j
        m.joint_order.append(name)

    # mimic targets (after all joints are known)
    for j in m.joints.values():
        if j.mimic:
            t = j.mimic[0]
            if not t or t not in m.joints:
                rep.err("joint %r: mimic target %r does not exist" % (j.name, t))
                j.mimic = None
            elif t == j.name:
                rep.err("joint %r mimics itself" % j.name)
                j.mimic = None
            elif m.joints[t].mimic:
                rep.warn("joint %r mimics %r, which is itself a mimic joint" % (j.name, t))

    # tree structure
    dangling = set()  # children of joints whose parent link is missing (already reported)
    for j in m.joints.values():
        if j.child in m.links:
            if j.child in m.parent_joint:
                rep.err("link %r has more than one parent joint (%r and %r)"
                        % (j.child, m.parent_joint[j.child], j.name))
                continue
            m.parent_joint[j.child] = j.name
            if j.parent in m.links:
                m.children.setdefault(j.parent, []).append(j.name)
            else:
                dangling.add(j.child)
    roots = [n for n in m.link_order if n not in m.parent_joint]
    if len(roots) == 1:
        m.root = roots[0]
    elif not roots:
        rep.err("no root link (every link has a parent: kinematic loop)")
    else:
        rep.err("expected exactly one root link, found %d: %s" % (len(roots), ", ".join(roots)))
        m.root = roots[0]
    if m.root:
        seen, stack = set(), [m.root]
        while stack:
            n = stack.pop()
            if n in seen:
                rep.err("kinematic loop through link %r" % n)
                continue
            seen.add(n)
            stack.extend(m.joints[jn].child for jn in m.children.get(n, []))
        cut = set()
        for d in dangling:
            cut.update(subtree_links(m, d))
        unreachable = [n for n in m.link_order if n not in seen and n not in roots and n not in cut]
        if unreachable:
            rep.err("links not connected to the root %r: %s" % (m.root, ", ".join(unreachable)))
    return m


# ----------------------------------------------------------------------------------
# kinematics / dynamics helpers
# ----------------------------------------------------------------------------------
def joint_value(m, jn, q):
    j = m.joints[jn]
    if jn in q:
        return q[jn]
    if j.mimic and j.mimic[0] in m.joints:
        return j.mimic[1] * joint_value(m, j.mimic[0], q) + j.mimic[2]
    return 0.0


def joint_motion(j, v):
    if j.type in ("revolute", "continuous"):
        return (axis_angle(j.axis, v), [0.0, 0.0, 0.0])
    if j.type == "prismatic":
        return (IDENT, vscale(j.axis, v))
    return TF_IDENT


def fk(m, q, root_tf=TF_IDENT):
    """world transform of every link frame reachable from the root."""
    out = {m.root: root_tf}
    stack = [m.root]
    while stack:
        n = stack.pop()
        for jn in m.children.get(n, []):
            j = m.joints[jn]
            out[j.child] = tf_mul(tf_mul(out[n], j.origin), joint_motion(j, joint_value(m, jn, q)))
            stack.append(j.child)
    return out


def subtree_links(m, link):
    res, stack = [], [link]
    while stack:
        n = stack.pop()
        res.append(n)
        stack.extend(m.joints[jn].child for jn in m.children.get(n, []))
    return res


def whole_com(m, tfs):
    mt, acc = 0.0, [0.0, 0.0, 0.0]
    for n, lk in m.links.items():
        if lk.mass and lk.mass > 0 and n in tfs:
            acc = vadd(acc, vscale(tf_point(tfs[n], lk.com), lk.mass))
            mt += lk.mass
    return mt, (vscale(acc, 1.0 / mt) if mt > 0 else [0.0, 0.0, 0.0])


def geom_lowest_z(tf_link, g):
    """lowest world z of a collision geometry."""
    t = tf_mul(tf_link, g.origin)
    r, c = t
    if g.kind == "sphere":
        return c[2] - g.params["radius"]
    if g.kind == "box":
        hx, hy, hz = [s / 2 for s in g.params["size"]]
        return c[2] - (abs(r[2][0]) * hx + abs(r[2][1]) * hy + abs(r[2][2]) * hz)
    if g.kind in ("cylinder", "capsule"):
        az = r[2][2]  # z component of the geometry axis
        rad, h = g.params["radius"], g.params["length"]
        low = c[2] - h / 2 * abs(az) - rad * math.sqrt(max(0.0, 1 - az * az))
        if g.kind == "capsule":
            low = c[2] - h / 2 * abs(az) - rad
        return low
    if g.kind == "mesh" and g.mesh_tris:
        return min(tf_point(t, p)[2] for tri in g.mesh_tris for p in tri)
    return None


def lowest_collision(m, tfs, skip=()):
    best = (float("inf"), None)
    for n, lk in m.links.items():
        if n not in tfs or n in skip:
            continue
        for g in lk.collisions:
            z = geom_lowest_z(tfs[n], g)
            if z is not None and z < best[0]:
                best = (z, n)
    return best


# ----------------------------------------------------------------------------------
# checks and reports
# ----------------------------------------------------------------------------------
def check_shape_consistency(m, rep):
    """Compare the declared inertial with a uniform solid filling the link's single shape."""
    rows = []
    for n in m.link_order:
        lk = m.links[n]
        if not lk.mass or not lk.mass > 0 or lk.inertia is None:
            continue
        src, geoms = "collision", lk.collisions
        if len(geoms) != 1:
            src, geoms = "visual", lk.visuals
        if len(geoms) != 1:
            rows.append((n, "n/a", "no single shape to compare"))
            continue
        g = geoms[0]
        if g.kind == "mesh":
            if not g.mesh_tris:
                rows.append((n, "n/a", "mesh not loaded"))
                continue
            vol, com_g, ccom = mesh_mass_props(g.mesh_tris)
            if not vol or vol <= 0 or com_g is None:
                continue
            i_g = covariance_to_inertia(ccom, lk.mass / vol)
        else:
            res = shape_inertia(g.kind, g.params, lk.mass)
            if res is None:
                continue
            com_g, i_g = res
        com_link = tf_point(g.origin, com_g)
        i_link = rot_tensor(g.origin[0], i_g)
        d_com = norm(vsub(com_link, lk.com))
        rel = frob([[lk.inertia[i][j] - i_link[i][j] for j in range(3)] for i in range(3)]) / max(frob(i_link), 1e-300)
        status = "ok" if (d_com < 1e-4 and rel < 2e-3) else "MISMATCH"
        rows.append((n, status, "%s %s: dCOM %s m, rel. inertia diff %s" % (src, g.kind, f6(d_com), f6(rel))))
        if status != "ok":
            rep.warn("link %r: declared inertial differs from a solid %s %s of the same mass "
                     "(COM offset %s m, relative tensor difference %s); expected COM %s, "
                     "tensor diag %s off-diag %s"
                     % (n, src, g.kind, f6(d_com), f6(rel), v6(com_link),
                        v6([i_link[0][0], i_link[1][1], i_link[2][2]]),
                        v6([i_link[0][1], i_link[0][2], i_link[1][2]])))
    return rows


def check_bodies(m, rep):
    """A non-fixed joint must move something with mass (fixed children merged)."""
    for jn in m.joint_order:
        j = m.joints[jn]
        if j.type == "fixed" or j.child not in m.links:
            continue
        # rigid body = child + links attached to it by fixed joints
        body, stack = [], [j.child]
        while stack:
            n = stack.pop()
            body.append(n)
            stack.extend(m.joints[c].child for c in m.children.get(n, []) if m.joints[c].type == "fixed")
        if all(m.links[b].mass is None for b in body):  # bad masses are reported elsewhere
            rep.err("joint %r (%s) moves a massless body %s (singular mass matrix)" % (jn, j.type, body))
    for n in m.link_order:
        if m.links[n].mass is None:
            pj = m.parent_joint.get(n)
            how = "root" if pj is None else "child of %s joint %r" % (m.joints[pj].type, pj)
            rep.warn("link %r has no <inertial> (massless frame, %s)" % (n, how))


def report_mass(m, rep):
    rep.out("  %-16s %10s  %-28s %s" % ("link", "mass [kg]", "COM (link frame) [m]", "principal moments [kg m^2]"))
    total = 0.0
    for n in m.link_order:
        lk = m.links[n]
        if lk.mass is None:
            rep.out("  %-16s %10s" % (n, "-"))
            continue
        ev = eig_sym3(lk.inertia) if lk.inertia else None
        rep.out("  %-16s %10s  %-28s %s" % (n, f6(lk.mass), v6(lk.com), v6(ev) if ev else "?"))
        if math.isfinite(lk.mass):
            total += lk.mass
    dof = sum(1 for j in m.joints.values() if j.type in MOVING_1DOF and not j.mimic)
    mim = sum(1 for j in m.joints.values() if j.mimic)
    types = {}
    for j in m.joints.values():
        types[j.type] = types.get(j.type, 0) + 1
    rep.out("  TOTAL MASS: %s kg   (%d links, %d joints: %s; %d independent DOF%s; root %r)"
            % (f6(total), len(m.links), len(m.joints),
               ", ".join("%d %s" % (v, k) for k, v in sorted(types.items())), dof,
               (" + %d mimic" % mim) if mim else "", m.root))
    if m.root:
        mt, com = whole_com(m, fk(m, {}))
        rep.out("  whole-body COM at q = 0 (root frame): %s m" % v6(com))
    return total


def report_quadruped(m, rep, hfe, kfe):
    legs = [lg for lg in ("LF", "RF", "LH", "RH") if all(
        "%s_%s" % (lg, s) in m.joints for s in ("HAA", "HFE", "KFE"))]
    if len(legs) != 4:
        return
    rep.out("  -- quadruped kinematics (base frame = root) --")
    tf0 = fk(m, {})
    z0, who = lowest_collision(m, tf0)
    rep.out("  q = 0: lowest collision point z = %s m below the base origin (link %s)" % (f6(-z0), who))
    for lg in legs:
        foot = lg + "_foot"
        if foot in tf0:
            rep.out("    %s foot centre at q = 0: %s" % (lg, v6(tf0[foot][1])))
    q = {}
    for lg in legs:
        s = 1.0 if lg[1] == "F" else -1.0  # front: (hfe, kfe); hind: mirrored
        q.update({lg + "_HAA": 0.0, lg + "_HFE": s * hfe, lg + "_KFE": s * kfe})
    tfs = fk(m, q)
    zlow, who = lowest_collision(m, tfs)
    h = -zlow
    rep.out("  standing posture: front HFE = %s, KFE = %s; hind HFE = %s, KFE = %s; HAA = 0"
            % (f6(hfe), f6(kfe), f6(-hfe), f6(-kfe)))
    for jn, v in q.items():
        j = m.joints[jn]
        if j.lower is not None and not (j.lower <= v <= j.upper):
            rep.warn("standing posture: %s = %s is outside [%s, %s]" % (jn, f6(v), f6(j.lower), f6(j.upper)))
    rep.out("  STANDING BASE HEIGHT (lowest collision point on z = 0): %s m   (lowest link: %s)" % (f6(h), who))
    world = fk(m, q, (IDENT, [0.0, 0.0, h]))
    for lg in legs:
        foot = lg + "_foot"
        if foot in world:
            knee = world[lg + "_shank"][1]
            rep.out("    %s foot centre %s, knee %s" % (lg, v6(world[foot][1]), v6(knee)))
    mt, com = whole_com(m, world)
    feet = [world[lg + "_foot"][1] for lg in legs if lg + "_foot" in world]
    if feet:
        cx = sum(p[0] for p in feet) / len(feet)
        cy = sum(p[1] for p in feet) / len(feet)
        rep.out("  whole-body COM %s; support-polygon centre (%s, %s); base bottom clearance %s m"
                % (v6(com), f6(cx), f6(cy), f6(h - 0.075) if "base" in m.links else "?"))
    # thigh / base interference under inward HAA (straight leg)
    base = m.links.get(m.root)
    if base and len(base.collisions) == 1 and base.collisions[0].kind == "box":
        bg = base.collisions[0]
        half = [s / 2 for s in bg.params["size"]]
        for lg in ("LF", "RF"):
            thigh = m.links.get(lg + "_thigh")
            if not thigh or len(thigh.collisions) != 1 or thigh.collisions[0].kind != "cylinder":
                continue
            tg = thigh.collisions[0]
            inward = -1.0 if lg[0] == "L" else 1.0
            j = m.joints[lg + "_HAA"]
            hit = None
            steps = int(round(abs(j.lower if inward < 0 else j.upper) / 0.001))
            for k in range(steps + 1):
                a = inward * k * 0.001
                t = fk(m, {lg + "_HAA": a})[lg + "_thigh"]
                tc = tf_mul(t, tg.origin)
                axis = [tc[0][0][2], tc[0][1][2], tc[0][2][2]]
                dmin = float("inf")
                for s in range(201):
                    u = (s / 200.0 - 0.5) * tg.params["length"]
                    p = vadd(tc[1], vscale(axis, u))
                    pl = vsub(p, bg.origin[1])  # base box axis-aligned in base frame
                    d = [max(abs(pl[i]) - half[i], 0.0) for i in range(3)]
                    dmin = min(dmin, norm(d))
                if dmin < tg.params["radius"]:
                    hit = a
                    break
            if hit is None:
                rep.out("  %s thigh never touches the base within the HAA limits (straight leg)" % lg)
            else:
                rep.out("  %s thigh cylinder touches the base box at HAA = %s rad (straight leg; mirrored for the other side)"
                        % (lg, f6(hit)))


def report_arm(m, rep, target_x, target_z):
    names = ["arm_joint%d" % i for i in range(1, 8)]
    if not all(n in m.joints for n in names) or "finger_left" not in m.links:
        return
    rep.out("  -- arm7 kinematics (arm_base frame = world, floor at z = 0) --")
    tf0 = fk(m, {})

    def jpos(tfs, jn):
        j = m.joints[jn]
        return tf_point(tfs[j.parent], j.origin[1])

    def tcp(tfs):
        pts = []
        for fl in ("finger_left", "finger_right"):
            g = m.links[fl].collisions[0]
            tip = [g.origin[1][0], g.origin[1][1], g.origin[1][2] + g.params["size"][2] / 2]
            pts.append(tf_point(tfs[fl], tip))
        return vscale(vadd(pts[0], pts[1]), 0.5)

    s0, e0, w0 = jpos(tf0, "arm_joint2"), jpos(tf0, "arm_joint4"), jpos(tf0, "arm_joint6")
    t0 = tcp(tf0)
    flange = tf_point(tf0["wrist_ft_link"], [0, 0, 0]) if "wrist_ft_link" in tf0 else None
    l1, l2, lt = norm(vsub(e0, s0)), norm(vsub(w0, e0)), norm(vsub(t0, w0))
    rep.out("  q = 0: shoulder %s, elbow %s, wrist %s, TCP (fingertip centre) %s" % (v6(s0), v6(e0), v6(w0), v6(t0)))
    if flange:
        rep.out("  reach: shoulder->flange %s m, shoulder->TCP %s m (upper arm %s, forearm %s, wrist->TCP %s)"
                % (f6(norm(vsub(flange, s0))), f6(norm(vsub(t0, s0))), f6(l1), f6(l2), f6(lt)))
    # planar IK: q1 = q3 = q5 = q7 = 0; tool pointing down => q2 + q4 + q6 = pi
    wx, wz = target_x, target_z + lt
    dx, dz = wx - s0[0], wz - s0[2]
    c4 = (dx * dx + dz * dz - l1 * l1 - l2 * l2) / (2 * l1 * l2)
    if abs(c4) > 1:
        rep.warn("arm IK: target (%s, 0, %s) out of reach" % (f6(target_x), f6(target_z)))
        return
    q4 = math.acos(c4)  # elbow up (q4 > 0 with +y axes)
    q2 = math.atan2(dx, dz) - math.atan2(l2 * math.sin(q4), l1 + l2 * math.cos(q4))
    q6 = math.pi - q2 - q4
    q = {"arm_joint1": 0.0, "arm_joint2": q2, "arm_joint3": 0.0, "arm_joint4": q4,
         "arm_joint5": 0.0, "arm_joint6": q6, "arm_joint7": 0.0}
    tfs = fk(m, q)
    p = tcp(tfs)
    zaxis = [tfs["hand"][0][i][2] for i in range(3)]
    rep.out("  GRIPPER-DOWN IK for TCP target (%s, 0, %s):" % (f6(target_x), f6(target_z)))
    rep.out("    q = [%s]" % ", ".join(f6(q[n]) for n in names))
    lim_ok = all(m.joints[n].lower <= q[n] <= m.joints[n].upper for n in names)
    rep.out("    FK check: TCP %s, hand z axis %s, elbow %s, within limits: %s"
            % (v6(p), v6(zaxis), v6(jpos(tfs, "arm_joint4")), "yes" if lim_ok else "NO"))
    zlow, who = lowest_collision(m, tfs, skip=(m.root,))
    rep.out("    lowest collision point of the moving links z = %s m (link %s)" % (f6(zlow), who))
    if not lim_ok:
        rep.warn("arm IK solution violates joint limits")
    if norm(vsub(p, [target_x, 0.0, target_z])) > 1e-6 or zaxis[2] > -1 + 1e-9:
        rep.warn("arm IK: FK check failed")


def report_modes(m, rep):
    """Small-oscillation periods about q = 0 for fixed-base chains with 1-2 DOF."""
    dofs = [jn for jn in m.joint_order if m.joints[jn].type in MOVING_1DOF and not m.joints[jn].mimic]
    if not (1 <= len(dofs) <= 2) or any(m.links[n].mass is None or m.links[n].inertia is None
                                        for n in m.links if n != m.root):
        return
    n = len(dofs)
    body_links = [l for l in m.links if l != m.root and m.links[l].mass and m.links[l].mass > 0]

    def potential(qv):
        tfs = fk(m, dict(zip(dofs, qv)))
        return sum(m.links[l].mass * G * tf_point(tfs[l], m.links[l].com)[2] for l in body_links)

    h = 1e-4
    kmat = [[0.0] * n for _ in range(n)]
    for a in range(n):
        for b in range(n):
            def vv(da, db):
                qv = [0.0] * n
                qv[a] += da
                qv[b] += db
                return potential(qv)
            kmat[a][b] = (vv(h, h) - vv(h, -h) - vv(-h, h) + vv(-h, -h)) / (4 * h * h)
    # mass matrix from numerical Jacobians at q = 0
    eps = 1e-6
    base = fk(m, {})
    mmat = [[0.0] * n for _ in range(n)]
    jv, jw = {}, {}
    for a, dn in enumerate(dofs):
        tp, tm = fk(m, {dn: eps}), fk(m, {dn: -eps})
        for l in body_links:
            cp, cm = tf_point(tp[l], m.links[l].com), tf_point(tm[l], m.links[l].com)
            jv.setdefault(l, [None] * n)[a] = vscale(vsub(cp, cm), 1 / (2 * eps))
            dr = mat_mul(tp[l][0], transp(tm[l][0]))
            jw.setdefault(l, [None] * n)[a] = [(dr[2][1] - dr[1][2]) / (4 * eps),
                                              (dr[0][2] - dr[2][0]) / (4 * eps),
                                              (dr[1][0] - dr[0][1]) / (4 * eps)]
    for l in body_links:
        iw = rot_tensor(base[l][0], m.links[l].inertia)
        for a in range(n):
            for b in range(n):
                mmat[a][b] += m.links[l].mass * dot(jv[l][a], jv[l][b]) + dot(jw[l][a], mat_vec(iw, jw[l][b]))
    if n == 1:
        if kmat[0][0] <= 1e-9:
            return
        lams = [kmat[0][0] / mmat[0][0]]
    else:
        # det(K - lam M) = 0
        a2 = mmat[0][0] * mmat[1][1] - mmat[0][1] * mmat[1][0]
        a1 = -(kmat[0][0] * mmat[1][1] + kmat[1][1] * mmat[0][0] - kmat[0][1] * mmat[1][0] - kmat[1][0] * mmat[0][1])
        a0 = kmat[0][0] * kmat[1][1] - kmat[0][1] * kmat[1][0]
        disc = a1 * a1 - 4 * a2 * a0
        if disc < 0:
            return
        lams = sorted([(-a1 - math.sqrt(disc)) / (2 * a2), (-a1 + math.sqrt(disc)) / (2 * a2)])
        if lams[0] <= 1e-9:
            return
    rep.out("  -- small oscillations about q = 0 (g = %s, root fixed) --" % f6(G))
    rep.out("    mass matrix M = %s" % "; ".join(" ".join(f6(x) for x in r) for r in mmat))
    rep.out("    gravity stiffness K = %s" % "; ".join(" ".join(f6(x) for x in r) for r in kmat))
    for k, lam in enumerate(lams):
        rep.out("    mode %d: omega = %s rad/s, PERIOD = %s s" % (k + 1, f6(math.sqrt(lam)), f6(2 * math.pi / math.sqrt(lam))))


def report_q(m, rep, qspec):
    q = {}
    for item in qspec.split(","):
        if not item.strip():
            continue
        k, _, v = item.partition("=")
        k = k.strip()
        if k not in m.joints:
            rep.warn("--q: unknown joint %r in this robot (ignored)" % k)
            continue
        q[k] = float(v)
    if not q:
        return
    tfs = fk(m, q)
    rep.out("  -- link frames at %s (root at identity) --" % ", ".join("%s=%s" % (k, f6(v)) for k, v in q.items()))
    for n in m.link_order:
        if n in tfs:
            rep.out("    %-16s %s" % (n, v6(tfs[n][1])))
    zlow, who = lowest_collision(m, tfs)
    rep.out("    lowest collision point z = %s (link %s)" % (f6(zlow), who))


def check_file(path, args):
    rep = Report()
    m = parse_urdf(path, rep)
    total = None
    if m is not None:
        check_bodies(m, rep)
        rows = check_shape_consistency(m, rep)
        rep.out("  robot %r" % m.name)
        total = report_mass(m, rep)
        if args.verbose:
            rep.out("  inertia vs. shape:")
            for n, st, msg in rows:
                rep.out("    %-16s %-8s %s" % (n, st, msg))
        if not rep.errors and m.root:
            try:
                if m.name == "quadruped":
                    report_quadruped(m, rep, args.stand_hfe, args.stand_kfe)
                if m.name == "arm7":
                    report_arm(m, rep, args.arm_target[0], args.arm_target[1])
                report_modes(m, rep)
                if args.q:
                    report_q(m, rep, args.q)
            except (KeyError, IndexError, ZeroDivisionError, ValueError) as e:
                rep.warn("report skipped: %s: %s" % (type(e).__name__, e))
    return rep, m, total


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+")
    ap.add_argument("--expect-fail", action="store_true",
                    help="exit 0 only if EVERY file has at least one error (for broken fixtures)")
    ap.add_argument("--scene", action="store_true",
                    help="files are loaded into one scene: joint and link names must be unique across files")
    ap.add_argument("--stand-hfe", type=float, default=0.4, help="front HFE of the standing posture (hind = -HFE)")
    ap.add_argument("--stand-kfe", type=float, default=-0.8, help="front KFE of the standing posture (hind = -KFE)")
    ap.add_argument("--arm-target", type=lambda s: [float(x) for x in s.split(",")], default=[0.55, 0.10],
                    help="x,z of the arm TCP (fingertip centre) target, gripper pointing down")
    ap.add_argument("--q", default="", help="joint values name=value,... : print link positions")
    ap.add_argument("-v", "--verbose", action="store_true", help="print the inertia-vs-shape table")
    args = ap.parse_args()

    failed, passed = [], []
    scene_joints, scene_links = {}, {}
    grand = 0.0
    for path in args.files:
        print("== %s" % path)
        rep, m, total = check_file(path, args)
        for line in rep.lines:
            print(line)
        for w in rep.warnings:
            print("  WARNING: %s" % w)
        for e in rep.errors:
            print("  ERROR: %s" % e)
        status = "FAIL" if rep.errors else "PASS"
        print("  => %s (%d error(s), %d warning(s))\n" % (status, len(rep.errors), len(rep.warnings)))
        (failed if rep.errors else passed).append(path)
        if m is not None and args.scene:
            grand += total or 0.0
            for kind, names, table in (("joint", m.joint_order, scene_joints), ("link", m.link_order, scene_links)):
                for nm in names:
                    table.setdefault(nm, []).append(path)
    scene_errors = 0
    if args.scene:
        print("== scene check (%d files)" % len(args.files))
        for kind, table in (("joint", scene_joints), ("link", scene_links)):
            for nm, paths in sorted(table.items()):
                if len(paths) > 1:
                    scene_errors += 1
                    print("  ERROR: %s name %r is used in more than one file: %s" % (kind, nm, ", ".join(paths)))
        print("  scene total mass %s kg, %d joint names, %d link names => %s\n"
              % (f6(grand), len(scene_joints), len(scene_links), "FAIL" if scene_errors else "PASS"))
    print("summary: %d passed, %d failed%s" % (len(passed), len(failed),
                                                  (": " + ", ".join(failed)) if failed else ""))
    if args.expect_fail:
        ok = not passed
        print("expect-fail mode: %s" % ("every file failed as expected" if ok else
                                         "these files unexpectedly PASSED: " + ", ".join(passed)))
        return 0 if ok else 1
    return 0 if (not failed and not scene_errors) else 1


if __name__ == "__main__":
    sys.exit(main())

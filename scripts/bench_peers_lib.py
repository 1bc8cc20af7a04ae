"""The work behind scripts/bench-peers: our scenes in MuJoCo, timing, physical outcome.

Run through scripts/bench-peers (which sets up the venv with the peers); not imported by tests.
"""
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import yaml

import mujoco
import mujoco.rollout

# ---------------------------------------------------------------------------------------------
# scenes


class SceneSpec:
    """One row group of the table: a scene file, our solvers, the window timed, what to compare."""

    def __init__(self, key, path, solvers, warmup, steps, observe, title, notes=(), duration_s=None, threads1=False, mj_matched_options=None):
        self.key, self.path, self.solvers, self.duration_s, self.threads1 = key, path, solvers, duration_s, threads1
        # MuJoCo options (mjOption fields) of the matched variant only, e.g. impratio
        self.mj_matched_options = dict(mj_matched_options or {})
        self.warmup, self.steps, self.observe, self.title = warmup, steps, observe, title
        self.notes = list(notes)


FEET = ["LF_foot", "RF_foot", "LH_foot", "RH_foot"]
RIGID = ["pgs", "bisection", "vfpi"]

SCENES = [
    SceneSpec("stand", "config/examples/quadruped_stand.yaml", RIGID, 500, 5000,
              {"base": "quadruped", "feet": FEET, "window_s": 0.5}, "quadruped standing (18 DOF, 4 feet)"),
    SceneSpec("trot", "config/examples/bisection_trot.yaml", RIGID, 500, 4000,
              {"base": "quadruped", "feet": FEET, "window_s": 0.4}, "quadruped trotting (open-loop gait, feet only collide)",
              duration_s=4.8),
    SceneSpec("push", "config/examples/arm_push_box.yaml", RIGID, 500, 5000,
              {"box": "box", "ft": ["wrist_ft"], "window_s": 0.1}, "7-DOF arm pushing a 0.5 kg box"),
    SceneSpec("default", "config/default.yaml", RIGID, 500, 5000,
              {"base": "quadruped", "box": "box", "feet": FEET, "ft": ["wrist_ft"], "window_s": 0.1}, "default scene (quadruped crouching + arm pushing a box)"),
    SceneSpec("stack", "config/examples/box_stack.yaml", RIGID, 500, 5000,
              {"box": "box4", "stack": ["box0", "box1", "box2", "box3", "box4"], "window_s": 0.5}, "5-box stack, 1 kg each"),
    SceneSpec("heavy_stack", "config/examples/box_stack_heavy.yaml", RIGID, 500, 5000,
              {"box": "box4", "stack": ["box0", "box1", "box2", "box3", "box4"], "window_s": 0.5}, "5-box stack, 1 to 4096 kg, heaviest on top"),
    SceneSpec("grasp", "config/examples/fem_gripper_ball.yaml", ["vfpi"], 0, 200,
              {"joints": ["finger_left_joint", "finger_right_joint", "lift"], "flex": "ball", "window_s": 0.1},
              "soft-ball grasp (FEM ball 3 993 DOF vs MuJoCo flexcomp), 10 ms step, one thread", threads1=True,
              # MuJoCo's recommendation for grasping (its docs, "impratio"): friction as stiff as
              # the normal direction times 10. With it the flex ball is carried as ours is
              # (node centroid 84.6 against 88.6 mm); with 1 it slips to 62.8 mm. Its Young's
              # modulus is not the lever: 4x E moved the squeeze by 0.15 mm (contact softness
              # dominates at a 10 ms step).
              mj_matched_options={"impratio": 10.0},
              notes=["MuJoCo matched: impratio 10 (friction stiffer than the normal direction), MuJoCo's setting for grasps; "
                     "not a physical parameter of ours"]),
]

# ---------------------------------------------------------------------------------------------
# our scene files


def load_scene(path):
    with open(path) as f:
        sc = yaml.safe_load(f) or {}
    sc.setdefault("timestep_s", 0.001)
    sc.setdefault("gravity", [0.0, 0.0, -9.81])
    sc.setdefault("ground", {})
    sc.setdefault("materials", {})
    sc["materials"].setdefault("default", {"friction": 0.8})
    sc.setdefault("material_pairs", [])
    sc.setdefault("friction_combine", "min")
    sc.setdefault("robots", [])
    sc.setdefault("objects", [])
    sc.setdefault("deformables", [])
    sc.setdefault("script", [])
    return sc


def friction_fn(sc):
    mats = {k: float(v["friction"]) for k, v in sc["materials"].items()}
    pairs = {}
    for p in sc["material_pairs"]:
        pairs[(p["a"], p["b"])] = pairs[(p["b"], p["a"])] = float(p["friction"])
    comb = {"min": min, "max": max, "average": lambda a, b: 0.5 * (a + b), "geometric": lambda a, b: math.sqrt(a * b)}[sc["friction_combine"]]

    def mu(a, b):
        if (a, b) in pairs:
            return pairs[(a, b)]
        return comb(mats[a], mats[b])

    return mu


def rpy_quat(rpy):
    """URDF roll-pitch-yaw (R = Rz(y) Ry(p) Rx(r)) to a MuJoCo quaternion [w x y z]."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = math.cos(r / 2), math.sin(r / 2), math.cos(p / 2), math.sin(p / 2), math.cos(y / 2), math.sin(y / 2)
    return [cr * cp * cy + sr * sp * sy, sr * cp * cy - cr * sp * sy, cr * sp * cy + sr * cp * sy, cr * cp * sy - sr * sp * cy]


def gmsh_volume(path):
    """Volume (m³) of the linear tetrahedra of a Gmsh 4.1 or 2.2 ASCII mesh."""
    with open(path) as f:
        lines = f.read().split("\n")
    ver = lines[1].split()[0]
    nodes, tets = {}, []
    i = 0
    while i < len(lines):
        if lines[i] == "$Nodes":
            if ver.startswith("4"):
                nblocks = int(lines[i + 1].split()[0])
                j = i + 2
                for _ in range(nblocks):
                    _d, _t, _p, n = map(int, lines[j].split())
                    tags = [int(x) for x in lines[j + 1:j + 1 + n]]
                    for k, t in enumerate(tags):
                        nodes[t] = [float(x) for x in lines[j + 1 + n + k].split()[:3]]
                    j += 1 + 2 * n
            else:
                n = int(lines[i + 1])
                for k in range(n):
                    a = lines[i + 2 + k].split()
                    nodes[int(a[0])] = [float(x) for x in a[1:4]]
        if lines[i] == "$Elements":
            if ver.startswith("4"):
                nblocks = int(lines[i + 1].split()[0])
                j = i + 2
                for _ in range(nblocks):
                    _d, _t, et, n = map(int, lines[j].split())
                    for k in range(n):
                        a = [int(x) for x in lines[j + 1 + k].split()]
                        if et == 4:
                            tets.append(a[1:5])
                    j += 1 + n
            else:
                n = int(lines[i + 1])
                for k in range(n):
                    a = [int(x) for x in lines[i + 2 + k].split()]
                    if a[1] == 4:
                        tets.append(a[-4:])
        i += 1
    v = 0.0
    for t in tets:
        p = [np.array(nodes[x]) for x in t]
        v += abs(np.dot(p[1] - p[0], np.cross(p[2] - p[0], p[3] - p[0]))) / 6
    return v


def urdf_root(txt):
    links = re.findall(r"<link\s+name=\"([^\"]+)\"", txt)
    children = set(re.findall(r"<child\s+link=\"([^\"]+)\"", txt))
    roots = [l for l in links if l not in children]
    if len(roots) != 1:
        raise ValueError(f"URDF has {len(roots)} root links")
    return roots[0]


def urdf_joints(txt):
    """name -> (type, effort limit) for every joint."""
    out = {}
    for m in re.finditer(r"<joint\s+name=\"([^\"]+)\"\s+type=\"([^\"]+)\"(.*?)</joint>", txt, re.S):
        eff = re.search(r"effort=\"([^\"]+)\"", m.group(3))
        mimic = "<mimic" in m.group(3)
        out[m.group(1)] = (m.group(2), float(eff.group(1)) if eff else math.inf, mimic)
    return out


# ---------------------------------------------------------------------------------------------
# MuJoCo model of a scene


class MjScene:
    """A scene compiled for MuJoCo, with what is needed to drive it and read it."""

    def __init__(self, scene_path, contact_mode="default"):
        self.path = scene_path
        sc = self.sc = load_scene(scene_path)
        self.notes = []
        base_dir = os.path.dirname(os.path.abspath(scene_path))
        mu = self.mu = friction_fn(sc)
        ground_mat = self.ground_mat = sc["ground"].get("material", "default")
        spec = mujoco.MjSpec()
        spec.option.timestep = sc["timestep_s"]
        spec.option.gravity = sc["gravity"]
        spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
        spec.option.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
        spec.compiler.fusestatic = True
        if sc["deformables"]:
            # MuJoCo 4 integrates flex elasticity implicitly only with its `discrete` integrator
            spec.option.integrator = mujoco.mjtIntegrator.mjINT_DISCRETE if hasattr(mujoco.mjtIntegrator, "mjINT_DISCRETE") else spec.option.integrator
        # collision bits: robots (2) touch the world and objects (1|2) but not each other
        if sc["ground"].get("enabled", True):
            g = spec.worldbody.add_geom(name="ground", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 1])
            g.friction = [0.0, 0.0, 0.0]
            g.contype, g.conaffinity = 1, 3
            inc = float(sc["ground"].get("incline_deg", 0.0))
            if inc != 0.0:
                ax = np.array(sc["ground"].get("incline_axis", [0, 1, 0]), float)
                ax /= np.linalg.norm(ax)
                h = math.radians(inc) / 2
                g.quat = [math.cos(h), *(math.sin(h) * ax)]
        self.geom_material = {}
        self.geom_owner = {}  # geom name -> body name in OUR model (link or object)
        self.actuated = []  # (joint full name, mode, robot index, joint name)
        self.initial_q = {}  # full joint name -> q
        self.root_bodies = {}  # robot name -> body full name
        for ri, rob in enumerate(sc["robots"]):
            urdf_path = os.path.join(base_dir, rob["urdf"])
            with open(urdf_path) as f:
                txt = f.read()
            root = urdf_root(txt)
            joints = urdf_joints(txt)
            rname = rob.get("name") or re.search(r"<robot\s+name=\"([^\"]+)\"", txt).group(1)
            base = rob.get("base", {})
            floating = base.get("mode", "fixed") == "floating"
            pos = base.get("position", [0, 0, 0])
            rpy = base.get("rpy", [0, 0, 0])
            add = (f'<link name="peer_world"/><joint name="peer_root" type="{"floating" if floating else "fixed"}">'
                   f'<origin xyz="{pos[0]} {pos[1]} {pos[2]}" rpy="{rpy[0]} {rpy[1]} {rpy[2]}"/>'
                   f'<parent link="peer_world"/><child link="{root}"/></joint>')
            txt2 = re.sub(r"(<robot[^>]*>)", lambda m: m.group(1) + add, txt, count=1)
            # MuJoCo resolves mesh file names from the model file's folder
            cwd = os.getcwd()
            os.chdir(os.path.dirname(urdf_path))
            try:
                child = mujoco.MjSpec.from_string(txt2)
            finally:
                os.chdir(cwd)
            prefix = f"{rname}/"
            coll = rob.get("collision_links")
            self_coll = rob.get("self_collision", False)
            link_mats = rob.get("link_materials", {})
            for body in child.bodies:
                for k, geom in enumerate(body.geoms):
                    geom.name = f"{body.name}#{k}"
                    mat = link_mats.get(body.name, rob.get("material", "default"))
                    full = prefix + geom.name
                    self.geom_material[full] = mat
                    self.geom_owner[full] = body.name
                    geom.friction = [mu(mat, ground_mat), 0.0, 0.0]
                    geom.priority = 0
                    if coll is not None and body.name not in coll:
                        geom.contype, geom.conaffinity = 0, 0
                    elif self_coll:
                        geom.contype, geom.conaffinity = 3, 3
                    else:
                        geom.contype, geom.conaffinity = 2, 1
            # the scene's F/T sensors on this robot's fixed joints: a site at the sensor frame on
            # the joint's child link, read by a force and a torque sensor (our step computes its
            # sensors every step; MuJoCo's are then computed too, with the post-constraint RNE)
            ft_sites = []
            for sensor in sc.get("sensors", []):
                jm = re.search(r"<joint\s+name=\"" + re.escape(sensor["joint"]) + r"\"[^>]*>(.*?)</joint>", txt, re.S)
                if not jm:
                    continue
                link = re.search(r"<child\s+link=\"([^\"]+)\"", jm.group(1)).group(1)
                site = f"{sensor['name']}_site"
                child.body(link).add_site(name=site, pos=sensor.get("xyz", [0, 0, 0]), quat=rpy_quat(sensor.get("rpy", [0, 0, 0])))
                ft_sites.append((sensor["name"], site))
            frame = spec.worldbody.add_frame()
            spec.attach(child, frame=frame, prefix=prefix)
            for name, site in ft_sites:
                spec.add_sensor(name=f"{name}_force", type=mujoco.mjtSensor.mjSENS_FORCE, objtype=mujoco.mjtObj.mjOBJ_SITE, objname=prefix + site)
                spec.add_sensor(name=f"{name}_torque", type=mujoco.mjtSensor.mjSENS_TORQUE, objtype=mujoco.mjtObj.mjOBJ_SITE, objname=prefix + site)
            self.root_bodies[rname] = prefix + root
            ctl = rob.get("control", {})
            default = ctl.get("default", {"mode": "position", "kp": 100.0, "kd": 10.0})
            for jname, (jtype, effort, is_mimic) in joints.items():
                if jtype not in ("revolute", "continuous", "prismatic") or is_mimic:
                    continue
                mode = ctl.get("joints", {}).get(jname, default)
                if mode.get("mode") == "passive":
                    continue
                full = prefix + jname
                act = spec.add_actuator(name=full, target=full, trntype=mujoco.mjtTrn.mjTRN_JOINT)
                m = mode.get("mode")
                if m == "position":
                    kp, kd = float(mode["kp"]), float(mode["kd"])
                    act.gaintype = mujoco.mjtGain.mjGAIN_FIXED
                    act.gainprm[0] = kp
                    act.biastype = mujoco.mjtBias.mjBIAS_AFFINE
                    act.biasprm[0:3] = [0.0, -kp, -kd]
                elif m == "velocity":
                    kd = float(mode["kd"])
                    act.gaintype = mujoco.mjtGain.mjGAIN_FIXED
                    act.gainprm[0] = kd
                    act.biastype = mujoco.mjtBias.mjBIAS_AFFINE
                    act.biasprm[0:3] = [0.0, 0.0, -kd]
                elif m == "effort":
                    act.gaintype = mujoco.mjtGain.mjGAIN_FIXED
                    act.gainprm[0] = 1.0
                else:
                    raise ValueError(f"{scene_path}: robot {rname}: joint {jname}: unknown control mode {m}")
                if math.isfinite(effort):
                    act.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
                    act.forcerange = [-effort, effort]
                self.actuated.append((full, m, rname, jname))
            for jname, q in rob.get("initial_positions", {}).items():
                self.initial_q[prefix + jname] = float(q)
        for ob in sc["objects"]:
            name = ob["name"]
            shp = ob["shape"]
            t = shp["type"]
            if t == "box":
                gtype, size, vol = mujoco.mjtGeom.mjGEOM_BOX, [s / 2 for s in shp["size"]], float(np.prod(shp["size"]))
            elif t == "sphere":
                r = shp["radius"]
                gtype, size, vol = mujoco.mjtGeom.mjGEOM_SPHERE, [r, 0, 0], 4 / 3 * math.pi * r**3
            elif t == "cylinder":
                r, l = shp["radius"], shp["length"]
                gtype, size, vol = mujoco.mjtGeom.mjGEOM_CYLINDER, [r, l / 2, 0], math.pi * r * r * l
            elif t == "capsule":
                r, l = shp["radius"], shp["length"]
                gtype, size, vol = mujoco.mjtGeom.mjGEOM_CAPSULE, [r, l / 2, 0], math.pi * r * r * l + 4 / 3 * math.pi * r**3
            else:
                raise NotImplementedError(f"{scene_path}: object {name}: shape {t} is not translated")
            mass = ob.get("mass_kg") or ob.get("density_kg_m3", 1000.0) * vol
            mat = ob.get("material", "default")
            if ob.get("fixed", False):
                parent = spec.worldbody
                gpos, gquat = ob.get("position", [0, 0, 0]), rpy_quat(ob.get("rpy", [0, 0, 0]))
            else:
                parent = spec.worldbody.add_body(name=name, pos=ob.get("position", [0, 0, 0]), quat=rpy_quat(ob.get("rpy", [0, 0, 0])))
                parent.add_freejoint(name=name)
                gpos, gquat = [0, 0, 0], [1, 0, 0, 0]
            g = parent.add_geom(name=name, type=gtype, size=size, pos=gpos, quat=gquat)
            if not ob.get("fixed", False):
                g.mass = mass
            g.friction = [mu(mat, ground_mat), 0.0, 0.0]
            g.priority = 1
            g.contype, g.conaffinity = 1, 3
            self.geom_material[name] = mat
            self.geom_owner[name] = name
        if contact_mode == "stiff":
            for g in spec.geoms:
                g.solref = [max(0.002, 2 * sc["timestep_s"]), 1.0]
                g.solimp = [0.99, 0.99, 0.001, 0.5, 2.0]
        self.spec = spec
        self.flex = []
        if sc["deformables"]:
            xml = spec.to_xml()
            if 'integrator="discrete"' not in xml and "integrator=" not in xml:
                xml = xml.replace("<option ", '<option integrator="discrete" ', 1)
            flex = []
            for df in sc["deformables"]:
                mesh = os.path.abspath(os.path.join(base_dir, df["mesh"]))
                mat = df["material"]
                vol = gmsh_volume(mesh) * float(np.prod(df.get("scale", [1, 1, 1])))
                mass = float(mat["density_kg_m3"]) * vol
                pos = df.get("position", [0, 0, 0])
                f = float(df.get("friction", 0.8))
                sol = ""
                if contact_mode == "stiff":
                    sol = f' solref="{max(0.002, 2 * sc["timestep_s"])} 1" solimp="0.99 0.99 0.001 0.5 2"'
                flex.append(f'<flexcomp name="{df["name"]}" type="gmsh" file="{mesh}" dim="3" pos="{pos[0]} {pos[1]} {pos[2]}" '
                            f'mass="{mass}" radius="0.0005"><contact condim="3" friction="{f} 0 0" selfcollide="none"{sol}/>'
                            f'<edge equality="false"/><elasticity young="{mat["youngs_modulus_pa"]}" poisson="{mat["poisson_ratio"]}" '
                            f'damping="{mat.get("rayleigh_stiffness_s", 0.0)}"/></flexcomp>')
                self.flex.append(df["name"])
                if mat.get("rayleigh_mass_1_s"):
                    self.notes.append("Rayleigh mass damping is not translated (MuJoCo's flex damping is stiffness-proportional)")
                if mat.get("model", "corotational") != "corotational":
                    self.notes.append(f"material model {mat['model']}: MuJoCo's flex elasticity is its own (St. Venant–Kirchhoff-like)")
            i = xml.rindex("</worldbody>")
            xml = xml[:i] + "\n".join(flex) + xml[i:]
            self.xml = xml
            spec = self.spec = mujoco.MjSpec.from_string(xml)
        self.model = spec.compile()
        self.data = mujoco.MjData(self.model)
        m = self.model
        # initial state: joint positions, object velocities
        mujoco.mj_resetData(m, self.data)
        for full, q in self.initial_q.items():
            jid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, full)
            if jid < 0:
                raise ValueError(f"{scene_path}: initial_positions: no joint {full}")
            self.data.qpos[m.jnt_qposadr[jid]] = q
        # mimic followers start consistent with their leader (the equality holds at t = 0)
        for e in range(m.neq):
            if m.eq_type[e] == mujoco.mjtEq.mjEQ_JOINT:
                j1, j2 = m.eq_obj1id[e], m.eq_obj2id[e]
                c = m.eq_data[e]
                q2 = self.data.qpos[m.jnt_qposadr[j2]]
                self.data.qpos[m.jnt_qposadr[j1]] = c[0] + c[1] * q2
        for ob in sc["objects"]:
            if ob.get("fixed", False):
                continue
            jid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, ob["name"])
            va = m.jnt_dofadr[jid]
            self.data.qvel[va:va + 3] = ob.get("linear_velocity", [0, 0, 0])
            self.data.qvel[va + 3:va + 6] = ob.get("angular_velocity", [0, 0, 0])  # world = body at rpy 0
        for rob in sc["robots"]:
            pass  # base velocities: none of the compared scenes sets them
        mujoco.mj_forward(m, self.data)
        self.q0, self.v0 = self.data.qpos.copy(), self.data.qvel.copy()
        self.ctrl_index = {full: i for i, (full, *_rest) in enumerate(self.actuated)}
        self.ctrl0 = np.zeros(m.nu)
        for i, (full, mode, _r, _j) in enumerate(self.actuated):
            if mode == "position":
                self.ctrl0[i] = self.initial_q.get(full, 0.0)
        self.script = sc["script"]
        self.period = sc.get("script_period_s")
        self.joint_prefix = {}
        for full, _m, rname, jname in self.actuated:
            self.joint_prefix[jname] = full
        self.dt = sc["timestep_s"]

    def joint_full(self, jname):
        for rname in self.root_bodies:
            if mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_JOINT, f"{rname}/{jname}") >= 0:
                return f"{rname}/{jname}"
        return jname

    def fresh_data(self):
        """A new MjData at the scene's initial state."""
        d = mujoco.MjData(self.model)
        d.qpos[:], d.qvel[:] = self.q0, self.v0
        mujoco.mj_forward(self.model, d)
        return d

    def controls(self, nsteps):
        """The scripted controls of steps 0..nsteps-1 (our Script::apply at t = k dt)."""
        m = self.model
        ctrl = np.tile(self.ctrl0, (nsteps, 1))
        pos_tracks, eff_tracks = {}, {}
        for kf in self.script:
            for j, v in kf.get("positions", {}).items():
                pos_tracks.setdefault(j, []).append((float(kf["time_s"]), float(v)))
            for j, v in kf.get("efforts", {}).items():
                eff_tracks.setdefault(j, []).append((float(kf["time_s"]), float(v)))
        t = np.arange(nsteps) * self.dt
        if self.period:
            t = np.mod(t, self.period)
        for tracks, want in ((pos_tracks, "position"), (eff_tracks, "effort")):
            for j, tr in tracks.items():
                full = self.joint_prefix.get(j)
                if full is None:
                    raise ValueError(f"{self.path}: script names joint {j}, which has no actuator here")
                i = self.ctrl_index[full]
                mode = self.actuated[i][1]
                if want == "effort" and mode != "effort":
                    self.notes.append(f"script effort on the {mode}-mode joint {j} is not applied in MuJoCo")
                    continue
                tk = np.array([a for a, _ in tr])
                vk = np.array([b for _, b in tr])
                col = ctrl[:, i].copy()
                active = t >= tk[0]
                if want == "position":
                    col[active] = np.interp(t[active], tk, vk)
                else:
                    idx = np.searchsorted(tk, t[active], side="right") - 1
                    col[active] = vk[idx]
                # before the first keyframe the command stays as it was: for a periodic script
                # that is the previous cycle's value, which np.interp's clamping gives as well
                ctrl[:, i] = col
        return ctrl

    # --- observation ---------------------------------------------------------------------

    def body_id(self, our_name):
        m = self.model
        if our_name in self.root_bodies:
            return mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, self.root_bodies[our_name])
        b = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, our_name)
        if b >= 0:
            return b
        for n in self.root_bodies.values():
            b = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, n.split("/")[0] + "/" + our_name)
            if b >= 0:
                return b
        raise KeyError(our_name)

    def contact_normal_forces(self):
        """Our body name -> net contact force on it, world z (N), as `contact_sim run --csv`; deepest
        penetration (m); the contacts whose friction differs from ours (set of descriptions)."""
        m, d = self.model, self.data
        forces = {}
        pen = 0.0
        f6 = np.zeros(6)
        bad = set()
        for i in range(d.ncon):
            c = d.contact[i]
            if c.efc_address < 0:
                continue
            mujoco.mj_contactForce(m, d, i, f6)
            pen = max(pen, -c.dist)
            if c.geom1 < 0 or c.geom2 < 0:  # a flex vertex / element: no per-geometry bookkeeping
                continue
            n1, n2 = m.geom(c.geom1).name, m.geom(c.geom2).name
            # the contact frame's first row is the normal, from geom1 to geom2: geom2 gets +F
            fz = (c.frame.reshape(3, 3).T @ f6[:3])[2]
            for name, sign in ((n1, -1.0), (n2, 1.0)):
                owner = self.geom_owner.get(name)
                if owner is not None:
                    forces[owner] = forces.get(owner, 0.0) + sign * fz
            ma = self.geom_material.get(n1, self.ground_mat)
            mb = self.geom_material.get(n2, self.ground_mat)
            want = self.mu(ma, mb)
            if abs(c.friction[0] - want) > 1e-9:
                bad.add(f"{self.geom_owner.get(n1, n1)}–{self.geom_owner.get(n2, n2)}: μ {c.friction[0]:g} here, {want:g} in ours")
        return forces, pen, bad


def mj_observe(mjs, spec, duration_s):
    """Runs the MuJoCo scene for `duration_s` and returns the observed outcome."""
    m, d = mjs.model, mjs.fresh_data()
    mjs.data = d
    n = int(round(duration_s / mjs.dt))
    ctrl = mjs.controls(n)
    obs = spec.observe
    window = max(1, int(round(obs.get("window_s", 0.1) / mjs.dt)))
    acc = {}
    pen_max = 0.0
    base_id = mjs.body_id(obs["base"]) if "base" in obs else None
    box_id = mjs.body_id(obs["box"]) if "box" in obs else None
    base_z = []
    for k in range(n):
        d.ctrl[:] = ctrl[k]
        mujoco.mj_step(m, d)
        forces, pen, bad = mjs.contact_normal_forces()
        pen_max = max(pen_max, pen)
        for b in bad:
            if b not in mjs.notes:
                mjs.notes.append(b)
        if k >= n - window:
            for name in obs.get("feet", []) + obs.get("stack", []):
                acc.setdefault(name, []).append(forces.get(name, 0.0))
            if base_id is not None:
                base_z.append(d.xpos[base_id][2])
            for name in obs.get("ft", []):
                # MuJoCo's force and torque sensors read what the parent exerts on the child
                # (in the site frame); ours what the child's subtree exerts on the parent
                f = -d.sensor(f"{name}_force").data
                t = -d.sensor(f"{name}_torque").data
                acc.setdefault(("ft", name), []).append(np.concatenate([f, t]))
    out = {"penetration_max_m": pen_max}
    if base_z:
        out["base_z_mean_m"] = float(np.mean(base_z))
    for j in obs.get("joints", []):
        jid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, mjs.joint_full(j))
        out[f"q_{j}"] = float(d.qpos[m.jnt_qposadr[jid]])
    if obs.get("flex"):
        x = d.flexvert_xpos
        out["flex_centroid_z_m"] = float(x[:, 2].mean())
        out["flex_lowest_z_m"] = float(x[:, 2].min())
    if base_id is not None:
        out["base_z_m"] = float(d.xpos[base_id][2])
        out["base_x_m"] = float(d.xpos[base_id][0])
    if box_id is not None:
        out["box_xyz_m"] = [float(x) for x in d.xpos[box_id]]
    for name, v in acc.items():
        if isinstance(name, tuple):
            out[f"ft_{name[1]}"] = [float(x) for x in np.mean(v, axis=0)]
        else:
            out[f"fn_{name}"] = float(np.mean(v))
    return out


def mj_time(mjs, warmup, steps, rounds=1):
    """µs per mj_step over `steps` steps after `warmup` untimed ones (best and all rounds)."""
    m = mjs.model
    ctrl = mjs.controls(warmup + steps)
    times = []
    for _ in range(rounds):
        d2 = mjs.fresh_data()
        for k in range(warmup):
            d2.ctrl[:] = ctrl[k]
            mujoco.mj_step(m, d2)
        spec_full = mujoco.mjtState.mjSTATE_FULLPHYSICS
        state = np.zeros(mujoco.mj_stateSize(m, spec_full))
        mujoco.mj_getState(m, d2, state, spec_full)
        warm = d2.qacc_warmstart.copy()
        if m.nflex > 0:
            # a flex step takes milliseconds: a Python loop costs nothing measurable, and unlike
            # rollout it keeps going when MuJoCo warns (rollout's data would be reset)
            t0 = time.perf_counter()
            for k in range(warmup, warmup + steps):
                d2.ctrl[:] = ctrl[k]
                mujoco.mj_step(m, d2)
            times.append((time.perf_counter() - t0) * 1e6 / steps)
            continue
        c = ctrl[warmup:warmup + steps][None, :, :]
        out_state = np.zeros((1, steps, state.size))
        t0 = time.perf_counter()
        mujoco.rollout.rollout([m], [d2], state[None, :], c, initial_warmstart=warm[None, :], state=out_state, nstep=steps, skip_checks=True)
        times.append((time.perf_counter() - t0) * 1e6 / steps)
        nbad = int(d2.warning[mujoco.mjtWarning.mjWARN_BADQACC].number)
        if nbad:
            note = f"MuJoCo reported {nbad} bad-acceleration warnings (data reset) in the timed steps: timing not valid"
            if note not in mjs.notes:
                mjs.notes.append(note)
    return times, d2


# ---------------------------------------------------------------------------------------------
# our side


def single_thread_copy(path):
    """A copy of a scene with `threads: 1` and absolute paths, under .cache/peers/scenes."""
    sc = load_scene(path)
    base = os.path.dirname(os.path.abspath(path))
    for r in sc["robots"]:
        r["urdf"] = os.path.join(base, r["urdf"])
    for d in sc["deformables"]:
        d["mesh"] = os.path.join(base, d["mesh"])
    sc.setdefault("solver", {})["threads"] = 1
    out_dir = os.path.join(".cache", "peers", "scenes")
    os.makedirs(out_dir, exist_ok=True)
    out = os.path.join(out_dir, os.path.basename(path))
    with open(out, "w") as f:
        yaml.safe_dump(sc, f)
    return out


def scene_solver_kind(path):
    """The solver kind a scene file names (PGS when it names none)."""
    return (load_scene(path).get("solver") or {}).get("kind", "pgs")


def ours_bench(binary, scene, solvers, warmup, steps):
    """`contact_sim bench --json` rows by solver. The scene's own solver runs with the scene's
    settings (tolerances, caps), the others with their defaults (`--solver KIND`)."""
    own = scene_solver_kind(scene)
    calls = []
    if own in solvers:
        calls.append([])
    others = [s for s in solvers if s != own]
    if others:
        calls.append(["--solver", ",".join(others)])
    rows = {}
    for extra in calls:
        cmd = [binary, "bench", scene, *extra, "--steps", str(steps), "--warmup", str(warmup), "--json"]
        r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "RAYON_NUM_THREADS": "1"})
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{r.stderr}")
        rows.update({row["solver"]: row for row in json.loads(r.stdout)})
    return rows


def robot_root_link(scene_path, robot_name):
    """The root link of the scene's robot named `robot_name` (its URDF's), or None."""
    sc = load_scene(scene_path)
    for rob in sc["robots"]:
        with open(os.path.join(os.path.dirname(os.path.abspath(scene_path)), rob["urdf"])) as f:
            txt = f.read()
        name = rob.get("name") or re.search(r"<robot\s+name=\"([^\"]+)\"", txt).group(1)
        if name == robot_name:
            return urdf_root(txt)
    return None


def ours_observe(binary, spec, solver, duration_s, dt):
    obs = spec.observe
    bodies = obs.get("feet", []) + obs.get("stack", [])
    # the base link's height over the window (a walking robot's base moves with its gait)
    base_link = robot_root_link(spec.path, obs["base"]) if "base" in obs else None
    with tempfile.TemporaryDirectory() as tmp:
        summ, csv = os.path.join(tmp, "s.json"), os.path.join(tmp, "c.csv")
        path = single_thread_copy(spec.path) if spec.threads1 else spec.path
        pick = [] if solver == scene_solver_kind(path) else ["--solver", solver]
        cmd = [binary, "run", path, *pick, "--duration", str(duration_s), "--summary", summ, "--quiet"]
        if bodies or obs.get("ft") or base_link:
            cmd += ["--csv", csv]
        if bodies:
            cmd += ["--wrench-bodies", ",".join(bodies)]
        if base_link:
            cmd += ["--pose-bodies", base_link]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{r.stderr}")
        with open(summ) as f:
            s = json.load(f)
        out = {"penetration_max_m": s["stats"]["max_penetration_m"], "iterations_mean": s["stats"]["iterations_mean"]}
        poses = {b["name"]: b for b in s["bodies"]}
        for j in obs.get("joints", []):
            out[f"q_{j}"] = s["joint_positions"][j]
        if obs.get("flex"):
            d = {x["name"]: x for x in s.get("deformables", [])}[obs["flex"]]
            out["flex_centroid_z_m"] = d["node_centroid_m"][2]
            out["flex_lowest_z_m"] = d["lowest_node_z_m"]
        if "base" in obs:
            out["base_x_m"] = poses[obs["base"]]["position_m"][0]
            out["base_z_m"] = poses[obs["base"]]["position_m"][2]
        if "box" in obs:
            out["box_xyz_m"] = poses[obs["box"]]["position_m"]
        window = max(1, int(round(obs.get("window_s", 0.1) / dt)))
        if bodies or obs.get("ft") or base_link:
            data = np.genfromtxt(csv, delimiter=",", names=True)
            data = data[-window:]
            # numpy drops the dots of the CSV's column names
            col = lambda name: data[name.replace(".", "")] if name.replace(".", "") in data.dtype.names else data[name]
            for name in obs.get("ft", []):
                out[f"ft_{name}"] = [float(np.mean(col(f"{name}.ideal.{c}"))) for c in ("fx", "fy", "fz", "tx", "ty", "tz")]
            if base_link:
                out["base_z_mean_m"] = float(np.mean(col(f"{base_link}.position.z")))
            for b in bodies:
                out[f"fn_{b}"] = float(np.mean(data[f"{b}contactfz"] if f"{b}contactfz" in data.dtype.names else data[f"{b}.contact.fz"]))
    return out


# ---------------------------------------------------------------------------------------------


VARIANTS = {"matched": "stiff", "default": "default"}


def fmt(x, prec=2):
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    return f"{x:.{prec}f}"


def load_avg():
    with open("/proc/loadavg") as f:
        return f.read().split()[:3]


def ensure_binary(repo, given):
    if given:
        if not os.path.exists(given):
            raise SystemExit(f"error: --bin {given}: no such file")
        return given
    b = os.path.join(repo, "target", "release", "contact_sim")
    if not os.path.exists(b):
        print("bench-peers: building contact_sim (cargo build --release --bin contact_sim) ...", file=sys.stderr)
        subprocess.run(["cargo", "build", "--release", "--bin", "contact_sim"], cwd=repo, check=True)
    return b


def physics_rows(spec, ours, mj):
    """(label, [values per column], precision) for the physical outcome table."""
    obs = spec.observe
    cols = list(ours.values()) + list(mj.values())
    rows = []
    if "base" in obs:
        rows.append(("base height z (mm)", [c.get("base_z_m", math.nan) * 1e3 for c in cols], 1))
        if spec.key in ("trot",):
            rows.append(("base forward x (m)", [c.get("base_x_m", math.nan) for c in cols], 3))
            rows.append((f"base height z, mean over the last {obs.get('window_s', 0.1):g} s (mm)", [c.get("base_z_mean_m", math.nan) * 1e3 for c in cols], 1))
    for f in obs.get("feet", []):
        rows.append((f"{f} contact force z (N)", [c.get(f"fn_{f}", math.nan) for c in cols], 2))
    if obs.get("feet"):
        rows.append(("feet total z (N)", [sum(c.get(f"fn_{f}", math.nan) for f in obs["feet"]) for c in cols], 2))
    st = obs.get("stack", [])
    for k, b in enumerate(st):
        # the support under box k carries box k and everything above: sum of their net contact forces
        label = "ground under " + b if k == 0 else f"{st[k - 1]} under {b}"
        rows.append((label + " (N)", [sum(c.get(f"fn_{x}", math.nan) for x in st[k:]) for c in cols], 2))
    if "box" in obs:
        for i, ax in enumerate("xyz"):
            rows.append((f"{obs['box']} {ax} (mm)", [c["box_xyz_m"][i] * 1e3 for c in cols], 1))
    for name in obs.get("ft", []):
        # the sensor's reading in its own frame: what the child's subtree exerts on the parent
        for i, comp in enumerate(("fx", "fy", "fz")):
            rows.append((f"{name} {comp} (N)", [c.get(f"ft_{name}", [math.nan] * 6)[i] for c in cols], 2))
        for i, comp in enumerate(("tx", "ty", "tz")):
            rows.append((f"{name} {comp} (N·m)", [c.get(f"ft_{name}", [math.nan] * 6)[3 + i] for c in cols], 3))
    for j in obs.get("joints", []):
        rows.append((f"{j} (mm)", [c.get(f"q_{j}", math.nan) * 1e3 for c in cols], 2))
    if obs.get("flex"):
        rows.append((f"{obs['flex']} centroid z (mm)", [c.get("flex_centroid_z_m", math.nan) * 1e3 for c in cols], 1))
        rows.append((f"{obs['flex']} lowest node z (mm)", [c.get("flex_lowest_z_m", math.nan) * 1e3 for c in cols], 1))
    rows.append(("deepest penetration (mm)", [c.get("penetration_max_m", math.nan) * 1e3 for c in cols], 2))
    return rows


def main(args, repo):
    os.chdir(repo)
    if args.list:
        for s in SCENES:
            print(f"{s.key:<12} {s.path:<45} {s.title}")
        return 0
    keys = [s.key for s in SCENES] if args.scenes == "all" else args.scenes.split(",")
    known = {s.key: s for s in SCENES}
    for k in keys:
        if k not in known:
            raise SystemExit(f"error: --scenes: unknown scene '{k}' (known: {', '.join(known)})")
    binary = ensure_binary(repo, args.bin)
    ver = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout.strip()
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=repo).stdout.strip()
    print(f"bench-peers: {ver} (git {head}) vs MuJoCo {mujoco.__version__}; {args.rounds} rounds, alternated; "
          f"load average {' '.join(load_avg())} at the start; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    results = []
    md = []
    for key in keys:
        spec = known[key]
        solvers = args.solvers.split(",") if args.solvers else spec.solvers
        warmup = args.warmup if args.warmup is not None else spec.warmup
        steps = args.steps if args.steps is not None else spec.steps
        mjs = {v: MjScene(spec.path, mode) for v, mode in VARIANTS.items()}
        for name, value in spec.mj_matched_options.items():
            setattr(mjs["matched"].model.opt, name, value)
        dt = mjs["matched"].dt
        duration = spec.duration_s or float(mjs["matched"].sc.get("duration_s", 5.0))
        if args.dump_xml:
            os.makedirs(args.dump_xml, exist_ok=True)
            for v, s in mjs.items():
                with open(os.path.join(args.dump_xml, f"{key}.{v}.xml"), "w") as f:
                    f.write(s.spec.to_xml())
        print(f"\n== {key}: {spec.title}\n   {spec.path}, dt {dt * 1e3:g} ms, warm-up {warmup} steps, timed {steps} steps; "
              f"MuJoCo nv {mjs['matched'].model.nv}, {mjs['matched'].model.nu} actuators")
        t_ours = {s: [] for s in solvers}
        t_mj = {v: [] for v in VARIANTS}
        loads = []
        iters = {}
        if not args.no_timing:
            for r in range(args.rounds):
                loads.append(load_avg()[0])
                order = ("ours", "mj") if r % 2 == 0 else ("mj", "ours")
                for who in order:
                    if who == "ours":
                        rows = ours_bench(binary, single_thread_copy(spec.path) if spec.threads1 else spec.path, solvers, warmup, steps)
                        for s in solvers:
                            t_ours[s].append(rows[s]["mean_us"])
                            iters.setdefault(s, []).append((rows[s]["iterations_mean"], rows[s]["unconverged_steps"]))
                    else:
                        for v, s in mjs.items():
                            t_mj[v].append(mj_time(s, warmup, steps, 1)[0][0])
            mean = lambda xs: sum(xs) / len(xs)
            ref = mean(t_mj["matched"])
            print(f"   step µs per round (load average at each round start: {', '.join(loads)}):")
            for s in solvers:
                it, unc = iters[s][-1]
                tag = "*" if s == scene_solver_kind(spec.path) else " "
                print(f"    {tag}ours {s:<10} {mean(t_ours[s]):8.2f}   ({', '.join(fmt(x) for x in t_ours[s])})   ours/MuJoCo {mean(t_ours[s]) / ref:5.2f}"
                      f"   [{it:.1f} solver iterations per step, {unc} of {steps} steps unconverged]")
            print("     (* the scene's own solver, with the scene's settings; the others with their defaults)")
            for v in VARIANTS:
                print(f"     MuJoCo {v:<8} {mean(t_mj[v]):8.2f}   ({', '.join(fmt(x) for x in t_mj[v])})")
        ours_phys, mj_phys = {}, {}
        if not args.no_physics:
            for s in solvers:
                ours_phys[f"ours {s}"] = ours_observe(binary, spec, s, duration, dt)
            for v, sc in mjs.items():
                mj_phys[f"MuJoCo {v}"] = mj_observe(sc, spec, duration)
            cols = list(ours_phys) + list(mj_phys)
            print(f"   physical outcome after {duration:g} s ({'mean over the last ' + format(spec.observe.get('window_s', 0.1), 'g') + ' s for forces'}):")
            print("     " + " " * 30 + "".join(f"{c:>17}" for c in cols))
            for label, vals, prec in physics_rows(spec, ours_phys, mj_phys):
                print(f"     {label:<30}" + "".join(f"{fmt(v, prec):>17}" for v in vals))
        notes = list(spec.notes)
        for v, sc in mjs.items():
            notes += [f"MuJoCo {v}: {n}" for n in sc.notes]
        for n in notes:
            print(f"   note: {n}")
        results.append({"scene": key, "title": spec.title, "file": spec.path, "dt_s": dt, "warmup": warmup, "steps": steps,
                        "ours_us": t_ours, "ours_iterations": iters, "mujoco_us": t_mj, "load": loads, "ours_physics": ours_phys, "mujoco_physics": mj_phys,
                        "notes": notes, "duration_s": duration})
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"ours": ver, "git": head, "mujoco": mujoco.__version__, "results": results}, f, indent=1)
    if args.markdown:
        write_markdown(args.markdown, results, ver, head)
    return 0


def write_markdown(path, results, ver, head):
    mean = lambda xs: sum(xs) / len(xs) if xs else math.nan
    out = []
    solvers = []
    for r in results:
        for s in r["ours_us"]:
            if s not in solvers:
                solvers.append(s)
    out.append("| scene | " + " | ".join(f"ours {s} µs" for s in solvers) + " | MuJoCo µs (matched) | MuJoCo µs (its defaults) | "
               + " | ".join(f"{s} / MuJoCo" for s in solvers) + " | load |")
    out.append("|---" * (1 + 2 * len(solvers) + 3) + "|")
    for r in results:
        ref = mean(r["mujoco_us"].get("matched", []))
        cells = [r["scene"]]
        cells += [fmt(mean(r["ours_us"].get(s, []))) for s in solvers]
        cells += [fmt(ref), fmt(mean(r["mujoco_us"].get("default", [])))]
        cells += [fmt(mean(r["ours_us"][s]) / ref) if r["ours_us"].get(s) else "–" for s in solvers]
        cells += ["/".join(r["load"])]
        out.append("| " + " | ".join(cells) + " |")
    out.append("")
    for r in results:
        if not r["ours_physics"]:
            continue
        spec = {s.key: s for s in SCENES}[r["scene"]]
        cols = list(r["ours_physics"]) + list(r["mujoco_physics"])
        out.append(f"**{r['scene']}** ({r['title']}; after {r['duration_s']:g} s)")
        out.append("")
        out.append("| | " + " | ".join(cols) + " |")
        out.append("|---" * (1 + len(cols)) + "|")
        for label, vals, prec in physics_rows(spec, r["ours_physics"], r["mujoco_physics"]):
            out.append(f"| {label} | " + " | ".join(fmt(v, prec) for v in vals) + " |")
        out.append("")
        for n in r["notes"]:
            out.append(f"- {n}")
        if r["notes"]:
            out.append("")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")

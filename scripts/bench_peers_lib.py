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

    def __init__(self, key, path, solvers, warmup, steps, observe, title, notes=()):
        self.key, self.path, self.solvers = key, path, solvers
        self.warmup, self.steps, self.observe, self.title = warmup, steps, observe, title
        self.notes = list(notes)


FEET = ["LF_foot", "RF_foot", "LH_foot", "RH_foot"]
RIGID = ["pgs", "bisection", "vfpi"]

SCENES = [
    SceneSpec("stand", "config/examples/quadruped_stand.yaml", RIGID, 500, 5000,
              {"base": "quadruped", "feet": FEET, "window_s": 0.5}, "quadruped standing (18 DOF, 4 feet)"),
    SceneSpec("trot", "config/examples/bisection_trot.yaml", RIGID, 500, 4000,
              {"base": "quadruped", "feet": FEET, "window_s": 0.4}, "quadruped trotting (open-loop gait, feet only collide)"),
    SceneSpec("push", "config/examples/arm_push_box.yaml", RIGID, 500, 5000,
              {"box": "box", "window_s": 0.1}, "7-DOF arm pushing a 0.5 kg box"),
    SceneSpec("default", "config/default.yaml", RIGID, 500, 5000,
              {"base": "quadruped", "box": "box", "feet": FEET, "window_s": 0.1}, "default scene (quadruped crouching + arm pushing a box)"),
    SceneSpec("stack", "config/examples/box_stack.yaml", RIGID, 500, 5000,
              {"box": "box4", "ground": ["box0"], "window_s": 0.5}, "5-box stack, 1 kg each"),
    SceneSpec("heavy_stack", "config/examples/box_stack_heavy.yaml", RIGID, 500, 5000,
              {"box": "box4", "ground": ["box0"], "window_s": 0.5}, "5-box stack, 1 to 4096 kg, heaviest on top"),
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
        mu = friction_fn(sc)
        ground_mat = sc["ground"].get("material", "default")
        spec = mujoco.MjSpec()
        spec.option.timestep = sc["timestep_s"]
        spec.option.gravity = sc["gravity"]
        spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
        spec.option.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
        spec.compiler.fusestatic = True
        if sc["deformables"]:
            raise NotImplementedError("deformables are not translated (the flexcomp scene is separate)")
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
            frame = spec.worldbody.add_frame()
            spec.attach(child, frame=frame, prefix=prefix)
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
        # friction pairs MuJoCo cannot reproduce with one coefficient per geometry
        objs = [o for o in sc["objects"]]
        for o in objs:
            om = o.get("material", "default")
            want_ground = mu(om, ground_mat)
            for rob_mat in {m for n, m in self.geom_material.items() if "/" in n}:
                if abs(mu(om, rob_mat) - want_ground) > 1e-12:
                    self.notes.append(f"friction {o['name']}–robot is {want_ground} in MuJoCo, {mu(om, rob_mat)} in ours")
        self.spec = spec
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
        """Our body name -> summed normal force (N) of its contacts; max penetration (m)."""
        m, d = self.model, self.data
        forces = {}
        pen = 0.0
        f6 = np.zeros(6)
        for i in range(d.ncon):
            c = d.contact[i]
            if c.efc_address < 0:
                continue
            mujoco.mj_contactForce(m, d, i, f6)
            pen = max(pen, -c.dist)
            for gid in (c.geom1, c.geom2):
                name = m.geom(gid).name
                owner = self.geom_owner.get(name.split("/", 1)[-1] if "/" in name and name not in self.geom_owner else name)
                if owner is None:
                    owner = self.geom_owner.get(name)
                if owner is not None:
                    forces[owner] = forces.get(owner, 0.0) + f6[0]
        return forces, pen


def mj_observe(mjs, spec, duration_s):
    """Runs the MuJoCo scene for `duration_s` and returns the observed outcome."""
    m, d = mjs.model, mjs.data
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
        forces, pen = mjs.contact_normal_forces()
        pen_max = max(pen_max, pen)
        if k >= n - window:
            for name in obs.get("feet", []) + obs.get("ground", []):
                acc.setdefault(name, []).append(forces.get(name, 0.0))
            if base_id is not None:
                base_z.append(d.xpos[base_id][2])
    out = {"penetration_max_m": pen_max}
    if base_id is not None:
        out["base_z_m"] = float(d.xpos[base_id][2])
        out["base_x_m"] = float(d.xpos[base_id][0])
    if box_id is not None:
        out["box_xyz_m"] = [float(x) for x in d.xpos[box_id]]
    for name, v in acc.items():
        out[f"fn_{name}"] = float(np.mean(v))
    return out


def mj_time(mjs, warmup, steps, rounds=1):
    """µs per mj_step over `steps` steps after `warmup` untimed ones (best and all rounds)."""
    m = mjs.model
    d = mujoco.MjData(m)
    d.qpos[:] = mjs.data.qpos  # the initial state kept by MjScene (before any stepping)
    ctrl = mjs.controls(warmup + steps)
    times = []
    for _ in range(rounds):
        d2 = mujoco.MjData(m)
        mujoco.mj_resetData(m, d2)
        d2.qpos[:] = mjs.q0
        d2.qvel[:] = mjs.v0
        mujoco.mj_forward(m, d2)
        for k in range(warmup):
            d2.ctrl[:] = ctrl[k]
            mujoco.mj_step(m, d2)
        spec_full = mujoco.mjtState.mjSTATE_FULLPHYSICS
        state = np.zeros(mujoco.mj_stateSize(m, spec_full))
        mujoco.mj_getState(m, d2, state, spec_full)
        warm = d2.qacc_warmstart.copy()
        c = ctrl[warmup:warmup + steps][None, :, :]
        out_state = np.zeros((1, steps, state.size))
        t0 = time.perf_counter()
        mujoco.rollout.rollout(m, d2, state[None, :], c, initial_warmstart=warm[None, :], state=out_state, skip_checks=True)
        times.append((time.perf_counter() - t0) * 1e6 / steps)
    return times, d2


# ---------------------------------------------------------------------------------------------
# our side


def ours_bench(binary, scene, solvers, warmup, steps):
    cmd = [binary, "bench", scene, "--solver", ",".join(solvers), "--steps", str(steps), "--warmup", str(warmup), "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "RAYON_NUM_THREADS": "1"})
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{r.stderr}")
    return {row["solver"]: row for row in json.loads(r.stdout)}


def ours_observe(binary, spec, solver, duration_s, dt):
    obs = spec.observe
    bodies = obs.get("feet", []) + obs.get("ground", [])
    with tempfile.TemporaryDirectory() as tmp:
        summ, csv = os.path.join(tmp, "s.json"), os.path.join(tmp, "c.csv")
        cmd = [binary, "run", spec.path, "--solver", solver, "--duration", str(duration_s), "--summary", summ, "--quiet"]
        if bodies:
            cmd += ["--csv", csv, "--wrench-bodies", ",".join(bodies)]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{r.stderr}")
        with open(summ) as f:
            s = json.load(f)
        out = {"penetration_max_m": s["stats"]["max_penetration_m"], "iterations_mean": s["stats"]["iterations_mean"]}
        poses = {b["name"]: b for b in s["bodies"]}
        if "base" in obs:
            out["base_x_m"] = poses[obs["base"]]["position_m"][0]
            out["base_z_m"] = poses[obs["base"]]["position_m"][2]
        if "box" in obs:
            out["box_xyz_m"] = poses[obs["box"]]["position_m"]
        window = max(1, int(round(obs.get("window_s", 0.1) / dt)))
        if bodies:
            data = np.genfromtxt(csv, delimiter=",", names=True)
            data = data[-window:]
            for b in bodies:
                out[f"fn_{b}"] = float(np.mean(data[f"{b}contactfz"] if f"{b}contactfz" in data.dtype.names else data[f"{b}.contact.fz"]))
    return out


# ---------------------------------------------------------------------------------------------


def main(args, repo):
    print("not implemented yet")
    return 1

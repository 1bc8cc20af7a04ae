#!/usr/bin/env python3
"""The peer of `contact_sim identify`: MuJoCo's own system-identification toolbox (`mujoco.sysid`)
fitting the arm's synthetic identification problem (tests/data/identify/arm_problem.json).

    scripts/sysid-peer                                   # the problem as written (10 s), 2 threads
    scripts/sysid-peer --duration 4 --out /tmp/quick.json # a quick run on the first 4 s
    scripts/sysid-peer --force                            # overwrite benches/results/sysid_peer.json

What it does:
  1. installs `mujoco[sysid]` (pinned, see peers_venv.MUJOCO_VERSION) into the peers' cached venv
     (.cache/peers, shared with scripts/bench-peers) and re-runs itself there;
  2. builds the arm in MuJoCo from urdf/arm7.urdf with bench_peers_lib (MuJoCo compiles the URDF;
     fixed base, no ground, one position actuator per servoed joint with the problem's kp / kd
     and the URDF effort limit), then matches our servo and joint models (see NOTES below);
  3. "hardware" run: the true parameters, the sum-of-sines targets of every 1 ms step, the 4 ms
     command delay, simulated by `mujoco.sysid.sysid_rollout`; Gaussian noise (numpy, the
     problem's seed) on the measured positions, velocities and efforts;
  4. `mujoco.sysid.optimize` (MuJoCo's box-constrained Levenberg-Marquardt, `mujoco.minimize`)
     from the nominal parameters within the problem's bounds: friction (MuJoCo `frictionloss`),
     damping and armature of the 7 arm joints, and the command delay (MuJoCo 4's actuator
     `delay`), residuals from rollouts on `--threads` threads;
  5. writes the JSON (one row per parameter: true, nominal, fitted, relative error; wall time,
     iterations, rollouts, versions, CPU, date, the command, the modelling notes). The JSON is
     also a table of BENCHMARKS.md (scripts/benchmarks-md renders it).

The output file is not overwritten unless --force. Not part of ./scripts/test.
"""
import argparse
import datetime
import json
import os
import shlex
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "scripts"))
import peers_venv  # noqa: E402  (standard library only: usable before the venv exists)

REQUIREMENTS = ["mujoco[sysid]=={v}", "pyyaml", "numpy"]
IMPORT_CHECK = "import mujoco, mujoco.rollout, mujoco.sysid, scipy, yaml; mujoco.sysid.optimize; print(mujoco.__version__)"
DEFAULT_PROBLEM = os.path.join(REPO, "tests", "data", "identify", "arm_problem.json")
DEFAULT_OUT = os.path.join(REPO, "benches", "results", "sysid_peer.json")

# Where the MuJoCo problem is not ours, in the order a reader needs them. Written into the JSON.
NOTES = [
    "Servo: our position servo is backward-Euler in position and velocity, tau = kp (q_ref - q - dt v+) - kd v+. "
    "MuJoCo's position actuator under implicitfast integrates only its velocity gain implicitly, so it is given "
    "kv = kd + dt kp: the applied torque is then ours exactly (below the effort limit).",
    "Measured effort: MuJoCo's actuatorfrc sensor, kp (q_ref_delayed - q) - (kd + dt kp) v at the start-of-step "
    "state, clamped at the URDF effort limit. Ours is kp (q_ref - q) - kd v: the same torque when evaluated at the "
    "end-of-step state; the two readings differ by (kd + dt kp) times one step's velocity change. All MuJoCo readings "
    "(position, velocity, effort) are of the state at the start of a step (mj_step evaluates sensors before it "
    "integrates), the data and the fit alike.",
    "Effort limit: both engines hold a saturated servo at the URDF effort limit with no implicit damping (MuJoCo "
    "drops a clamped actuator's velocity derivative), but ours decides saturation on kp (q_ref - q) - kd v and MuJoCo "
    "on kp (q_ref - q) - (kd + dt kp) v, and MuJoCo clamps the explicit force only (its implicit velocity correction "
    "may pass the limit slightly, as ours may when unsaturated). See saturated_effort_samples for how often it bites.",
    "Joint friction: MuJoCo's frictionloss is a soft constraint; it is made as stiff as bench-peers' matched mode "
    "(solreffriction 2 dt 1, solimpfriction 0.99 0.99 0.001), ours is a hard Coulomb impulse bound. Damping and "
    "armature are the same passive terms (damping implicit in both).",
    "Command delay: MuJoCo 4's actuator history buffer (nsample, delay, linear interpolation). Its delay is at least "
    "one step (a delay in (0, dt] reads the previous step's command) and jumps at 0, which a finite-difference "
    "Jacobian cannot cross; so each step's ctrl is the next step's target (q_ref(t + dt), known offline) and the "
    "buffer delay is d + dt: the servo sees q_ref(t - d), continuous and linear in d between samples, d = 0 being "
    "no delay. mujoco.sysid's own delay (SignalTransform.delay) shifts sensor signals, not commands, so it does not "
    "model a transport delay inside the servo loop.",
    "Commands before t = 0 (read by the delay) are held at q_ref(0); the arm starts at rest at q_ref(0) "
    "(fingers at 0, the mimic finger consistent).",
    "Noise: the same standard deviations and seed number, but numpy's generator (PCG64), so not the same draws as "
    "our Rust generator.",
    "Residual: every sample of the 21 measured signals, each divided by its noise standard deviation "
    "(maximum likelihood under the problem's Gaussian noise); mujoco.sysid's default would normalise each signal "
    "by its own RMS instead (--weights rms).",
    "No contacts: MuJoCo's contact pass is disabled (no ground; our robots do not collide with themselves). The "
    "finger joints keep their URDF damping and friction and are held at their lower limit, a soft limit "
    "constraint in MuJoCo, a hard one in ours; finger_right_joint follows the left finger by MuJoCo's equality "
    "constraint (mimic), not by its own servo.",
    "Integrator: MuJoCo implicitfast with its Newton constraint solver (tolerance 1e-10); MuJoCo's "
    "Coriolis / centrifugal terms are explicit at the start of the step.",
]


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="scripts/sysid-peer", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--problem", default=DEFAULT_PROBLEM, help="the problem JSON (default tests/data/identify/arm_problem.json)")
    p.add_argument("--out", default=DEFAULT_OUT, help="the result JSON (default benches/results/sysid_peer.json)")
    p.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    p.add_argument("--duration", type=float, default=None, metavar="S", help="seconds of data (default: the problem's duration_s)")
    p.add_argument("--threads", type=int, default=2, help="rollout threads of mujoco.sysid (default 2)")
    p.add_argument("--max-iters", type=int, default=100, help="Levenberg-Marquardt iterations at most (default 100)")
    p.add_argument("--weights", choices=["noise", "rms"], default="noise",
                   help="residual weights: 1 / noise std (default), or mujoco.sysid's default per-signal RMS normalisation")
    p.add_argument("--mujoco-version", default=peers_venv.MUJOCO_VERSION, help=f"MuJoCo from PyPI (default {peers_venv.MUJOCO_VERSION})")
    args = p.parse_args(argv)
    if args.threads < 1:
        p.error("--threads must be at least 1")
    if args.duration is not None and args.duration <= 0:
        p.error("--duration must be positive")
    return args


def check_out(path, force):
    if os.path.exists(path) and not force:
        peers_venv.die(f"{path} exists: pass --force to overwrite it")


# ---------------------------------------------------------------------------------------------
# everything below runs inside the venv


def load_problem(path):
    """The problem JSON, with the URDF path made absolute."""
    with open(path) as f:
        problem = json.load(f)
    problem["urdf"] = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(path)), problem["urdf"]))
    return problem


def targets_rad(problem, times_s):
    """q_ref(t) of the 7 arm joints, shape (len(times_s), 7): the problem's sum of sines."""
    import numpy as np

    ex = problem["excitation"]
    t = np.asarray(times_s)[:, None]
    q0, a = np.array(ex["q0"]), np.array(ex["a"])
    f1, f2, phi = np.array(ex["f1_hz"]), np.array(ex["f2_hz"]), np.array(ex["phi"])
    return q0 + a * (np.sin(2 * np.pi * f1 * t + phi) + 0.5 * np.sin(2 * np.pi * f2 * t))


class ArmModel:
    """The arm of the problem as a MuJoCo spec with sensors, stiff joint friction, our servo and
    a command delay buffer; parameters are applied by `set_parameters`.

    Sensors, in order: `pos:<joint>` (rad), `vel:<joint>` (rad/s) and `eff:<joint>` (N·m, the
    arm actuator's force) for the 7 arm joints.
    """

    def __init__(self, problem):
        import mujoco
        import numpy as np
        import yaml
        import bench_peers_lib as lib

        self.problem = problem
        self.joints = list(problem["joints"])
        self.dt_s = float(problem["timestep_s"])
        self.max_delay_s = float(problem["bounds"]["command_delay_s"][1])
        gains = problem["gains"]
        q_start = targets_rad(problem, [0.0])[0]
        control = {j: {"mode": "position", "kp": float(kp), "kd": float(kd)} for j, kp, kd in zip(self.joints, gains["kp"], gains["kd"])}
        control["finger_left_joint"] = {"mode": "position", "kp": 400.0, "kd": 10.0}
        scene = {
            "timestep_s": self.dt_s,
            "gravity": problem["gravity"],
            "ground": {"enabled": False},
            "robots": [{
                "urdf": problem["urdf"],
                "base": {"mode": "fixed", "position": [0.0, 0.0, 0.0]},
                "initial_positions": {**{j: float(q) for j, q in zip(self.joints, q_start)}, "finger_left_joint": 0.0},
                "control": {"joints": control},
            }],
        }
        # bench_peers_lib reads a scene file: our URDF -> MJCF handling, written once, kept nowhere
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            yaml.safe_dump(scene, f)
            scene_path = f.name
        try:
            self.scene = lib.MjScene(scene_path)
        finally:
            os.remove(scene_path)
        spec = self.spec = self.scene.spec
        robot = next(iter(self.scene.root_bodies))
        self.full = {j: f"{robot}/{j}" for j in self.joints}
        spec.option.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
        spec.option.tolerance = 1e-10
        for j in self.joints:
            jt = spec.joint(self.full[j])
            jt.solref_friction = [2 * self.dt_s, 1.0]
            jt.solimp_friction = [0.99, 0.99, 0.001, 0.5, 2.0]
        # our servo: tau = kp (q_ref - q) - (kd + dt kp) v+ under implicitfast (NOTES[0]); command
        # history for the delay, one slot more than the largest delay + one step needs
        self.nsample = int(np.ceil((self.max_delay_s + self.dt_s) / self.dt_s)) + 2
        self.actuators = [full for full, *_ in self.scene.actuated]
        for full, mode, _robot, _joint in self.scene.actuated:
            act = spec.actuator(full)
            kp, kd = act.gainprm[0], -act.biasprm[2]
            act.biasprm[2] = -(kd + self.dt_s * kp)
            act.nsample = self.nsample
            act.interp = 1  # linear
        for j in self.joints:
            spec.add_sensor(name=f"pos:{j}", type=mujoco.mjtSensor.mjSENS_JOINTPOS, objtype=mujoco.mjtObj.mjOBJ_JOINT, objname=self.full[j])
        for j in self.joints:
            spec.add_sensor(name=f"vel:{j}", type=mujoco.mjtSensor.mjSENS_JOINTVEL, objtype=mujoco.mjtObj.mjOBJ_JOINT, objname=self.full[j])
        for j in self.joints:
            spec.add_sensor(name=f"eff:{j}", type=mujoco.mjtSensor.mjSENS_ACTUATORFRC, objtype=mujoco.mjtObj.mjOBJ_ACTUATOR, objname=self.full[j])
        self.effort_limit_nm = {}
        model = spec.compile()
        for j in self.joints:
            self.effort_limit_nm[j] = float(model.actuator(self.full[j]).forcerange[1])

    # --- parameters -------------------------------------------------------------------------

    def set_friction(self, spec, joint, friction_nm):
        spec.joint(self.full[joint]).frictionloss = float(friction_nm)

    def set_damping(self, spec, joint, damping_nms_per_rad):
        # MuJoCo 4's joint damping is a polynomial in v (linear, quadratic, cubic): ours is linear
        spec.joint(self.full[joint]).damping = [float(damping_nms_per_rad), 0.0, 0.0]

    def set_armature(self, spec, joint, armature_kg_m2):
        spec.joint(self.full[joint]).armature = float(armature_kg_m2)

    def set_delay(self, spec, delay_s):
        """Command delay d: the buffer reads at t - (d + dt) what was sent one step ahead (NOTES[4])."""
        for full in self.actuators:
            spec.actuator(full).delay = float(delay_s) + self.dt_s

    def set_parameters(self, values):
        """Applies {our parameter name: value} to the spec (used for the true and nominal models)."""
        for name, v in values.items():
            self.modifier(name)(self.spec, v)

    def modifier(self, name):
        """(spec, value) -> None for one of our parameter names."""
        if name == "commands/delay_s":
            return lambda spec, v: self.set_delay(spec, v)
        _, joint, what = name.split("/")
        setter = {"friction": self.set_friction, "damping": self.set_damping, "armature": self.set_armature}[what]
        return lambda spec, v: setter(spec, joint, v)

    # --- signals ----------------------------------------------------------------------------

    def controls(self, n_steps):
        """(times_s, ctrl) for n_steps steps: n_steps + 1 rows (mujoco.sysid drops the last), each
        row the NEXT step's targets (the delay buffer's one-step look-ahead, NOTES[4]); fingers 0."""
        import numpy as np

        times = np.arange(n_steps + 1) * self.dt_s
        ctrl = np.zeros((n_steps + 1, len(self.actuators)))
        ahead = targets_rad(self.problem, times + self.dt_s)
        for i, j in enumerate(self.joints):
            ctrl[:, self.actuators.index(self.full[j])] = ahead[:, i]
        return times, ctrl

    def initial_state(self, model):
        """mjSTATE_FULLPHYSICS at t = 0: at rest at q_ref(0), the command history held at q_ref(0)."""
        import mujoco
        import numpy as np

        d = mujoco.MjData(model)
        d.qpos[:] = self.scene.q0
        d.qvel[:] = 0.0
        q_start = targets_rad(self.problem, [0.0])[0]
        for a, full in enumerate(self.actuators):
            jname = full.split("/", 1)[1]
            value = q_start[self.joints.index(jname)] if jname in self.joints else 0.0
            mujoco.mj_initCtrlHistory(model, d, a, None, np.full((self.nsample, 1), value))
        state = np.empty(mujoco.mj_stateSize(model, mujoco.mjtState.mjSTATE_FULLPHYSICS))
        mujoco.mj_getState(model, d, state, mujoco.mjtState.mjSTATE_FULLPHYSICS)
        return state


def param_names(joints):
    names = []
    for what in ("friction", "damping", "armature"):
        names += [f"joint/{j}/{what}" for j in joints]
    return names + ["commands/delay_s"]


def problem_values(problem, which):
    """{our parameter name: value} of problem[which] ('true' or 'nominal') or ('bounds')."""
    src = problem[which]
    joints = problem["joints"]
    keys = {"friction": "friction_nm", "damping": "damping_nms_per_rad", "armature": "armature_kg_m2"}
    out = {}
    for what, key in keys.items():
        for i, j in enumerate(joints):
            out[f"joint/{j}/{what}"] = src[key] if which == "bounds" else src[key][i]
    out["commands/delay_s"] = src["command_delay_s"]
    return out


def noise_std(problem):
    """{sensor name prefix: std}."""
    n = problem["noise_std"]
    return {"pos": n["position_rad"], "vel": n["velocity_rad_s"], "eff": n["effort_nm"]}


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown"


def load_avg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


class Tee:
    """A text stream that writes to stderr as it goes and keeps what was written."""

    def __init__(self):
        self.parts = []

    def write(self, s):
        self.parts.append(s)
        sys.stderr.write(s)
        return len(s)

    def flush(self):
        sys.stderr.flush()

    def text(self):
        return "".join(self.parts)


def run(args):
    import mujoco
    import numpy as np
    from mujoco import sysid

    problem = load_problem(args.problem)
    duration_s = float(args.duration if args.duration is not None else problem["duration_s"])
    started = datetime.datetime.now(datetime.timezone.utc)
    load_start = load_avg()
    arm = ArmModel(problem)
    dt = arm.dt_s
    n_steps = int(round(duration_s / dt))
    names = param_names(arm.joints)
    true, nominal, bounds = problem_values(problem, "true"), problem_values(problem, "nominal"), problem_values(problem, "bounds")

    # --- the "hardware" run ------------------------------------------------------------------
    t0 = time.perf_counter()
    arm.set_parameters(true)
    model_true = arm.spec.compile()
    times, ctrl = arm.controls(n_steps)
    control_ts = sysid.TimeSeries(times, ctrl)
    state0 = arm.initial_state(model_true)
    clean = sysid.sysid_rollout(model_true, [mujoco.MjData(model_true)], control_ts, state0)[0]
    rng = np.random.default_rng(problem["noise_seed"])
    std = noise_std(problem)
    sensor_names = [model_true.sensor(i).name for i in range(model_true.nsensor)]
    col_std = np.array([std[n.split(":")[0]] for n in sensor_names])  # each sensor is one column
    measured = sysid.TimeSeries(clean.sensordata.times, clean.sensordata.data + rng.standard_normal(clean.sensordata.data.shape) * col_std,
                                clean.sensordata.signal_mapping)
    eff = clean.sensordata.data[:, [sensor_names.index(f"eff:{j}") for j in arm.joints]]
    limits = np.array([arm.effort_limit_nm[j] for j in arm.joints])
    saturated = np.abs(eff) >= limits - 1e-9
    saturated_samples = int(np.sum(saturated))
    saturated_by_joint = {j: int(n) for j, n in zip(arm.joints, saturated.sum(axis=0)) if n}
    generate_s = time.perf_counter() - t0
    print(f"sysid-peer: {duration_s:g} s of data ({n_steps} steps) generated in {generate_s:.2f} s; "
          f"peak |effort| / limit {np.max(np.abs(eff) / limits):.2f}, saturated samples {saturated_by_joint or 'none'}", file=sys.stderr)

    # --- the fit -----------------------------------------------------------------------------
    params = sysid.ParameterDict()
    for name in names:
        lo, hi = bounds[name]
        setter = arm.modifier(name)
        params.add(sysid.Parameter(name, nominal[name], lo, hi, modifier=lambda spec, p, s=setter: s(spec, p.value[0])))
    arm.set_parameters(nominal)
    seq = sysid.ModelSequences("arm7", arm.spec, "sum_of_sines", state0, control_ts, measured)
    transform = sysid.SignalTransform(normalize=(args.weights == "rms"))
    if args.weights == "noise":
        transform.set_sensor_weights({n: 1.0 / s for n, s in zip(sensor_names, col_std)})
    residual_fn = sysid.build_residual_fn(models_sequences=[seq], modify_residual=transform.apply, n_threads=args.threads,
                                          resample_true=False)
    calls = {"residual_calls": 0, "rollouts": 0}

    def counted(x, p, **kw):
        calls["residual_calls"] += 1
        calls["rollouts"] += 1 if x.ndim == 1 else x.shape[1]
        return residual_fn(x, p, **kw)

    log = Tee()
    print(f"sysid-peer: fitting {len(names)} parameters from the nominal ones, {args.threads} threads "
          f"(load average {load_avg()})", file=sys.stderr)
    t0 = time.perf_counter()
    opt_params, result = sysid.optimize(params, counted, optimizer="mujoco", verbose=False, max_iters=args.max_iters, output=log)
    wall_s = time.perf_counter() - t0
    load_end = load_avg()
    objective = result.extras.get("objective", [])
    iterations = max(0, len(objective) - 1)
    status = next((l for l in log.text().splitlines() if l.startswith("Terminated")), "")

    # confidence intervals from the final Jacobian (one more rollout for the residual)
    res_star, _, _ = residual_fn(opt_params.as_vector(), opt_params.copy())
    _, half_width = sysid.calculate_intervals(res_star, result.jac)
    # what one residual evaluation costs, alone on one thread: compiling the spec, one rollout
    t0 = time.perf_counter()
    model_fit = sysid.apply_param_modifiers(opt_params, arm.spec)
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    sysid.sysid_rollout(model_fit, [mujoco.MjData(model_fit)], control_ts, state0)
    rollout_s = time.perf_counter() - t0

    fitted = dict(zip(names, opt_params.as_vector()))
    rows, params_out = [], []
    for k, name in enumerate(names):
        tv, nv, fv = true[name], nominal[name], float(fitted[name])
        rel = abs(fv - tv) / abs(tv) if tv != 0 else None
        params_out.append({"name": name, "true": tv, "nominal": nv, "fitted": fv, "rel_error": rel,
                           "ci95_half_width": float(half_width[k]) if k < len(half_width) else None,
                           "bounds": list(bounds[name])})
        hw = params_out[-1]["ci95_half_width"]
        rows.append([f"`{name}`", f"{tv:g}", f"{nv:g}", f"{fv:.4g}", "–" if hw is None else f"± {hw:.2g}",
                     "–" if rel is None else f"{100 * rel:.2f} %"])

    commit = os.popen(f"git -C {shlex.quote(REPO)} rev-parse --short HEAD 2>/dev/null").read().strip() or "not recorded"
    if os.system(f"git -C {shlex.quote(REPO)} diff --quiet HEAD -- scripts tests/data/identify urdf 2>/dev/null") != 0:
        commit += " + uncommitted changes"
    niceness = os.nice(0)
    command = ("" if niceness == 0 else f"nice -n {niceness} ") + "scripts/sysid-peer" + "".join(f" {shlex.quote(a)}" for a in sys.argv[1:])
    cpu = f"{os.cpu_count()}-core {cpu_model()}, load {load_start} at the start, {load_end} at the end"
    rels = [p["rel_error"] for p in params_out if p["rel_error"] is not None]
    out = {
        "title": "MuJoCo's mujoco.sysid on the arm identification problem (the peer of `contact_sim identify`)",
        "command": command,
        "date": started.strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit,
        "cpu": cpu,
        "columns": ["parameter", "true", "nominal", "MuJoCo fitted", "95 % interval", "error"],
        "rows": rows,
        "notes": (f"{duration_s:g} s of data at 1 kHz, {len(names)} parameters, MuJoCo {mujoco.__version__} (`mujoco[sysid]`), "
                  f"optimizer `mujoco` (Levenberg-Marquardt, finite-difference Jacobian), {args.threads} rollout threads: "
                  f"**{wall_s:.1f} s** wall, {iterations} iterations, {calls['rollouts']} rollouts of {n_steps} steps "
                  f"(alone on one thread: {1e3 * compile_s:.0f} ms to compile the model, {1e3 * rollout_s:.0f} ms per rollout); "
                  f"median error {100 * float(np.median(rels)):.2f} %, worst {100 * max(rels):.2f} %. "
                  "The interval is mujoco.sysid's `calculate_intervals` (95 %, from the final Jacobian). "
                  "The problem in MuJoCo and its differences from ours: `notes_modelling` of this file, written by "
                  "scripts/sysid_peer.py."),
        "problem": os.path.relpath(os.path.abspath(args.problem), REPO),
        "duration_s": duration_s,
        "steps": n_steps,
        "parameters": params_out,
        "wall_s": wall_s,
        "data_generation_s": generate_s,
        "iterations": iterations,
        "iterations_meaning": "Levenberg-Marquardt steps taken (mujoco.minimize's trace, without its final entry)",
        "residual_calls": calls["residual_calls"],
        "rollouts": calls["rollouts"],
        "rollouts_meaning": "simulated trajectories, i.e. residual evaluations as mujoco.minimize counts them "
                            "(one per finite-difference column, per trial step, plus the final Jacobian)",
        "compile_s": compile_s,
        "rollout_s": rollout_s,
        "objective_start": float(objective[0]) if objective else None,
        "objective_end": float(objective[-1]) if objective else None,
        "termination": status,
        "optimizer": "mujoco.sysid.optimize(optimizer='mujoco') = mujoco.minimize.least_squares",
        "residual_weights": "1 / noise std per signal" if args.weights == "noise" else "mujoco.sysid default (per-signal RMS)",
        "threads": args.threads,
        "max_iters": args.max_iters,
        "saturated_effort_samples": saturated_samples,
        "saturated_effort_samples_by_joint": saturated_by_joint,
        "mujoco_version": mujoco.__version__,
        "numpy_version": np.__version__,
        "python_version": sys.version.split()[0],
        "cpu_model": cpu_model(),
        "load_average_start": load_start,
        "load_average_end": load_end,
        "notes_modelling": NOTES,
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w" if args.force else "x") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"\n{'parameter':<28} {'true':>9} {'nominal':>9} {'fitted':>10} {'error':>8}")
    for p in params_out:
        rel = "–" if p["rel_error"] is None else f"{100 * p['rel_error']:.2f}%"
        print(f"{p['name']:<28} {p['true']:>9g} {p['nominal']:>9g} {p['fitted']:>10.4g} {rel:>8}")
    print(f"\nwall {wall_s:.1f} s, {iterations} iterations, {calls['rollouts']} rollouts ({status}); wrote {args.out}")
    return 0


if __name__ == "__main__":
    a = parse_args()
    check_out(a.out, a.force)
    peers_venv.ensure_venv(__file__, [r.format(v=a.mujoco_version) for r in REQUIREMENTS], IMPORT_CHECK, "sysid-peer")
    sys.exit(run(a))

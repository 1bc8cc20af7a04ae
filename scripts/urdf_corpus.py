"""Loads every URDF of example-robot-data with contact_sim and Pinocchio and compares dynamics.

Run through scripts/urdf-corpus (which provides the venv). For each URDF:
  * contact_sim: `contact_sim model URDF --json` (default inertia_check: warn) -> loaded, warned
    (loaded with warnings) or refused (exit code != 0, the message is printed);
  * pinocchio.buildModelFromUrdf (mimic tags ignored, as our M(q) is the unconstrained one);
  * for every URDF both load: at N random (q, v, a), fixed base and floating base (free joint at
    the identity, zero base velocity), compare M(q) and tau = RNEA(q, v, a) joint by joint (matched
    by name; Pinocchio's continuous joints take q as (cos, sin)). Errors are relative to
    max(1, |M|max) and max(1, |tau|max).
Exit status 1 when a URDF that Pinocchio loads is refused by contact_sim or a dynamics error
exceeds the tolerance.
"""
import argparse, glob, json, os, subprocess, sys
import numpy as np
import pinocchio as pin

TOL = 1e-9


def share_dir():
    import site
    for sp in site.getsitepackages():
        d = os.path.join(sp, "cmeel.prefix", "share", "example-robot-data")
        if os.path.isdir(d):
            return d
    sys.exit("example-robot-data is not installed in this environment")


def ours(bin_, urdf, pkg, floating, q=None, v=None, a=None):
    args = [bin_, "model", urdf, "--json", "--package-path", "example-robot-data=" + pkg]
    if floating:
        args.append("--floating")
    for k, x in (("q", q), ("v", v), ("a", a)):
        if x is not None:
            args.append("--%s=%s" % (k, ",".join(repr(float(t)) for t in x)))
    p = subprocess.run(args, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def pin_q(model, names, q_by_name, floating):
    q = pin.neutral(model)
    for jid in range(1, model.njoints):
        j = model.joints[jid]
        n = model.names[jid]
        if floating and jid == 1:
            continue  # neutral: identity at the origin, as ours
        if n not in q_by_name:
            continue
        x = q_by_name[n]
        if j.nq == 2 and j.nv == 1:  # continuous: (cos, sin)
            q[j.idx_q], q[j.idx_q + 1] = np.cos(x), np.sin(x)
        elif j.nq == 1:
            q[j.idx_q] = x
    return q


def compare(bin_, urdf, pkg, model, floating, rng, samples):
    code, out, err = ours(bin_, urdf, pkg, floating)
    info = json.loads(out)
    dof_names = info["dof_names"]
    joint_names = [n for n in dof_names if "/" not in n] if floating else dof_names
    # pin velocity index of each of our DOF
    idx = []
    for n in dof_names:
        if floating and n not in joint_names:
            idx.append(None)
            continue
        jid = model.getJointId(n)
        if jid >= model.njoints or model.joints[jid].nv != 1:
            raise RuntimeError("joint %r: not a 1-DOF joint in Pinocchio" % n)
        idx.append(model.joints[jid].idx_v)
    if floating:
        base = [i for i, n in enumerate(dof_names) if n not in joint_names]
        for k, i in enumerate(base):
            idx[i] = k  # [v_body; w_body] in both
    if sorted(idx) != list(range(model.nv)):
        raise RuntimeError("DOF sets differ: ours %d, pinocchio %d" % (len(idx), model.nv))
    data = model.createData()
    worst_m = worst_t = 0.0
    n1 = len(joint_names)
    for _ in range(samples):
        q = rng.uniform(-1.0, 1.0, n1)
        v = rng.uniform(-1.0, 1.0, n1)
        a = rng.uniform(-1.0, 1.0, n1)
        code, out, err = ours(bin_, urdf, pkg, floating, q, v, a)
        if code != 0:
            raise RuntimeError("contact_sim failed with a state: " + err.strip())
        o = json.loads(out)
        m_ours = np.array(o["mass_matrix"])
        t_ours = np.array(o["inverse_dynamics"])
        qp = pin_q(model, dof_names, dict(zip(joint_names, q)), floating)
        vp = np.zeros(model.nv)
        ap = np.zeros(model.nv)
        for k, n in enumerate(joint_names):
            i = idx[dof_names.index(n)]
            vp[i], ap[i] = v[k], a[k]
        m_pin = pin.crba(model, data, qp)
        m_pin = np.triu(m_pin) + np.triu(m_pin, 1).T
        t_pin = pin.rnea(model, data, qp, vp, ap)
        perm = np.array(idx, dtype=int)
        m_pin_ours = m_pin[np.ix_(perm, perm)]
        t_pin_ours = t_pin[perm]
        em = np.abs(m_ours - m_pin_ours).max() / max(1.0, np.abs(m_pin).max()) if model.nv else 0.0
        et = np.abs(t_ours - t_pin_ours).max() / max(1.0, np.abs(t_pin).max()) if model.nv else 0.0
        worst_m, worst_t = max(worst_m, em), max(worst_t, et)
    return worst_m, worst_t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--samples", type=int, default=3)
    ap.add_argument("--json")
    args = ap.parse_args()
    pkg = share_dir()
    files = sorted(glob.glob(os.path.join(pkg, "robots", "**", "*.urdf"), recursive=True))
    rng = np.random.default_rng(17)
    rows = []
    for f in files:
        rel = os.path.relpath(f, os.path.join(pkg, "robots"))
        row = {"urdf": rel}
        try:
            model = pin.buildModelFromUrdf(f)
            fmodel = pin.buildModelFromUrdf(f, pin.JointModelFreeFlyer())
            row["pin"] = "loaded"
        except Exception as e:  # noqa: BLE001
            model = None
            row["pin"] = "refused: %s" % str(e).strip().splitlines()[0]
        code, out, err = ours(args.bin, f, pkg, False)
        warnings = [l for l in err.splitlines() if l.startswith("warning: ")]
        if code != 0:
            row["ours"] = "refused"
            row["error"] = err.strip()
        else:
            row["ours"] = "warned" if warnings else "loaded"
        row["warnings"] = len(warnings)
        if code == 0 and model is not None:
            try:
                em, et = compare(args.bin, f, pkg, model, False, rng, args.samples)
                fm, ft = compare(args.bin, f, pkg, fmodel, True, rng, args.samples)
                row.update(m_err=em, tau_err=et, m_err_floating=fm, tau_err_floating=ft)
            except Exception as e:  # noqa: BLE001
                row["compare_error"] = str(e)
        rows.append(row)
        status = row["ours"] + ("" if "m_err" not in row else "  M %.1e tau %.1e | floating M %.1e tau %.1e" % (row["m_err"], row["tau_err"], row["m_err_floating"], row["tau_err_floating"]))
        print("%-60s pin %-8s ours %s%s" % (rel, row["pin"][:8], status, ("  (%d warnings)" % len(warnings)) if warnings else ""))
        if code != 0:
            print("    " + err.strip().splitlines()[-1])
        if "compare_error" in row:
            print("    compare: " + row["compare_error"])
    pin_ok = [r for r in rows if r["pin"] == "loaded"]
    cnt = {k: sum(1 for r in rows if r["ours"] == k) for k in ("loaded", "warned", "refused")}
    refused_bar = [r["urdf"] for r in pin_ok if r["ours"] == "refused"]
    errs = [max(r.get(k, 0.0) for k in ("m_err", "tau_err", "m_err_floating", "tau_err_floating")) for r in rows if "m_err" in r]
    bad = [r["urdf"] for r in rows if "compare_error" in r or ("m_err" in r and max(r[k] for k in ("m_err", "tau_err", "m_err_floating", "tau_err_floating")) > TOL)]
    print("\n%d URDFs: contact_sim loaded %d, warned %d, refused %d; Pinocchio loaded %d" % (len(rows), cnt["loaded"], cnt["warned"], cnt["refused"], len(pin_ok)))
    print("dynamics compared on %d URDFs (fixed and floating base, %d states each): max relative error %.2e (tolerance %.0e)" % (len(errs), args.samples, max(errs) if errs else 0.0, TOL))
    if refused_bar:
        print("Pinocchio loads, contact_sim refuses: " + ", ".join(refused_bar))
    if bad:
        print("dynamics differ: " + ", ".join(bad))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 1 if (refused_bar or bad) else 0


if __name__ == "__main__":
    sys.exit(main())

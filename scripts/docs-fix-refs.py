#!/usr/bin/env python3
"""Replace references to material outside the repository (the team's implementation notes,
issue numbers) by links into docs/ or to the paper. Re-runnable and idempotent: every rule is a
literal substring replacement, applied wherever the text occurs, so it survives code moving
between files. Can be deleted once nothing is left to replace.

    python3 scripts/docs-fix-refs.py            # rewrite files in place, list what is left
    python3 scripts/docs-fix-refs.py --check    # change nothing; exit 1 if anything would change or is left
    python3 scripts/docs-fix-refs.py src        # only these roots

Roots: src, config, launch, scripts, tests, docs, README.md, BENCHMARKS.md, build.rs.
What is "left" is what `tests/docs_links.rs` rejects (outside-folder paths, the word "digest")
plus "issue N" mentions; rewrite those by hand and add a rule here.
"""
import os
import re
import sys

ROOTS = ["src", "config", "launch", "scripts", "tests", "docs", "README.md", "BENCHMARKS.md", "build.rs"]
SELF = os.path.normpath("scripts/docs-fix-refs.py")

# (old, new): literal, applied in order to every file under ROOTS.
RULES = [
    # ---- src/contact/bisection.rs ----
    ("contact. Three cases (paper §III-A, digest §2.1):", "contact. Three cases (paper §III-A; `docs/bisection.md`):"),
    ("with the same relaxation (digest §2.11 [N] gives the", "with the same relaxation (our extension, the paper has no joint rows: from the"),
    ("//! unilateral joint-limit case; box bounds are the straightforward generalisation).", "//! 1-D unilateral joint limit, box bounds are the straightforward generalisation)."),
    ("with the normal last (digest §1.5). Internally", "with the normal last. Internally"),
    ("them; we use the digest's reconstruction (§2.7 [R]). During a sweep", "them; we use the following (`docs/bisection.md`). During a sweep"),
    ("# Where this follows the digest against the paper, and other choices", "# Where this deviates from the paper, and other choices"),
    ("//! Digest = `/work/shared/specs/per-contact-bisection.md`.", "//! Each item with its evidence (tests, measurements): `docs/bisection.md`."),
    ("rejects exactly the *visible* points. We follow the digest (§2.2 [R], §8.1): reject iff", "rejects exactly the *visible* points. We reject iff"),
    ("- **Reverting state** (digest §8.2 [R]): on rejection", "- **Reverting state**: on rejection"),
    ("- **Open test** `c_n ≥ 0` (digest §2.1 [R]; the paper says", "- **Open test** `c_n ≥ 0` (the paper says"),
    ("- **Termination** as above (digest §2.7 [R]); both forms", "- **Termination** as above; both forms"),
    ("ContactBench's (digest §3.4 [3rd]); β₃ = 2", "ContactBench's (Simple-Robotics' re-implementation); β₃ = 2"),
    ("instead of `sin_cos` (issue 4 profile: 4 100 → 2 700", "instead of `sin_cos` (callgrind: 4 100 → 2 700"),
    ("loops are capped (digest §8.7 [N]); if no bracket", "loops are capped [N]; if no bracket"),
    ("the regula falsi 4–5 on the issue-4 experiments; the sliding solve", "the regula falsi 4–5 on the paper's four experiments; the sliding solve"),
    ("≈0.5 µs to ≈0.2 µs (issue 4's bar: 0.3 µs; BENCHMARKS.md).", "≈0.5 µs to ≈0.2 µs (target: 0.3 µs; BENCHMARKS.md)."),
    ("visibility. On the issue-4\n", "visibility. On the paper's four\n"),
    ("before the regula falsi; 10⁻¹⁰ before issue 4, which changed", "before the regula falsi; going there from 10⁻¹⁰ changed"),
    ("by more than 5·10⁻⁹ N·s on the issue's experiments).", "by more than 5·10⁻⁹ N·s on the four experiments)."),
    ("- **`D₀ ≈ 0`** (digest §8.6): the initial guess", "- **`D₀ ≈ 0`**: the initial guess"),
    ("blocks** (paper footnote 2; digest §2.9 [N]): a block whose", "blocks** (paper footnote 2) [N]: a block whose"),
    ("are used exactly. The digest's\n", "are used exactly. The often\n"),
    ("- **MDP vs Coulomb** (refines digest §1.3 / §8.10, which say friction is anti-parallel to the", "- **MDP vs Coulomb** (refines the usual statement that friction is anti-parallel to the"),
    ("(worst step) on the issue-4 experiments (`tests/bisection_experiments.rs`).", "(worst step) on the paper's four experiments (`tests/bisection_experiments.rs`)."),
    ("// open (digest §2.1: c_z ≥ 0)", "// open (c_z ≥ 0, see docs/bisection.md)"),
    ("/// The sliding case: Alg. 1 with the digest's corrections (module docs).", "/// The sliding case: Alg. 1 with our corrections (module docs, `docs/bisection.md`)."),
    ("∇h₂(λ)·(λ^{v=0} − λ) ≥ 0 (digest §2.2; the paper prints the", "∇h₂(λ)·(λ^{v=0} − λ) ≥ 0 (docs/bisection.md; the paper prints the"),
    ("λ_p and λ follow t_p and t (digest\n    // §8.2).", "λ_p and λ follow t_p and t\n    // (on rejection both are reverted)."),
    ("// digest §7 test 2: G = 2I,", "// closed form: G = 2I,"),
    ("// digest §7 test 3 (paper order x, y, z)", "// reference values of an independent prototype (paper order x, y, z)"),
    ("// digest §7 test 4: coupled normal–tangential", "// prototype reference: coupled normal–tangential"),
    ("/// Digest §7 test 8: a box", "/// Reference case (`docs/bisection.md`): a box"),
    ("vs digest −7.49e-3", "vs prototype −7.49e-3"),
    # two unit-test names (and where docs/bisection.md names them); not comments
    ("sliding_anisotropic_matches_digest_regression_values", "sliding_anisotropic_matches_prototype_regression_values"),
    ("sliding_box_on_four_corners_matches_digest", "sliding_box_on_four_corners_matches_prototype"),
    ("// the digest's prototype: a small spurious yaw rate", "// the reference prototype: a small spurious yaw rate"),
    # ---- src/contact/vfpi.rs ----
    ('Nodalization and Diagonalization" (implementation digest `specs/vfpi-nodalization.md`).', 'Nodalization and Diagonalization" (method notes: `docs/vfpi.md`).'),
    ('mean force, `λ_paper = λ / h`; digest §1.2 "Units").', "mean force, `λ_paper = λ / h`)."),
    ("# The iteration (paper Alg. 1–3, digest §3.1)", "# The iteration (paper Alg. 1–3)"),
    ("coordinates of a node (digest §2.7, the \\[R\\] corrected expansion", "coordinates of a node (§IV-C, with the corrected expansion"),
    ("Deviations from the paper, with the digest's markers: the Chebyshev under-relaxation `u`", "Deviations from the paper (each with its evidence in `docs/vfpi.md`): the Chebyshev under-relaxation `u`"),
    ("//! (digest \\[R\\] on Alg. 3), `l_s` and `u` defaults (\\[N\\]); the normal offset", "//! (not in the printed Alg. 3), the `l_s` and `u` defaults; the normal offset"),
    ("speculative gap / Baumgarte term (digest §2.9 \\[N\\]); the Frobenius", "speculative gap / Baumgarte term; the Frobenius"),
    ("(the paper does not give one; digest \\[N\\] 1000).", "(the paper does not give one; default 1000)."),
    ("fraction of `‖b‖₂` (digest §2.10 and §8.2: θ alone hides the", "fraction of `‖b‖₂` (`docs/vfpi.md`: θ alone hides the"),
    ("iteration count grows with k_v (digest §8.2).", "iteration count grows with k_v (`docs/vfpi.md`)."),
    ("operator (digest §8.6 \\[N\\]), which always converges", "operator, which always converges"),
    ("Baumgarte term (digest §2.9 \\[N\\]); rigid rows add", "Baumgarte term (the paper leaves it open); rigid rows add"),
    ("// ---- W (Frobenius, digest §2.7 [R]) ----", "// ---- W (Frobenius, §IV-C with the corrected expansion) ----"),
    ("second half of the budget (digest §8.6 [N]:", "second half of the budget (docs/vfpi.md:"),
    ("// Divergence guard (digest §8.8 [N]): the Frobenius W", "// Divergence guard (docs/vfpi.md): the Frobenius W"),
    ("stalled on our FEM scenes (digest §8.10 [N]); a monotone", "stalled on our FEM scenes; a monotone"),
    ("from 206 to 41 (BENCHMARKS.md, issue 7).", 'from 206 to 41 (BENCHMARKS.md, "V-FPI speed-ups").'),
    ("`ν − λ/k̃` (digest §2.10), so a resting contact", "`ν − λ/k̃` (paper Prop. 2; `docs/vfpi.md`), so a resting contact"),
    # ---- src/fem ----
    ("//! Tetrahedral finite elements for deformable bodies (issue 7).", "//! Tetrahedral finite elements for deformable bodies (method notes: `docs/fem.md`)."),
    ("//! in force units; the digest's §1.2 notes that any linearly implicit integrator gives the same", "//! in force units; any linearly implicit integrator gives the same"),
    ("//! linear form, and its §8.3 the velocity reflection the midpoint form causes at sticking and", "//! linear form for the solver, and the midpoint form reflects the velocity at sticking and"),
    ("virtual-node D-contact, digest §2.2, with the link's point Jacobian", "virtual-node D-contact, eqs. 14–15, with the link's point Jacobian"),
    ("steady creep `λ / k̃` (digest §2.10). A welded node", "steady creep `λ / k̃` (`docs/vfpi.md`). A welded node"),
    ("`J_c W J_cᵀ` diagonal, digest §8.1).", "`J_c W J_cᵀ` diagonal, paper Prop. 3; `docs/fem.md`)."),
    ("nodes would slow the iteration (digest §8.2).", "nodes would slow the iteration (`docs/vfpi.md`, virtual-node gain)."),
    ("superlinear operation, digest §4).", "superlinear operation)."),
    ('diagonalization exact (digest §2.1 "D-contact,\n//! nodes i, j", §2.4): both sides', "diagonalization exact (the paper's D-contact\n//! between two nodes, eq. 13 and Prop. 3; `docs/fem.md`): both sides"),
    ("**One constraint per node** (digest §8.1, else `Γ` is not diagonal)", "**One constraint per node** (Prop. 3 needs it, else `Γ` is not diagonal)"),
    # ---- src/step.rs, src/bin, src/rt, build.rs ----
    ("/// digest §8.1 \\[N\\]). Speculative within", "/// `docs/vfpi.md`). Speculative within"),
    ("// digest §8.3, and doubled the iterations;", "// the midpoint form (docs/fem.md), and doubled the iterations;"),
    ("sweep over deformable-sheet sizes (issue 7),", "sweep over deformable-sheet sizes,"),
    ("Threading contract (ARCHITECTURE.md, principle 4): the RT thread", "Threading contract: the RT thread"),
    ("(see ../shared/ros2-on-pypi.md). `scripts/ros-env.sh`", "(see `scripts/setup-ros.sh`). `scripts/ros-env.sh`"),
    # ---- README.md ----
    ("the four experiments of the bisection paper on the quadruped (issue 4):", "the four experiments of the bisection paper on the quadruped ([docs/bisection.md](docs/bisection.md)):"),
    ("`deformables:` are tetrahedral FEM bodies (issue 7):", "`deformables:` are tetrahedral FEM bodies ([docs/fem.md](docs/fem.md)):"),
    ('Lee & Lee, "COND"; `src/contact/vfpi.rs`, digest `../shared/specs/vfpi-nodalization.md`):', 'Lee & Lee, "COND"; `src/contact/vfpi.rs`, [docs/vfpi.md](docs/vfpi.md)):'),
    ("node–node D-contacts of the paper (digest §2.1, both sides real nodes,", "node–node D-contacts of the paper (eq. 13, both sides real nodes,"),
    ("One constraint per\n  node (digest §8.1): ground / rigid contacts", "One constraint per\n  node (the V-FPI's operator stays diagonal, [docs/fem.md](docs/fem.md)): ground / rigid contacts"),
    ("See `src/lib.rs` for the module map\nand `../shared/ARCHITECTURE.md` for the shape we aim for.", "See `src/lib.rs` for the module map\nand [docs/time-stepping.md](docs/time-stepping.md) for the step pipeline."),
    ("any virtual-node chain (digest §8.2; the finger-press scene", "any virtual-node chain ([docs/vfpi.md](docs/vfpi.md); the finger-press scene"),
    # ---- BENCHMARKS.md ----
    ("## Issue 2 — core engine (2026-11-22)", "## Core engine (2026-11-22)"),
    ("The issue's bar, the quadruped with PGS under 20 µs", "The target, the quadruped with PGS under 20 µs"),
    ("## Issue 3 — ROS 2 node, realtime mode (2026-11-22)", "## ROS 2 node, realtime mode (2026-11-22)"),
    ("Against the issue's bar: p99 jitter", "Against the targets: p99 jitter"),
    ("## Issue 4 — the bisection paper's four experiments (2026-11-22)", "## The bisection paper's four experiments (2026-11-22)\n\nMethod notes: [docs/bisection.md](docs/bisection.md)."),
    ("instructions before issue 4's changes (θ stepped", "instructions before the sliding-solve changes (θ stepped"),
    ("### Against the issue's bars", "### Against the targets"),
    ("Since the first issue-4 measurement (trot bisection", "Since the first measurement of these experiments (trot bisection"),
    ("consistent with the instruction counts. Against issue 4's bar", "consistent with the instruction counts. Against the target"),
    ("**Issue 4's single-contact bar (≤ 0.3 µs)", "**The single-contact target (≤ 0.3 µs)"),
    ("## Issue 6 — bag recording (2026-11-23)", "## Bag recording (2026-11-23)\n\nMethod notes: [docs/bags.md](docs/bags.md)."),
    ("## Issue 7 — deformables and the V-FPI (COND) solver (2026-11-23)", "## Deformables and the V-FPI (COND) solver (2026-11-23)\n\nMethod notes: [docs/vfpi.md](docs/vfpi.md), [docs/fem.md](docs/fem.md)."),
    ("modes unconverged (digest §8.2), which is why", "modes unconverged ([docs/vfpi.md](docs/vfpi.md), deviation 3), which is why"),
    ("back to back.) The issue's bar (faster than real time,", "back to back.) The target (faster than real time,"),
    ("**Issue 7's bar (the soft-ball grasp steps", "**The grasp target (the soft-ball grasp steps"),
    ("Issue 4's speed bars on this machine:", "The bisection experiments' speed targets on this machine:"),
    ('(details in Issue 4, "Sliding\nsolve: regula falsi instead of halving")', '(details in "Sliding\nsolve: regula falsi instead of halving" above)'),
    ("**Issue 4's bars on this machine:", "**The bisection experiments' targets on this machine:"),
    # ---- config, scripts, tests ----
    ('# Issue 4, experiment "', '# Bisection paper experiment "'),
    ("strict operator did not converge, digest §8.6; the paper", "strict operator did not converge, see docs/vfpi.md; the paper"),
    ("t = 0.65 s, then > 20 000, digest §8.2); at 500", "t = 0.65 s, then > 20 000, docs/vfpi.md); at 500"),
    ("# the hand, digest §8.2).", "# the hand, docs/vfpi.md)."),
    ("Non-interactive (CI): never reads stdin. See shared/ros2-on-pypi.md for the recipe.", "Non-interactive (CI): never reads stdin."),
    ("`config/examples/bisection_{trot,hang,drop,random}.yaml`, issue 4), simulated with", "`config/examples/bisection_{trot,hang,drop,random}.yaml`; docs/bisection.md), simulated with"),
    ("//! # What the issue asked and what holds", "//! # What was targeted and what holds"),
    ("//! The issue's bar, `|λ_b − λ_p|", "//! The target, `|λ_b − λ_p|"),
    ("below 1e-3 — the issue's bar, where it is meaningful;", "below 1e-3 — the target, where it is meaningful;"),
    ("//!    not the issue's bar);", "//!    not the target);"),
    ("//! Two-way welds of deformable nodes to robot links (issue 7): the link", "//! Two-way welds of deformable nodes to robot links (docs/fem.md): the link"),
    ("// Issue 5 over DDS: the wrist sensor", "// F/T sensor topics over DDS: the wrist sensor"),
    ("replay and sim-to-real comparison (issue 6).", "replay and sim-to-real comparison (docs/bags.md)."),
    ("added for the bisection experiments (issue 4): per-robot", "added for the bisection experiments (docs/bisection.md): per-robot"),
    ("# ROS node test for the force topics (issue 5): our 7-DOF arm", "# ROS node test for the force topics (docs/ft-sensors.md): our 7-DOF arm"),
    ("// the issue-4 scenes: periodic script", "// the bisection experiments' scenes: periodic script"),
]

LEFT = re.compile(r"\.\./shared|shared/specs|shared/[A-Za-z0-9_-]+\.md|(?<![A-Za-z0-9_])digest(?![A-Za-z0-9_])|issue[ -][0-9]|ARCHITECTURE\.md", re.I)


def files(roots):
    for root in roots:
        if os.path.isfile(root):
            yield root
            continue
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs if not x.startswith(".") and x != "target"]
            for n in sorted(names):
                p = os.path.normpath(os.path.join(d, n))
                if p != SELF:
                    yield p


def main():
    check = "--check" in sys.argv[1:]
    roots = [a for a in sys.argv[1:] if not a.startswith("--")] or ROOTS
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    changed, replaced, left = [], 0, []
    for p in files(roots):
        try:
            with open(p, encoding="utf-8") as f:
                text = f.read()
        except (UnicodeDecodeError, OSError):
            continue
        new = text
        for old, rep in RULES:
            n = new.count(old)
            if n:
                replaced += n
                new = new.replace(old, rep)
        if new != text:
            changed.append(p)
            if not check:
                with open(p, "w", encoding="utf-8") as f:
                    f.write(new)
        for i, line in enumerate(new.splitlines(), 1):
            if p != os.path.normpath("tests/docs_links.rs") and LEFT.search(line):
                left.append(f"{p}:{i}: {line.strip()}")
    print(f"{replaced} replacement(s) in {len(changed)} file(s){' (check only)' if check else ''}")
    for p in changed:
        print(f"  {'would change' if check else 'changed'} {p}")
    if left:
        print(f"{len(left)} reference(s) left to rewrite by hand:")
        for line in left:
            print(f"  {line}")
    return 1 if check and (changed or left) else 0


if __name__ == "__main__":
    sys.exit(main())

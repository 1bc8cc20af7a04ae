//! Wrong answers with exit 0, refused at the door or reported: URDF cycles, non-finite or
//! absurd numbers in scenes, URDFs and tet meshes, and runs whose steps fail (`on_failure`).
//! Every fixture is generated here (files under `target/test-scenes`).


use crate::common::*;
use contact_sim::config::{load_scene_str, load_urdf_model, read_tet_mesh};
use std::path::PathBuf;
use std::process::Command;

/// Writes `text` to `target/test-scenes/<name>` and returns the path.
fn write_file(name: &str, text: &str) -> PathBuf {
    PathBuf::from(write_scene(name, text))
}

/// The error of loading a URDF written to `name`, as one line.
fn urdf_error(name: &str, text: &str) -> String {
    let p = write_file(name, text);
    match load_urdf_model(&p, false, &Default::default()) {
        Ok((m, _)) => panic!("{name} loaded ({} bodies, {} DOF), expected an error", m.bodies.len(), m.nv),
        Err(e) => e.to_string(),
    }
}

fn assert_mentions(msg: &str, needles: &[&str]) {
    for n in needles {
        assert!(msg.contains(n), "message lacks '{n}': {msg}");
    }
}

/// A table of bad values: `(placeholder, value, what the message must mention)`.
type Cases<'a> = &'a [(&'a str, &'a str, &'a [&'a str])];

/// For each case, `error_of(index, placeholder, value)` is the error of loading the fixture
/// with that value, `(file name, message)`: the message must start with the file's path and
/// mention every needle.
fn assert_refused(cases: Cases, error_of: impl Fn(usize, &str, &str) -> (String, String)) {
    for (i, (key, value, needles)) in cases.iter().enumerate() {
        let (file, e) = error_of(i, key, value);
        assert!(e.starts_with(&format!("{file}: ")), "{key}={value}: {e}");
        assert_mentions(&e, needles);
    }
}

fn link(name: &str) -> String {
    format!(
        r#"<link name="{name}"><inertial><mass value="1"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>
           <collision><geometry><box size="0.1 0.1 0.1"/></geometry></collision></link>"#
    )
}

fn joint(name: &str, parent: &str, child: &str) -> String {
    format!(r#"<joint name="{name}" type="revolute"><parent link="{parent}"/><child link="{child}"/><axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="10" velocity="1"/></joint>"#)
}

fn robot(parts: &[String]) -> String {
    format!("<robot name=\"r\">{}</robot>", parts.join("\n"))
}

// ---------------------------------------------------------------------------------------------
// URDF topology
// ---------------------------------------------------------------------------------------------

/// Links a, b, c with joints a→b and b→a used to load as "1 links, DOF 0" (c the root, a and b
/// dropped): the cycle is refused, naming its joints and links.
#[test]
fn urdf_cycle_beside_a_root_is_refused_naming_the_joints() {
    let text = robot(&[link("a"), link("b"), link("c"), joint("j_ab", "a", "b"), joint("j_ba", "b", "a")]);
    let e = urdf_error("cycle_abc.urdf", &text);
    assert_mentions(&e, &["cycle_abc.urdf", "'j_ab'", "'j_ba'", "cycle", "a → b → a"]);
    // a longer cycle with a tree hanging off it
    let text = robot(&[link("r"), link("a"), link("b"), link("c"), link("d"), joint("j1", "a", "b"), joint("j2", "b", "c"), joint("j3", "c", "a"), joint("j4", "c", "d")]);
    let e = urdf_error("cycle_3.urdf", &text);
    assert_mentions(&e, &["'j1'", "'j2'", "'j3'", "cycle"]);
    assert!(!e.contains("'j4'"), "only the cycle's joints: {e}");
}

/// A joint whose parent is its child.
#[test]
fn urdf_self_loop_is_refused() {
    let text = robot(&[link("a"), link("b"), joint("j_ab", "a", "b"), joint("j_bb", "b", "b")]);
    let e = urdf_error("self_loop.urdf", &text);
    assert_mentions(&e, &["self_loop.urdf", "joint 'j_bb'", "same link 'b'"]);
}

/// A link reached by two joints.
#[test]
fn urdf_link_with_two_parent_joints_is_refused_naming_both() {
    let text = robot(&[link("a"), link("b"), link("c"), joint("j_ab", "a", "b"), joint("j_cb", "c", "b"), joint("j_ac", "a", "c")]);
    let e = urdf_error("two_parents.urdf", &text);
    assert_mentions(&e, &["two_parents.urdf", "link 'b'", "'j_ab'", "'j_cb'"]);
}

/// The quadruped whose foot joint's child is `base` used to load with 0.05 kg (the foot alone).
#[test]
fn quadruped_whose_foot_joint_leads_back_to_base_is_refused() {
    let text = std::fs::read_to_string(path("urdf/quadruped.urdf")).unwrap();
    assert!(text.contains(r#"<child link="LF_foot"/>"#));
    let text = text.replace(r#"<child link="LF_foot"/>"#, r#"<child link="base"/>"#);
    let e = urdf_error("quadruped_foot_cycle.urdf", &text);
    assert_mentions(&e, &["quadruped_foot_cycle.urdf", "'LF_HAA'", "'LF_HFE'", "'LF_KFE'", "'LF_foot_fixed'", "cycle"]);
}

// ---------------------------------------------------------------------------------------------
// numbers in URDFs
// ---------------------------------------------------------------------------------------------

/// A one-joint URDF; `{..}` placeholders are replaced by the test.
const ARM: &str = r#"<robot name="arm">
  <link name="base"><inertial><mass value="1"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  <link name="upper"><inertial><origin xyz="{IXYZ}" rpy="0 0 0"/><mass value="{MASS}"/><inertia ixx="{IXX}" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>
    <collision><origin xyz="0 0 {CZ}"/><geometry><box size="0.1 0.1 {BOX}"/></geometry></collision></link>
  <link name="lower"><inertial><mass value="1"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  <joint name="knee" type="revolute">
    <origin xyz="0 0 {OZ}" rpy="{RPY}"/><parent link="base"/><child link="upper"/><axis xyz="{AXIS}"/>
    <limit lower="{LO}" upper="{HI}" effort="{EFFORT}" velocity="{VEL}"/>
    <dynamics damping="{DAMP}" friction="0"/>
  </joint>
  <joint name="follower" type="revolute">
    <parent link="upper"/><child link="lower"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="10" velocity="1"/>
    <mimic joint="knee" multiplier="{MULT}" offset="{OFF}"/>
  </joint>
</robot>"#;

const ARM_DEFAULTS: [(&str, &str); 15] = [
    ("{IXYZ}", "0 0 0.1"),
    ("{MASS}", "1"),
    ("{IXX}", "0.01"),
    ("{CZ}", "0"),
    ("{BOX}", "0.1"),
    ("{OZ}", "0.1"),
    ("{RPY}", "0 0 0"),
    ("{AXIS}", "0 1 0"),
    ("{LO}", "-1"),
    ("{HI}", "1"),
    ("{EFFORT}", "10"),
    ("{VEL}", "2"),
    ("{DAMP}", "0.1"),
    ("{MULT}", "1"),
    ("{OFF}", "0"),
];

/// `template` with the placeholder `key` set to `value`, the others at their `defaults`.
fn fill(template: &str, defaults: &[(&str, &str)], key: &str, value: &str) -> String {
    let mut t = template.to_string();
    for &(k, v) in defaults {
        t = t.replace(k, if k == key { value } else { v });
    }
    t
}

/// [`ARM`] with one placeholder set to `value`, the others at their defaults.
fn arm_with(key: &str, value: &str) -> String {
    fill(ARM, &ARM_DEFAULTS, key, value)
}

#[test]
fn urdf_template_loads_with_its_defaults() {
    let p = write_file("arm_ok.urdf", &arm_with("", ""));
    let (m, _) = load_urdf_model(&p, false, &Default::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(m.nv, 2);
    let knee = &m.bodies.iter().find(|b| b.joint.name == "knee").unwrap().joint;
    assert_eq!(knee.position_limits, Some((-1.0, 1.0)));
    assert_eq!((knee.effort_limit, knee.velocity_limit), (10.0, 2.0));
}

/// NaN and infinite values, overflowing axes, absurd masses: each refused, naming the file, the
/// element and the field.
#[test]
fn urdf_non_finite_or_absurd_numbers_are_refused_naming_the_element() {
    let cases: Cases = &[
        ("{MASS}", "NaN", &["link 'upper' <inertial>", "<mass value> is NaN"]),
        ("{MASS}", "1e300", &["link 'upper' <inertial>", "<mass value> = 1e300 kg", "outside the accepted range"]),
        ("{IXX}", "inf", &["link 'upper' <inertial>", "<inertia ixx> is infinite"]),
        ("{IXYZ}", "0 NaN 0", &["link 'upper' <inertial>", "<origin xyz>[1] is NaN"]),
        ("{CZ}", "NaN", &["link 'upper' <collision> 0", "<origin xyz>[2] is NaN"]),
        ("{BOX}", "1e300", &["link 'upper' <collision> 0", "<box size>[2]"]),
        ("{OZ}", "inf", &["joint 'knee'", "<origin xyz>[2] is infinite"]),
        ("{RPY}", "0 NaN 0", &["joint 'knee'", "<origin rpy>[1] is NaN"]),
        ("{AXIS}", "1e308 1e308 0", &["joint 'knee'", "<axis xyz>"]),
        ("{AXIS}", "0 0 0", &["joint 'knee'", "<axis xyz> must be a non-zero vector"]),
        ("{AXIS}", "NaN 1 0", &["joint 'knee'", "<axis xyz>[0] is NaN"]),
        ("{LO}", "NaN", &["joint 'knee'", "<limit lower> is NaN"]),
        ("{HI}", "NaN", &["joint 'knee'", "<limit upper> is NaN"]),
        ("{EFFORT}", "NaN", &["joint 'knee'", "<limit effort> is NaN"]),
        ("{EFFORT}", "-inf", &["joint 'knee'", "<limit effort> is negative infinite"]),
        ("{VEL}", "-inf", &["joint 'knee'", "<limit velocity> is negative infinite"]),
        ("{VEL}", "-2", &["joint 'knee'", "<limit velocity> = -2"]),
        ("{DAMP}", "NaN", &["joint 'knee'", "<dynamics damping> is NaN"]),
        ("{MULT}", "NaN", &["joint 'follower'", "<mimic multiplier> is NaN"]),
        ("{MULT}", "1e300", &["joint 'follower'", "<mimic multiplier> = 1e300"]),
        ("{OFF}", "inf", &["joint 'follower'", "<mimic offset> is infinite"]),
    ];
    assert_refused(cases, |i, key, value| {
        let name = format!("arm_bad_{i}.urdf");
        (path("target/test-scenes").join(&name).display().to_string(), urdf_error(&name, &arm_with(key, value)))
    });
}

/// `effort="0"` (and `+inf`) keep meaning "unlimited"; a zero velocity limit too.
#[test]
fn urdf_zero_or_infinite_limits_mean_unlimited() {
    for (key, value) in [("{EFFORT}", "0"), ("{EFFORT}", "inf"), ("{VEL}", "0")] {
        let p = write_file("arm_unlimited.urdf", &arm_with(key, value));
        let (m, _) = load_urdf_model(&p, false, &Default::default()).unwrap_or_else(|e| panic!("{key}={value}: {e}"));
        let knee = &m.bodies.iter().find(|b| b.joint.name == "knee").unwrap().joint;
        let limit = if key == "{EFFORT}" { knee.effort_limit } else { knee.velocity_limit };
        assert_eq!(limit, f64::INFINITY, "{key}={value}");
    }
}

// ---------------------------------------------------------------------------------------------
// numbers in scenes
// ---------------------------------------------------------------------------------------------

/// A scene with a robot, an object, a script and a deformable-free setup; `{..}` placeholders.
const SCENE: &str = r#"
timestep_s: {DT}
gravity: [0, 0, {G}]
ground: {incline_deg: {INCLINE}, incline_axis: {IAXIS}}
contact: {margin_m: {MARGIN}}
robots:
  - urdf: ../../urdf/pendulum.urdf
    base: {position: [0, 0, {BZ}], rpy: [0, 0, 0]}
    initial_positions: {pendulum_joint: {Q0}}
    control:
      default: {mode: position, kp: {KP}, kd: 1}
objects:
  - name: box
    shape: {type: box, size: [0.1, 0.1, {SIZE}]}
    mass_kg: {MASS}
    position: [0.5, 0, {Z}]
    rpy: [{ROLL}, 0, 0]
    linear_velocity: [0, 0, {VZ}]
    angular_velocity: [{WX}, 0, 0]
script:
  - {time_s: 0.0, positions: {pendulum_joint: 0.0}}
  - {time_s: {T1}, positions: {pendulum_joint: {TARGET}}, efforts: {pendulum_joint: {EFF}}}
"#;

const SCENE_DEFAULTS: [(&str, &str); 21] = [
    ("{DT}", "0.001"),
    ("{G}", "-9.81"),
    ("{INCLINE}", "0"),
    ("{IAXIS}", "[0, 1, 0]"),
    ("{MARGIN}", "0.002"),
    ("{BZ}", "1.5"),
    ("{Q0}", "0.1"),
    ("{KP}", "10"),
    ("{SIZE}", "0.1"),
    ("{MASS}", "1"),
    ("{Z}", "0.05"),
    ("{ROLL}", "0"),
    ("{VZ}", "0"),
    ("{WX}", "0"),
    ("{T1}", "1.0"),
    ("{TARGET}", "0.5"),
    ("{EFF}", "0"),
    // placeholders of the deformable variant
    ("{DPOS}", "[0, 0, 0.2]"),
    ("{DRPY}", "[0, 0, 0]"),
    ("{DVEL}", "[0, 0, 0]"),
    ("{DSCALE}", "1"),
];

fn scene_with(template: &str, key: &str, value: &str) -> String {
    fill(template, &SCENE_DEFAULTS, key, value)
}

fn scene_error(name: &str, yaml: &str) -> String {
    let p = path("config/examples").join(name);
    match load_scene_str(yaml, &p) {
        Ok(_) => panic!("{name} loaded, expected an error:\n{yaml}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn scene_template_loads_with_its_defaults() {
    scene(&scene_with(SCENE, "", ""));
}

/// NaN in the ground, contact distances, poses, velocities, gains, script targets and times,
/// absurd masses and sizes: refused, naming the file, the element and the field.
#[test]
fn scene_non_finite_or_absurd_numbers_are_refused_naming_the_element() {
    let cases: Cases = &[
        ("{G}", ".nan", &["gravity", "gravity[2] is NaN"]),
        ("{DT}", "1e300", &["timestep_s", "timestep_s = 1e300 s"]),
        ("{DT}", ".nan", &["timestep_s", "timestep_s is NaN"]),
        ("{INCLINE}", ".nan", &["ground", "incline_deg is NaN"]),
        ("{INCLINE}", "400", &["ground", "incline_deg = 400 deg"]),
        ("{IAXIS}", "[.nan, 1, 0]", &["ground", "incline_axis[0] is NaN"]),
        ("{IAXIS}", "[1e308, 1e308, 0]", &["ground", "incline_axis"]),
        ("{MARGIN}", ".nan", &["contact", "margin_m is NaN"]),
        ("{MARGIN}", ".inf", &["contact", "margin_m is infinite"]),
        ("{BZ}", ".nan", &["robots[0].base", "position[2] is NaN"]),
        ("{Q0}", ".inf", &["robots[0].initial_positions", "pendulum_joint is infinite"]),
        ("{KP}", "-10", &["robots[0].control.default", "kp = -10"]),
        ("{KP}", ".nan", &["robots[0].control.default", "kp is NaN"]),
        ("{SIZE}", "1e300", &["objects[0] ('box').shape", "size[2] = 1e300 m"]),
        ("{MASS}", "1e300", &["objects[0] ('box')", "mass_kg = 1e300 kg", "outside the accepted range [0, 1e9] kg"]),
        ("{MASS}", ".nan", &["objects[0] ('box')", "mass_kg is NaN"]),
        ("{Z}", ".nan", &["objects[0] ('box')", "position[2] is NaN"]),
        ("{ROLL}", ".inf", &["objects[0] ('box')", "rpy[0] is infinite"]),
        ("{VZ}", ".nan", &["objects[0] ('box')", "linear_velocity[2] is NaN"]),
        ("{WX}", "1e300", &["objects[0] ('box')", "angular_velocity[0] = 1e300 rad/s"]),
        ("{T1}", ".nan", &["script[1]", "time_s is NaN"]),
        ("{TARGET}", ".nan", &["script[1]", "positions.pendulum_joint is NaN"]),
        ("{EFF}", "-.inf", &["script[1]", "efforts.pendulum_joint is negative infinite"]),
    ];
    assert_refused(cases, |i, key, value| {
        let name = format!("_bad_scene_{i}.yaml");
        (path("config/examples").join(&name).display().to_string(), scene_error(&name, &scene_with(SCENE, key, value)))
    });
}

/// A heavy but physical object (10⁶ kg, inside the range) still loads; the range is documented.
#[test]
fn heavy_but_physical_masses_load_and_the_ranges_are_documented() {
    scene(&scene_with(SCENE, "{MASS}", "1e6"));
    let doc = std::fs::read_to_string(path("docs/configuration.md")).unwrap();
    assert_mentions(&doc, &["Accepted ranges", "[0, 1e9] kg", "on_failure"]);
}

const DEFORMABLE_SCENE: &str = r#"
solver: {kind: vfpi}
deformables:
  - name: ball
    mesh: ../../assets/meshes/soft_ball.msh
    position: {DPOS}
    rpy: {DRPY}
    linear_velocity: {DVEL}
    scale: {DSCALE}
    material: {density_kg_m3: 1100, youngs_modulus_pa: 1.0e6, poisson_ratio: 0.35}
"#;

/// A deformable with a NaN position, rpy or velocity used to run with 0 contacts.
#[test]
fn deformable_non_finite_pose_or_velocity_is_refused() {
    scene(&scene_with(DEFORMABLE_SCENE, "", ""));
    let cases: Cases = &[
        ("{DPOS}", "[0, .nan, 0.2]", &["deformables[0] ('ball')", "position[1] is NaN"]),
        ("{DRPY}", "[0, 0, .inf]", &["deformables[0] ('ball')", "rpy[2] is infinite"]),
        ("{DVEL}", "[.nan, 0, 0]", &["deformables[0] ('ball')", "linear_velocity[0] is NaN"]),
        ("{DSCALE}", "1e300", &["deformables[0] ('ball')", "scale = 1e300 m"]),
    ];
    assert_refused(cases, |_, key, value| {
        let name = "_bad_deformable.yaml";
        (path("config/examples").join(name).display().to_string(), scene_error(name, &scene_with(DEFORMABLE_SCENE, key, value)))
    });
}

/// A tet mesh node with a NaN or huge coordinate names the file, the line and the node.
#[test]
fn tet_mesh_non_finite_node_is_refused() {
    let ele = "1 4 0\n1 1 2 3 4\n";
    for (bad, needle) in [("nan", "node 2 coordinate[1] is NaN"), ("1e300", "node 2 coordinate[1] = 1e300 m")] {
        let node = format!("4 3 0 0\n1 0 0 0\n2 1 {bad} 0\n3 0 1 0\n4 0 0 1\n");
        let np = write_file("bad_nodes.node", &node);
        write_file("bad_nodes.ele", ele);
        let e = read_tet_mesh(&np).map(|_| ()).unwrap_err().to_string();
        assert_mentions(&e, &["bad_nodes.node", "line 3", needle]);
    }
}

// ---------------------------------------------------------------------------------------------
// runs whose steps fail
// ---------------------------------------------------------------------------------------------

/// A passive, undamped joint that moves only a massless link: its row of the mass matrix is zero
/// and every step fails (the builder keeps it with a warning).
/// `tag` keeps the files of tests running in parallel apart.
fn failing_scene(tag: &str, extra: &str) -> String {
    let urdf = robot(&[
        link("a"),
        r#"<link name="ghost"/>"#.to_string(),
        r#"<joint name="spin" type="continuous"><parent link="a"/><child link="ghost"/><axis xyz="0 0 1"/></joint>"#.to_string(),
    ]);
    write_file(&format!("massless_spin_{tag}.urdf"), &urdf);
    write_scene(&format!("failing_{tag}.yaml"), &format!("duration_s: 0.01\nground: {{enabled: false}}\nrobots:\n  - urdf: massless_spin_{tag}.urdf\n{extra}"))
}

fn run_cli(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_contact_sim")).args(args).current_dir(repo()).output().expect("run contact_sim");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Default `stop`: exit status 3, one line naming the scene, the first failed step, its time
/// and cause; the summary shows the last good state (no NaN).
#[test]
fn run_with_failing_steps_stops_with_a_non_zero_exit_naming_the_step() {
    let scene = failing_scene("stop", "");
    let (code, stdout, stderr) = run_cli(&["run", &scene, "--quiet"]);
    assert_eq!(code, 3, "stdout:\n{stdout}\nstderr:\n{stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert_mentions(errors[0], &["failing_stop.yaml", "step 1 (t = 0.000000 s) failed", "mass matrix", "on_failure: stop"]);
    assert!(!stdout.to_lowercase().contains("nan"), "{stdout}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// `hold` and `reset` (scene key or `--on-failure`) run to the end, exit 0, and warn naming the
/// first failed step and the count.
#[test]
fn on_failure_hold_and_reset_keep_running_and_warn() {
    let scene = failing_scene("cli", "");
    for policy in ["hold", "reset"] {
        let (code, stdout, stderr) = run_cli(&["run", &scene, "--quiet", "--on-failure", policy]);
        assert_eq!(code, 0, "{policy}: {stderr}");
        assert_mentions(&stderr, &["10 steps failed", "step 1 (t = 0.000000 s)", &format!("on_failure: {policy}")]);
        assert!(!stdout.to_lowercase().contains("nan"), "{stdout}");
    }
    let scene = failing_scene("key", "on_failure: hold\n");
    let (code, _, stderr) = run_cli(&["run", &scene, "--quiet"]);
    assert_eq!(code, 0, "{stderr}");
    assert_mentions(&stderr, &["on_failure: hold"]);
    // the command line overrides the scene
    let (code, _, stderr) = run_cli(&["run", &scene, "--quiet", "--on-failure", "stop"]);
    assert_eq!(code, 3, "{stderr}");
    // an unknown policy is a usage error naming the choices
    let (code, _, stderr) = run_cli(&["run", &scene, "--on-failure", "explode"]);
    assert_eq!(code, 2, "{stderr}");
    assert_mentions(&stderr, &["explode", "stop, reset, hold"]);
}

/// A scene whose steps succeed is unaffected: exit 0, no warning.
#[test]
fn healthy_run_exits_zero_without_failure_warning() {
    let (code, _, stderr) = run_cli(&["run", "config/examples/box_rest.yaml", "--quiet", "--duration", "0.05"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains("failed"), "{stderr}");
}

// ---------------------------------------------------------------------------------------------
// deep initial overlap
// ---------------------------------------------------------------------------------------------

/// A box starting 1 m inside the ground used to leave at 200 m/s (Baumgarte: erp · depth / dt):
/// the depenetration speed is capped (`contact.max_depenetration_speed_m_s`, 1 m/s by default),
/// the box rises out steadily, and loading warns naming the bodies, the depth and the cap.
#[test]
fn deep_initial_overlap_is_pushed_out_at_a_capped_speed_and_warned() {
    let yaml = "objects:\n  - {name: buried, shape: {type: box, size: [0.4, 0.4, 2.0]}, mass_kg: 1, position: [0, 0, 0]}\n";
    let s = scene(yaml);
    let w: Vec<_> = s.warnings.iter().filter(|w| w.class == contact_sim::config::WarningClass::Overlap).collect();
    assert_eq!(w.len(), 1, "{:?}", s.warnings);
    assert_mentions(&format!("{}: {}", w[0].element, w[0].message), &["'ground'", "'buried'", "1000.0 mm", "max_depenetration_speed_m_s = 1 m/s"]);
    let mut sim = contact_sim::sim::Simulation::from_scene(&s, None);
    let mut vmax: f64 = 0.0;
    for _ in 0..500 {
        sim.step();
        vmax = vmax.max(object_velocity(&sim, "buried").z);
    }
    assert!(vmax < 1.1, "launched at {vmax} m/s");
    let z = object_position(&sim, "buried").z;
    assert!(z > 0.3, "rises steadily: z = {z} m after 0.5 s");
    // the cap is an option; a larger one pushes faster
    let fast = scene(&format!("contact: {{max_depenetration_speed_m_s: 5}}\n{yaml}"));
    let mut sim = contact_sim::sim::Simulation::from_scene(&fast, None);
    let mut vmax: f64 = 0.0;
    for _ in 0..100 {
        sim.step();
        vmax = vmax.max(object_velocity(&sim, "buried").z);
    }
    assert!(vmax > 3.0 && vmax < 5.5, "{vmax}");
    let e = scene_error("_bad_cap.yaml", &format!("contact: {{max_depenetration_speed_m_s: .nan}}\n{yaml}"));
    assert_mentions(&e, &["_bad_cap.yaml", "contact", "max_depenetration_speed_m_s is NaN"]);
}

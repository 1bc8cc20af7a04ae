//! [`ModelBuilder`]: assembles robots (parsed URDF), objects and the ground into a [`Model`],
//! validating everything on the way. No file I/O happens here: meshes arrive already loaded
//! (see [`crate::config`]).

use super::*;
use crate::error::InputError;
use crate::urdf::{apply_inertia_check, InertiaCheck, LoadWarning, WarningClass};
use crate::math::pose_from_xyz_rpy;
use nalgebra::UnitQuaternion;
use parry3d_f64::shape::SharedShape;
use std::collections::{HashMap, HashSet};

/// How a robot's root link is attached.
#[derive(Clone, Debug)]
pub enum BaseMode {
    /// Welded to the world at this pose.
    Fixed(Pose),
    /// Free-floating, starting at this pose.
    Floating(Pose),
}

/// A robot to add: a parsed URDF plus the scene's choices about it.
#[derive(Clone, Debug)]
pub struct RobotSpec {
    /// The parsed URDF.
    pub urdf: urdf_rs::Robot,
    /// The file it came from (for messages).
    pub source: String,
    /// Name override (defaults to the URDF robot name).
    pub name: Option<String>,
    /// Base attachment.
    pub base: BaseMode,
    /// Initial joint positions by joint name (rad or m).
    pub initial_positions: HashMap<String, f64>,
    /// Convex-hull vertices for mesh collisions, keyed by `(link name, collision index)`.
    pub mesh_hulls: HashMap<(String, usize), Vec<Vec3>>,
    /// Material name for all of this robot's geometries.
    pub material: String,
    /// Per-link material overrides.
    pub link_materials: HashMap<String, String>,
    /// Collide links of this robot with each other (parent-child pairs always skipped).
    pub self_collision: bool,
    /// Only these links' collision geometry is used; `None`: every link's.
    pub collision_links: Option<Vec<String>>,
    /// Initial linear velocity of the root link's origin (m/s, world); floating bases only.
    pub base_linear_velocity: Vec3,
    /// Initial angular velocity of the root link (rad/s, world); floating bases only.
    pub base_angular_velocity: Vec3,
    /// Command mode for joints not listed in `joint_control`.
    pub default_control: ControlMode,
    /// Per-joint command modes.
    pub joint_control: HashMap<String, ControlMode>,
    /// What to do with link inertias that violate the triangle inequality.
    pub inertia_check: InertiaCheck,
    /// Armature by joint name (kg·m² or kg, see [`crate::model::Joint::armature`]).
    pub joint_armature: HashMap<String, f64>,
    /// Warnings from reading the URDF; [`ModelBuilder::add_robot`] moves them, and its own, to
    /// [`ModelBuilder::warnings`].
    pub warnings: Vec<LoadWarning>,
}

/// A rigid object to add.
#[derive(Clone, Debug)]
pub struct ObjectSpec {
    /// Unique name.
    pub name: String,
    /// Shape (its frame is the body frame; the centre of mass is at the origin).
    pub shape: GeomShape,
    /// Mass (kg).
    pub mass: f64,
    /// Initial pose in the world.
    pub pose: Pose,
    /// Initial linear velocity of the centre of mass (m/s, world).
    pub linear_velocity: Vec3,
    /// Initial angular velocity (rad/s, world).
    pub angular_velocity: Vec3,
    /// Material name.
    pub material: String,
    /// Static obstacle (welded to the world).
    pub fixed: bool,
}

/// Builds a [`Model`]. Add robots, objects, ground and materials, then call [`ModelBuilder::finalize`].
#[derive(Debug)]
pub struct ModelBuilder {
    file: String,
    bodies: Vec<Body>,
    trees: Vec<Tree>,
    robots: Vec<RobotInfo>,
    objects: Vec<ObjectInfo>,
    geoms: Vec<Geom>,
    materials: Vec<Material>,
    pair_friction: HashMap<(usize, usize), f64>,
    friction_combine: FrictionCombine,
    mimics: Vec<MimicConstraint>,
    nq: usize,
    nv: usize,
    dof_names: Vec<String>,
    dof_body: Vec<BodyId>,
    default_control: Vec<ControlMode>,
    q_init: Vec<f64>,
    v_init: Vec<f64>,
    self_collision_trees: HashSet<usize>,
    ground_geom: Option<usize>,
    /// Gravity (m/s²).
    pub gravity: Vec3,
    /// Time step (s).
    pub timestep_s: f64,
    /// Contact options.
    pub contact: ContactOptions,
    /// Midpoint evaluation of the velocity-dependent bias.
    pub midpoint_bias: bool,
    /// Problems that did not stop the build (see [`LoadWarning`]); take them before
    /// [`ModelBuilder::finalize`].
    pub warnings: Vec<LoadWarning>,
}

fn shape_bounding_radius(shape: &GeomShape) -> f64 {
    match shape {
        GeomShape::Sphere { radius } => *radius,
        GeomShape::Box { half_extents } => half_extents.norm(),
        GeomShape::Cylinder { radius, half_length } => (radius * radius + half_length * half_length).sqrt(),
        GeomShape::Capsule { radius, half_length } => radius + half_length,
        GeomShape::Convex { vertices } => vertices.iter().map(|v| v.norm()).fold(0.0, f64::max),
        GeomShape::Plane { .. } => f64::INFINITY,
    }
}

/// The joints of a cycle in a link graph, if there is one: `parent_joint[link]` is the joint
/// whose child the link is, `parent_of(joint)` that joint's parent link. Returned in the order
/// parent → child, starting at a joint of the cycle.
fn joint_cycle<'a>(parent_joint: &[Option<usize>], parent_of: impl Fn(usize) -> &'a str, link_index: &HashMap<&str, usize>) -> Option<Vec<usize>> {
    // 0: unvisited, 1: on the current walk, 2: done (leads to a root)
    let mut state = vec![0u8; parent_joint.len()];
    for start in 0..parent_joint.len() {
        let mut walk = vec![];
        let mut link = start;
        while state[link] == 0 {
            state[link] = 1;
            walk.push(link);
            match parent_joint[link] {
                Some(ji) => link = link_index[parent_of(ji)],
                None => break,
            }
        }
        if state[link] == 1 && parent_joint[link].is_some() && walk.contains(&link) {
            // the walk went child → parent; the cycle is the tail from `link`
            let from = walk.iter().position(|&l| l == link).unwrap();
            let mut joints: Vec<usize> = walk[from..].iter().map(|&l| parent_joint[l].unwrap()).collect();
            joints.reverse();
            return Some(joints);
        }
        for l in walk {
            state[l] = 2;
        }
    }
    None
}

/// Builds parry's shape for a geometry; `None` for the plane (handled analytically).
fn parry_shape(shape: &GeomShape) -> Option<SharedShape> {
    Some(match shape {
        GeomShape::Sphere { radius } => SharedShape::ball(*radius),
        GeomShape::Box { half_extents } => SharedShape::cuboid(half_extents.x, half_extents.y, half_extents.z),
        GeomShape::Cylinder { radius, half_length } => SharedShape::cylinder(*half_length, *radius),
        GeomShape::Capsule { radius, half_length } => SharedShape::capsule_y(*half_length, *radius),
        GeomShape::Convex { vertices } => {
            let pts: Vec<_> = vertices.iter().map(crate::math::to_parry_vec).collect();
            SharedShape::convex_hull(&pts)?
        }
        GeomShape::Plane { normal, .. } => SharedShape::halfspace(crate::math::to_parry_vec(normal)),
    })
}

/// Convex hull vertices of a point cloud (m); `None` when degenerate (flat or < 4 points).
pub fn convex_hull_vertices(points: &[Vec3]) -> Option<Vec<Vec3>> {
    let pts: Vec<_> = points.iter().map(crate::math::to_parry_vec).collect();
    let hull = parry3d_f64::shape::ConvexPolyhedron::from_convex_hull(&pts)?;
    Some(hull.points().iter().map(|p| crate::math::from_parry_vec(*p)).collect())
}

/// `true` when a convex hull (its vertices, m) encloses no volume: a flat or line-like point set,
/// whose volume is below 10⁻⁹ of the cube of its largest extent.
pub fn hull_is_flat(vertices: &[Vec3]) -> bool {
    if vertices.len() < 4 {
        return true;
    }
    let (mut lo, mut hi) = (vertices[0], vertices[0]);
    for v in vertices {
        lo = lo.inf(v);
        hi = hi.sup(v);
    }
    let extent = (hi - lo).max();
    let pts: Vec<_> = vertices.iter().map(crate::math::to_parry_vec).collect();
    let volume = parry3d_f64::shape::ConvexPolyhedron::from_convex_hull(&pts).map_or(0.0, |h| parry3d_f64::shape::Shape::mass_properties(&h, 1.0).mass());
    !(volume > 1e-9 * extent * extent * extent)
}

/// Mass properties of a solid shape of uniform density: rotational inertia about the centre
/// (kg·m², geometry axes), for a given mass (kg). The centre of mass is the geometry origin
/// (for convex hulls: the returned offset).
pub fn solid_inertia(shape: &GeomShape, mass: f64) -> (Mat3, Vec3) {
    match shape {
        GeomShape::Sphere { radius } => (Mat3::identity() * (0.4 * mass * radius * radius), Vec3::zeros()),
        GeomShape::Box { half_extents: h } => {
            let (x2, y2, z2) = (4.0 * h.x * h.x, 4.0 * h.y * h.y, 4.0 * h.z * h.z);
            (Mat3::from_diagonal(&Vec3::new(y2 + z2, x2 + z2, x2 + y2)) * (mass / 12.0), Vec3::zeros())
        }
        GeomShape::Cylinder { radius, half_length } => {
            let l2 = 4.0 * half_length * half_length;
            let r2 = radius * radius;
            let ixx = mass * (3.0 * r2 + l2) / 12.0;
            (Mat3::from_diagonal(&Vec3::new(ixx, ixx, 0.5 * mass * r2)), Vec3::zeros())
        }
        GeomShape::Capsule { radius, half_length } => {
            // Parry computes exact capsule mass properties; scale them to the requested mass.
            let mp = SharedShape::capsule_y(*half_length, *radius).mass_properties(1.0);
            let scale = mass / mp.mass();
            let p = mp.principal_inertia() * scale;
            // Parry's y axis is our z axis.
            (Mat3::from_diagonal(&Vec3::new(p.x, p.z, p.y)), Vec3::zeros())
        }
        GeomShape::Convex { .. } => {
            let shape = parry_shape(shape).expect("convex hull checked at load");
            let mp = shape.mass_properties(1.0);
            let scale = mass / mp.mass();
            let com = crate::math::from_parry_vec(mp.local_com);
            let rot = mp.principal_inertia_local_frame;
            let r = UnitQuaternion::from_quaternion(nalgebra::Quaternion::new(rot.w, rot.x, rot.y, rot.z));
            let d = Mat3::from_diagonal(&crate::math::from_parry_vec(mp.principal_inertia() * scale));
            let rm = r.to_rotation_matrix().into_inner();
            (rm * d * rm.transpose(), com)
        }
        GeomShape::Plane { .. } => (Mat3::zeros(), Vec3::zeros()),
    }
}

fn geometry_from_urdf(g: &urdf_rs::Geometry) -> Option<GeomShape> {
    match g {
        urdf_rs::Geometry::Box { size } => Some(GeomShape::Box { half_extents: Vec3::new(size[0], size[1], size[2]) * 0.5 }),
        urdf_rs::Geometry::Sphere { radius } => Some(GeomShape::Sphere { radius: *radius }),
        urdf_rs::Geometry::Cylinder { radius, length } => {
            Some(GeomShape::Cylinder { radius: *radius, half_length: 0.5 * length })
        }
        urdf_rs::Geometry::Capsule { radius, length } => {
            Some(GeomShape::Capsule { radius: *radius, half_length: 0.5 * length })
        }
        urdf_rs::Geometry::Mesh { .. } => None,
    }
}

fn check_shape(shape: &GeomShape) -> Result<(), String> {
    let positive = |x: f64, what: &str| if x > 0.0 && x.is_finite() { Ok(()) } else { Err(format!("{what} must be positive and finite, got {x}")) };
    match shape {
        GeomShape::Sphere { radius } => positive(*radius, "sphere radius"),
        GeomShape::Box { half_extents } => {
            for i in 0..3 {
                positive(2.0 * half_extents[i], "box size")?;
            }
            Ok(())
        }
        GeomShape::Cylinder { radius, half_length } | GeomShape::Capsule { radius, half_length } => {
            positive(*radius, "radius")?;
            if shape_is_capsule(shape) && *half_length == 0.0 {
                return Ok(());
            }
            positive(2.0 * half_length, "length")
        }
        GeomShape::Convex { vertices } => {
            if vertices.len() < 4 {
                Err("mesh convex hull has fewer than 4 vertices".into())
            } else {
                Ok(())
            }
        }
        GeomShape::Plane { .. } => Ok(()),
    }
}

fn shape_is_capsule(s: &GeomShape) -> bool {
    matches!(s, GeomShape::Capsule { .. })
}

/// Checks a rotational inertia: symmetric, eigenvalues ≥ 0 and the triangle inequalities of a
/// physical body (each principal moment ≤ sum of the other two). This is the `strict` policy
/// of [`crate::urdf::apply_inertia_check`].
pub fn check_inertia(mass: f64, i: &Mat3) -> Result<(), String> {
    apply_inertia_check(mass, i, InertiaCheck::Strict).map(|_| ())
}

/// A URDF's kinematic tree, checked by [`urdf_tree`].
struct UrdfTree<'a> {
    /// Link index by link name.
    link_index: HashMap<&'a str, usize>,
    /// Per link, the URDF joint whose child it is (`None`: the root).
    parent_joint: Vec<Option<usize>>,
    /// Per link, its child links in URDF joint order.
    children: Vec<Vec<usize>>,
    /// The URDF's joint names.
    joint_names: HashSet<&'a str>,
    /// The single root link.
    root: usize,
}

/// What the steps of [`ModelBuilder::add_robot`] share about the robot being added.
struct RobotCtx<'a> {
    /// The robot's spec (URDF, source file, scene choices).
    spec: &'a RobotSpec,
    /// Its checked kinematic tree.
    tree: &'a UrdfTree<'a>,
    /// The robot's name in the scene.
    robot_name: &'a str,
    /// Index of the robot's tree in the model.
    tree_index: usize,
    /// Material of links without an override.
    default_material: usize,
    /// Makes an input error naming the robot's URDF file.
    err: &'a dyn Fn(String, String) -> InputError,
}

impl RobotCtx<'_> {
    /// An input error at `element` of the robot's URDF file.
    fn err(&self, element: String, reason: String) -> InputError {
        (self.err)(element, reason)
    }
}

/// Checks a URDF's topology (unique link and joint names, existing parent and child links,
/// supported joint types, no cycle, a single root) and indexes it.
fn urdf_tree<'a>(urdf: &'a urdf_rs::Robot, e: &dyn Fn(String, String) -> InputError) -> Result<UrdfTree<'a>, InputError> {
    let mut link_index: HashMap<&str, usize> = HashMap::new();
    for (i, l) in urdf.links.iter().enumerate() {
        if link_index.insert(l.name.as_str(), i).is_some() {
            return Err(e(format!("link '{}'", l.name), "defined twice".into()));
        }
    }
    let mut parent_joint: Vec<Option<usize>> = vec![None; urdf.links.len()];
    let mut children: Vec<Vec<usize>> = vec![vec![]; urdf.links.len()];
    let mut joint_names = HashSet::new();
    for (ji, j) in urdf.joints.iter().enumerate() {
        if !joint_names.insert(j.name.as_str()) {
            return Err(e(format!("joint '{}'", j.name), "defined twice".into()));
        }
        let p = *link_index.get(j.parent.link.as_str()).ok_or_else(|| {
            e(format!("joint '{}'", j.name), format!("parent link '{}' does not exist", j.parent.link))
        })?;
        let c = *link_index.get(j.child.link.as_str()).ok_or_else(|| {
            e(format!("joint '{}'", j.name), format!("child link '{}' does not exist", j.child.link))
        })?;
        if p == c {
            return Err(e(format!("joint '{}'", j.name), format!("its parent and child are the same link '{}' (a joint must connect two links)", j.parent.link)));
        }
        if let Some(other) = parent_joint[c] {
            return Err(e(
                format!("link '{}'", j.child.link),
                format!("is the child of two joints ('{}' and '{}')", urdf.joints[other].name, j.name),
            ));
        }
        parent_joint[c] = Some(ji);
        children[p].push(c);
        match j.joint_type {
            urdf_rs::JointType::Floating | urdf_rs::JointType::Planar | urdf_rs::JointType::Spherical => {
                return Err(e(
                    format!("joint '{}'", j.name),
                    format!(
                        "joint type {:?} is not supported (use revolute, continuous, prismatic or fixed; choose a floating base in the scene's robots[].base.mode)",
                        j.joint_type
                    ),
                ))
            }
            _ => {}
        }
    }
    if let Some(cycle) = joint_cycle(&parent_joint, |ji| urdf.joints[ji].parent.link.as_str(), &link_index) {
        let names: Vec<String> = cycle.iter().map(|&ji| format!("'{}'", urdf.joints[ji].name)).collect();
        let path: Vec<&str> = cycle.iter().map(|&ji| urdf.joints[ji].parent.link.as_str()).chain(std::iter::once(urdf.joints[cycle[0]].parent.link.as_str())).collect();
        return Err(e(format!("joints {}", names.join(", ")), format!("form a cycle of links {} (a URDF must be a tree)", path.join(" → "))));
    }
    let roots: Vec<usize> = (0..urdf.links.len()).filter(|&i| parent_joint[i].is_none()).collect();
    if roots.len() != 1 {
        let names: Vec<_> = roots.iter().map(|&i| urdf.links[i].name.as_str()).collect();
        return Err(e(
            format!("robot '{}'", urdf.name),
            if roots.is_empty() {
                "has no root link (the joints form a cycle)".into()
            } else {
                format!("has {} root links ({}); a URDF must be one tree", roots.len(), names.join(", "))
            },
        ));
    }
    Ok(UrdfTree { link_index, parent_joint, children, joint_names, root: roots[0] })
}

/// A link's mass (kg), centre of mass (m, link frame) and rotational inertia about it (kg·m²,
/// link axes), after the spec's inertia check (whose note becomes a warning).
fn link_inertia(ctx: &RobotCtx, link: &urdf_rs::Link, warnings: &mut Vec<LoadWarning>) -> Result<(f64, Vec3, Mat3), InputError> {
    let inertial = &link.inertial;
    let mass = inertial.mass.value;
    let ii = &inertial.inertia;
    let i_origin = Mat3::new(ii.ixx, ii.ixy, ii.ixz, ii.ixy, ii.iyy, ii.iyz, ii.ixz, ii.iyz, ii.izz);
    let (i_origin, note) = apply_inertia_check(mass, &i_origin, ctx.spec.inertia_check).map_err(|r| ctx.err(format!("link '{}' <inertial>", link.name), r))?;
    if let Some(message) = note {
        warnings.push(LoadWarning { class: WarningClass::Inertia, file: ctx.spec.source.clone(), element: format!("link '{}' <inertial>", link.name), message });
    }
    let x_bi = pose_from_xyz_rpy(inertial.origin.xyz.0, inertial.origin.rpy.0);
    let r_bi = x_bi.rotation.to_rotation_matrix().into_inner();
    let inertia_com = r_bi * i_origin * r_bi.transpose();
    Ok((mass, x_bi.translation.vector, inertia_com))
}

impl ModelBuilder {
    /// A new builder; `file` names the scene file for error messages.
    pub fn new(file: impl Into<String>) -> Self {
        let mut b = ModelBuilder {
            file: file.into(),
            bodies: vec![],
            trees: vec![],
            robots: vec![],
            objects: vec![],
            geoms: vec![],
            materials: vec![],
            pair_friction: HashMap::new(),
            friction_combine: FrictionCombine::Min,
            mimics: vec![],
            nq: 0,
            nv: 0,
            dof_names: vec![],
            dof_body: vec![],
            default_control: vec![],
            q_init: vec![],
            v_init: vec![],
            self_collision_trees: HashSet::new(),
            ground_geom: None,
            gravity: Vec3::new(0.0, 0.0, -9.81),
            timestep_s: 0.001,
            contact: ContactOptions::default(),
            midpoint_bias: true,
            warnings: vec![],
        };
        b.materials.push(Material { name: "default".into(), friction: 0.8, compliance: ContactCompliance::default() });
        b
    }

    fn err(&self, element: impl Into<String>, reason: impl Into<String>) -> InputError {
        InputError::invalid(self.file.clone(), element, reason)
    }

    /// Adds or updates a material.
    pub fn material(&mut self, name: &str, friction: f64) -> Result<usize, InputError> {
        crate::validate::finite_in(friction, crate::validate::FRICTION, "μ").map_err(|r| self.err(format!("materials.{name}.friction"), r))?;
        if let Some(i) = self.materials.iter().position(|m| m.name == name) {
            self.materials[i].friction = friction;
            Ok(i)
        } else {
            self.materials.push(Material { name: name.into(), friction, compliance: ContactCompliance::default() });
            Ok(self.materials.len() - 1)
        }
    }

    /// Sets a material's contact compliance (stiffness and damping); adds the material with
    /// the default friction if it does not exist yet.
    pub fn material_compliance(&mut self, name: &str, compliance: ContactCompliance) -> Result<(), InputError> {
        if let Err((field, why)) = compliance.validate() {
            return Err(self.err(format!("materials.{name}.{field}"), why));
        }
        let i = match self.materials.iter().position(|m| m.name == name) {
            Some(i) => i,
            None => self.material(name, 0.8)?,
        };
        self.materials[i].compliance = compliance;
        Ok(())
    }

    /// Sets the friction coefficient for one pair of materials.
    pub fn material_pair(&mut self, a: &str, b: &str, friction: f64) -> Result<(), InputError> {
        let ia = self.material_id(a, "material_pairs")?;
        let ib = self.material_id(b, "material_pairs")?;
        crate::validate::finite_in(friction, crate::validate::FRICTION, "μ").map_err(|r| self.err(format!("material_pairs[{a}, {b}].friction"), r))?;
        self.pair_friction.insert((ia.min(ib), ia.max(ib)), friction);
        Ok(())
    }

    /// Sets how unpaired materials combine.
    pub fn friction_combine(&mut self, c: FrictionCombine) {
        self.friction_combine = c;
    }

    fn material_id(&self, name: &str, element: &str) -> Result<usize, InputError> {
        self.materials.iter().position(|m| m.name == name).ok_or_else(|| {
            let known: Vec<_> = self.materials.iter().map(|m| m.name.as_str()).collect();
            self.err(element.to_string(), format!("unknown material '{name}' (known: {})", known.join(", ")))
        })
    }

    /// Adds the ground half-space through the origin with outward `normal` (world).
    pub fn ground(&mut self, normal: Vec3, material: &str) -> Result<(), InputError> {
        let material = self.material_id(material, "ground.material")?;
        let n = normal.normalize();
        let shape = GeomShape::Plane { normal: n, offset: 0.0 };
        self.geoms.push(Geom {
            name: "ground".into(),
            body: None,
            x_body_geom: Pose::identity(),
            parry_shape: parry_shape(&shape).unwrap(),
            shape,
            material,
            bounding_radius: f64::INFINITY,
        });
        self.ground_geom = Some(self.geoms.len() - 1);
        Ok(())
    }

    fn push_dofs(&mut self, body: BodyId, kind: JointKind, name: &str) {
        match kind {
            JointKind::Free => {
                for s in ["vx", "vy", "vz", "wx", "wy", "wz"] {
                    self.dof_names.push(format!("{name}/{s}"));
                    self.dof_body.push(body);
                    self.default_control.push(ControlMode::Passive);
                }
            }
            JointKind::Revolute | JointKind::Prismatic => {
                self.dof_names.push(name.to_string());
                self.dof_body.push(body);
                self.default_control.push(ControlMode::Passive);
            }
            JointKind::Fixed => {}
        }
        self.nq += kind.nq();
        self.nv += kind.nv();
    }

    /// A joint attaching a root to the world: `Free` (floating) or `Fixed` (welded) at `pose`.
    fn root_joint(&self, name: String, kind: JointKind, pose: &Pose) -> Joint {
        Joint {
            name,
            kind,
            axis: Vec3::zeros(),
            x_parent_joint: *pose,
            q_index: self.nq,
            v_index: self.nv,
            position_limits: None,
            velocity_limit: f64::INFINITY,
            effort_limit: f64::INFINITY,
            damping: 0.0,
            friction: 0.0,
            armature: 0.0,
        }
    }

    fn push_free_coordinates(&mut self, pose: &Pose, lin_world: &Vec3, ang_world: &Vec3) {
        let t = pose.translation.vector;
        let q = pose.rotation.quaternion();
        self.q_init.extend_from_slice(&[t.x, t.y, t.z, q.i, q.j, q.k, q.w]);
        let r_inv = pose.rotation.inverse();
        let vb = r_inv * lin_world;
        let wb = r_inv * ang_world;
        self.v_init.extend_from_slice(&[vb.x, vb.y, vb.z, wb.x, wb.y, wb.z]);
    }

    /// Adds a robot from a parsed URDF.
    pub fn add_robot(&mut self, spec: RobotSpec) -> Result<usize, InputError> {
        let src = spec.source.clone();
        let e = |element: String, reason: String| InputError::invalid(src.clone(), element, reason);
        let urdf = &spec.urdf;
        let robot_name = spec.name.clone().unwrap_or_else(|| urdf.name.clone());
        let mut warnings = spec.warnings.clone();

        crate::urdf::check_numbers(urdf).map_err(|(element, reason)| e(element, reason))?;
        let tree = urdf_tree(urdf, &e)?;
        let default_material = self.check_robot_spec(&spec, &robot_name, &tree, &e)?;

        let tree_index = self.trees.len();
        let body_start = self.bodies.len();
        let (v_start, q_start) = (self.nv, self.nq);
        let floating = matches!(spec.base, BaseMode::Floating(_));
        let ctx = RobotCtx { spec: &spec, tree: &tree, robot_name: &robot_name, tree_index, default_material, err: &e };
        let actuated = self.add_robot_links(&ctx, &mut warnings)?;
        let body_end = self.bodies.len();
        self.warn_massless_joints(&ctx, body_start, body_end, &mut warnings);
        self.add_robot_mimics(&ctx, body_start, body_end, &mut warnings)?;
        if spec.self_collision {
            self.self_collision_trees.insert(tree_index);
        }
        self.trees.push(Tree {
            kind: TreeKind::Robot(self.robots.len()),
            body_start,
            body_end,
            v_start,
            v_end: self.nv,
            q_start,
            q_end: self.nq,
        });
        self.robots.push(RobotInfo { name: robot_name, source: spec.source, tree: tree_index, actuated_bodies: actuated, floating_base: floating });
        self.warnings.extend(warnings);
        Ok(self.robots.len() - 1)
    }

    /// Checks the spec's per-joint and per-link settings, base velocities and joint names
    /// against the URDF and the scene; returns the robot's default material.
    fn check_robot_spec(&self, spec: &RobotSpec, robot_name: &str, tree: &UrdfTree, e: &dyn Fn(String, String) -> InputError) -> Result<usize, InputError> {
        let urdf = &spec.urdf;
        let link_index = &tree.link_index;
        for name in spec.initial_positions.keys() {
            let ok = urdf.joints.iter().any(|j| &j.name == name && !matches!(j.joint_type, urdf_rs::JointType::Fixed));
            if !ok {
                return Err(self.err(format!("robots['{robot_name}'].initial_positions.{name}"), "no such movable joint in the URDF"));
            }
        }
        for name in spec.joint_control.keys() {
            let ok = urdf.joints.iter().any(|j| &j.name == name && !matches!(j.joint_type, urdf_rs::JointType::Fixed));
            if !ok {
                return Err(self.err(format!("robots['{robot_name}'].control.joints.{name}"), "no such movable joint in the URDF"));
            }
        }
        for (link, _) in spec.link_materials.iter() {
            if !link_index.contains_key(link.as_str()) {
                return Err(self.err(format!("robots['{robot_name}'].link_materials.{link}"), "no such link in the URDF"));
            }
        }
        if let Some(links) = &spec.collision_links {
            for link in links {
                let element = format!("robots['{robot_name}'].collision_links.{link}");
                match link_index.get(link.as_str()) {
                    None => return Err(self.err(element, "no such link in the URDF")),
                    Some(&li) if urdf.links[li].collision.is_empty() => {
                        return Err(self.err(element, "this link has no <collision> geometry in the URDF"))
                    }
                    Some(_) => {}
                }
            }
        }
        let (lin0, ang0) = (spec.base_linear_velocity, spec.base_angular_velocity);
        for (key, v) in [("linear_velocity", lin0), ("angular_velocity", ang0)] {
            let element = format!("robots['{robot_name}'].base.{key}");
            if v.iter().any(|x| !x.is_finite()) {
                return Err(self.err(element, "must be finite"));
            }
            if v != Vec3::zeros() && matches!(spec.base, BaseMode::Fixed(_)) {
                return Err(self.err(element, "only a floating base can have an initial velocity"));
            }
        }
        for j in &self.bodies {
            if tree.joint_names.contains(j.joint.name.as_str()) {
                return Err(e(format!("joint '{}'", j.joint.name), "a joint of this name already exists in the scene".into()));
            }
        }
        self.material_id(&spec.material, &format!("robots['{robot_name}'].material"))
    }

    /// Adds the robot's links as bodies in depth-first order from the root; returns the bodies
    /// moved by one-coordinate joints (the actuated bodies).
    fn add_robot_links(&mut self, ctx: &RobotCtx, warnings: &mut Vec<LoadWarning>) -> Result<Vec<BodyId>, InputError> {
        let mut order = vec![];
        let mut stack = vec![ctx.tree.root];
        while let Some(l) = stack.pop() {
            order.push(l);
            for &c in ctx.tree.children[l].iter().rev() {
                stack.push(c);
            }
        }
        let mut body_of_link: HashMap<usize, BodyId> = HashMap::new();
        let mut actuated = vec![];
        for &li in &order {
            self.add_robot_link(ctx, li, &mut body_of_link, &mut actuated, warnings)?;
        }
        Ok(actuated)
    }

    /// Adds URDF link `li` as a body: its joint, inertia, degrees of freedom, command mode and
    /// collision geometry.
    fn add_robot_link(&mut self, ctx: &RobotCtx, li: usize, body_of_link: &mut HashMap<usize, BodyId>, actuated: &mut Vec<BodyId>, warnings: &mut Vec<LoadWarning>) -> Result<(), InputError> {
        let spec = ctx.spec;
        let urdf = &spec.urdf;
        let link = &urdf.links[li];
        let body_id = self.bodies.len();
        let (parent, joint) = match ctx.tree.parent_joint[li] {
            None => (None, self.robot_base_joint(ctx)),
            Some(ji) => {
                let j = &urdf.joints[ji];
                let joint = self.robot_urdf_joint(ctx, j)?;
                let parent_link = ctx.tree.link_index[j.parent.link.as_str()];
                (Some(body_of_link[&parent_link]), joint)
            }
        };
        let (mass, com, inertia_com) = link_inertia(ctx, link, warnings)?;
        let kind = joint.kind;
        let moving_body = if kind == JointKind::Fixed { parent.map(|p| self.bodies[p].moving_body).unwrap_or(body_id) } else { body_id };
        if kind.nv() == 1 {
            actuated.push(body_id);
        }
        let name = joint.name.clone();
        self.bodies.push(Body {
            name: link.name.clone(),
            parent,
            joint,
            mass,
            com,
            inertia_com,
            tree: ctx.tree_index,
            moving_body,
        });
        self.push_dofs(body_id, kind, &name);
        if kind.nv() == 1 {
            let mode = spec.joint_control.get(&name).copied().unwrap_or(spec.default_control);
            *self.default_control.last_mut().unwrap() = mode;
        }
        body_of_link.insert(li, body_id);
        self.push_link_geoms(ctx, link, body_id)
    }

    /// The root link's joint to the world (a weld, or a free joint whose initial coordinates
    /// and velocities it pushes), per the spec's base mode.
    fn robot_base_joint(&mut self, ctx: &RobotCtx) -> Joint {
        let spec = ctx.spec;
        let robot_name = ctx.robot_name;
        let joint = match &spec.base {
            BaseMode::Fixed(pose) => self.root_joint(format!("{robot_name}/base_weld"), JointKind::Fixed, pose),
            BaseMode::Floating(pose) => self.root_joint(format!("{robot_name}/base"), JointKind::Free, pose),
        };
        if let BaseMode::Floating(pose) = &spec.base {
            self.push_free_coordinates(pose, &spec.base_linear_velocity, &spec.base_angular_velocity);
        }
        joint
    }

    /// A URDF joint as a model joint (axis, limits in rad or m, damping, friction); pushes the
    /// initial position (spec, else 0) and velocity (0) of a one-coordinate joint.
    fn robot_urdf_joint(&mut self, ctx: &RobotCtx, j: &urdf_rs::Joint) -> Result<Joint, InputError> {
        let kind = match j.joint_type {
            urdf_rs::JointType::Revolute | urdf_rs::JointType::Continuous => JointKind::Revolute,
            urdf_rs::JointType::Prismatic => JointKind::Prismatic,
            urdf_rs::JointType::Fixed => JointKind::Fixed,
            _ => unreachable!("rejected above"),
        };
        let axis = if kind == JointKind::Fixed {
            Vec3::zeros()
        } else {
            crate::validate::direction(j.axis.xyz.0, "<axis xyz>").map_err(|r| ctx.err(format!("joint '{}'", j.name), r))?
        };
        let lim = &j.limit;
        let limited = matches!(j.joint_type, urdf_rs::JointType::Revolute | urdf_rs::JointType::Prismatic);
        let position_limits = if limited && lim.lower < lim.upper {
            Some((lim.lower, lim.upper))
        } else if limited && lim.lower > lim.upper {
            return Err(ctx.err(
                format!("joint '{}'", j.name),
                format!("lower limit {} is above upper limit {}", lim.lower, lim.upper),
            ));
        } else {
            None
        };
        let positive_or_inf = |x: f64| if x > 0.0 { x } else { f64::INFINITY };
        // checked by crate::urdf::check_numbers: finite, ≥ 0
        let (damping, friction) = j.dynamics.as_ref().map(|d| (d.damping, d.friction)).unwrap_or((0.0, 0.0));
        let joint = Joint {
            name: j.name.clone(),
            kind,
            axis,
            x_parent_joint: pose_from_xyz_rpy(j.origin.xyz.0, j.origin.rpy.0),
            q_index: self.nq,
            v_index: self.nv,
            position_limits,
            velocity_limit: positive_or_inf(lim.velocity),
            effort_limit: positive_or_inf(lim.effort),
            damping,
            friction,
            armature: ctx.spec.joint_armature.get(&j.name).copied().unwrap_or(0.0),
        };
        if kind.nq() == 1 {
            let q0 = ctx.spec.initial_positions.get(&j.name).copied().unwrap_or(0.0);
            self.q_init.push(q0);
            self.v_init.push(0.0);
        }
        Ok(joint)
    }

    /// Adds the collision geometries of `link` (if the spec lets it collide) to body `body_id`,
    /// with the link's material.
    fn push_link_geoms(&mut self, ctx: &RobotCtx, link: &urdf_rs::Link, body_id: BodyId) -> Result<(), InputError> {
        let spec = ctx.spec;
        let robot_name = ctx.robot_name;
        let material = match spec.link_materials.get(&link.name) {
            Some(m) => self.material_id(m, &format!("robots['{robot_name}'].link_materials.{}", link.name))?,
            None => ctx.default_material,
        };
        let collides = spec.collision_links.as_ref().is_none_or(|l| l.contains(&link.name));
        for (ci, c) in link.collision.iter().enumerate().filter(|_| collides) {
            let element = format!("link '{}' <collision> {}", link.name, ci);
            let shape = match geometry_from_urdf(&c.geometry) {
                Some(s) => s,
                None => {
                    let v = spec.mesh_hulls.get(&(link.name.clone(), ci)).ok_or_else(|| ctx.err(element.clone(), "mesh was not loaded".into()))?;
                    GeomShape::Convex { vertices: v.clone() }
                }
            };
            check_shape(&shape).map_err(|r| ctx.err(element.clone(), r))?;
            let parry = parry_shape(&shape).ok_or_else(|| ctx.err(element.clone(), "mesh is degenerate (flat or too few points for a convex hull)".into()))?;
            self.geoms.push(Geom {
                name: format!("{}/collision[{ci}]", link.name),
                body: Some(body_id),
                x_body_geom: pose_from_xyz_rpy(c.origin.xyz.0, c.origin.rpy.0),
                bounding_radius: shape_bounding_radius(&shape),
                shape,
                parry_shape: parry,
                material,
            });
        }
        Ok(())
    }

    /// Warns about each moving joint of bodies `body_start..body_end` whose subtree has no mass
    /// (kg): massless moving subtrees make the mass matrix singular.
    fn warn_massless_joints(&self, ctx: &RobotCtx, body_start: usize, body_end: usize, warnings: &mut Vec<LoadWarning>) {
        let mut subtree_mass = vec![0.0; body_end - body_start];
        for b in (body_start..body_end).rev() {
            subtree_mass[b - body_start] += self.bodies[b].mass;
            if let Some(p) = self.bodies[b].parent {
                subtree_mass[p - body_start] += subtree_mass[b - body_start];
            }
        }
        for b in body_start..body_end {
            if self.bodies[b].joint.kind != JointKind::Fixed && subtree_mass[b - body_start] <= 0.0 {
                // as rigid-body libraries do: kept (M(q) has a zero row); the implicit PD gains or
                // joint damping of the step keep the iteration matrix regular, a passive undamped
                // joint makes the step report failure
                warnings.push(LoadWarning {
                    class: WarningClass::Inertia,
                    file: ctx.spec.source.clone(),
                    element: format!("joint '{}'", self.bodies[b].joint.name),
                    message: "moves only massless links: its row of the mass matrix is zero; kept (simulate it under position or velocity control, or with <dynamics damping>; better: give the child link an <inertial>)".into(),
                });
            }
        }
    }

    /// Adds the URDF's mimic couplings among bodies `body_start..body_end` (chains resolved to
    /// their root joint, cycles refused, fixed followers ignored); followers become passive and
    /// start at `multiplier · leader + offset`.
    fn add_robot_mimics(&mut self, ctx: &RobotCtx, body_start: usize, body_end: usize, warnings: &mut Vec<LoadWarning>) -> Result<(), InputError> {
        let resolved = crate::urdf::resolve_mimics(&ctx.spec.urdf).map_err(|(element, reason)| ctx.err(element, reason))?;
        for w in resolved.warnings {
            warnings.push(LoadWarning { class: WarningClass::Mimic, file: ctx.spec.source.clone(), element: w.0, message: w.1 });
        }
        for m in resolved.mimics {
            let find = |name: &str| self.bodies[body_start..body_end].iter().position(|b| b.joint.name == name).map(|i| i + body_start);
            let (Some(f), Some(l)) = (find(&m.follower), find(&m.leader)) else {
                unreachable!("resolve_mimics returns joints of this URDF");
            };
            self.mimics.push(MimicConstraint { follower: f, leader: l, multiplier: m.multiplier, offset: m.offset });
            // a mimic follower is driven by the coupling, not by commands
            self.default_control[self.bodies[f].joint.v_index] = ControlMode::Passive;
            let lead_q = self.q_init[self.bodies[l].joint.q_index];
            self.q_init[self.bodies[f].joint.q_index] = m.multiplier * lead_q + m.offset;
        }
        Ok(())
    }

    /// Adds a free (or static) rigid object.
    pub fn add_object(&mut self, spec: ObjectSpec, element: &str) -> Result<usize, InputError> {
        if self.bodies.iter().any(|b| b.name == spec.name) {
            return Err(self.err(element, format!("name '{}' is already used by another body", spec.name)));
        }
        check_shape(&spec.shape).map_err(|r| self.err(format!("{element}.shape"), r))?;
        if !spec.fixed && !(spec.mass > 0.0 && spec.mass.is_finite()) {
            return Err(self.err(format!("{element}.mass_kg"), format!("must be positive, got {}", spec.mass)));
        }
        crate::validate::finite_in(spec.mass, crate::validate::MASS_KG, "mass").map_err(|r| self.err(element, r))?;
        let material = self.material_id(&spec.material, &format!("{element}.material"))?;
        let parry = parry_shape(&spec.shape).ok_or_else(|| self.err(format!("{element}.shape"), "mesh is degenerate"))?;
        let (inertia, com) = solid_inertia(&spec.shape, spec.mass);
        let tree_index = self.trees.len();
        let body_id = self.bodies.len();
        let (v_start, q_start) = (self.nv, self.nq);
        let joint = if spec.fixed {
            self.root_joint(format!("{}/weld", spec.name), JointKind::Fixed, &spec.pose)
        } else {
            self.root_joint(spec.name.clone(), JointKind::Free, &spec.pose)
        };
        let kind = joint.kind;
        // Shift the body frame to the centre of mass so that the free-joint velocity is the
        // centre-of-mass velocity (only convex meshes have an offset centre).
        let (pose, x_body_geom) = if com.norm() > 0.0 && !spec.fixed {
            (spec.pose * Pose::translation(com.x, com.y, com.z), Pose::translation(-com.x, -com.y, -com.z))
        } else {
            (spec.pose, Pose::identity())
        };
        let mut joint = joint;
        joint.x_parent_joint = pose;
        self.bodies.push(Body {
            name: spec.name.clone(),
            parent: None,
            joint,
            mass: if spec.fixed { 0.0 } else { spec.mass },
            com: Vec3::zeros(),
            inertia_com: if spec.fixed { Mat3::zeros() } else { inertia },
            tree: tree_index,
            moving_body: body_id,
        });
        self.push_dofs(body_id, kind, &spec.name);
        if !spec.fixed {
            self.push_free_coordinates(&pose, &spec.linear_velocity, &spec.angular_velocity);
        }
        self.geoms.push(Geom {
            name: spec.name.clone(),
            body: Some(body_id),
            x_body_geom,
            bounding_radius: shape_bounding_radius(&spec.shape),
            shape: spec.shape,
            parry_shape: parry,
            material,
        });
        self.trees.push(Tree {
            kind: TreeKind::Object(self.objects.len()),
            body_start: body_id,
            body_end: body_id + 1,
            v_start,
            v_end: self.nv,
            q_start,
            q_end: self.nq,
        });
        self.objects.push(ObjectInfo { name: spec.name, body: body_id, tree: tree_index, fixed: spec.fixed });
        Ok(self.objects.len() - 1)
    }

    fn combined_friction(&self, a: usize, b: usize) -> f64 {
        if let Some(&f) = self.pair_friction.get(&(a.min(b), a.max(b))) {
            return f;
        }
        let (fa, fb) = (self.materials[a].friction, self.materials[b].friction);
        match self.friction_combine {
            FrictionCombine::Min => fa.min(fb),
            FrictionCombine::Max => fa.max(fb),
            FrictionCombine::Average => 0.5 * (fa + fb),
            FrictionCombine::Geometric => (fa * fb).sqrt(),
        }
    }

    fn is_static_body(&self, body: Option<BodyId>) -> bool {
        match body {
            None => true,
            Some(b) => {
                // static when no ancestor moves
                let mut cur = Some(b);
                while let Some(c) = cur {
                    if self.bodies[c].joint.kind != JointKind::Fixed {
                        return false;
                    }
                    cur = self.bodies[c].parent;
                }
                true
            }
        }
    }

    /// Validates the options and produces the [`Model`].
    pub fn finalize(self) -> Result<Model, InputError> {
        if !(self.timestep_s > 0.0 && self.timestep_s.is_finite()) {
            return Err(self.err("timestep_s", format!("must be positive, got {}", self.timestep_s)));
        }
        if self.gravity.iter().any(|g| !g.is_finite()) {
            return Err(self.err("gravity", "must be finite"));
        }
        let c = &self.contact;
        if !(0.0..=1.0).contains(&c.erp) {
            return Err(self.err("contact.erp", format!("must be in [0, 1], got {}", c.erp)));
        }
        crate::validate::finite_in(c.max_depenetration_speed_m_s, crate::validate::DEPENETRATION_SPEED_M_S, "max_depenetration_speed_m_s").map_err(|r| self.err("contact", r))?;
        if c.margin_m < 0.0 || c.slop_m < 0.0 || c.max_contacts == 0 || c.max_points_per_pair == 0 {
            return Err(self.err("contact", "margin_m and slop_m must be ≥ 0, max_contacts and max_points_per_pair ≥ 1"));
        }
        if c.max_contacts > crate::validate::MAX_CONTACTS {
            return Err(self.err("contact.max_contacts", format!("{} is more than the limit of {} contacts per step (the step's buffers are sized from it)", c.max_contacts, crate::validate::MAX_CONTACTS)));
        }
        if c.max_points_per_pair > crate::validate::MAX_POINTS_PER_PAIR {
            return Err(self.err("contact.max_points_per_pair", format!("{} is more than the limit of {}", c.max_points_per_pair, crate::validate::MAX_POINTS_PER_PAIR)));
        }
        let dc = &c.deformable_contact;
        for (key, v) in [("contact.deformable_contact.thickness_m", dc.thickness_m), ("contact.deformable_contact.rest_exclusion_m", dc.rest_exclusion_m)] {
            if let Some(v) = v {
                if !(v >= 0.0 && v.is_finite()) {
                    return Err(self.err(key, format!("must be a finite length ≥ 0 (m), got {v}")));
                }
            }
        }
        let object_dof = self.objects.iter().map(|o| self.bodies[o.body].joint.kind.nv()).sum();
        Model::check_counts(self.bodies.len(), self.nv, object_dof).map_err(|r| self.err("size", r))?;
        // candidate collision pairs
        let mut pairs = vec![];
        for a in 0..self.geoms.len() {
            if pairs.len() > crate::validate::MAX_COLLISION_PAIRS {
                return Err(self.err("size", format!("more than {} candidate collision pairs (pairs of shapes on different moving bodies), the limit: turn off self_collision, list collision_links or use fewer objects", crate::validate::MAX_COLLISION_PAIRS)));
            }
            for b in a + 1..self.geoms.len() {
                let (ga, gb) = (&self.geoms[a], &self.geoms[b]);
                if self.is_static_body(ga.body) && self.is_static_body(gb.body) {
                    continue;
                }
                let ground_pair = Some(a) == self.ground_geom || Some(b) == self.ground_geom;
                if !ground_pair {
                    let (ba, bb) = (ga.body.unwrap(), gb.body.unwrap());
                    let (ma, mb) = (self.bodies[ba].moving_body, self.bodies[bb].moving_body);
                    if ma == mb {
                        continue;
                    }
                    let tree = self.bodies[ba].tree;
                    if tree == self.bodies[bb].tree {
                        if !self.self_collision_trees.contains(&tree) {
                            continue;
                        }
                        let parent_moving = |m: BodyId| self.bodies[m].parent.map(|p| self.bodies[p].moving_body);
                        if parent_moving(ma) == Some(mb) || parent_moving(mb) == Some(ma) {
                            continue;
                        }
                    }
                }
                let (a, b) = if Some(b) == self.ground_geom { (b, a) } else { (a, b) };
                pairs.push(CollisionPair {
                    geom_a: a,
                    geom_b: b,
                    friction: self.combined_friction(self.geoms[a].material, self.geoms[b].material),
                    with_ground: ground_pair,
                });
            }
        }
        let file = self.file.clone();
        let model = Model {
            bodies: self.bodies,
            trees: self.trees,
            robots: self.robots,
            objects: self.objects,
            geoms: self.geoms,
            materials: self.materials,
            collision_pairs: pairs,
            mimics: self.mimics,
            nq: self.nq,
            nv: self.nv,
            dof_names: self.dof_names,
            dof_body: self.dof_body,
            gravity: self.gravity,
            timestep_s: self.timestep_s,
            contact: self.contact,
            default_control: self.default_control,
            q_init: self.q_init,
            v_init: self.v_init,
            ground_geom: self.ground_geom,
            midpoint_bias: self.midpoint_bias,
            command_delay_s: 0.0,
            sensors: vec![],
            contact_wrench_bodies: vec![],
            deformables: vec![],
            fem_integrator: Default::default(),
        };
        model.check_sizes().map_err(|reason| InputError::invalid(file, "size", reason))?;
        Ok(model)
    }
}

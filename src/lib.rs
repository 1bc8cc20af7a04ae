//! # contact_sim
//!
//! A real-time, robot-in-the-loop contact-dynamics simulator. This crate is the engine; the
//! `contact_sim` binary runs it headless, and (with the `ros` feature) a ROS 2 node wraps it.
//!
//! ## Layers
//!
//! Each module uses only modules of lower layers (`tests/module_deps.rs` derives the graph from
//! the code and fails on a cycle or an upward edge, naming it; it reads this table):
//!
//! | layer | modules | owns |
//! |---|---|---|
//! | 0 | [`math`], [`error`], [`validate`], [`docs`] | spatial algebra, branch-sparse and dense kernels (LU, Cholesky, AVX2 dispatch); input errors; number checks; the method notes |
//! | 1 | [`fem`], [`urdf`] | tetrahedral FEM (meshes, materials, the sparse system of a step); URDFs as they exist in the wild |
//! | 2 | [`model`] | the immutable scene: bodies, joints, geometry, materials, sensors, options; kinematic-tree queries ([`model::tree`]) |
//! | 3 | [`state`] | the snapshot: time, q, v, warm starts, FEM and sensor history |
//! | 4 | [`collision`] | broad and narrow phase, contact points |
//! | 5 | [`contact`] | the seam (`method.rs`, `problem.rs`, `nodal.rs`), one folder or file per method, the registry |
//! | 6 | [`workspace`] | derived data and scratch of a step, sized once (holds the built method) |
//! | 7 | [`kinematics`], [`dynamics`], [`sensors`] | FK and Jacobians, CRBA and RNEA, F/T sensors and contact wrenches: read model and state, write the workspace |
//! | 8 | [`coupled`] | the coupled rigid–FEM solve |
//! | 9 | [`step`] | `step(&Model, &mut State, &mut Workspace, &Commands) -> StepReport`, as named stages |
//! | 10 | [`sim`], [`report`] | model, state, workspace and the command script together; run summaries and model inspection |
//! | 11 | [`config`], [`model_check`] | scene YAML, URDF and mesh loading and validation (the only file input); `model --check` |
//! | 12 | [`rt`] | the node's real-time side without ROS types: deadline loop, lock-free queues, validation, watchdog, trajectories |
//! | 13 | [`bag`] | rosbag2 (MCAP): CDR messages, writer, tolerant reader, recorder, replay, robot descriptions |
//! | 14 | [`compare`] | sim-to-real comparison of two bags: alignment, metrics, HTML report |
//! | 15 | [`identify`] | system identification: scene parameters fitted to hardware bags (replay plans, compare's series) |
//! | 16 | `ros` | (feature `ros`) the r2r node: topics, services, parameters; no physics |
//!
//! Invariants: `step` allocates nothing and never fails (problems are flags in
//! [`step::StepReport`]); input errors are caught when loading and name the file and element
//! ([`error::InputError`]).

#![warn(missing_docs)]

pub mod bag;
pub mod collision;
pub mod compare;
pub mod identify;
pub mod config;
pub mod contact;
pub mod coupled;
pub mod docs;
pub mod dynamics;
pub mod error;
pub mod fem;
pub mod kinematics;
pub mod math;
pub mod model_check;
pub mod model;
pub mod report;
pub mod sensors;
pub mod rt;
#[cfg(feature = "ros")]
pub mod ros;
pub mod sim;
pub mod state;
pub mod step;
pub mod urdf;
pub mod validate;
pub mod workspace;

//! # contact_sim
//!
//! A real-time, robot-in-the-loop contact-dynamics simulator. This crate is the engine; the
//! `contact_sim` binary runs it headless, and (with the `ros` feature) a ROS 2 node wraps it.
//!
//! | module | owns |
//! |---|---|
//! | [`model`] | the immutable scene: bodies, joints, geometry, materials, options; [`model::ModelBuilder`] |
//! | [`state`] | the minimal snapshot (time, q, v, warm start) |
//! | [`workspace`] | derived data and scratch, sized once; the step never resizes it |
//! | [`kinematics`], [`dynamics`] | FK, Jacobians, CRBA mass matrix, RNEA bias / inverse dynamics |
//! | [`collision`] | broad + narrow phase, contact points |
//! | [`contact`] | the [`contact::ContactProblem`] view, the solver trait and the solvers |
//! | [`fem`] | tetrahedral FEM: meshes, materials, deformable bodies, the sparse system of a step |
//! | [`step`] | `step(&Model, &mut State, &mut Workspace, &Commands) -> StepReport` |
//! | [`config`] | scene YAML, URDF and mesh loading and validation: the only file I/O |
//! | [`urdf`] | URDFs as they exist in the wild: lenient parsing, load warnings, the inertia policy |
//! | [`sim`] | a convenient bundle of the above with the scene's command script |
//! | [`report`] | run summaries (JSON) and model inspection |
//! | [`sensors`] | F/T sensor emulation from the dynamics, contact wrenches |
//! | [`bag`] | rosbag2 (MCAP) bags: CDR messages, writer, tolerant reader, background recorder, replay |
//! | [`compare`] | sim-to-real comparison of two bags: time alignment, metrics, HTML report |
//! | [`rt`] | the ROS node's real-time side without ROS types: deadline loop, lock-free queues, validation, watchdog, trajectories |
//! | [`docs`] | the method notes (`docs/` of the repository): one page per contact method and subsystem |
//! | `ros` | (feature `ros`) the r2r node: topics, services, parameters; no physics |
//!
//! Invariants: `step` allocates nothing and never fails (problems are flags in
//! [`step::StepReport`]); input errors are caught when loading and name the file and element
//! ([`error::InputError`]).

#![warn(missing_docs)]

pub mod bag;
pub mod collision;
pub mod compare;
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

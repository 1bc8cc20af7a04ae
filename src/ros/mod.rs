//! The ROS 2 node (feature `ros`, r2r): topics, services, parameters and their conversion to
//! the real-time side in [`crate::rt`]. No physics here, and no ROS type crosses into the RT
//! thread.
//!
//! | module | owns |
//! |---|---|
//! | [`node`] | the node: threads, topics, services, signal handling, shutdown |
//! | [`params`] | parameter declarations, validation, read-only rules (r2r `RosParams`) |
//! | [`rosout`] | the node's log lines on `/rosout` |
//! | [`param_services`] | the parameter services with full descriptors, `/parameter_events` |
//! | [`convert`] | samples → JointState / Odometry / Clock / DiagnosticStatus |
//! | [`graph`] | `robot_description` and TF (`tf`, `tf_static`) of the scene's robots |

pub mod convert;
pub mod graph;
pub mod node;
pub mod param_services;
pub mod params;
pub mod rosout;

pub use node::run;

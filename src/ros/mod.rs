//! The ROS 2 node (feature `ros`, r2r): topics, services, parameters and their conversion to
//! the real-time side in [`crate::rt`]. No physics here, and no ROS type crosses into the RT
//! thread.
//!
//! | module | owns |
//! |---|---|
//! | [`node`] | the node: threads, topics, services, signal handling, shutdown |
//! | [`params`] | parameter declarations, validation, read-only rules (r2r `RosParams`) |
//! | [`convert`] | samples → JointState / Odometry / Clock / DiagnosticStatus |
//! | [`graph`] | `robot_description` and TF (`tf`, `tf_static`) of the scene's robots |

pub mod convert;
pub mod graph;
pub mod node;
pub mod params;

pub use node::run;

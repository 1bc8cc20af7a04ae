//! `contact_sim_node`: the contact_sim ROS 2 node (feature `ros`).
//!
//! ```text
//! contact_sim_node --ros-args -p scene:=config/default.yaml -p time_mode:=realtime
//! contact_sim_node --scene tests/data/ros_pendulum_effort.yaml --ros-args --params-file config/contact_sim_node.params.yaml
//! ```
//! See [`contact_sim::ros::node`] for topics, services and threads, and
//! `config/contact_sim_node.params.yaml` for the parameters.

fn main() {
    std::process::exit(contact_sim::ros::run());
}

//! The node's log lines on `/rosout` (rcl_interfaces/msg/Log), as an rclcpp node sends them.
//!
//! Since ROS 2 Iron, rcl leaves the creation of a node's `/rosout` publisher to the client
//! library, and r2r 0.9.7 does not create one: its log macros reach the console only. The node
//! therefore publishes each of its own log lines on `/rosout` itself (QoS as rcl's rosout: reliable,
//! transient local, depth 1000, lifespan 10 s), through the macros of this module, which also
//! print the line to the console as r2r's do. Log lines of rcl and the DDS layer stay on the
//! console. Never used on the real-time thread.

use r2r::rcl_interfaces::msg::Log;
use std::sync::Mutex;
use std::time::Duration;

/// `rcl_interfaces/msg/Log` levels.
pub mod level {
    /// DEBUG.
    pub const DEBUG: u8 = 10;
    /// INFO.
    pub const INFO: u8 = 20;
    /// WARN.
    pub const WARN: u8 = 30;
    /// ERROR.
    pub const ERROR: u8 = 40;
}

static ROSOUT: Mutex<Option<r2r::Publisher<Log>>> = Mutex::new(None);

/// Creates the node's `/rosout` publisher; log lines are published from now on.
pub fn init(node: &mut r2r::Node) -> r2r::Result<()> {
    let qos = r2r::QosProfile::default().keep_last(1000).reliable().transient_local().lifespan(Duration::from_secs(10));
    let p = node.create_publisher::<Log>("/rosout", qos)?;
    if let Ok(mut g) = ROSOUT.lock() {
        *g = Some(p);
    }
    Ok(())
}

/// Drops the publisher (before the node goes away).
pub fn shutdown() {
    if let Ok(mut g) = ROSOUT.lock() {
        *g = None;
    }
}

/// Publishes one log line of logger `name` on `/rosout` (no-op before [`init`]).
pub fn publish(level: u8, name: &str, msg: &str, file: &str, line: u32) {
    let Ok(g) = ROSOUT.lock() else { return };
    let Some(p) = g.as_ref() else { return };
    let log = Log {
        stamp: super::convert::time_from_ns(crate::rt::clock::realtime_ns()),
        level,
        name: name.to_string(),
        msg: msg.to_string(),
        file: file.to_string(),
        function: String::new(),
        line,
    };
    let _ = p.publish(&log);
}

/// Logs at INFO to the console (r2r) and `/rosout`.
#[macro_export]
#[doc(hidden)]
macro_rules! ros_info {
    ($logger:expr, $($arg:tt)*) => {{
        let m = format!($($arg)*);
        r2r::log_info!($logger, "{}", m);
        $crate::ros::rosout::publish($crate::ros::rosout::level::INFO, $logger, &m, file!(), line!());
    }};
}

/// Logs at WARN to the console (r2r) and `/rosout`.
#[macro_export]
#[doc(hidden)]
macro_rules! ros_warn {
    ($logger:expr, $($arg:tt)*) => {{
        let m = format!($($arg)*);
        r2r::log_warn!($logger, "{}", m);
        $crate::ros::rosout::publish($crate::ros::rosout::level::WARN, $logger, &m, file!(), line!());
    }};
}

/// Logs at ERROR to the console (r2r) and `/rosout`.
#[macro_export]
#[doc(hidden)]
macro_rules! ros_error {
    ($logger:expr, $($arg:tt)*) => {{
        let m = format!($($arg)*);
        r2r::log_error!($logger, "{}", m);
        $crate::ros::rosout::publish($crate::ros::rosout::level::ERROR, $logger, &m, file!(), line!());
    }};
}

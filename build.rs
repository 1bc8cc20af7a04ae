//! Build script. With the `ros` feature, links libpython into every binary and test: the ROS 2
//! wheels' rcl loads a Python type-support library that needs libpython's symbols at run time
//! (see `scripts/setup-ros.sh`). `scripts/ros-env.sh` sets `CONTACT_SIM_LIBPYTHON`.
fn main() {
    println!("cargo:rerun-if-env-changed=CONTACT_SIM_LIBPYTHON");
    if std::env::var_os("CARGO_FEATURE_ROS").is_none() {
        return;
    }
    let lib = match std::env::var("CONTACT_SIM_LIBPYTHON") {
        Ok(l) => l,
        Err(_) => {
            println!("cargo:warning=CONTACT_SIM_LIBPYTHON is not set: source scripts/ros-env.sh before building with --features ros");
            return;
        }
    };
    let lib = std::path::Path::new(&lib);
    let dir = lib.parent().expect("libpython path has a directory");
    println!("cargo:rustc-link-search=native={}", dir.display());
    println!("cargo:rustc-link-arg=-Wl,--no-as-needed");
    println!("cargo:rustc-link-arg={}", lib.display());
    println!("cargo:rustc-link-arg=-Wl,--as-needed");
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
}

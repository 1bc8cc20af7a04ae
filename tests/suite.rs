//! The scenario and integration tests, as one test binary (`cargo test --release --test suite`;
//! one file `tests/NAME.rs` is the module `NAME`: `cargo test --release --test suite NAME::`).
//! One binary instead of one per file: linking ~30 binaries against the engine cost most of a
//! fresh build of the suite. The tests that install a counting global allocator (`bag`,
//! `no_alloc`, `rt_no_alloc`) and the ROS 2 tests (`ros_node`) stay binaries of their own.

mod common;

mod bad_input;
mod benchmark_tables;
mod bisection_experiments;
mod conformance;
mod docs_links;
mod dynamics;
mod ecp;
mod factored_rows;
mod fem;
mod fem_contact;
mod fem_mesh;
mod fem_weld;
mod fuzz;
mod golden;
mod hardening;
mod identify;
mod lstable;
mod lstable_paper;
mod module_deps;
mod newton;
mod registry;
mod robots;
mod ros_packaging;
mod scene_options;
mod sensors;
mod shapes;
mod snapshot;
mod urdf_corpus;
mod urdf_wild;
mod validation;

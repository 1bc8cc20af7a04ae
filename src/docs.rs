//! The method notes, rendered with the API documentation.
//!
//! Each submodule is one page of the repository's `docs/` folder, included verbatim: for a
//! contact method or subsystem, what it solves, the equations implemented with the paper they
//! come from, every deviation from the paper with its reason and measurement, the parameters
//! with units and defaults, and the tests that pin it. Links between pages and into the source
//! tree are relative to `docs/` in a checkout of the repository.
//!
//! | page | file |
//! |---|---|
//! | [`index`] | `docs/README.md` |
//! | [`pgs`] | `docs/pgs.md` |
//! | [`bisection`] | `docs/bisection.md` |
//! | [`vfpi`] | `docs/vfpi.md` |
//! | [`lstable`] | `docs/lstable.md` |
//! | [`fem`] | `docs/fem.md` |
//! | [`ft_sensors`] | `docs/ft-sensors.md` |
//! | [`time_stepping`] | `docs/time-stepping.md` |
//! | [`bags`] | `docs/bags.md` |
//! | [`ros_graph`] | `docs/ros-graph.md` |
//! | [`configuration`] | `docs/configuration.md` |
//! | [`ecp`] | `docs/ecp.md` |
//! | [`newton`] | `docs/newton.md` |
//! | [`adding_a_contact_method`] | `docs/adding-a-contact-method.md` |

#[doc = include_str!("../docs/README.md")]
pub mod index {}

#[doc = include_str!("../docs/pgs.md")]
pub mod pgs {}

#[doc = include_str!("../docs/bisection.md")]
pub mod bisection {}

#[doc = include_str!("../docs/vfpi.md")]
pub mod vfpi {}

#[doc = include_str!("../docs/lstable.md")]
pub mod lstable {}

#[doc = include_str!("../docs/ecp.md")]
pub mod ecp {}

#[doc = include_str!("../docs/newton.md")]
pub mod newton {}

#[doc = include_str!("../docs/fem.md")]
pub mod fem {}

#[doc = include_str!("../docs/ft-sensors.md")]
pub mod ft_sensors {}

#[doc = include_str!("../docs/time-stepping.md")]
pub mod time_stepping {}

#[doc = include_str!("../docs/bags.md")]
pub mod bags {}

#[doc = include_str!("../docs/configuration.md")]
pub mod configuration {}

#[doc = include_str!("../docs/adding-a-contact-method.md")]
pub mod adding_a_contact_method {}

#[doc = include_str!("../docs/ros-graph.md")]
pub mod ros_graph {}

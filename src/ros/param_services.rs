//! The node's parameter services and `/parameter_events`, as an rclcpp node has them.
//!
//! r2r's own parameter handler serves the standard services but describes a parameter by name,
//! type and description only, and announces nothing on `/parameter_events`. This one serves the
//! same six services (`~/list_parameters`, `~/get_parameters`, `~/get_parameter_types`,
//! `~/set_parameters`, `~/set_parameters_atomically`, `~/describe_parameters`) from the
//! [`ParamStore`], with full descriptors (read-only flag, integer / floating-point ranges, the
//! allowed strings as `additional_constraints`), and publishes an
//! `rcl_interfaces/msg/ParameterEvent` on `/parameter_events` when the node starts (every
//! declared parameter as new) and after every accepted change. Changes are also yielded on a
//! stream, for the node to forward them where they act.

use super::params::{Kind, ParamStore};
use anyhow::Result;
use futures::channel::mpsc;
use futures::future::{self, Future, FutureExt};
use futures::StreamExt;
use r2r::rcl_interfaces::msg::{
    FloatingPointRange, IntegerRange, Parameter as ParameterMsg, ParameterDescriptor, ParameterEvent, ParameterValue as ParameterValueMsg, SetParametersResult,
};
use r2r::rcl_interfaces::srv::{DescribeParameters, GetParameterTypes, GetParameters, ListParameters, SetParameters, SetParametersAtomically};
use r2r::{ParameterValue, QosProfile, RosParams};
use std::pin::Pin;
use std::sync::{Arc, Mutex};

/// The `rcl_interfaces/msg/ParameterType` constants.
#[allow(missing_docs)]
pub mod ptype {
    pub const NOT_SET: u8 = 0;
    pub const BOOL: u8 = 1;
    pub const INTEGER: u8 = 2;
    pub const DOUBLE: u8 = 3;
    pub const STRING: u8 = 4;
    pub const BYTE_ARRAY: u8 = 5;
    pub const BOOL_ARRAY: u8 = 6;
    pub const INTEGER_ARRAY: u8 = 7;
    pub const DOUBLE_ARRAY: u8 = 8;
    pub const STRING_ARRAY: u8 = 9;
}

/// `rcl_interfaces/msg/ParameterValue` of a value.
pub fn value_to_msg(v: &ParameterValue) -> ParameterValueMsg {
    use ParameterValue as V;
    let mut m = ParameterValueMsg::default();
    m.type_ = type_of(v);
    match v {
        V::NotSet => {}
        V::Bool(b) => m.bool_value = *b,
        V::Integer(i) => m.integer_value = *i,
        V::Double(x) => m.double_value = *x,
        V::String(s) => m.string_value = s.clone(),
        V::BoolArray(a) => m.bool_array_value = a.clone(),
        V::ByteArray(a) => m.byte_array_value = a.clone(),
        V::IntegerArray(a) => m.integer_array_value = a.clone(),
        V::DoubleArray(a) => m.double_array_value = a.clone(),
        V::StringArray(a) => m.string_array_value = a.clone(),
    }
    m
}

/// The value of an `rcl_interfaces/msg/ParameterValue`.
pub fn value_from_msg(m: &ParameterValueMsg) -> ParameterValue {
    use ParameterValue as V;
    match m.type_ {
        ptype::BOOL => V::Bool(m.bool_value),
        ptype::INTEGER => V::Integer(m.integer_value),
        ptype::DOUBLE => V::Double(m.double_value),
        ptype::STRING => V::String(m.string_value.clone()),
        ptype::BYTE_ARRAY => V::ByteArray(m.byte_array_value.clone()),
        ptype::BOOL_ARRAY => V::BoolArray(m.bool_array_value.clone()),
        ptype::INTEGER_ARRAY => V::IntegerArray(m.integer_array_value.clone()),
        ptype::DOUBLE_ARRAY => V::DoubleArray(m.double_array_value.clone()),
        ptype::STRING_ARRAY => V::StringArray(m.string_array_value.clone()),
        _ => V::NotSet,
    }
}

/// The `ParameterType` constant of a value.
pub fn type_of(v: &ParameterValue) -> u8 {
    use ParameterValue as V;
    match v {
        V::NotSet => ptype::NOT_SET,
        V::Bool(_) => ptype::BOOL,
        V::Integer(_) => ptype::INTEGER,
        V::Double(_) => ptype::DOUBLE,
        V::String(_) => ptype::STRING,
        V::BoolArray(_) => ptype::BOOL_ARRAY,
        V::ByteArray(_) => ptype::BYTE_ARRAY,
        V::IntegerArray(_) => ptype::INTEGER_ARRAY,
        V::DoubleArray(_) => ptype::DOUBLE_ARRAY,
        V::StringArray(_) => ptype::STRING_ARRAY,
    }
}

/// The descriptor of a declared parameter (`ros2 param describe`): type, description, read-only
/// flag, a range for bounded numbers, the allowed strings or an open bound as
/// `additional_constraints`. An undeclared name gets an empty descriptor (type not set).
pub fn descriptor(store: &ParamStore, name: &str) -> ParameterDescriptor {
    let mut d = ParameterDescriptor { name: name.to_string(), ..Default::default() };
    let Some(spec) = store.spec(name) else {
        return d;
    };
    d.type_ = type_of(store.value(name));
    d.description = spec.description.to_string();
    d.read_only = spec.read_only;
    match spec.kind {
        Kind::Double { min, max } => {
            if max < f64::MAX {
                d.floating_point_range = vec![FloatingPointRange { from_value: min, to_value: max, step: 0.0 }];
            } else {
                d.additional_constraints = format!(">= {min}");
            }
        }
        Kind::Int { min, max } => d.integer_range = vec![IntegerRange { from_value: min, to_value: max, step: 0 }],
        Kind::Str { choices } if !choices.is_empty() => d.additional_constraints = format!("one of: {}", choices.join(", ")),
        Kind::IntArray => d.additional_constraints = "integers >= 0".into(),
        _ => {}
    }
    d
}

type Handler = Pin<Box<dyn Future<Output = ()>>>;

/// Creates the parameter services and the `/parameter_events` publisher on `node`, after
/// registering the store's parameters (start-up overrides from `--ros-args` applied and
/// validated). Returns the future serving them (spawn it on the node's executor) and the stream
/// of accepted changes `(name, new value)`. Publishes the start-up event at once.
pub fn start(node: &mut r2r::Node, store: Arc<Mutex<ParamStore>>) -> Result<(impl Future<Output = ()>, impl futures::Stream<Item = (String, ParameterValue)>)> {
    {
        let mut params = node.params.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
        let mut s = store.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
        s.register_parameters("", None, &mut params).map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    let fqn = node.fully_qualified_name()?;
    let events = node.create_publisher::<ParameterEvent>("/parameter_events", QosProfile::parameter_events())?;
    let events = Arc::new(events);
    let (tx, rx) = mpsc::unbounded::<(String, ParameterValue)>();
    let event = {
        let fqn = fqn.clone();
        move |new: Vec<ParameterMsg>, changed: Vec<ParameterMsg>| ParameterEvent { stamp: super::convert::time_from_ns(crate::rt::clock::realtime_ns()), node: fqn.clone(), new_parameters: new, changed_parameters: changed, deleted_parameters: vec![] }
    };
    {
        let s = store.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
        let all = s.names().map(|n| ParameterMsg { name: n.to_string(), value: value_to_msg(s.value(n)) }).collect();
        events.publish(&event(all, vec![]))?;
    }
    let name = node.name()?;
    let qos = QosProfile::services_default();
    let mut handlers: Vec<Handler> = Vec::new();

    // set one by one; `atomic`: all or none
    let apply = {
        let store = store.clone();
        let node_params = node.params.clone();
        let events = events.clone();
        let event = event.clone();
        let tx = tx.clone();
        move |params: &[ParameterMsg], atomic: bool| -> Vec<SetParametersResult> {
            let mut results = Vec::new();
            let mut changed = Vec::new();
            {
                let Ok(mut s) = store.lock() else {
                    return vec![SetParametersResult { successful: false, reason: "internal error".into() }; params.len()];
                };
                if atomic {
                    for p in params {
                        if let Err(e) = s.check_parameter(&p.name, &value_from_msg(&p.value)) {
                            return vec![SetParametersResult { successful: false, reason: format!("{}: {e}", p.name) }];
                        }
                    }
                }
                for p in params {
                    let v = value_from_msg(&p.value);
                    let before = s.value(&p.name).clone();
                    match s.set(&p.name, &v) {
                        Ok(()) => {
                            let now = s.value(&p.name).clone();
                            if now != before {
                                if let Ok(mut np) = node_params.lock() {
                                    if let Some(e) = np.get_mut(&p.name) {
                                        e.value = now.clone();
                                    }
                                }
                                changed.push(ParameterMsg { name: p.name.clone(), value: value_to_msg(&now) });
                                let _ = tx.unbounded_send((p.name.clone(), now));
                            }
                            results.push(SetParametersResult { successful: true, reason: String::new() });
                        }
                        Err(e) => results.push(SetParametersResult { successful: false, reason: e.to_string() }),
                    }
                }
            }
            if !changed.is_empty() {
                let _ = events.publish(&event(vec![], changed));
            }
            if atomic {
                let ok = results.iter().all(|r| r.successful);
                let reason = results.iter().map(|r| r.reason.as_str()).filter(|r| !r.is_empty()).collect::<Vec<_>>().join("; ");
                return vec![SetParametersResult { successful: ok, reason }];
            }
            results
        }
    };

    let set = node.create_service::<SetParameters::Service>(&format!("{name}/set_parameters"), qos.clone())?;
    let f = apply.clone();
    handlers.push(Box::pin(set.for_each(move |req| {
        let results = f(&req.message.parameters, false);
        let _ = req.respond(SetParameters::Response { results });
        future::ready(())
    })));

    let set_atomic = node.create_service::<SetParametersAtomically::Service>(&format!("{name}/set_parameters_atomically"), qos.clone())?;
    let f = apply;
    handlers.push(Box::pin(set_atomic.for_each(move |req| {
        let mut r = f(&req.message.parameters, true);
        let _ = req.respond(SetParametersAtomically::Response { result: r.pop().unwrap_or(SetParametersResult { successful: true, reason: String::new() }) });
        future::ready(())
    })));

    let get = node.create_service::<GetParameters::Service>(&format!("{name}/get_parameters"), qos.clone())?;
    let st = store.clone();
    handlers.push(Box::pin(get.for_each(move |req| {
        let values = match st.lock() {
            Ok(s) => req.message.names.iter().map(|n| value_to_msg(s.value(n))).collect(),
            Err(_) => vec![],
        };
        let _ = req.respond(GetParameters::Response { values });
        future::ready(())
    })));

    let types = node.create_service::<GetParameterTypes::Service>(&format!("{name}/get_parameter_types"), qos.clone())?;
    let st = store.clone();
    handlers.push(Box::pin(types.for_each(move |req| {
        let types = match st.lock() {
            Ok(s) => req.message.names.iter().map(|n| type_of(s.value(n))).collect(),
            Err(_) => vec![],
        };
        let _ = req.respond(GetParameterTypes::Response { types });
        future::ready(())
    })));

    let describe = node.create_service::<DescribeParameters::Service>(&format!("{name}/describe_parameters"), qos.clone())?;
    let st = store.clone();
    handlers.push(Box::pin(describe.for_each(move |req| {
        let descriptors = match st.lock() {
            Ok(s) => req.message.names.iter().map(|n| descriptor(&s, n)).collect(),
            Err(_) => vec![],
        };
        let _ = req.respond(DescribeParameters::Response { descriptors });
        future::ready(())
    })));

    let list = node.create_service::<ListParameters::Service>(&format!("{name}/list_parameters"), qos)?;
    let st = store;
    handlers.push(Box::pin(list.for_each(move |req| {
        let result = match st.lock() {
            Ok(s) => list_parameters(&s, &req.message.prefixes, req.message.depth),
            Err(_) => r2r::rcl_interfaces::msg::ListParametersResult::default(),
        };
        let _ = req.respond(ListParameters::Response { result });
        future::ready(())
    })));

    Ok((future::join_all(handlers).map(|_| ()), rx))
}

/// `~/list_parameters`: the declared names under `prefixes` (all without prefixes), at most
/// `depth` levels deep (0: any depth; no depth limit with prefixes), and their prefixes.
fn list_parameters(s: &ParamStore, prefixes: &[String], depth: u64) -> r2r::rcl_interfaces::msg::ListParametersResult {
    let mut result = r2r::rcl_interfaces::msg::ListParametersResult::default();
    for n in s.names() {
        let under = prefixes.is_empty() || prefixes.iter().any(|p| n == p || n.starts_with(&format!("{p}.")));
        let depth_ok = depth == 0 || (n.matches('.').count() as u64) < depth || !prefixes.is_empty();
        if under && depth_ok {
            result.names.push(n.to_string());
            if let Some((pre, _)) = n.rsplit_once('.') {
                if !result.prefixes.iter().any(|p| p == pre) {
                    result.prefixes.push(pre.to_string());
                }
            }
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rt::messages::JointLayout;

    #[test]
    fn descriptors_and_values() {
        let s = ParamStore::new(&JointLayout::default(), 100, 1e-9, &[]);
        let d = descriptor(&s, "time_mode");
        assert!(d.read_only);
        assert_eq!(d.type_, ptype::STRING);
        assert_eq!(d.additional_constraints, "one of: realtime, sim_time, lockstep");
        let d = descriptor(&s, "publish_rate_hz");
        assert!(!d.read_only);
        assert_eq!((d.floating_point_range[0].from_value, d.floating_point_range[0].to_value), (0.1, 100_000.0));
        let d = descriptor(&s, "rt_priority");
        assert_eq!((d.integer_range[0].from_value, d.integer_range[0].to_value), (1, 99));
        assert_eq!(descriptor(&s, "watchdog_timeout_s").additional_constraints, ">= 0");
        assert_eq!(descriptor(&s, "nope").type_, ptype::NOT_SET);
        for v in [ParameterValue::Bool(true), ParameterValue::Double(2.5), ParameterValue::StringArray(vec!["a".into()]), ParameterValue::IntegerArray(vec![1, 2])] {
            assert_eq!(value_from_msg(&value_to_msg(&v)), v);
        }
    }
}

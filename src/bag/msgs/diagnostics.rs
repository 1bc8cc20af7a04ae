//! `diagnostic_msgs/DiagnosticArray` and its parts.

use super::{Header, RosMessage, HEADER, TIME};
use crate::bag::cdr::{CdrError, CdrReader, CdrWriter};

/// `diagnostic_msgs/KeyValue`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KeyValue {
    /// Key.
    pub key: String,
    /// Value.
    pub value: String,
}

/// `diagnostic_msgs/DiagnosticStatus`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DiagnosticStatus {
    /// 0 OK, 1 WARN, 2 ERROR, 3 STALE.
    pub level: u8,
    /// Name.
    pub name: String,
    /// Message.
    pub message: String,
    /// Hardware id.
    pub hardware_id: String,
    /// Values.
    pub values: Vec<KeyValue>,
}

/// `diagnostic_msgs/DiagnosticArray`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DiagnosticArray {
    /// Header.
    pub header: Header,
    /// Statuses.
    pub status: Vec<DiagnosticStatus>,
}

impl RosMessage for DiagnosticArray {
    const NAME: &'static str = "diagnostic_msgs/msg/DiagnosticArray";
    const DEFINITION: &'static str = "std_msgs/Header header\ndiagnostic_msgs/DiagnosticStatus[] status\n";
    const DEPENDENCIES: &'static [(&'static str, &'static str)] = &[
        ("std_msgs/Header", HEADER),
        ("builtin_interfaces/Time", TIME),
        (
            "diagnostic_msgs/DiagnosticStatus",
            "byte OK=0\nbyte WARN=1\nbyte ERROR=2\nbyte STALE=3\nbyte level\nstring name\nstring message\nstring hardware_id\ndiagnostic_msgs/KeyValue[] values\n",
        ),
        ("diagnostic_msgs/KeyValue", "string key\nstring value\n"),
    ];

    fn read(r: &mut CdrReader) -> Result<Self, CdrError> {
        let header = Header::read(r)?;
        let n = r.seq_len("DiagnosticArray.status", 20)?;
        let mut status = Vec::with_capacity(n);
        for _ in 0..n {
            let level = r.u8("DiagnosticStatus.level")?;
            let name = r.string("DiagnosticStatus.name")?;
            let message = r.string("DiagnosticStatus.message")?;
            let hardware_id = r.string("DiagnosticStatus.hardware_id")?;
            let m = r.seq_len("DiagnosticStatus.values", 8)?;
            let mut values = Vec::with_capacity(m);
            for _ in 0..m {
                values.push(KeyValue { key: r.string("KeyValue.key")?, value: r.string("KeyValue.value")? });
            }
            status.push(DiagnosticStatus { level, name, message, hardware_id, values });
        }
        Ok(DiagnosticArray { header, status })
    }

    fn write(&self, w: &mut CdrWriter) {
        self.header.write(w);
        w.u32(self.status.len() as u32);
        for s in &self.status {
            w.u8(s.level);
            w.string(&s.name);
            w.string(&s.message);
            w.string(&s.hardware_id);
            w.u32(s.values.len() as u32);
            for kv in &s.values {
                w.string(&kv.key);
                w.string(&kv.value);
            }
        }
    }

    fn heap_bytes(&self) -> usize {
        let kv = |kv: &KeyValue| std::mem::size_of::<KeyValue>() + kv.key.len() + kv.value.len();
        let status = |st: &DiagnosticStatus| std::mem::size_of::<DiagnosticStatus>() + st.name.len() + st.message.len() + st.hardware_id.len() + st.values.iter().map(kv).sum::<usize>();
        self.header.heap_bytes() + self.status.iter().map(status).sum::<usize>()
    }

    fn stamp_ns(&self) -> Option<i64> {
        Some(self.header.stamp.to_ns())
    }
}

//! Little-endian CDR (XCDR1, as ROS 2's Fast DDS writes it) with the 4-byte encapsulation
//! header `00 01 00 00`.
//!
//! Alignment is relative to the first byte after the encapsulation header: a primitive of size
//! `n` starts at a multiple of `n` (8 for `float64`). No trailing padding is written after the
//! last field (the `rosbags` reader rejects the 4 bytes `rmw_serialize` appends).

/// The encapsulation header of little-endian plain CDR.
pub const CDR_LE_HEADER: [u8; 4] = [0x00, 0x01, 0x00, 0x00];

/// Serializes into a byte buffer.
#[derive(Debug)]
pub struct CdrWriter {
    buf: Vec<u8>,
}

impl Default for CdrWriter {
    fn default() -> Self {
        Self::new()
    }
}

impl CdrWriter {
    /// An empty message (the encapsulation header only).
    pub fn new() -> Self {
        let mut buf = Vec::with_capacity(256);
        buf.extend_from_slice(&CDR_LE_HEADER);
        CdrWriter { buf }
    }

    /// An empty message written into `buf` (cleared first; its capacity is reused).
    pub fn reusing(mut buf: Vec<u8>) -> Self {
        buf.clear();
        buf.extend_from_slice(&CDR_LE_HEADER);
        CdrWriter { buf }
    }

    fn align(&mut self, n: usize) {
        let pos = self.buf.len() - 4;
        let pad = (n - pos % n) % n;
        self.buf.extend(std::iter::repeat_n(0u8, pad));
    }
    /// `uint8` / `byte` / `bool`.
    pub fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }
    /// `int32`.
    pub fn i32(&mut self, v: i32) {
        self.align(4);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    /// `uint32`.
    pub fn u32(&mut self, v: u32) {
        self.align(4);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    /// `float64`.
    pub fn f64(&mut self, v: f64) {
        self.align(8);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    /// `float32`.
    pub fn f32(&mut self, v: f32) {
        self.align(4);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    /// `uint8[]`.
    pub fn u8_seq(&mut self, v: &[u8]) {
        self.u32(v.len() as u32);
        self.buf.extend_from_slice(v);
    }
    /// `string`: length including the terminating NUL, the bytes, the NUL.
    pub fn string(&mut self, s: &str) {
        self.u32(s.len() as u32 + 1);
        self.buf.extend_from_slice(s.as_bytes());
        self.buf.push(0);
    }
    /// `float64[]`.
    pub fn f64_seq(&mut self, v: &[f64]) {
        self.u32(v.len() as u32);
        for &x in v {
            self.f64(x);
        }
    }
    /// `float64[N]` (no length prefix).
    pub fn f64_array(&mut self, v: &[f64]) {
        for &x in v {
            self.f64(x);
        }
    }
    /// `string[]`.
    pub fn string_seq(&mut self, v: &[String]) {
        self.u32(v.len() as u32);
        for s in v {
            self.string(s);
        }
    }
    /// The serialized message.
    pub fn finish(self) -> Vec<u8> {
        self.buf
    }
}

/// A CDR decoding error: what was being read and at which byte.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("CDR: {what} at byte {offset}: {reason}")]
pub struct CdrError {
    /// The field or type being read.
    pub what: &'static str,
    /// Byte offset in the message (after the encapsulation header).
    pub offset: usize,
    /// What is wrong.
    pub reason: &'static str,
}

/// Deserializes from a CDR message (encapsulation header included).
#[derive(Debug)]
pub struct CdrReader<'a> {
    data: &'a [u8],
    pos: usize,
}

/// Longest sequence accepted while decoding (guards against garbage lengths).
const MAX_SEQ: usize = 1 << 24;

impl<'a> CdrReader<'a> {
    /// A reader of `msg`; fails unless it starts with a little-endian CDR header.
    pub fn new(msg: &'a [u8]) -> Result<Self, CdrError> {
        if msg.len() < 4 {
            return Err(CdrError { what: "encapsulation header", offset: 0, reason: "message shorter than 4 bytes" });
        }
        if msg[0] != 0 || msg[1] != 1 {
            return Err(CdrError { what: "encapsulation header", offset: 0, reason: "not little-endian plain CDR (00 01)" });
        }
        Ok(CdrReader { data: &msg[4..], pos: 0 })
    }
    fn err(&self, what: &'static str, reason: &'static str) -> CdrError {
        CdrError { what, offset: self.pos, reason }
    }
    fn take(&mut self, n: usize, align: usize, what: &'static str) -> Result<&'a [u8], CdrError> {
        let pad = (align - self.pos % align) % align;
        let start = self.pos + pad;
        if start + n > self.data.len() {
            return Err(self.err(what, "message ends early"));
        }
        self.pos = start + n;
        Ok(&self.data[start..start + n])
    }
    /// `uint8`.
    pub fn u8(&mut self, what: &'static str) -> Result<u8, CdrError> {
        Ok(self.take(1, 1, what)?[0])
    }
    /// `int32`.
    pub fn i32(&mut self, what: &'static str) -> Result<i32, CdrError> {
        Ok(i32::from_le_bytes(self.take(4, 4, what)?.try_into().unwrap()))
    }
    /// `uint32`.
    pub fn u32(&mut self, what: &'static str) -> Result<u32, CdrError> {
        Ok(u32::from_le_bytes(self.take(4, 4, what)?.try_into().unwrap()))
    }
    /// `float64`.
    pub fn f64(&mut self, what: &'static str) -> Result<f64, CdrError> {
        Ok(f64::from_le_bytes(self.take(8, 8, what)?.try_into().unwrap()))
    }
    /// `float32`.
    pub fn f32(&mut self, what: &'static str) -> Result<f32, CdrError> {
        Ok(f32::from_le_bytes(self.take(4, 4, what)?.try_into().unwrap()))
    }
    /// `uint8[]`.
    pub fn u8_seq(&mut self, what: &'static str) -> Result<Vec<u8>, CdrError> {
        let n = self.seq_len(what, 1)?;
        Ok(self.take(n, 1, what)?.to_vec())
    }
    /// A sequence length, checked against the bytes left (each element takes ≥ `min_elem` bytes).
    pub fn seq_len(&mut self, what: &'static str, min_elem: usize) -> Result<usize, CdrError> {
        let n = self.u32(what)? as usize;
        if n > MAX_SEQ || n * min_elem > self.data.len().saturating_sub(self.pos) {
            return Err(self.err(what, "sequence length beyond the message"));
        }
        Ok(n)
    }
    /// `string` (invalid UTF-8 is replaced).
    pub fn string(&mut self, what: &'static str) -> Result<String, CdrError> {
        let n = self.seq_len(what, 1)?;
        if n == 0 {
            return Ok(String::new());
        }
        let b = self.take(n, 1, what)?;
        Ok(String::from_utf8_lossy(&b[..n - 1]).into_owned())
    }
    /// `float64[]`.
    pub fn f64_seq(&mut self, what: &'static str) -> Result<Vec<f64>, CdrError> {
        let n = self.seq_len(what, 8)?;
        (0..n).map(|_| self.f64(what)).collect()
    }
    /// `float64[N]`.
    pub fn f64_array<const N: usize>(&mut self, what: &'static str) -> Result<[f64; N], CdrError> {
        let mut a = [0.0; N];
        for x in &mut a {
            *x = self.f64(what)?;
        }
        Ok(a)
    }
    /// `string[]`.
    pub fn string_seq(&mut self, what: &'static str) -> Result<Vec<String>, CdrError> {
        let n = self.seq_len(what, 4)?;
        (0..n).map(|_| self.string(what)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alignment_is_relative_to_the_payload() {
        let mut w = CdrWriter::new();
        w.u8(7);
        w.f64(1.5);
        w.string("ab");
        w.f64_seq(&[2.0]);
        let b = w.finish();
        // payload offsets: u8 0, pad, f64 8..16, len 16..20, "ab\0" 20..23, pad, len 24..28,
        // pad, f64 32..40
        let mut r = CdrReader::new(&b).unwrap();
        assert_eq!(r.u8("a").unwrap(), 7);
        assert_eq!(r.f64("b").unwrap(), 1.5);
        assert_eq!(r.string("c").unwrap(), "ab");
        assert_eq!(r.f64_seq("d").unwrap(), vec![2.0]);
        assert_eq!(&b[..4], &CDR_LE_HEADER);
        // the f64 after the u8 starts 8 bytes into the payload
        assert_eq!(f64::from_le_bytes(b[12..20].try_into().unwrap()), 1.5);
        // no trailing padding
        assert_eq!(b.len(), 4 + 40);
    }

    #[test]
    fn truncated_input_is_an_error_not_a_panic() {
        let mut w = CdrWriter::new();
        w.f64_seq(&[1.0, 2.0, 3.0]);
        let b = w.finish();
        for cut in 0..b.len() {
            let r = CdrReader::new(&b[..cut]).and_then(|mut r| r.f64_seq("x"));
            assert!(r.is_err(), "cut at {cut}");
        }
    }
}

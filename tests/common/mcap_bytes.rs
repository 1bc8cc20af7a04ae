//! Byte-level surgery on MCAP files as our writer makes them (uncompressed chunks): finding
//! chunk records and rewriting them compressed, for the bag reader's hardening tests and the
//! fuzzer's bag generators. Layout: the MCAP specification's records (opcode u8, length u64,
//! content); a chunk's content is start and end time (u64), uncompressed size (u64),
//! uncompressed CRC (u32), compression (u32 length + text) and the records (u64 length + bytes).

/// The (body offset, body length) of every top-level chunk record of an MCAP file.
pub fn chunks(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut at = 8;
    while at + 9 <= bytes.len() {
        let op = bytes[at];
        let len = u64::from_le_bytes(bytes[at + 1..at + 9].try_into().unwrap()) as usize;
        if op == 0x0F {
            break; // footer
        }
        if op == 0x06 {
            out.push((at + 9, len));
        }
        at += 9 + len;
    }
    out
}

/// Rewrites the MCAP file `bytes` (as our writer makes it: uncompressed chunks) with every
/// chunk compressed with `compression` (`zstd`, `lz4`, or `""`: left uncompressed), after `edit(chunk index, records)`
/// changes the records of a chunk (its CRC is computed after the edit). The summary section is
/// dropped (the reader reads the data section linearly).
pub fn compress_chunks(
    bytes: &[u8],
    compression: &str,
    edit: impl Fn(usize, &mut Vec<u8>),
) -> Vec<u8> {
    use std::io::Write;
    let mut out = bytes[..8].to_vec();
    let (mut at, mut index) = (8, 0);
    while at + 9 <= bytes.len() {
        let op = bytes[at];
        let len = u64::from_le_bytes(bytes[at + 1..at + 9].try_into().unwrap()) as usize;
        if op == 0x0F {
            break; // data end
        }
        let body = &bytes[at + 9..at + 9 + len];
        if op == 0x06 {
            assert_eq!(&body[28..32], &[0, 0, 0, 0], "an uncompressed chunk");
            let mut records = body[40..].to_vec();
            edit(index, &mut records);
            index += 1;
            let packed = match compression {
                "" => records.clone(),
                "zstd" => ruzstd::encoding::compress_to_vec(
                    &records[..],
                    ruzstd::encoding::CompressionLevel::Fastest,
                ),
                _ => {
                    let mut e = lz4_flex::frame::FrameEncoder::new(Vec::new());
                    e.write_all(&records).unwrap();
                    e.finish().unwrap()
                }
            };
            let mut chunk = body[..16].to_vec();
            chunk.extend((records.len() as u64).to_le_bytes());
            chunk.extend(crc32fast::hash(&records).to_le_bytes());
            chunk.extend((compression.len() as u32).to_le_bytes());
            chunk.extend(compression.as_bytes());
            chunk.extend((packed.len() as u64).to_le_bytes());
            chunk.extend(&packed);
            out.push(0x06);
            out.extend((chunk.len() as u64).to_le_bytes());
            out.extend(chunk);
        } else {
            out.extend(&bytes[at..at + 9 + len]);
        }
        at += 9 + len;
    }
    out.push(0x0F); // data end, no CRC
    out.extend(4u64.to_le_bytes());
    out.extend(0u32.to_le_bytes());
    out.push(0x02); // footer: no summary
    out.extend(20u64.to_le_bytes());
    out.extend([0u8; 20]);
    out.extend(&bytes[..8]);
    out
}

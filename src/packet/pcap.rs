//! Packets to and from capture files: classic pcap is written (what
//! tcpdump writes and every tool reads); pcap and pcapng are read. Only
//! Ethernet captures make sense for XDP and tc programs.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek};
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use pcap_file::DataLink;
use pcap_file::pcap::{PcapHeader, PcapPacket, PcapReader, PcapWriter};
use pcap_file::pcapng::{Block, PcapNgReader};

/// The largest frame a capture carries (a jumbo frame).
const SNAPLEN: u32 = 65_535;
const PCAPNG_MAGIC: [u8; 4] = [0x0a, 0x0d, 0x0d, 0x0a];

/// Every packet of a pcap or pcapng file of Ethernet frames, in order.
pub fn read(path: &Path) -> Result<Vec<Vec<u8>>> {
    let name = path.display();
    let mut file = BufReader::new(File::open(path).with_context(|| format!("cannot open {name}"))?);
    let mut magic = [0u8; 4];
    file.read_exact(&mut magic).with_context(|| format!("{name} is too short to be a capture file"))?;
    file.rewind()?;
    let mut out = Vec::new();
    if magic == PCAPNG_MAGIC {
        let mut r = PcapNgReader::new(file).map_err(|e| anyhow::anyhow!("{name} is not a pcapng file ({e})"))?;
        while let Some(block) = r.next_block() {
            let block = block.map_err(|e| read_error(&name, out.len() + 1, e))?.into_owned();
            let (data, orig_len) = match block {
                Block::EnhancedPacket(p) => {
                    let link = r.packet_interface(&p).map(|i| i.linktype);
                    if link != Some(DataLink::ETHERNET) {
                        bail!(
                            "{name}: packet {} is not an Ethernet frame (link type {link:?}); XDP and tc programs see Ethernet",
                            out.len() + 1
                        );
                    }
                    (p.data.into_owned(), p.original_len)
                }
                Block::SimplePacket(p) => (p.data.into_owned(), p.original_len),
                _ => continue,
            };
            out.push(whole(&name, out.len() + 1, data, orig_len)?);
        }
    } else {
        let mut r = PcapReader::new(file).map_err(|e| anyhow::anyhow!("{name} is not a pcap or pcapng file ({e})"))?;
        let link = r.header().datalink;
        if link != DataLink::ETHERNET {
            bail!("{name} captures link type {link:?}, not Ethernet; XDP and tc programs see Ethernet frames");
        }
        while let Some(p) = r.next_packet() {
            let p = p.map_err(|e| read_error(&name, out.len() + 1, e))?;
            out.push(whole(&name, out.len() + 1, p.data.into_owned(), p.orig_len)?);
        }
    }
    if out.is_empty() {
        bail!("{name} holds no packets");
    }
    Ok(out)
}

/// What went wrong reading packet `n`, in words: the crate's own
/// messages ("Error reading bytes") do not say that a file ends early.
fn read_error(name: &std::path::Display<'_>, n: usize, e: pcap_file::PcapError) -> anyhow::Error {
    use pcap_file::PcapError;
    match e {
        PcapError::IncompleteBuffer => {
            anyhow::anyhow!(
                "{name}: the file ends inside packet {n} (a truncated copy, or a capture still being written?)"
            )
        }
        PcapError::IoError(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
            anyhow::anyhow!(
                "{name}: the file ends inside packet {n} (a truncated copy, or a capture still being written?)"
            )
        }
        PcapError::IoError(io) => anyhow::anyhow!("{name}: reading packet {n}: {io}"),
        other => anyhow::anyhow!("{name}: packet {n}: {other}"),
    }
}

/// A packet captured whole, or an error saying it was cut.
fn whole(name: &std::path::Display<'_>, n: usize, data: Vec<u8>, orig_len: u32) -> Result<Vec<u8>> {
    if (data.len() as u32) < orig_len {
        bail!(
            "{name}: packet {n} was captured truncated ({} of {orig_len} bytes); capture with a larger snap length",
            data.len()
        );
    }
    Ok(data)
}

/// Writes `packets` as a classic pcap of Ethernet frames, one microsecond
/// apart so they keep their order in every viewer.
pub fn write(path: &Path, packets: &[&[u8]]) -> Result<()> {
    let file = File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    let header = PcapHeader { snaplen: SNAPLEN, datalink: DataLink::ETHERNET, ..Default::default() };
    let mut w =
        PcapWriter::with_header(BufWriter::new(file), header).with_context(|| format!("writing {}", path.display()))?;
    for (i, p) in packets.iter().enumerate() {
        let packet = PcapPacket::new(Duration::from_micros(i as u64), p.len() as u32, p);
        w.write_packet(&packet).with_context(|| format!("writing {}", path.display()))?;
    }
    use std::io::Write as _;
    w.into_writer().flush().with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_cut_inside_a_packet_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cut.pcap");
        write(&path, &[&[7u8; 60], &[8u8; 60]]).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 10]).unwrap();
        let e = read(&path).unwrap_err().to_string();
        assert!(e.contains("the file ends inside packet 2"), "{e}");
        assert!(!e.contains("Error reading bytes"), "{e}");
    }

    #[test]
    fn written_packets_read_back_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.pcap");
        let a = vec![1u8; 60];
        let b = vec![2u8; 1514];
        write(&path, &[&a, &b]).unwrap();
        assert_eq!(read(&path).unwrap(), vec![a, b]);
        std::fs::write(&path, b"not a capture").unwrap();
        assert!(read(&path).unwrap_err().to_string().contains("is not a pcap or pcapng file"));
    }
}

//! The packet language's packets as Wireshark decodes them (tshark,
//! installed by setup.sh): TCP options and IPv6 extension headers, built
//! from a spec, read back field by field and without a warning.

use crate::common;

use std::process::Command;

use bpfbench::packet::{PacketSpec, pcap};

/// Has tshark decode the packets of `specs` (one each; `label` names the
/// test's own folder) and checks that its decoding holds every one of
/// `needles`, with no warning and no field Wireshark calls wrong (a
/// checksum, a length).
fn assert_decoded_cleanly(label: &str, specs: &[&str], needles: &[&str]) {
    let packets: Vec<Vec<u8>> = specs.iter().map(|s| PacketSpec::parse(s).unwrap().packet(0).unwrap()).collect();
    let dir = common::temp_dir(label);
    let path = dir.join("built.pcap");
    pcap::write(&path, &packets.iter().map(Vec::as_slice).collect::<Vec<_>>()).unwrap();
    let t = Command::new("tshark")
        .arg("-V")
        .arg("-r")
        .arg(&path)
        .output()
        .expect("tshark is installed by scripts/setup.sh");
    let stderr = String::from_utf8_lossy(&t.stderr);
    let warnings: Vec<&str> = stderr.lines().filter(|l| !l.contains("Running as user")).collect();
    assert!(t.status.success() && warnings.is_empty(), "tshark: {warnings:?}");
    let text = String::from_utf8_lossy(&t.stdout);
    for needle in needles {
        assert!(text.contains(needle), "{needle} not in tshark's decoding:\n{text}");
    }
    for bad in ["Malformed", "incorrect", "Bogus", "[Expert Info (Warning"] {
        assert!(!text.contains(bad), "{bad} in tshark's decoding:\n{text}");
    }
}

#[test]
fn tcp_options_and_an_ipv6_fragment_header_decode_cleanly() {
    assert_decoded_cleanly(
        "packets-options",
        &[
            // A SYN as Linux sends it: MSS, SACK permitted, timestamps, window scale.
            "eth/ipv4/tcp(flags=S, mss=1460, sackok=1, ts=1000, tsecr=0, wscale=7)",
            // A SYN-ACK's timestamps alone, after two NOPs, and a payload.
            "eth/ipv4/tcp(flags=SA, ts=77, tsecr=1000)/payload(6)",
            // An IPv6 fragment: the first of several, carrying UDP.
            "eth/ipv6/ipv6frag(id=0x1234, m=1)/udp/payload(16)",
        ],
        &[
            "Options: (20 bytes), Maximum segment size, SACK permitted, Timestamps, No-Operation (NOP), Window scale",
            "Maximum segment size: 1460 bytes",
            "Timestamp value: 1000",
            "Window scale: 7 (multiply by 128)",
            "Timestamp value: 77",
            "Timestamp echo reply: 1000",
            "Fragment Header",
            "Identification: 0x00001234",
            "More Fragments: Yes",
        ],
    );
}

#[test]
fn tunnels_and_raw_bytes_anywhere_in_the_stack_decode_cleanly() {
    assert_decoded_cleanly(
        "packets-tunnels",
        &[
            // GRE carrying IPv4, and carrying an Ethernet frame (EtherType 0x6558).
            "eth/ipv4/gre/ipv4(dst=192.168.1.1)/tcp",
            "eth/ipv4/gre/eth(dst=02:00:00:00:00:aa)/ipv4/udp(dport=9)/payload(4)",
            // VXLAN on its port, an inner frame after it.
            "eth/ipv4/udp(dport=4789)/vxlan(vni=4242)/eth/ipv6/tcp",
            // Raw bytes in the middle: a GUE header (version 0, protocol 4: IPIP) before the inner packet.
            "eth/ipv4/udp(dport=6080)/raw(hex=00040000)/ipv4(src=10.1.1.1)/udp(dport=9)/payload(8)",
        ],
        &[
            "Generic Routing Encapsulation (IP)",
            "Generic Routing Encapsulation (Transparent Ethernet bridging)",
            "Destination Address: 192.168.1.1",
            "Virtual eXtensible Local Area Network",
            "VXLAN Network Identifier (VNI): 4242",
            "Destination: 02:00:00:00:00:aa",
        ],
    );
    // The raw bytes sit where they were written, the inner header after them.
    let p = PacketSpec::parse("eth/ipv4/udp(dport=6080)/raw(hex=00040000)/ipv4(src=10.1.1.1)/udp/payload(8)").unwrap();
    let bytes = p.packet(0).unwrap();
    assert_eq!(&bytes[42..46], &[0, 4, 0, 0]);
    assert_eq!(&bytes[46 + 12..46 + 16], &[10, 1, 1, 1]);
}

#[test]
fn options_that_do_not_fit_are_refused_naming_the_field() {
    let err = |s: &str| format!("{:#}", PacketSpec::parse(s).and_then(|p| p.packet(0)).unwrap_err());
    let nops = "01".repeat(40);
    assert!(err(&format!("eth/ipv4/tcp(options={nops}, mss=1460)")).contains("a header has room for 40"));
    assert!(err("eth/ipv4/tcp(tsecr=5)").contains("needs ts="));
}

#[test]
fn ipv6_option_headers_geneve_gue_and_qinq_decode_cleanly() {
    assert_decoded_cleanly(
        "packets-more",
        &[
            // Hop-by-hop with a router alert (MLD), padded to 8 bytes with PadN.
            "eth/ipv6/ipv6hbh(options=05020000)/icmpv6(type=143)",
            // Hop-by-hop, then destination options (empty: padding alone), then a fragment header.
            "eth/ipv6/ipv6hbh/ipv6dst/ipv6frag(m=1, id=7)/udp/payload(8)",
            // Geneve on its port, an inner Ethernet frame (protocol 0x6558) after it.
            "eth/ipv4/udp(dport=6081)/geneve(vni=77)/eth/ipv4/tcp",
            // GUE variant 0 carrying IPv4 (protocol 4), as the selftests' decapsulator takes it.
            "eth/ipv4/udp(dport=6080)/gue/ipv4(src=10.1.1.1)/udp(dport=9)/payload(8)",
            // QinQ: an 802.1ad service tag (0x88a8) around an 802.1Q customer tag.
            "eth(type=0x88a8)/vlan(id=100)/vlan(id=200)/ipv4/udp",
        ],
        &[
            "IPv6 Hop-by-Hop Option",
            "Router Alert",
            "Destination Options for IPv6",
            "Fragment Header",
            "Generic Network Virtualization Encapsulation",
            "Virtual Network Identifier (VNI): 0x00004d",
            "Protocol Type: Transparent Ethernet bridging (0x6558)",
            "IEEE 802.1ad, ID: 100",
            "802.1Q Virtual LAN, PRI: 0, DEI: 0, ID: 200",
        ],
    );
    // GUE's header is four bytes: version 0, then the protocol of what follows.
    let p = PacketSpec::parse("eth/ipv4/udp(dport=6080)/gue/ipv6/tcp").unwrap().packet(0).unwrap();
    assert_eq!(&p[42..46], &[0, 41, 0, 0]);
    // Hop-by-hop options: next header, length in 8-byte units less one, options, padding.
    let p = PacketSpec::parse("eth/ipv6/ipv6hbh(options=0502000000)/tcp").unwrap().packet(0).unwrap();
    assert_eq!(p[20], 0, "IPv6 next header: hop-by-hop");
    assert_eq!(&p[54..62], &[6, 0, 5, 2, 0, 0, 0, 0x00], "one byte of padding is Pad1");
}

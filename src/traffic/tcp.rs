//! The generator's TCP mode: one real connection, opened by the kernel and
//! then driven from XDP.
//!
//! The kernel's socket does the handshake (`connect()`, bound to the
//! interface), while the return-path program (tcp_acks.bpf.c) sits in XDP
//! on the interface and notes the receiver's SYN-ACK. Then the connection
//! is taken over: the return path drops the receiver's ACKs after reading
//! them, and the generator's TCP program sends in-window segments built
//! from that SYN-ACK. The kernel's socket sees nothing more and stays idle;
//! at the end it is closed in repair mode, which sends nothing.

use std::mem::MaybeUninit;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use etherparse::{PacketBuilder, TcpHeader, TcpOptionElement};
use libbpf_rs::skel::SkelBuilder;
use libbpf_rs::{MapCore, MapFlags, MapHandle};
use socket2::{Domain, Protocol, SockAddr, Socket, Type};

use crate::kernel::netdev::{XdpMode, attach_xdp};
use crate::kernel::skeleton::{self, map_handle};
use crate::record::traffic::TcpRecord;

crate::bpf_skeleton!("tcp_acks");

crate::impl_pod!(skel::types::tcp_conn, skel::types::tcp_synack);

type Conn = skel::types::tcp_conn;

/// How long connect() may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// No progress this long while blocked: send the window again. On a veth
/// the round trip is microseconds; this only has to outlast a receiver
/// that falls behind now and then.
const RTO: Duration = Duration::from_millis(100);
/// Our segments' TSval runs this far ahead of the SYN's, so it is never
/// older than what the kernel's socket sent during the handshake (the
/// receiver's PAWS check drops older ones).
const TSVAL_LEAD: u32 = 1000;
/// Ethernet + IP header bytes, by family.
const ETH_IPV4: usize = 14 + 20;
const ETH_IPV6: usize = 14 + 40;

/// A connection taken over by XDP. Dropping it closes the kernel's socket
/// without a FIN or RST and detaches the return path.
pub struct TcpConnection {
    /// The kernel's socket: idle once taken over.
    socket: Socket,
    /// The return-path program's XDP link on the interface.
    link: Option<OwnedFd>,
    /// The shared `struct tcp_conn`: the programs' to write once running.
    conn: MapHandle,
    /// The shared `struct tcp_ctl`: userspace's to write.
    ctl: MapHandle,
    pub local: SocketAddr,
    pub peer: SocketAddr,
    /// One frame: Ethernet to payload, varying words zero.
    pub template: Vec<u8>,
    /// Where the TCP header starts in the template.
    pub tcp_offset: usize,
    pub payload: usize,
    pub mss: u32,
    pub window_scale: Option<u8>,
    pub timestamps: bool,
    /// The highest ACK seen (at first the stream's first sequence number,
    /// our ISN + 1) and the stream bytes acknowledged up to it:
    /// sequence numbers wrap every 4 GiB, which a veth carries in ~3 s, so
    /// each read adds how far the ACK moved since the one before (reads
    /// come many times a second, far more often than every 2 GiB).
    acked: std::sync::Mutex<(u32, u64)>,
}

/// The acknowledged total after an ACK of `una`, from the last ACK
/// `last` and its total: a move of less than half the sequence space is
/// progress (across a wrap too); a larger one is an older ACK seen late.
fn advance((last, total): (u32, u64), una: u32) -> (u32, u64) {
    let moved = una.wrapping_sub(last);
    if moved < 1 << 31 { (una, total + u64::from(moved)) } else { (last, total) }
}

/// The byte at position `i` of every segment's payload: a stream read in
/// order repeats it with the segment's period, which a receiver can check.
pub fn payload_byte(i: usize) -> u8 {
    (i % 251) as u8
}

/// The kernel's `struct tcp_info` fields TCP mode needs.
struct TcpInfo {
    snd_mss: u32,
    options: u8,
}

fn tcp_info(socket: &Socket) -> Result<TcpInfo> {
    // SAFETY: zero is a valid tcp_info; the kernel fills up to `len`.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: a valid socket and buffer.
    let rc = unsafe {
        libc::getsockopt(socket.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_INFO, (&raw mut info).cast(), &mut len)
    };
    if rc != 0 {
        bail!("reading the connection's TCP_INFO: {}", std::io::Error::last_os_error());
    }
    Ok(TcpInfo { snd_mss: info.tcpi_snd_mss, options: info.tcpi_options })
}

/// tcpi_options bits (linux/tcp.h).
const TCPI_OPT_TIMESTAMPS: u8 = 1;
const TCPI_OPT_WSCALE: u8 = 4;

impl TcpConnection {
    /// Connects to `peer` over `interface` and takes the connection over.
    /// `frame_size` caps each segment's frame (default: a full MSS);
    /// `segments`, if given, is where the stream ends with FIN.
    pub fn open(
        interface: &str,
        peer: SocketAddr,
        frame_size: Option<usize>,
        segments: Option<u64>,
    ) -> Result<TcpConnection> {
        let socket = Socket::new(Domain::for_address(peer), Type::STREAM, Some(Protocol::TCP))
            .context("creating a TCP socket")?;
        socket
            .bind_device(Some(interface.as_bytes()))
            .with_context(|| format!("binding the TCP socket to {interface}"))?;
        let any: SocketAddr = match peer.ip() {
            IpAddr::V4(_) => (std::net::Ipv4Addr::UNSPECIFIED, 0).into(),
            IpAddr::V6(_) => (std::net::Ipv6Addr::UNSPECIFIED, 0).into(),
        };
        socket.bind(&any.into()).context("binding the TCP socket to a local port")?;
        let local_port = sock_addr(&socket.local_addr()?)?.port();

        // The return path goes in first: it must see the SYN-ACK.
        let mut storage = MaybeUninit::uninit();
        let mut open =
            skel::TcpAcksSkelBuilder::default().open(&mut storage).context("opening the TCP return-path program")?;
        let ro = open.maps.rodata_data.as_deref_mut().context("the return-path program has no .rodata")?;
        match peer.ip() {
            IpAddr::V4(a) => ro.filter.peer_addr[..4].copy_from_slice(&a.octets()),
            IpAddr::V6(a) => {
                ro.filter.ipv6 = 1;
                ro.filter.peer_addr = a.octets();
            }
        }
        ro.filter.peer_port = peer.port().to_be();
        ro.filter.local_port = local_port.to_be();
        let skel = skeleton::load(open, "the TCP return-path program")?;
        let conn = map_handle(&skel.maps.tcp_conn)?;
        let ctl = map_handle(&skel.maps.tcp_ctl)?;
        let link = attach_xdp(skel.progs.xdp_tcp_acks.as_fd().as_raw_fd(), interface, XdpMode::Native)
            .with_context(|| format!("TCP mode reads the receiver's ACKs in native XDP on {interface} (a veth, or a NIC driver with XDP, its hook free)"))?;

        socket
            .connect_timeout(&peer.into(), CONNECT_TIMEOUT)
            .with_context(|| format!("connecting to {peer} over {interface}; is something listening there?"))?;
        let local = sock_addr(&socket.local_addr()?)?;
        let info = tcp_info(&socket)?;
        let mut c = read_conn(&conn)?;
        if c.synack.seen == 0 {
            bail!(
                "connected to {peer}, but the SYN-ACK did not come in over {interface}; give the interface the route to {peer} takes"
            );
        }
        let timestamps = info.options & TCPI_OPT_TIMESTAMPS != 0 && c.synack.has_ts != 0;
        let window_scale =
            (info.options & TCPI_OPT_WSCALE != 0 && c.synack.wscale != 0xff).then_some(c.synack.wscale.min(14));

        let tcp_offset = if peer.is_ipv4() { ETH_IPV4 } else { ETH_IPV6 };
        let headers = tcp_offset + 20 + if timestamps { 12 } else { 0 };
        let payload = match frame_size {
            None => info.snd_mss as usize,
            Some(size) if size > headers => (size - headers).min(info.snd_mss as usize),
            Some(size) => {
                bail!("--size {size} leaves no room for data after this connection's {headers} bytes of headers")
            }
        };
        let template = build_template(&c.synack, local, peer, timestamps, payload)?;

        let first_seq = c.synack.ack;
        c.payload = payload as u32;
        c.wscale = u32::from(window_scale.unwrap_or(0));
        c.tsval = c.synack.tsecr.wrapping_add(TSVAL_LEAD);
        c.rto_ns = RTO.as_nanos() as u64;
        c.snd_una = first_seq;
        c.snd_nxt = first_seq;
        c.snd_max = first_seq;
        c.wnd = u32::from(c.synack.window);
        c.rcv_nxt = c.synack.seq.wrapping_add(1);
        c.peer_tsval = c.synack.tsval;
        if let Some(n) = segments {
            if n == 0 || n > u64::from(u32::MAX / 2) / payload as u64 {
                bail!(
                    "--count {n}: a TCP stream of 1 to {} segments of {payload} bytes fits in sequence space",
                    u64::from(u32::MAX / 2) / payload as u64
                );
            }
            c.fin_set = 1;
            c.fin_at = first_seq.wrapping_add(((n - 1) * payload as u64) as u32);
        }
        c.taken_over = 1;
        // The one write of the whole value: nothing runs on the connection yet.
        write_conn(&conn, &c)?;
        Ok(TcpConnection {
            socket,
            link: Some(link),
            conn,
            ctl,
            local,
            peer,
            template,
            tcp_offset,
            payload,
            mss: info.snd_mss,
            window_scale,
            timestamps,
            acked: std::sync::Mutex::new((first_seq, 0)),
        })
    }

    /// The shared connection map, for the sending program to use.
    pub fn map_fd(&self) -> BorrowedFd<'_> {
        self.conn.as_fd()
    }

    /// The shared control map, for the sending program to use.
    pub fn ctl_fd(&self) -> BorrowedFd<'_> {
        self.ctl.as_fd()
    }

    /// The template's TCP checksum, complemented: what the sender adds to.
    pub fn checksum_start(&self) -> u32 {
        let at = self.tcp_offset + 16;
        u32::from(!u16::from_be_bytes([self.template[at], self.template[at + 1]]))
    }

    fn state(&self) -> Result<Conn> {
        read_conn(&self.conn)
    }

    /// Ends the stream after what was sent: the next new segment carries FIN.
    pub fn request_fin(&self) -> Result<()> {
        self.ctl
            .update(&0u32.to_ne_bytes(), &1u32.to_ne_bytes(), MapFlags::ANY)
            .context("asking the TCP sender for its FIN")
    }

    /// Where the stream stands, from one read of the shared state.
    pub fn progress(&self) -> Result<TcpProgress> {
        Ok(self.progress_of(&self.state()?))
    }

    fn progress_of(&self, c: &Conn) -> TcpProgress {
        // The FIN takes one sequence number past the last segment's data.
        let finished = c.fin_set != 0 && seq_after(c.snd_una, c.fin_at.wrapping_add(self.payload as u32));
        let total = {
            let mut acked = self.acked.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            *acked = advance(*acked, c.snd_una);
            acked.1
        };
        let bytes_acked = total.saturating_sub(u64::from(finished));
        TcpProgress { bytes_acked, finished, reset: c.peer_rst != 0 }
    }

    /// What the connection did, for a run of `elapsed_s` seconds.
    pub fn record(&self, elapsed_s: f64) -> Result<TcpRecord> {
        let c = self.state()?;
        let p = self.progress_of(&c);
        Ok(TcpRecord {
            local: self.local.to_string(),
            peer: self.peer.to_string(),
            mss: self.mss,
            payload_bytes: self.payload,
            window_scale: self.window_scale,
            timestamps: self.timestamps,
            bytes_acked: p.bytes_acked,
            goodput_gbps: p.bytes_acked as f64 * 8.0 / elapsed_s.max(1e-9) / 1e9,
            segments: c.segments,
            retransmitted: c.retransmitted,
            rewinds_dupack: c.rewinds_dupack,
            rewinds_timer: c.rewinds_timer,
            acks: c.acks,
            dupacks: c.dupacks_total,
            fin_acked: p.finished,
            reset_by_peer: p.reset,
        })
    }
}

/// Where a TCP stream stands.
#[derive(Debug, Clone, Copy)]
pub struct TcpProgress {
    /// Stream bytes the receiver acknowledged (the FIN not counted).
    pub bytes_acked: u64,
    /// The receiver acknowledged the FIN: everything it was sent arrived.
    pub finished: bool,
    /// The receiver reset the connection.
    pub reset: bool,
}

/// TCP mode sends one connection's sequence space from one CPU.
pub fn check_threads(threads: usize) -> Result<()> {
    if threads != 1 {
        bail!("TCP mode sends one connection's stream from one thread; leave --threads at 1");
    }
    Ok(())
}

impl Drop for TcpConnection {
    fn drop(&mut self) {
        // In repair mode, close() sends nothing: the kernel's socket never
        // learnt of the stream, so its FIN or RST would be out of window.
        let on: libc::c_int = 1;
        // SAFETY: a valid socket and option value.
        unsafe {
            libc::setsockopt(
                self.socket.as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_REPAIR,
                (&raw const on).cast(),
                size_of::<libc::c_int>() as _,
            );
        }
        // The socket closes with the struct; the link goes last, so no
        // frame of the connection reaches the socket while it closes.
        let _ = self.link.take();
    }
}

fn sock_addr(a: &SockAddr) -> Result<SocketAddr> {
    a.as_socket().context("the TCP socket has no IP address")
}

/// b is before a, modulo 2^32.
fn seq_after(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

fn read_conn(map: &MapHandle) -> Result<Conn> {
    let bytes = map.lookup(&0u32.to_ne_bytes(), MapFlags::ANY)?.context("reading the TCP connection's state")?;
    Ok(bytemuck::pod_read_unaligned(&bytes))
}

fn write_conn(map: &MapHandle, c: &Conn) -> Result<()> {
    map.update(&0u32.to_ne_bytes(), bytemuck::bytes_of(c), MapFlags::ANY).context("writing the TCP connection's state")
}

/// One segment as the sender sends it, with sequence, ACK and timestamp
/// words zero (the sender writes them and patches the checksum).
fn build_template(
    s: &skel::types::tcp_synack,
    local: SocketAddr,
    peer: SocketAddr,
    timestamps: bool,
    payload: usize,
) -> Result<Vec<u8>> {
    let mut tcp = TcpHeader::new(local.port(), peer.port(), 0, u16::MAX);
    tcp.ack = true;
    tcp.psh = true;
    if timestamps {
        tcp.set_options(&[TcpOptionElement::Noop, TcpOptionElement::Noop, TcpOptionElement::Timestamp(0, 0)])
            .map_err(|e| anyhow::anyhow!("TCP options: {e}"))?;
    }
    let eth = PacketBuilder::ethernet2(s.dst_mac, s.src_mac);
    let ip = match (local.ip(), peer.ip()) {
        (IpAddr::V4(l), IpAddr::V4(p)) => eth.ipv4(l.octets(), p.octets(), 64),
        (IpAddr::V6(l), IpAddr::V6(p)) => eth.ipv6(l.octets(), p.octets(), 64),
        _ => bail!("the connection's local address {local} and peer {peer} are of different families"),
    };
    let body: Vec<u8> = (0..payload).map(payload_byte).collect();
    let builder = ip.tcp_header(tcp);
    let mut frame = Vec::with_capacity(builder.size(payload));
    builder.write(&mut frame, &body).context("building the TCP template")?;
    Ok(frame)
}

#[cfg(test)]
mod tests {
    use super::advance;

    #[test]
    fn acknowledged_bytes_count_on_past_the_sequence_space() {
        // A stream starting 1000 below the wrap, acknowledged in 1 GiB steps: 5 GiB in all.
        let first = u32::MAX - 999;
        let mut at = (first, 0u64);
        for step in 1..=5u64 {
            at = advance(at, first.wrapping_add((step << 30) as u32));
        }
        assert_eq!(at.1, 5 << 30);
        // An older ACK seen late moves nothing.
        assert_eq!(advance(at, at.0.wrapping_sub(10)), at);
    }
}

//! Sockets put into an object's sockmap (or sockhash) and taken out again.
//! A socket takes the sk_msg and sk_skb programs its map has when it joins
//! and keeps them until it leaves (attaching or detaching a program later
//! does not reach it), so the sockets join after the programs attach and
//! leave before they detach.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use anyhow::{Context, Result, bail};
use libbpf_rs::libbpf_sys as sys;

/// A sockmap or sockhash of a loaded object, by its own descriptor.
#[derive(Debug)]
pub struct SockMap {
    map: OwnedFd,
    key_size: usize,
    value_size: usize,
    entries: u32,
}

impl SockMap {
    /// The map `map` (a duplicate of its descriptor), if it is a sockmap or sockhash.
    pub fn of(map: BorrowedFd<'_>) -> Result<SockMap> {
        let info = libbpf_rs::MapInfo::new(map).context("reading a map's info")?;
        let name = info.name().map(str::to_string).unwrap_or_default();
        let info = info.info;
        if !matches!(info.type_, sys::BPF_MAP_TYPE_SOCKMAP | sys::BPF_MAP_TYPE_SOCKHASH) {
            bail!("map '{name}' is no sockmap or sockhash");
        }
        Ok(SockMap {
            map: map.try_clone_to_owned().context("duplicating the sockmap's descriptor")?,
            key_size: info.key_size as usize,
            value_size: info.value_size as usize,
            entries: info.max_entries,
        })
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.map.as_fd()
    }

    /// `sockets` put into the map at keys 0, 1, ... (a sockhash's keys:
    /// the index in its first bytes), until the returned guard drops.
    pub fn join<'m>(&'m self, sockets: &[BorrowedFd<'_>]) -> Result<Joined<'m>> {
        if sockets.len() > self.entries as usize {
            bail!("the sockmap holds {} sockets; the trigger needs {}", self.entries, sockets.len());
        }
        let mut joined = Joined { map: self, keys: Vec::new() };
        for (i, s) in sockets.iter().enumerate() {
            let key = self.key(i);
            let fd = s.as_raw_fd() as u64;
            let value = &fd.to_le_bytes()[..self.value_size.min(8)];
            crate::kernel::maps::update(self.fd(), &key, value)
                .with_context(|| format!("putting a socket of the trigger's into the sockmap at key {i}"))?;
            joined.keys.push(key);
        }
        Ok(joined)
    }

    fn key(&self, index: usize) -> Vec<u8> {
        let mut key = vec![0u8; self.key_size];
        let bytes = (index as u64).to_le_bytes();
        let n = key.len().min(8);
        key[..n].copy_from_slice(&bytes[..n]);
        key
    }
}

/// Sockets in a sockmap while this lives.
#[derive(Debug)]
pub struct Joined<'m> {
    map: &'m SockMap,
    keys: Vec<Vec<u8>>,
}

impl Drop for Joined<'_> {
    fn drop(&mut self) {
        for key in &self.keys {
            // SAFETY: a key of the map's size; the kernel copies it.
            unsafe { sys::bpf_map_delete_elem(self.map.map.as_raw_fd(), key.as_ptr().cast()) };
        }
    }
}

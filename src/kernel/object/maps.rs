//! An object's maps: their names and sizes before load, their descriptors
//! after, and the maps that stand for something else (ring and perf
//! buffers, the sockmap its sk_msg and sk_skb programs attach to, prog
//! arrays and their slots).

use std::os::fd::BorrowedFd;

use anyhow::{Context, Result, bail};
use libbpf_rs::libbpf_sys as sys;

use super::{ObjectFile, cstr, errno_error, walk_list};

impl ObjectFile {
    /// Sets map `name`'s value size before `prepare`.
    pub fn set_value_size(&mut self, name: &str, size: u32) -> Result<()> {
        // SAFETY: a map of this object, before prepare.
        self.size_map(name, "sizing the values of map", |m| unsafe { sys::bpf_map__set_value_size(m, size) })
    }

    /// Sets map `name`'s number of entries before `prepare`.
    pub fn set_max_entries(&mut self, name: &str, entries: u32) -> Result<()> {
        // SAFETY: a map of this object, before prepare.
        self.size_map(name, "sizing map", |m| unsafe { sys::bpf_map__set_max_entries(m, entries) })
    }

    /// One of libbpf's setters of a map's sizes, on map `name` (`doing`
    /// names it in the error).
    fn size_map(&mut self, name: &str, doing: &str, set: impl FnOnce(*mut sys::bpf_map) -> i32) -> Result<()> {
        let m = self.map_raw(name).with_context(|| format!("{} has no map '{name}'", self.path.display()))?;
        let rc = set(m);
        if rc != 0 {
            bail!("{doing} '{name}': {}", errno_error(rc));
        }
        Ok(())
    }

    /// The object's created ring buffer and perf buffer maps: name, fd, kind.
    pub fn buffer_maps(&self) -> Vec<(String, BorrowedFd<'_>, crate::kernel::buffers::BufferKind)> {
        use crate::kernel::buffers::BufferKind;
        let mut out = Vec::new();
        for m in self.maps_raw() {
            // SAFETY: a map of this object; -1 when it was not created.
            let (kind, fd) = unsafe { (sys::bpf_map__type(m), sys::bpf_map__fd(m)) };
            let kind = match kind {
                sys::BPF_MAP_TYPE_RINGBUF => BufferKind::Ring,
                sys::BPF_MAP_TYPE_PERF_EVENT_ARRAY => BufferKind::Perf,
                _ => continue,
            };
            if fd >= 0 {
                // SAFETY: the fd stays open as long as the object.
                out.push((cstr(unsafe { sys::bpf_map__name(m) }), unsafe { BorrowedFd::borrow_raw(fd) }, kind));
            }
        }
        out
    }

    /// The object's one sockmap or sockhash, which its sk_msg and sk_skb
    /// programs attach to.
    pub fn sockmap(&self) -> Result<crate::kernel::sockmap::SockMap> {
        let mut found = Vec::new();
        for m in self.maps_raw() {
            // SAFETY: a map of this object; -1 when it was not created.
            let (kind, fd) = unsafe { (sys::bpf_map__type(m), sys::bpf_map__fd(m)) };
            if matches!(kind, sys::BPF_MAP_TYPE_SOCKMAP | sys::BPF_MAP_TYPE_SOCKHASH) && fd >= 0 {
                found.push((cstr(unsafe { sys::bpf_map__name(m) }), fd));
            }
        }
        match found.as_slice() {
            // SAFETY: the fd stays open as long as the object; SockMap duplicates it.
            [(_, fd)] => crate::kernel::sockmap::SockMap::of(unsafe { BorrowedFd::borrow_raw(*fd) }),
            [] => bail!(
                "{} has no sockmap or sockhash: sk_msg and sk_skb programs attach to one, and the sockmap-message trigger's sockets join it",
                self.path.display()
            ),
            many => bail!(
                "{} has {} sockmaps ({}); bpfbench attaches its sk_msg and sk_skb programs to one, the object's only",
                self.path.display(),
                many.len(),
                many.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(", ")
            ),
        }
    }

    pub(super) fn maps_raw(&self) -> Vec<*mut sys::bpf_map> {
        // SAFETY: iterating the object's own map list.
        walk_list(|m| unsafe { sys::bpf_object__next_map(self.obj.as_ptr(), m) })
    }

    /// The map named `name`, or the one data section named so (".bss"):
    /// libbpf names a section's map after the object's file ("lpm_clan.bss"),
    /// which two builds of one program need not share.
    pub(super) fn map_raw(&self, name: &str) -> Option<*mut sys::bpf_map> {
        // SAFETY: maps of this object.
        let named = |m: &*mut sys::bpf_map| cstr(unsafe { sys::bpf_map__name(*m) });
        let maps = self.maps_raw();
        maps.iter().find(|m| named(m) == name).copied().or_else(|| {
            let mut sections = maps
                .iter()
                .filter(|m| name.starts_with('.') && named(m).len() > name.len() && named(m).ends_with(name));
            match (sections.next(), sections.next()) {
                (Some(m), None) => Some(*m),
                _ => None,
            }
        })
    }

    /// Whether the object has a map `name` (as [`Self::map_raw`] finds it).
    pub fn has_map(&self, name: &str) -> bool {
        self.map_raw(name).is_some()
    }

    /// Names of the object's maps (internal ones like `.bss` included).
    pub fn map_names(&self) -> Vec<String> {
        // SAFETY: maps of this object.
        self.maps_raw().into_iter().map(|m| cstr(unsafe { sys::bpf_map__name(m) })).collect()
    }

    /// "its maps are a, b" or "it has no maps", for errors.
    pub(super) fn maps_listed(&self) -> String {
        match self.map_names().as_slice() {
            [] => "it has no maps".into(),
            names => format!("its maps are {}", names.join(", ")),
        }
    }

    /// Fails unless `map` is a prog array of this object with a slot `slot`.
    pub fn check_prog_array_slot(&self, map: &str, slot: u32) -> Result<()> {
        let m = self
            .map_raw(map)
            .with_context(|| format!("{} has no map '{map}'; {}", self.path.display(), self.maps_listed()))?;
        // SAFETY: a map of this object.
        let (kind, entries) = unsafe { (sys::bpf_map__type(m), sys::bpf_map__max_entries(m)) };
        if kind != sys::BPF_MAP_TYPE_PROG_ARRAY {
            bail!("map '{map}' of {} is not a prog array", self.path.display());
        }
        if slot >= entries {
            bail!("prog array '{map}' has slots 0 to {}, not {slot}", entries.saturating_sub(1));
        }
        Ok(())
    }

    /// Empties slot `slot` of prog array `map` (after load), if it holds a program.
    pub fn empty_prog_array_slot(&self, map: &str, slot: u32) -> Result<()> {
        self.check_prog_array_slot(map, slot)?;
        // SAFETY: a prog array's descriptor and a key of its size.
        let rc = unsafe {
            sys::bpf_map_delete_elem(std::os::fd::AsRawFd::as_raw_fd(&self.map_fd(map)?), (&raw const slot).cast())
        };
        let err = std::io::Error::last_os_error();
        if rc != 0 && err.raw_os_error() != Some(libc::ENOENT) {
            bail!("emptying slot {slot} of '{map}': {err}");
        }
        Ok(())
    }

    /// The object's prog arrays: (name, slots).
    pub fn prog_arrays(&self) -> Vec<(String, u32)> {
        self.maps_raw()
            .into_iter()
            // SAFETY: maps of this object.
            .filter(|&m| unsafe { sys::bpf_map__type(m) } == sys::BPF_MAP_TYPE_PROG_ARRAY)
            .map(|m| unsafe { (cstr(sys::bpf_map__name(m)), sys::bpf_map__max_entries(m)) })
            .collect()
    }

    /// Puts the program behind `prog` in slot `slot` of prog array `map`
    /// (after load). The kernel takes only programs of the type the array
    /// was first used with.
    pub fn fill_prog_array(&self, map: &str, slot: u32, prog: BorrowedFd<'_>) -> Result<()> {
        self.check_prog_array_slot(map, slot)?;
        let fd = u32::try_from(std::os::fd::AsRawFd::as_raw_fd(&prog)).context("a program descriptor")?;
        crate::kernel::maps::update(self.map_fd(map)?, &slot.to_ne_bytes(), &fd.to_ne_bytes()).with_context(|| {
            format!(
                "the kernel refused the program for slot {slot} of '{map}' (a prog array takes programs of one type)"
            )
        })
    }

    /// A created map's descriptor (after `prepare`).
    pub fn map_fd(&self, name: &str) -> Result<BorrowedFd<'_>> {
        let m = self
            .map_raw(name)
            .with_context(|| format!("{} has no map '{name}'; {}", self.path.display(), self.maps_listed()))?;
        // SAFETY: a map of this object.
        let fd = unsafe { sys::bpf_map__fd(m) };
        if fd < 0 {
            bail!("map '{name}' has not been created");
        }
        // SAFETY: the fd stays open as long as the object.
        Ok(unsafe { BorrowedFd::borrow_raw(fd) })
    }

    /// Every map `prepare` created, as the userspace runtime copies them:
    /// (fd in the instructions, kernel id, name).
    pub fn created_maps(&self) -> Result<Vec<(i32, u32, String)>> {
        let mut out = Vec::new();
        for m in self.maps_raw() {
            // SAFETY: a map of this object; -1 when it was not created.
            let fd = unsafe { sys::bpf_map__fd(m) };
            if fd < 0 {
                continue;
            }
            // SAFETY: the fd stays open as long as the object.
            let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
            let id = libbpf_rs::MapInfo::new(borrowed).context("reading a map's info")?.info.id;
            out.push((fd, id, cstr(unsafe { sys::bpf_map__name(m) })));
        }
        Ok(out)
    }

    /// The BTF type ids of a map's key and value (0: none).
    pub fn map_btf_ids(&self, name: &str) -> Result<(u32, u32)> {
        let m = self.map_raw(name).with_context(|| format!("{} has no map '{name}'", self.path.display()))?;
        // SAFETY: a map of this object.
        Ok(unsafe { (sys::bpf_map__btf_key_type_id(m), sys::bpf_map__btf_value_type_id(m)) })
    }
}

//! An empty program of a type, attached at a point beside the programs
//! measured there: its ns per run is what bpf_stats reports for a run that
//! does nothing on that hook (shown beside, never subtracted).

use std::os::fd::BorrowedFd;

use anyhow::Result;

use crate::kernel::attach_point::AttachPoint;
use crate::kernel::object::ObjectFile;
use crate::kernel::object::attach::{AttachContext, Link, load_empty};
use crate::kernel::prog_type::ProgKind;

/// The empty program, loaded; attached while `link` is held.
pub struct EmptyOnHook {
    link: Option<Link>,
    object: ObjectFile,
    name: &'static str,
}

impl EmptyOnHook {
    pub fn load(kind: ProgKind, point: &AttachPoint) -> Result<EmptyOnHook> {
        let (object, name) = load_empty(kind, point)?;
        Ok(EmptyOnHook { link: None, object, name })
    }

    pub fn attach(&mut self, point: &AttachPoint, ctx: &AttachContext<'_>) -> Result<()> {
        if self.link.is_none() {
            self.link = Some(self.object.attach(self.name, point, ctx)?);
        }
        Ok(())
    }

    pub fn detach(&mut self) {
        self.link = None;
    }

    pub fn fd(&self) -> Result<BorrowedFd<'_>> {
        self.object.prog_fd(self.name)
    }
}

impl Drop for EmptyOnHook {
    fn drop(&mut self) {
        // The link before the program it attaches.
        self.link = None;
    }
}

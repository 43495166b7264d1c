//! A user's own XDP program on an interface (`bpfbench live FILE.bpf.o`):
//! loaded as `run` loads it (pinned maps reused, JSON maps filled), then
//! attached as it is, unspliced.

use std::os::fd::BorrowedFd;

use anyhow::{Result, bail};

use super::cases::DEFAULT_PACKET;
use super::options::ObjectSetup;
use crate::kernel::object::ObjectFile;
use crate::kernel::prog_type::Hook;
use crate::live::LiveProgram;

pub struct LiveObject {
    user: ObjectFile,
    /// Objects whose programs fill the user's prog arrays: held so that
    /// they stay loaded.
    _tail_call_objects: Vec<ObjectFile>,
    program: String,
    label: String,
    packet: String,
    /// What was done to the maps, for the report.
    pub notes: Vec<String>,
}

impl LiveObject {
    pub fn load(setup: &ObjectSetup) -> Result<LiveObject> {
        let mut user = setup.user.open(&setup.user.object)?;
        let (program, kind) = user.select(setup.user.program.as_deref())?;
        if kind.desc().hook != Hook::Interface {
            bail!(
                "'{}' is a {} program; bpfbench live attaches programs to an interface's XDP hook (time {} with 'bpfbench run')",
                program.name,
                program.type_name,
                kind.desc().plural
            );
        }
        user.configure(&program.name, &setup.user.pins)?;
        user.also_load(&super::own_slot_programs(&setup.tail_calls))?;
        user.prepare()?;
        let mut notes = Vec::new();
        let (_, others) = super::load_filled(&mut user, &program.name, setup, &mut notes)?;
        let file = setup.user.object.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
        // The first packet the spec file names, if it names one.
        let packet = setup
            .cases
            .iter()
            .flat_map(|c| c.packets.first())
            .next()
            .cloned()
            .unwrap_or_else(|| DEFAULT_PACKET.to_string());
        Ok(LiveObject {
            user,
            _tail_call_objects: others,
            label: format!("{} in {file}", program.name),
            program: program.name,
            packet,
            notes,
        })
    }
}

impl LiveProgram for LiveObject {
    fn label(&self) -> String {
        self.label.clone()
    }

    fn prog(&self) -> BorrowedFd<'_> {
        self.user.prog_fd(&self.program).expect("the program was loaded")
    }

    fn default_packet(&self) -> String {
        self.packet.clone()
    }

    /// The user's maps keep what the program wrote: their program would
    /// see the same on a real interface.
    fn reset(&mut self) -> Result<()> {
        Ok(())
    }
}

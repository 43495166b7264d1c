//! Which program a `bpfbench live` target names, loaded: the built-in load
//! balancer, or a user's object or spec file.

use std::path::Path;

use anyhow::{Result, bail};

use super::object::live::LiveObject;
use super::object::{LoadArgs, ObjectArgs, ObjectSetup};
use super::xdp_lb::live::LiveLb;
use crate::live::LiveProgram;

/// The Katran-on-userspace study's connection table size.
pub const DEFAULT_LRU_SIZE: u32 = 2000;

/// The program `target` names (default: xdp-lb), loaded, with notes on its
/// set-up. `load` and `lru_size` are the options only one kind takes.
pub fn live_program(
    target: Option<&str>,
    load: &LoadArgs,
    lru_size: Option<u32>,
) -> Result<(Box<dyn LiveProgram>, Vec<String>)> {
    let target = target.unwrap_or("xdp-lb");
    if target == "xdp-lb" {
        if load.program.is_some() || !load.maps.is_empty() || !load.pins.is_empty() {
            bail!("--program, --map and --map-pin apply to your own object, not to xdp-lb");
        }
        let entries = lru_size.unwrap_or(DEFAULT_LRU_SIZE);
        let lb = LiveLb::load(entries)?;
        return Ok((Box::new(lb), vec![format!("connection tables of {entries} entries per CPU")]));
    }
    if lru_size.is_some() {
        bail!("--lru-size sizes xdp-lb's connection tables; {target} has none bpfbench knows of");
    }
    let path = Path::new(target);
    if !path.exists() {
        bail!("no such target '{target}': give xdp-lb, an object file (FILE.bpf.o) or a spec file (FILE.toml)");
    }
    let object_args = ObjectArgs { load: load.clone(), ..Default::default() };
    let mut object = LiveObject::load(&ObjectSetup::from_target(path, &object_args)?)?;
    let notes = std::mem::take(&mut object.notes);
    Ok((Box::new(object), notes))
}

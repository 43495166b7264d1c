//! `bpfbench cleanup`: what runs killed before they could clean up left
//! (SIGKILL, a power cut), found and removed in one place. Every run
//! removes the leftovers of its own kind as it starts; this removes all of
//! them at once: namespaces and veths (live runs), cgroups and trigger
//! files (attached programs), QEMU processes and their folders (guests).
//! Links, perf events and uprobes need nothing: the kernel drops them
//! with a killed process's descriptors, and tracefs is mounted in a mount
//! namespace of the run's own.

use anyhow::Result;

/// What was removed, a line each (a line saying so when nothing was).
pub fn remove_leftovers() -> Result<Vec<String>> {
    crate::system::check_privileges()?;
    let mut removed: Vec<String> = crate::traffic::topology::remove_leftovers()?
        .into_iter()
        .map(|r| format!("removed the {r} a killed run left"))
        .collect();
    removed.extend(crate::system::cgroup::remove_leftovers()?);
    removed.extend(crate::trigger::remove_leftovers());
    removed.extend(crate::system::guest::remove_leftovers());
    if removed.is_empty() {
        removed.push(
            "nothing to remove: no namespace, veth, cgroup, trigger file or guest of a killed bpfbench run".into(),
        );
    }
    Ok(removed)
}

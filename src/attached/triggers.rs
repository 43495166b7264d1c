//! The triggers a measurement fires, each prepared once (its files,
//! sockets and threads made) and its cost per event known.

use std::os::fd::{AsFd, OwnedFd};

use anyhow::Result;

use crate::trigger::{Trigger, TriggerKind};

#[derive(Default)]
pub struct Triggers {
    prepared: Vec<Trigger>,
    /// ns per event, as first timed.
    cost: Vec<(TriggerKind, f64)>,
    /// The object's sockmap, which the sockmap trigger's sockets join.
    sockmap: Option<OwnedFd>,
}

impl Triggers {
    /// Triggers for an object whose sockmap (if any) is `sockmap`.
    pub fn for_object(sockmap: Option<OwnedFd>) -> Triggers {
        Triggers { sockmap, ..Triggers::default() }
    }

    /// A trigger of `kind` of its own, not kept (the kept ones keep their state).
    pub fn prepare(&self, kind: &TriggerKind) -> Result<Trigger> {
        Trigger::prepare_for(kind.clone(), self.sockmap.as_ref().map(|m| m.as_fd()))
    }

    /// The trigger of `kind`, prepared on first use.
    pub fn get(&mut self, kind: &TriggerKind) -> Result<&mut Trigger> {
        let at = match self.prepared.iter().position(|t| t.kind() == kind) {
            Some(at) => at,
            None => {
                let trigger = self.prepare(kind)?;
                self.prepared.push(trigger);
                self.prepared.len() - 1
            }
        };
        Ok(&mut self.prepared[at])
    }

    /// The trigger's ns per event as things stand now (a few events, timed once).
    pub fn ns_per_event(&mut self, kind: &TriggerKind) -> Result<f64> {
        if let Some((_, ns)) = self.cost.iter().find(|(k, _)| k == kind) {
            return Ok(*ns);
        }
        let trigger = self.get(kind)?;
        trigger.fire(4)?;
        let ns = trigger.timed(16)? as f64 / 16.0;
        self.cost.push((kind.clone(), ns));
        Ok(ns)
    }

    /// Forgets the trigger's cost: the next ask times it again (after the
    /// programs it fires were attached).
    pub fn forget(&mut self, kind: &TriggerKind) {
        self.cost.retain(|(k, _)| k != kind);
    }

    /// Events that take about `wall_ns` (within `min`..=`max`).
    pub fn events_in(&mut self, kind: &TriggerKind, wall_ns: f64, min: u64, max: u64) -> Result<u64> {
        Ok(((wall_ns / self.ns_per_event(kind)?.max(1.0)) as u64).clamp(min, max))
    }
}

//! `bpfbench verifier`: every program of an object loaded on its own, as
//! its author's loader would, and what the verifier said about it.

use std::path::Path;

use anyhow::Result;

use super::ObjectFile;
use crate::kernel::prog_info::program_record;
use crate::record::verifier::{ObjectVerification, ProgramVerification};

/// Opens an object as its loader would (its programs' types, its globals).
pub type Opener<'a> = &'a dyn Fn(&Path) -> Result<ObjectFile>;

/// `bpfbench verifier`: what the verifier made of each object's programs,
/// each object opened by `open`.
pub fn report(objects: &[&Path], open: Opener<'_>) -> Result<crate::record::verifier::VerifierReport> {
    super::super::libbpf_log::capture();
    let objects = objects.iter().map(|o| verify(o, open)).collect::<Result<Vec<_>>>()?;
    Ok(crate::record::verifier::VerifierReport { schema: crate::record::verifier::VERIFIER_SCHEMA.into(), objects })
}

/// Loads each program of the object at `path` alone and records the
/// verifier's figures; a program the kernel refuses is recorded so.
pub fn verify(path: &Path, open: Opener<'_>) -> Result<ObjectVerification> {
    let listed = open(path)?.programs();
    let mut programs = Vec::new();
    for p in listed {
        // A fresh object per program: libbpf loads an object once.
        let mut obj = open(path)?;
        obj.configure(&p.name, &[])?;
        let outcome = obj.prepare().and_then(|()| obj.load(&p.name));
        let mut v = ProgramVerification {
            name: p.name.clone(),
            section: p.section.clone(),
            prog_type: p.type_name.clone(),
            loaded: outcome.is_ok(),
            error: None,
            stats: Default::default(),
            size: None,
        };
        match outcome {
            Ok(stats) => {
                let record = program_record(obj.prog_fd(&p.name)?, Some(stats))?;
                v.stats = record.verifier.unwrap_or_default();
                v.size = Some(record.size);
            }
            Err(e) => {
                v.stats = obj.last_stats();
                v.error = Some(obj.last_refusal().unwrap_or_else(|| crate::record::error_line(&e)));
            }
        }
        programs.push(v);
    }
    Ok(ObjectVerification { path: path.display().to_string(), programs })
}

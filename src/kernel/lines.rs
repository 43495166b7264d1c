//! Source lines of a program's instructions, from the line records
//! (`bpf_line_info`) clang puts in .BTF.ext and libbpf relocates with the
//! program: each record names the file, line and text of the instructions
//! from its `insn_off` up to the next record's. `--profile` counts the
//! interpreter's executions per instruction and adds them up per line.

use std::ffi::CStr;
use std::sync::Arc;

use libbpf_rs::libbpf_sys as sys;

/// One source line, as the object's BTF names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceLine {
    /// The file's name without its directory (clang records the path it was given).
    pub file: String,
    pub line: u32,
    /// The line's text, trimmed.
    pub text: String,
}

impl SourceLine {
    /// "file:line", how counts name the line.
    pub fn key(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }
}

/// Where each instruction of one program comes from.
#[derive(Debug, Clone, Default)]
pub struct LineTable {
    /// (first instruction, its line), by instruction.
    starts: Vec<(usize, Arc<SourceLine>)>,
}

/// A string of `btf`'s string section.
///
/// # Safety
/// `btf` is a valid BTF object.
unsafe fn btf_string(btf: *const sys::btf, off: u32) -> String {
    // SAFETY: the caller's btf; libbpf returns NULL for an offset out of range.
    let s = unsafe { sys::btf__name_by_offset(btf, off) };
    if s.is_null() {
        return String::new();
    }
    // SAFETY: a NUL-terminated string of the BTF, alive while it is.
    unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
}

/// The name of type `id` of `btf` (empty when it has none).
///
/// # Safety
/// `btf` is a valid BTF object.
pub(crate) unsafe fn type_name(btf: *const sys::btf, id: u32) -> String {
    // SAFETY: the caller's btf; NULL for an id out of range.
    let t = unsafe { sys::btf__type_by_id(btf, id) };
    if t.is_null() {
        return String::new();
    }
    // SAFETY: a type of this BTF names a string of it.
    unsafe { btf_string(btf, (*t).name_off) }
}

impl LineTable {
    /// The line records libbpf holds for a prepared program (`bpf_program__line_info`).
    ///
    /// # Safety
    /// `prog` is a prepared program of the object whose BTF is `btf`.
    pub unsafe fn of_program(prog: *const sys::bpf_program, btf: *const sys::btf) -> LineTable {
        if btf.is_null() {
            return LineTable::default();
        }
        // SAFETY: the caller's program; NULL (or an error pointer) when it has no records.
        let (ptr, n) = unsafe { (sys::bpf_program__line_info(prog), sys::bpf_program__line_info_cnt(prog)) };
        if ptr.is_null() || (ptr as isize) < 0 || n == 0 {
            return LineTable::default();
        }
        // SAFETY: libbpf's array of n records, alive while the object is.
        let records = unsafe { std::slice::from_raw_parts(ptr, n as usize) };
        let mut starts: Vec<(usize, Arc<SourceLine>)> = records
            .iter()
            .map(|r| {
                // SAFETY: offsets into the program's BTF strings.
                let (path, text) = unsafe { (btf_string(btf, r.file_name_off), btf_string(btf, r.line_off)) };
                let file = path.rsplit('/').next().unwrap_or(&path).to_string();
                (
                    r.insn_off as usize,
                    Arc::new(SourceLine { file, line: r.line_col >> 10, text: text.trim().to_string() }),
                )
            })
            .collect();
        starts.sort_by_key(|(pc, _)| *pc);
        LineTable { starts }
    }

    /// The line instruction `pc` comes from, if a record covers it.
    pub fn at(&self, pc: usize) -> Option<&SourceLine> {
        let i = self.starts.partition_point(|(start, _)| *start <= pc);
        i.checked_sub(1).map(|i| &*self.starts[i].1)
    }

    /// This table's records before instruction `at`, then `other`'s moved
    /// to start there: a program spliced in at `at`.
    pub fn with_spliced(mut self, at: usize, other: &LineTable) -> LineTable {
        self.starts.retain(|(pc, _)| *pc < at);
        self.starts.extend(other.starts.iter().map(|(pc, l)| (pc + at, l.clone())));
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(n: u32) -> Arc<SourceLine> {
        Arc::new(SourceLine { file: "a.c".into(), line: n, text: format!("line {n}") })
    }

    #[test]
    fn an_instruction_belongs_to_the_last_record_at_or_before_it() {
        let t = LineTable { starts: vec![(2, line(10)), (5, line(11)), (9, line(20))] };
        assert_eq!(t.at(0), None);
        assert_eq!(t.at(2).map(|l| l.line), Some(10));
        assert_eq!(t.at(4).map(|l| l.line), Some(10));
        assert_eq!(t.at(5).map(|l| l.line), Some(11));
        assert_eq!(t.at(100).map(|l| l.line), Some(20));
    }

    #[test]
    fn a_spliced_table_keeps_the_driver_before_the_cut_and_shifts_the_program() {
        let driver = LineTable { starts: vec![(0, line(1)), (3, line(2)), (7, line(3))] };
        let program = LineTable { starts: vec![(0, line(100)), (4, line(101))] };
        let t = driver.with_spliced(6, &program);
        assert_eq!(t.at(5).map(|l| l.line), Some(2));
        assert_eq!(t.at(6).map(|l| l.line), Some(100));
        assert_eq!(t.at(9).map(|l| l.line), Some(100));
        assert_eq!(t.at(10).map(|l| l.line), Some(101));
    }
}

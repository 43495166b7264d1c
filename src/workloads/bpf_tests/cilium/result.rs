//! What a test's `CHECK` program reports: Cilium's test framework writes a
//! protobuf `SuiteResult` (bpf/tests/bpftest/trf.proto) into the first
//! value of `suite_result_map`, zero-padded; its Go runner decodes it and
//! prints each log line through a printk-like format. Decoded here the
//! same way, with prost.

use anyhow::{Context, Result};
use prost::Message;

/// The test framework's statuses (trf.proto's `TestStatus`, and the
/// values a `CHECK` program returns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Error,
    Pass,
    Fail,
    Skip,
}

impl Status {
    pub fn from_code(code: u32) -> Status {
        match code {
            1 => Status::Pass,
            2 => Status::Fail,
            3 => Status::Skip,
            _ => Status::Error,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Error => "error",
            Status::Pass => "pass",
            Status::Fail => "fail",
            Status::Skip => "skip",
        }
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct SuiteResult {
    #[prost(message, repeated, tag = "1")]
    pub results: Vec<TestResult>,
    #[prost(message, repeated, tag = "2")]
    pub suite_log: Vec<Log>,
}

#[derive(Clone, PartialEq, Message)]
pub struct TestResult {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(int32, tag = "2")]
    pub status: i32,
    #[prost(message, repeated, tag = "3")]
    pub test_log: Vec<Log>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Log {
    #[prost(string, tag = "1")]
    pub fmt: String,
    #[prost(fixed64, repeated, tag = "2")]
    pub args: Vec<u64>,
}

/// What one test's `CHECK` said: its return code and its report.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckOutcome {
    pub status: Status,
    pub report: SuiteResult,
}

impl CheckOutcome {
    /// Decodes `value`, the first value of `suite_result_map`, after a
    /// `CHECK` that returned `code`.
    pub fn decode(code: u32, value: &[u8]) -> Result<CheckOutcome> {
        let report = SuiteResult::decode(&value[..encoded_len(value)])
            .context("the test's result in suite_result_map is not a SuiteResult")?;
        Ok(CheckOutcome { status: Status::from_code(code), report })
    }

    /// Passed: the `CHECK` returned pass and none of its subtests failed.
    pub fn passed(&self) -> bool {
        self.status == Status::Pass
            && self
                .report
                .results
                .iter()
                .all(|r| matches!(Status::from_code(r.status as u32), Status::Pass | Status::Skip))
    }

    /// The subtests, as "name: status".
    pub fn subtests(&self) -> Vec<String> {
        self.report
            .results
            .iter()
            .map(|r| format!("{}: {}", r.name.trim_end_matches('\0'), Status::from_code(r.status as u32).as_str()))
            .collect()
    }

    /// Why it did not pass, on one line: the status and the log lines of
    /// each subtest that did not pass, then the suite's own.
    pub fn explain(&self) -> String {
        let mut parts = vec![format!("its CHECK returned {}", self.status.as_str())];
        for r in &self.report.results {
            let status = Status::from_code(r.status as u32);
            if matches!(status, Status::Pass | Status::Skip) {
                continue;
            }
            let logs: Vec<String> = r.test_log.iter().map(Log::render).collect();
            let name = r.name.trim_end_matches('\0');
            parts.push(match logs.is_empty() {
                true => format!("subtest {name}: {}", status.as_str()),
                false => format!("subtest {name}: {}: {}", status.as_str(), logs.join("; ")),
            });
        }
        parts.extend(self.report.suite_log.iter().map(Log::render));
        parts.join("; ")
    }
}

/// Bytes of `value` that hold fields: the encoded message ends at the
/// first byte that does not start a whole field (the zero padding).
fn encoded_len(value: &[u8]) -> usize {
    let mut at = 0;
    loop {
        let mut rest = &value[at..];
        let Ok(key) = prost::encoding::decode_varint(&mut rest) else { return at };
        let (tag, wire) = (key >> 3, key & 7);
        if tag == 0 {
            return at;
        }
        let body = match wire {
            0 => prost::encoding::decode_varint(&mut rest).ok().map(|_| 0),
            1 => Some(8),
            2 => prost::encoding::decode_varint(&mut rest).ok().map(|n| n as usize),
            5 => Some(4),
            _ => None,
        };
        let Some(body) = body.filter(|n| *n <= rest.len()) else { return at };
        at = value.len() - rest.len() + body;
    }
}

impl Log {
    /// The line as Cilium's runner prints it: printk's specifiers, each
    /// argument cut to the specifier's width (%u and %d 16 bits, %lu 32,
    /// %llu 64; %x in hex, big-endian, zero-padded).
    pub fn render(&self) -> String {
        let fmt = self.fmt.trim_end_matches('\0').as_bytes();
        let mut out = String::new();
        let mut args = self.args.iter();
        let mut i = 0;
        while i < fmt.len() {
            if fmt[i] != b'%' {
                let start = i;
                while i < fmt.len() && fmt[i] != b'%' {
                    i += 1;
                }
                out.push_str(&String::from_utf8_lossy(&fmt[start..i]));
                continue;
            }
            i += 1;
            let mut spec = String::new();
            while i < fmt.len() {
                let c = fmt[i] as char;
                if matches!(c, 'd' | 'i' | 'u' | 'x' | 's') {
                    spec.push(c);
                    break;
                }
                if c != 'l' {
                    break;
                }
                spec.push(c);
                i += 1;
            }
            i += 1;
            let Some(&arg) = args.next() else {
                out.push_str(&format!("%!{spec}(MISSING)"));
                continue;
            };
            out.push_str(&match spec.as_str() {
                "u" => (arg as u16).to_string(),
                "d" | "i" | "s" => (arg as i16).to_string(),
                "x" => format!("{:04x}", arg as u16),
                "lu" => (arg as u32).to_string(),
                "ld" | "li" | "ls" => (arg as i32).to_string(),
                "lx" => format!("{:08x}", arg as u32),
                "llu" => arg.to_string(),
                "lld" | "lli" | "lls" => (arg as i64).to_string(),
                "llx" => format!("{arg:016x}"),
                other => format!("%!{other}(INVALID)"),
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zero_padded_result_decodes_and_its_logs_render_as_cilium_prints_them() {
        let log = Log { fmt: "expected %u, got %llu (%x)\0".into(), args: vec![70000, 5, 0xbeef] };
        let failed = TestResult { name: "nat\0".into(), status: 2, test_log: vec![log] };
        let passed = TestResult { name: "ct\0".into(), status: 1, test_log: vec![] };
        let mut value = SuiteResult { results: vec![passed, failed], suite_log: vec![] }.encode_to_vec();
        value.resize(value.len() + 64, 0);
        let out = CheckOutcome::decode(2, &value).unwrap();
        assert!(!out.passed());
        assert_eq!(out.subtests(), ["ct: pass", "nat: fail"]);
        // %u is 16 bits wide in Cilium's runner: 70000 prints as 4464.
        assert_eq!(out.explain(), "its CHECK returned fail; subtest nat: fail: expected 4464, got 5 (beef)");
        let empty = CheckOutcome::decode(1, &[0u8; 32]).unwrap();
        assert!(empty.passed());
    }
}

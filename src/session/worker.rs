//! Two bpfbench builds compared batch by batch: each runs as a worker
//! process (`bpfbench ab-worker RUN_ARGS`) that pins itself to the
//! comparison's CPU and answers requests on stdin, one JSON line each: set
//! the workload up afresh and validate a scenario, run a batch of it. The
//! coordinator sees a worker as a build (harness::paired::Build), so the
//! paired engine drives two builds exactly as it drives two objects in one
//! process.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use crate::harness::paired::Build;
use crate::harness::{BatchTiming, LoadedWorkload, PreparedScenario, ScenarioInfo, Validation, Variant, Workload};
use crate::kernel::test_run::RunOutput;
use crate::record::{ScenarioFacts, Timing};

#[derive(Debug, Serialize, Deserialize)]
enum Request {
    Unavailable { scenario: String },
    Validate { scenario: String },
    Batch { body: bool, iters: u32 },
    Quit,
}

#[derive(Debug, Serialize, Deserialize)]
struct WireScenario {
    name: String,
    group: String,
    description: String,
    facts: ScenarioFacts,
}

#[derive(Debug, Serialize, Deserialize)]
enum Reply {
    Ready { workload: String, scenarios: Vec<WireScenario> },
    Unavailable { why: Option<String> },
    Validated { verdict: String, timing: Timing, checks: Vec<String>, notes: Vec<String>, outputs: Vec<RunOutput> },
    Batch { started_ns: u64, elapsed_ns: u64, iters: u64 },
    Error { message: String },
}

fn send<T: Serialize>(out: &mut impl Write, msg: &T) -> Result<()> {
    serde_json::to_writer(&mut *out, msg)?;
    out.write_all(b"\n")?;
    out.flush()?;
    Ok(())
}

fn receive<T: for<'de> Deserialize<'de>>(input: &mut impl BufRead) -> Result<Option<T>> {
    let mut line = String::new();
    if input.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    Ok(Some(serde_json::from_str(&line).with_context(|| format!("a message that is not bpfbench's: {}", line.trim()))?))
}

/// The worker side: announces `scenarios` of `workload`, then serves
/// requests until told to quit or stdin closes. Each validation sets the
/// workload up afresh on `cpu`.
pub fn serve(workload: &dyn Workload, cpu: usize, scenarios: &[ScenarioInfo]) -> Result<()> {
    let (stdin, stdout) = (std::io::stdin(), std::io::stdout());
    let (mut input, mut out) = (stdin.lock(), stdout.lock());
    let wire = scenarios
        .iter()
        .map(|s| WireScenario {
            name: s.name.to_string(),
            group: s.group.to_string(),
            description: s.description.to_string(),
            facts: s.facts.clone(),
        })
        .collect();
    send(&mut out, &Reply::Ready { workload: workload.name().to_string(), scenarios: wire })?;
    let find =
        |name: &str| scenarios.iter().find(|s| s.name == name).with_context(|| format!("no scenario '{name}' here"));
    let mut loaded: Option<Box<dyn LoadedWorkload + '_>> = None;
    let mut next = receive::<Request>(&mut input)?;
    loop {
        next = match next {
            None | Some(Request::Quit) => return Ok(()),
            Some(Request::Unavailable { scenario }) => {
                let why = find(&scenario).and_then(|s| {
                    let l = match &mut loaded {
                        Some(l) => l,
                        None => loaded.insert(workload.setup(cpu)?),
                    };
                    Ok(l.unavailable(s))
                });
                let reply = match why {
                    Ok(why) => Reply::Unavailable { why },
                    Err(e) => Reply::Error { message: format!("{e:#}") },
                };
                send(&mut out, &reply)?;
                receive(&mut input)?
            }
            Some(Request::Validate { scenario }) => {
                // The old set-up goes once the new one stands (see session::paired::LocalBuild).
                match find(&scenario).and_then(|s| Ok((s, workload.setup(cpu)?))) {
                    Ok((s, l)) => serve_scenario(loaded.insert(l).as_mut(), s, &mut input, &mut out)?,
                    Err(e) => {
                        send(&mut out, &Reply::Error { message: format!("{e:#}") })?;
                        receive(&mut input)?
                    }
                }
            }
            Some(Request::Batch { .. }) => {
                send(&mut out, &Reply::Error { message: "no scenario has been validated".into() })?;
                receive(&mut input)?
            }
        };
    }
}

/// Validates `s` and serves its batches; returns the first other request.
fn serve_scenario(
    loaded: &mut dyn LoadedWorkload,
    s: &ScenarioInfo,
    input: &mut impl BufRead,
    out: &mut impl Write,
) -> Result<Option<Request>> {
    let mut prepared = match loaded.validate(s) {
        Ok((v, p)) => {
            send(
                out,
                &Reply::Validated {
                    verdict: v.verdict,
                    timing: v.timing,
                    checks: v.checks,
                    notes: v.notes,
                    outputs: v.outputs,
                },
            )?;
            p
        }
        Err(e) => {
            send(out, &Reply::Error { message: format!("{e:#}") })?;
            return receive(input);
        }
    };
    loop {
        match receive::<Request>(input)? {
            Some(Request::Batch { body, iters }) => {
                let variant = if body { Variant::Body } else { Variant::Overhead };
                let reply = match prepared.run_batch(variant, iters) {
                    Ok(t) => Reply::Batch { started_ns: t.started_ns, elapsed_ns: t.elapsed_ns, iters: t.iters },
                    Err(e) => Reply::Error { message: format!("{e:#}") },
                };
                send(out, &reply)?;
            }
            other => return Ok(other),
        }
    }
}

/// The coordinator's view of a worker process.
pub struct Worker {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    label: String,
    pub workload: String,
    pub scenarios: Vec<ScenarioInfo>,
}

impl Worker {
    /// Starts `binary ab-worker RUN_ARGS` and waits until it is ready.
    pub fn spawn(binary: &Path, run_args: &[String]) -> Result<Worker> {
        let label = binary.display().to_string();
        let mut child = Command::new(binary)
            .arg("ab-worker")
            .args(run_args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("starting {label}"))?;
        let stdin = child.stdin.take().context("worker stdin")?;
        let mut stdout = BufReader::new(child.stdout.take().context("worker stdout")?);
        let ready = receive::<Reply>(&mut stdout);
        let (workload, scenarios) = match ready {
            Ok(Some(Reply::Ready { workload, scenarios })) => (workload, scenarios),
            _ => {
                let _ = child.kill();
                let status = child.wait().ok();
                bail!(
                    "{label} did not start as a paired-comparison worker ({}); both builds must have 'bpfbench ab-worker' (or compare whole runs with --whole-runs)",
                    status.map_or_else(|| "no exit status".into(), |s| s.to_string())
                );
            }
        };
        let scenarios = scenarios
            .into_iter()
            .map(|w| ScenarioInfo {
                name: w.name.into(),
                group: w.group.into(),
                description: w.description.into(),
                facts: w.facts,
            })
            .collect();
        Ok(Worker { child, stdin, stdout, label, workload, scenarios })
    }

    fn call(&mut self, req: &Request) -> Result<Reply> {
        send(&mut self.stdin, req).with_context(|| format!("{} stopped answering", self.label))?;
        match receive::<Reply>(&mut self.stdout)? {
            Some(Reply::Error { message }) => bail!("{message}"),
            Some(reply) => Ok(reply),
            None => bail!("{} exited", self.label),
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = send(&mut self.stdin, &Request::Quit);
        let _ = self.child.wait();
    }
}

impl Build for Worker {
    fn unavailable(&mut self, s: &ScenarioInfo) -> Option<String> {
        match self.call(&Request::Unavailable { scenario: s.name.to_string() }) {
            Ok(Reply::Unavailable { why }) => why,
            // A worker that cannot answer fails the validation that follows, loudly.
            _ => None,
        }
    }

    fn fresh(&mut self, s: &ScenarioInfo) -> Result<(Validation, Box<dyn PreparedScenario + '_>)> {
        match self.call(&Request::Validate { scenario: s.name.to_string() })? {
            Reply::Validated { verdict, timing, checks, notes, outputs } => {
                Ok((Validation { verdict, timing, checks, notes, outputs }, Box::new(Remote { worker: self })))
            }
            other => bail!("{} answered {other:?} to a validation", self.label),
        }
    }
}

/// A scenario a worker validated: batches run in the worker's process.
struct Remote<'a> {
    worker: &'a mut Worker,
}

impl PreparedScenario for Remote<'_> {
    fn run_batch(&mut self, variant: Variant, iters: u32) -> Result<BatchTiming> {
        match self.worker.call(&Request::Batch { body: variant == Variant::Body, iters })? {
            Reply::Batch { started_ns, elapsed_ns, iters } => Ok(BatchTiming { started_ns, elapsed_ns, iters }),
            other => bail!("{} answered {other:?} to a batch", self.worker.label),
        }
    }

    fn overhead_key(&self) -> String {
        format!("{} worker", self.worker.label)
    }
}

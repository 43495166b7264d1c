//! Two bpfbench builds (or two kernels) compared batch by batch: each runs
//! as a worker process (`bpfbench ab-worker RUN_ARGS`) that pins itself to
//! the comparison's CPU and answers requests on stdin, one JSON line each:
//! set the workload up afresh and validate a scenario, run a batch of it.
//! The worker of a kernel runs in a guest of it, its stdin and stdout a
//! virtio-serial port that QEMU connects to a socket of the coordinator. The
//! coordinator sees a worker as a build (harness::paired::Build), so the
//! paired engine drives two builds exactly as it drives two objects in one
//! process.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use crate::harness::paired::Build;
use crate::harness::{BatchTiming, LoadedWorkload, PreparedScenario, ScenarioInfo, Validation, Variant, Workload};
use crate::record::Guest;
use crate::system::guest::{self, Accelerator, GuestSpec, OutputFolder, PORT_NAME, RunningGuest, what_happened};
use crate::system::interrupt;

#[derive(Debug, Serialize, Deserialize)]
enum Request {
    Unavailable { scenario: String },
    Validate { scenario: String },
    Batch { body: bool, iters: u32 },
    Quit,
}

#[derive(Debug, Serialize, Deserialize)]
enum Reply {
    Ready { workload: String, scenarios: Vec<ScenarioInfo> },
    Unavailable { why: Option<String> },
    Validated(Validation),
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
    send(&mut out, &Reply::Ready { workload: workload.name().to_string(), scenarios: scenarios.to_vec() })?;
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
                    Err(e) => Reply::Error { message: crate::record::error_line(&e) },
                };
                send(&mut out, &reply)?;
                receive(&mut input)?
            }
            Some(Request::Validate { scenario }) => {
                // The old set-up goes once the new one stands (see session::paired::LocalBuild).
                match find(&scenario).and_then(|s| Ok((s, workload.setup(cpu)?))) {
                    Ok((s, l)) => serve_scenario(loaded.insert(l).as_mut(), s, &mut input, &mut out)?,
                    Err(e) => {
                        send(&mut out, &Reply::Error { message: crate::record::error_line(&e) })?;
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
            send(out, &Reply::Validated(v))?;
            p
        }
        Err(e) => {
            send(out, &Reply::Error { message: crate::record::error_line(&e) })?;
            return receive(input);
        }
    };
    loop {
        match receive::<Request>(input)? {
            Some(Request::Batch { body, iters }) => {
                let variant = if body { Variant::Body } else { Variant::Overhead };
                let reply = match prepared.run_batch(variant, iters) {
                    Ok(t) => Reply::Batch { started_ns: t.started_ns, elapsed_ns: t.elapsed_ns, iters: t.iters },
                    Err(e) => Reply::Error { message: crate::record::error_line(&e) },
                };
                send(out, &reply)?;
            }
            other => return Ok(other),
        }
    }
}

/// The coordinator's view of a worker: a process on this machine, or one
/// in a guest of another kernel, served over a virtio-serial port.
pub struct Worker {
    input: Box<dyn Write>,
    output: BufReader<Box<dyn Read>>,
    label: String,
    /// What runs the worker, ended when the worker is dropped.
    host: WorkerHost,
    /// The guest it runs in, if it runs in one.
    pub guest: Option<Guest>,
    pub workload: String,
    pub scenarios: Vec<ScenarioInfo>,
}

enum WorkerHost {
    Process(Child),
    /// The guest, and its folder (the socket, the worker's stderr).
    Guest(RunningGuest, OutputFolder),
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
        let input: Box<dyn Write> = Box::new(child.stdin.take().context("worker stdin")?);
        let output: Box<dyn Read> = Box::new(child.stdout.take().context("worker stdout")?);
        Worker::ready(label, input, output, WorkerHost::Process(child))
    }

    /// Waits for the worker's announcement.
    fn ready(label: String, input: Box<dyn Write>, output: Box<dyn Read>, mut host: WorkerHost) -> Result<Worker> {
        let mut output = BufReader::new(output);
        let (workload, scenarios) = match receive::<Reply>(&mut output) {
            Ok(Some(Reply::Ready { workload, scenarios })) => (workload, scenarios),
            other => {
                let why = match &mut host {
                    WorkerHost::Process(child) => {
                        let _ = child.kill();
                        let status = child.wait().ok();
                        format!(
                            "({}); both builds must have 'bpfbench ab-worker' (or compare whole runs with --whole-runs)",
                            status.map_or_else(|| "no exit status".into(), |s| s.to_string())
                        )
                    }
                    WorkerHost::Guest(_, folder) => {
                        let last = folder.last_line("worker.err");
                        let reason = match other {
                            Err(e) => crate::record::error_line(&e),
                            _ => "it ended".into(),
                        };
                        format!("({reason}): {}", last.unwrap_or_else(|| what_happened(folder)))
                    }
                };
                bail!("{label} did not start as a paired-comparison worker {why}");
            }
        };
        Ok(Worker { input, output, label, host, guest: None, workload, scenarios })
    }

    fn call(&mut self, req: &Request) -> Result<Reply> {
        send(&mut self.input, req).with_context(|| format!("{} stopped answering", self.label))?;
        match receive::<Reply>(&mut self.output).with_context(|| format!("{} did not answer", self.label))? {
            Some(Reply::Error { message }) => bail!("{message}"),
            Some(reply) => Ok(reply),
            None => bail!("{} exited", self.label),
        }
    }
}

/// A worker booting in a guest: QEMU connects the guest's port to
/// `listener` as it starts; the worker answers once the guest has booted.
pub struct BootingWorker {
    label: String,
    guest: RunningGuest,
    folder: OutputFolder,
    listener: UnixListener,
    bound: Duration,
    image: std::path::PathBuf,
    accel: Accelerator,
}

impl BootingWorker {
    /// Boots `spec` (one CPU) with `bpfbench ab-worker RUN_ARGS` inside,
    /// its stdin and stdout the guest's end of a virtio-serial port.
    pub fn boot(label: &str, spec: &GuestSpec, accel: Accelerator, run_args: &[String]) -> Result<BootingWorker> {
        let folder = OutputFolder::new(label)?;
        let socket = folder.path.join("port.sock");
        let listener = UnixListener::bind(&socket).with_context(|| format!("listening on {}", socket.display()))?;
        listener.set_nonblocking(true)?;
        let mut worker = vec![std::env::current_exe()?.display().to_string(), "ab-worker".into()];
        worker.extend(run_args.iter().cloned());
        // One open of the port for both directions: virtio ports take one
        // opener at a time.
        let script = format!(
            "for p in /sys/class/virtio-ports/*; do [ \"$(cat $p/name)\" = {PORT_NAME} ] && dev=/dev/$(basename $p); done\n\
             exec 3<>\"$dev\"\n{} <&3 >&3 2> $OUT/worker.err\n",
            guest::shell_command(&worker)
        );
        let guest = guest::start(spec, accel, &folder, &script, Some(&socket))?;
        Ok(BootingWorker {
            label: label.to_string(),
            guest,
            folder,
            listener,
            bound: spec.bound,
            image: spec.image.clone(),
            accel,
        })
    }

    /// Waits for QEMU's connection and the worker's announcement, each
    /// within the guest's bound.
    pub fn ready(mut self) -> Result<Worker> {
        let started = Instant::now();
        let stream = loop {
            match self.listener.accept() {
                Ok((stream, _)) => break stream,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => bail!("{}: accepting the guest's port: {e}", self.label),
            }
            if self.guest.exited() {
                bail!("{}: the guest stopped before it connected: {}", self.label, what_happened(&self.folder));
            }
            if started.elapsed() > self.bound || interrupt::interrupted() {
                bail!("{}: the guest did not connect within {} s and was killed", self.label, self.bound.as_secs());
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        stream.set_nonblocking(false)?;
        // A guest that stops answering fails the call instead of hanging it.
        stream.set_read_timeout(Some(self.bound))?;
        let output: Box<dyn Read> = Box::new(stream.try_clone()?);
        let host = WorkerHost::Guest(self.guest, self.folder);
        let mut worker = Worker::ready(self.label, Box::new(stream), output, host)?;
        // The guest wrote its command line before it started the worker.
        if let WorkerHost::Guest(_, folder) = &worker.host {
            worker.guest = Some(folder.guest(&self.image, self.accel));
        }
        Ok(worker)
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = send(&mut self.input, &Request::Quit);
        match &mut self.host {
            WorkerHost::Process(child) => {
                let _ = child.wait();
            }
            // The guest powers off once its worker ends; a guest that does
            // not is killed when dropped.
            WorkerHost::Guest(guest, _) => {
                let started = Instant::now();
                while !guest.exited() && started.elapsed() < GUEST_POWER_OFF {
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        }
    }
}

/// How long a guest gets to power off after its worker quits.
const GUEST_POWER_OFF: Duration = Duration::from_secs(30);

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
            Reply::Validated(v) => Ok((v, Box::new(Remote { worker: self }))),
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

    fn overhead_key(&self) -> crate::harness::OverheadKey {
        crate::harness::OverheadKey::Named(format!("{} worker", self.worker.label).into())
    }
}

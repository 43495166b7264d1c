//! What a live run varies from step to step (`--sweep VAR=V1,V2,...`), and
//! how a step's traffic follows from the base packet and the value.

use std::str::FromStr;

use anyhow::{Result, bail, ensure};

use crate::packet::PacketSpec;
use crate::record::live::SweepVar;

/// A sweep: the variable and its values, in the order given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sweep {
    pub var: SweepVar,
    pub values: Vec<u64>,
}

impl FromStr for Sweep {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> Result<Sweep> {
        let names: Vec<&str> = SweepVar::ALL.iter().map(|v| v.name()).collect();
        let Some((name, list)) = s.split_once('=') else {
            bail!("--sweep expects VAR=V1,V2,... with VAR one of {}, got '{s}'", names.join(", "));
        };
        let Some(&var) = SweepVar::ALL.iter().find(|v| v.name() == name.trim()) else {
            bail!("--sweep: unknown variable '{name}'; sweep one of {}", names.join(", "));
        };
        let values = list
            .split(',')
            .map(|v| {
                v.trim().parse::<u64>().map_err(|_| anyhow::anyhow!("--sweep {name}: '{v}' is not a whole number"))
            })
            .collect::<Result<Vec<u64>>>()?;
        let least = if var == SweepVar::SrcPorts { 0 } else { 1 };
        if let Some(v) = values.iter().find(|&&v| v < least) {
            bail!("--sweep {name}: {v} is too small; the least is {least}");
        }
        Ok(Sweep { var, values })
    }
}

/// One step's traffic.
#[derive(Debug, Clone)]
pub struct StepTraffic {
    pub spec: PacketSpec,
    pub threads: usize,
}

impl StepTraffic {
    /// Every step's value (None: one step without a sweep) and traffic, all
    /// built before the run so bad input stops it before anything is set up.
    pub fn steps(
        sweep: Option<&Sweep>,
        packet: &PacketSpec,
        size: Option<usize>,
        threads: usize,
    ) -> Result<Vec<(Option<u64>, StepTraffic)>> {
        match sweep {
            Some(s) => s.values.iter().map(|&v| Ok((Some(v), StepTraffic::at(s, v, packet, size, threads)?))).collect(),
            None => Ok(vec![(None, StepTraffic::base(packet, size, threads)?)]),
        }
    }

    /// The base traffic: the packet padded to `size`, if one is given.
    pub fn base(packet: &PacketSpec, size: Option<usize>, threads: usize) -> Result<StepTraffic> {
        let spec = match size {
            Some(s) => packet.with_frame_size(s)?,
            None => packet.clone(),
        };
        Ok(StepTraffic { spec, threads })
    }

    /// The step of `sweep` at `value`, from the base packet and settings.
    pub fn at(
        sweep: &Sweep,
        value: u64,
        packet: &PacketSpec,
        size: Option<usize>,
        threads: usize,
    ) -> Result<StepTraffic> {
        match sweep.var {
            SweepVar::SrcPorts => {
                Self::base(&packet.with_field_values(&["tcp", "udp"], "sport", value.max(1))?, size, threads)
            }
            SweepVar::Flows => Self::base(&packet.with_field_values(&["ipv4", "ipv6"], "src", value)?, size, threads),
            SweepVar::Size => {
                ensure!(size.is_none(), "--sweep size sets the frame size; leave out --size");
                Self::base(packet, Some(value as usize), threads)
            }
            SweepVar::Threads => Self::base(packet, size, usize::try_from(value)?),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweeps_parse_and_refuse_in_one_line() {
        let s: Sweep = "src-ports=0,1000,2000".parse().unwrap();
        assert_eq!((s.var, s.values), (SweepVar::SrcPorts, vec![0, 1000, 2000]));
        let e = "speed=1".parse::<Sweep>().unwrap_err().to_string();
        assert!(e.contains("unknown variable 'speed'") && e.contains("src-ports"), "{e}");
        assert!("size=64,x".parse::<Sweep>().unwrap_err().to_string().contains("'x' is not a whole number"));
        assert!("threads=0".parse::<Sweep>().is_err());
        assert!("size".parse::<Sweep>().is_err());
    }

    #[test]
    fn a_step_varies_what_the_sweep_names() {
        let p = PacketSpec::parse_flows("eth/ipv4/udp(sport=1000)/payload(18)").unwrap();
        let ports: Sweep = "src-ports=0,500".parse().unwrap();
        assert_eq!(StepTraffic::at(&ports, 0, &p, None, 1).unwrap().spec.count(), 1);
        assert_eq!(StepTraffic::at(&ports, 500, &p, Some(128), 1).unwrap().spec.packet(0).unwrap().len(), 128);
        let sizes: Sweep = "size=256".parse().unwrap();
        assert_eq!(StepTraffic::at(&sizes, 256, &p, None, 1).unwrap().spec.packet(0).unwrap().len(), 256);
        assert!(StepTraffic::at(&sizes, 256, &p, Some(64), 1).is_err());
        let threads: Sweep = "threads=2".parse().unwrap();
        assert_eq!(StepTraffic::at(&threads, 2, &p, None, 1).unwrap().threads, 2);
    }
}

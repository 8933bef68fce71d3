//! Parsing `ptxas -v` resource reports (registers, stack, spills per kernel).

use std::fmt;

/// Resources of one kernel as ptxas reports them.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct KernelResources {
    /// Entry-point name.
    pub name: String,
    /// Registers per thread.
    pub registers: u32,
    /// Stack frame bytes.
    pub stack_frame: u32,
    /// Spill store bytes.
    pub spill_stores: u32,
    /// Spill load bytes.
    pub spill_loads: u32,
}

impl fmt::Display for KernelResources {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:<30} {:>4} registers  {:>4} B stack  {:>4}/{:<4} B spill stores/loads",
            self.name, self.registers, self.stack_frame, self.spill_stores, self.spill_loads
        )
    }
}

/// Extracts the per-kernel resources from ptxas' `-v` output.
pub fn parse_report(log: &str) -> Vec<KernelResources> {
    let mut out = Vec::new();
    let mut current: Option<KernelResources> = None;
    let number_before = |line: &str, key: &str| -> Option<u32> {
        let end = line.find(key)?;
        line[..end].split_whitespace().last()?.parse().ok()
    };
    for line in log.lines() {
        if let Some(rest) = line.split("Function properties for ").nth(1) {
            current = Some(KernelResources {
                name: rest.trim().to_string(),
                registers: 0,
                stack_frame: 0,
                spill_stores: 0,
                spill_loads: 0,
            });
        } else if let Some(k) = current.as_mut() {
            if line.contains("stack frame") {
                k.stack_frame = number_before(line, "bytes stack frame").unwrap_or(0);
                k.spill_stores = number_before(line, "bytes spill stores").unwrap_or(0);
                k.spill_loads = number_before(line, "bytes spill loads").unwrap_or(0);
            } else if line.contains("Used") && line.contains("registers") {
                k.registers = number_before(line, "registers").unwrap_or(0);
                out.push(current.take().unwrap());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn parses_a_ptxas_report() {
        let log = "ptxas info    : Compiling entry function 'k' for 'sm_90'\n\
                   ptxas info    : Function properties for k\n    \
                   8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n\
                   ptxas info    : Used 96 registers, used 0 barriers, 80 bytes cmem[0]\n";
        let r = super::parse_report(log);
        assert_eq!(r.len(), 1);
        assert_eq!((r[0].registers, r[0].stack_frame, r[0].spill_stores, r[0].spill_loads), (96, 8, 4, 4));
    }
}

//! Names the command line accepts, offers in its help and lists in its
//! errors, all taken from the enums' lists (for lattices and precisions, the
//! rows of the kernel table), so the CLI cannot drift from what the solver has.

use lbm::host::multi_gpu::Exchange;
use lbm::host::{LatticeKind, Named};
use lbm::Result;

/// The names of `values`, for clap's `default_values_t`.
pub fn names<T: Named>(values: &[T]) -> Vec<String> {
    values.iter().map(|v| v.label().to_string()).collect()
}

/// A help line that lists the names of `values`: `{what} ({names})`.
pub fn help<T: Named>(what: &str, values: &[T]) -> String {
    format!("{what} ({})", T::choices(values))
}

/// Each of `given` as one of `values` (any case); an unknown name is an error
/// that lists the names of `values`.
pub fn parse<T: Named>(given: &[String], values: &[T]) -> Result<Vec<T>> {
    given.iter().map(|name| T::from_name_in(name, values)).collect()
}

/// The lattices of the commands that split a domain along z between GPUs.
pub fn lattices_3d() -> Vec<LatticeKind> {
    LatticeKind::ALL.into_iter().filter(|l| l.dimension() == 3).collect()
}

/// The halo exchanges' names, comma-separated.
pub fn exchanges() -> String {
    exchange_names().join(", ")
}

/// The halo exchanges' names, for clap's `default_values_t`.
pub fn exchange_names() -> Vec<String> {
    Exchange::ALL.map(|e| e.name().to_string()).to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use lbm::host::Precision;
    use lbm::kernels::{CollisionKind, Streaming};

    /// The lattice names the CLI takes are exactly `LatticeKind::ALL`'s, in
    /// any case, and any other name is refused listing them.
    #[test]
    fn accepted_lattice_names_are_the_table_lattices() {
        let all: Vec<String> = LatticeKind::ALL.iter().map(|l| l.name().to_string()).collect();
        assert_eq!(parse(&all, LatticeKind::all()).unwrap(), LatticeKind::ALL);
        let upper: Vec<String> = all.iter().map(|n| n.to_uppercase()).collect();
        assert_eq!(parse(&upper, LatticeKind::all()).unwrap(), LatticeKind::ALL);
        let e = parse(&["d3q15".to_string()], LatticeKind::all()).unwrap_err().to_string();
        assert!(e.ends_with(&format!("use {}", all.join(", "))), "{e}");
        // The 3D-only commands take the 3D rows, and refuse the others.
        let three_d = lattices_3d();
        assert!(!three_d.is_empty() && three_d.iter().all(|l| l.dimension() == 3));
        for l in LatticeKind::ALL.into_iter().filter(|l| l.dimension() != 3) {
            assert!(parse(&[l.name().to_string()], &three_d).is_err());
        }
    }

    /// `lbm bench` with no options runs the 3D lattices, every precision and
    /// scheme, and BGK only; the lists come from the enums.
    #[test]
    fn bench_defaults_come_from_the_enums() {
        let cli = crate::cli::Cli::parse_from(["lbm", "bench"]);
        let crate::cli::Command::Bench { lattices, precisions, streaming, collisions, exchange, .. } = cli.command
        else {
            panic!("not bench")
        };
        assert_eq!(parse(&lattices, LatticeKind::all()).unwrap(), lattices_3d());
        assert_eq!(parse(&precisions, Precision::all()).unwrap(), Precision::ALL);
        assert_eq!(parse(&streaming, Streaming::all()).unwrap(), Streaming::ALL);
        assert_eq!(parse(&collisions, CollisionKind::all()).unwrap(), [CollisionKind::Bgk]);
        assert_eq!(exchange, exchange_names());
    }
}

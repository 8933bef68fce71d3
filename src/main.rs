//! `lbm`: run lattice Boltzmann cases from the command line.

mod cli;

use clap::Parser;

fn main() {
    let args = cli::Cli::parse();
    if let Err(e) = cli::execute(args) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

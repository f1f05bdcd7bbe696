//! The `tally` command-line tool. Every failure is one line on stderr and exit code 2.

mod cli;

fn main() {
    let code = match cli::run() {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("tally: {e:#}");
            2
        }
    };
    std::process::exit(code);
}

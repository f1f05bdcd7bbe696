//! The `tally` command-line tool. Every failure is one line on stderr and exit code 2.

mod cli;

fn main() {
    // Output piped into `head` and the like: when the reader goes away, end quietly, as other
    // command-line tools do, instead of reporting the broken pipe as an error.
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of SIGPIPE before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let code = match cli::run() {
        Ok(()) => 0,
        Err(e) if is_broken_pipe(&e) => 0,
        Err(e) => {
            // One line, whatever a library's message looks like.
            let line = format!("{e:#}").lines().map(str::trim).collect::<Vec<_>>().join(" ");
            eprintln!("tally: {line}");
            2
        }
    };
    std::process::exit(code);
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe))
}

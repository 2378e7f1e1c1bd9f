//! The `mcp-envelope` binary: parses the command line, sets up logging (stderr or a log file,
//! never stdout), runs the subcommand ([`mcp_envelope::cli::run`]) and maps errors to exit codes
//! (0 success, 1 failure found, 2 usage, config or input error).

use std::process::ExitCode;

use clap::Parser;
use mcp_envelope::cli::{self, Cli, Command, LogLevel};

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Commands that print a result are quiet unless asked: warnings only; `check` errors only,
    // as its table shows every warning.
    let default_level = match cli.command {
        Some(Command::Check) => LogLevel::Error,
        Some(Command::Call { .. } | Command::Install(_) | Command::Uninstall(_)) => LogLevel::Warn,
        _ => LogLevel::Info,
    };
    let log = match cli::init_logging(&cli.global, default_level) {
        Ok(log) => log,
        Err(e) => {
            eprintln!("mcp-envelope: {e:#}");
            return ExitCode::from(2);
        }
    };
    let name = cli::subcommand_name(cli.command.as_ref());
    let result = cli::run(cli);
    drop(log); // the log lines still held are written before an error message
    match result {
        Ok(code) => code,
        // The reader of our stdout stopped reading (`| head`): it has what it wanted.
        Err(err) if cli::is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("mcp-envelope {name}: {err:#}");
            cli::exit_code(&err)
        }
    }
}

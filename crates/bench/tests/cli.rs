//! The benchmark tool's command line answers. Also why `cargo test` builds
//! the `countersign-bench` executable itself (an integration test needs it),
//! in the same compilation as the tests: `make test`'s soak runs it.

use std::process::Command;

#[test]
fn the_bench_tool_lists_its_commands() {
    let out =
        Command::new(env!("CARGO_BIN_EXE_countersign-bench")).arg("--help").output().expect("run countersign-bench");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let help = String::from_utf8_lossy(&out.stdout);
    for command in ["suite", "soak", "baseline"] {
        assert!(help.contains(command), "`{command}` missing from:\n{help}");
    }
}

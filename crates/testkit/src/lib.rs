//! Shared by the black-box tests (`server/tests`) and the benchmarks
//! (`crates/bench`): starting a `countersign` process (`serve`, `rail-sim`,
//! the bench baseline) and learning its URL from the line it prints once it
//! listens. No sleeping until ready: the process says when.

use std::io;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// Starts `cmd` with its stdout piped and waits, at most `within`, for the
/// line that starts with `prefix` (e.g. `"countersign listening on "`);
/// returns the child (killed when dropped) and the rest of that line, its
/// URL. Stdout is drained afterwards, so the child never blocks on a full
/// pipe. Stdin and stderr are left as `cmd` set them.
pub async fn spawn_listening(mut cmd: Command, prefix: &str, within: Duration) -> io::Result<(Child, String)> {
    cmd.stdout(Stdio::piped()).kill_on_drop(true);
    let mut child = cmd.spawn()?;
    let stdout = child.stdout.take().ok_or_else(|| io::Error::other("the child has no stdout"))?;
    let mut lines = BufReader::new(stdout).lines();
    let found = tokio::time::timeout(within, async {
        while let Some(line) = lines.next_line().await? {
            if let Some(rest) = line.strip_prefix(prefix) {
                return Ok(rest.trim().to_owned());
            }
        }
        Err(io::Error::other(format!("the process exited before printing `{prefix}…` (see its log)")))
    })
    .await;
    let url = match found {
        Ok(result) => result?,
        Err(_) => {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("the process did not print `{prefix}…` within {within:?}"),
            ))
        }
    };
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Ok((child, url))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn finds_the_line_and_reports_a_process_that_never_listens() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo starting; echo 'svc listening on http://127.0.0.1:1234'; sleep 5"]);
        let (_child, url) = spawn_listening(cmd, "svc listening on ", Duration::from_secs(5)).await.unwrap();
        assert_eq!(url, "http://127.0.0.1:1234");

        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo nothing"]);
        let err = spawn_listening(cmd, "svc listening on ", Duration::from_secs(5)).await.unwrap_err();
        assert!(err.to_string().contains("exited before"), "{err}");

        let mut cmd = Command::new("sh");
        cmd.args(["-c", "sleep 5"]);
        let err = spawn_listening(cmd, "svc listening on ", Duration::from_millis(200)).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
    }
}

//! Talking to the person at the terminal: answers read from stdin line by
//! line (so tests and scripts can pipe them), prompts and progress on
//! stderr, colour only when stderr is a terminal.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::Mutex;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::Value;
use toolwire::protocol::{
    DetailedTask, LoggingMessageNotificationParams, ProgressNotificationParams, TaskStatus,
};

use crate::safe_text;

/// Reads one line from stdin without blocking the runtime; `None` at EOF.
pub async fn read_line() -> Option<String> {
    let read = tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        match std::io::stdin().lock().read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(line.trim_end_matches(['\r', '\n']).to_owned()),
        }
    });
    read.await.ok().flatten()
}

/// When answers come from a pipe rather than a person, shows them after
/// the prompt so stderr reads like a transcript (EOF shows as `<end of input>`).
pub fn echo_piped(answer: Option<&str>) {
    if std::io::stdin().is_terminal() {
        return;
    }
    match answer {
        Some(answer) => eprintln!("{answer}"),
        None => eprintln!("<end of input>"),
    }
}

/// Shared terminal state: colours, and the progress bar of the request in
/// flight (hidden while a prompt is shown).
#[derive(Debug)]
pub struct Ui {
    color: bool,
    bar: Mutex<Option<ProgressBar>>,
    /// The last task status shown, so each change is shown once.
    task_seen: Mutex<Option<(TaskStatus, Option<String>)>>,
}

impl Ui {
    pub fn new() -> Self {
        let color = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
        Ui {
            color,
            bar: Mutex::new(None),
            task_seen: Mutex::new(None),
        }
    }

    /// Red and bold, for dangerous things.
    pub fn danger(&self, text: &str) -> String {
        self.paint("1;31", text)
    }

    /// Yellow, for warnings.
    pub fn warn(&self, text: &str) -> String {
        self.paint("33", text)
    }

    /// Bold.
    pub fn bold(&self, text: &str) -> String {
        self.paint("1", text)
    }

    /// Dim, for secondary details.
    pub fn dim(&self, text: &str) -> String {
        self.paint("2", text)
    }

    /// The text, with any control sequence in it escaped, in a colour
    /// (only when stderr is a terminal and `NO_COLOR` is unset).
    fn paint(&self, code: &str, text: &str) -> String {
        let text = safe_text::text(text);
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.into_owned()
        }
    }

    /// Prints a line on stderr without tearing the progress bar. Control
    /// sequences in it are escaped, except toolwire's own colours.
    pub fn say(&self, line: &str) {
        let line = safe_text::styled(line, self.color);
        let bar = self.bar.lock().unwrap_or_else(|e| e.into_inner());
        match bar.as_ref() {
            Some(bar) => bar.suspend(|| eprintln!("{line}")),
            None => eprintln!("{line}"),
        }
    }

    /// Writes a prompt (no newline) on stderr, after clearing any progress bar.
    pub fn ask(&self, prompt: &str) {
        let prompt = safe_text::styled(prompt, self.color);
        self.clear_progress();
        let mut stderr = std::io::stderr().lock();
        let _ = write!(stderr, "{prompt}");
        let _ = stderr.flush();
    }

    /// Asks a yes/no question; only "y" or "yes" accepts, and EOF says no.
    pub async fn confirm(&self, question: &str) -> bool {
        self.ask(&format!("{question} [y/N] "));
        let answer = read_line().await;
        echo_piped(answer.as_deref());
        matches!(
            answer.map(|a| a.trim().to_ascii_lowercase()).as_deref(),
            Some("y" | "yes")
        )
    }

    /// Shows a progress notification: a bar when the total is known, a
    /// spinner otherwise. Hidden by indicatif when stderr is not a terminal.
    pub fn progress(&self, params: &ProgressNotificationParams) {
        let mut slot = self.bar.lock().unwrap_or_else(|e| e.into_inner());
        let bar = slot.get_or_insert_with(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        match params.total {
            Some(total) if total > 0.0 => {
                if bar.length().is_none() {
                    bar.set_style(
                        ProgressStyle::with_template("{spinner} [{bar:30}] {percent:>3}% {msg}")
                            .unwrap_or_else(|_| ProgressStyle::default_bar())
                            .progress_chars("=> "),
                    );
                }
                bar.set_length(1000);
                let fraction = (params.progress / total).clamp(0.0, 1.0);
                bar.set_position((fraction * 1000.0).round() as u64);
            }
            _ => {
                bar.set_style(
                    ProgressStyle::with_template("{spinner} {msg}")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
            }
        }
        let message = match (&params.message, params.total) {
            (Some(message), _) => safe_text::line(message).into_owned(),
            (None, Some(_)) => String::new(),
            (None, None) => format!("{} done", params.progress),
        };
        bar.set_message(message);
    }

    /// Prints a server log message on stderr.
    pub fn log(&self, params: &LoggingMessageNotificationParams) {
        let level = serde_json::to_value(params.level)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        let data = match &params.data {
            Value::String(text) => safe_text::text(text).into_owned(),
            other => safe_text::text(&other.to_string()).into_owned(),
        };
        let logger = params
            .logger
            .as_deref()
            .map(|l| format!(" {}:", safe_text::line(l)))
            .unwrap_or_default();
        let line = format!("[server {level}]{logger} {data}");
        let line = match params.level {
            l if l >= toolwire::protocol::LoggingLevel::Error => self.danger(&line),
            l if l >= toolwire::protocol::LoggingLevel::Warning => self.warn(&line),
            _ => self.dim(&line),
        };
        self.say(&line);
    }

    /// Shows the status of the task a call became, a line on stderr each
    /// time its status or status message changes.
    pub fn task_status(&self, task: &DetailedTask) {
        let now = (task.task.status, task.task.status_message.clone());
        {
            let mut seen = self.task_seen.lock().unwrap_or_else(|e| e.into_inner());
            if seen.as_ref() == Some(&now) {
                return;
            }
            *seen = Some(now);
        }
        self.say(&self.dim(&task_line(task)));
    }

    /// True once a status of a task has been shown: the call waits on a task.
    pub fn following_task(&self) -> bool {
        self.task_seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    /// Removes the progress bar (the next notification starts a new one).
    pub fn clear_progress(&self) {
        let bar = self.bar.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
    }
}

/// `task ID: status: message`, on one line.
pub fn task_line(task: &DetailedTask) -> String {
    let status = serde_json::to_value(task.task.status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    let message = task
        .task
        .status_message
        .as_deref()
        .map(|m| format!(": {}", safe_text::line(m)))
        .unwrap_or_default();
    format!(
        "task {}: {status}{message}",
        safe_text::line(&task.task.task_id)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolwire::protocol::ProgressToken;

    fn plain() -> Ui {
        Ui {
            color: false,
            bar: Mutex::new(None),
            task_seen: Mutex::new(None),
        }
    }

    #[test]
    fn a_task_line_is_escaped_onto_one_line() {
        let mut task = toolwire::protocol::Task::new(
            "t\x1b[2J1",
            TaskStatus::InputRequired,
            "2026-01-01T00:00:00Z",
            None,
        );
        task.status_message = Some("wait\ning".into());
        assert_eq!(
            task_line(&task.into()),
            r"task t\u{1b}[2J1: input_required: wait\u{a}ing"
        );
    }

    #[test]
    fn progress_messages_are_escaped_onto_one_line() {
        let ui = plain();
        let mut params = ProgressNotificationParams::new(ProgressToken::from(1_i64), 1.0);
        params.message = Some("step\x1b]0;title\x07\n\u{202e}two\u{9b}".into());
        ui.progress(&params);
        let message = ui.bar.lock().unwrap().as_ref().unwrap().message();
        ui.clear_progress();
        assert_eq!(message, r"step\u{1b}]0;title\u{7}\u{a}\u{202e}two\u{9b}");
    }

    #[test]
    fn painted_text_is_escaped_inside_the_colour() {
        let ui = Ui {
            color: true,
            bar: Mutex::new(None),
            task_seen: Mutex::new(None),
        };
        assert_eq!(
            ui.bold("a\x1b[8mb\u{202e}"),
            "\x1b[1ma\\u{1b}[8mb\\u{202e}\x1b[0m"
        );
        assert_eq!(plain().warn("w\x1b[2J"), "w\\u{1b}[2J");
    }
}

//! The client commands: discover, list, call, read, prompt.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use clap::Args;
use serde_json::{Map, Value, json};
use toolwire::client::transport::ProtocolMode;
use toolwire::client::{Error, ToolCallStart};

use crate::confirm::{Confirm, ConfirmSettings};
use crate::connect::{ConnectArgs, Connection, Target};
use crate::eras::EraStore;
use crate::failure::{Failure, closest};
use crate::render;
use crate::safe_text;
use crate::terminal::Ui;

/// `toolwire discover`.
#[derive(Debug, Args)]
pub struct DiscoverArgs {
    /// The server's URL, e.g. http://127.0.0.1:8931/mcp (or give a stdio
    /// server's command after `--`).
    #[arg(value_name = "SERVER")]
    words: Vec<String>,

    #[command(flatten)]
    connect: ConnectArgs,

    /// A stdio server to spawn: the command and its arguments, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

/// `toolwire list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// The server's URL, e.g. http://127.0.0.1:8931/mcp (or give a stdio
    /// server's command after `--`).
    #[arg(value_name = "SERVER")]
    words: Vec<String>,

    /// List resources and resource templates (instead of tools).
    #[arg(long)]
    resources: bool,

    /// List prompts (instead of tools).
    #[arg(long)]
    prompts: bool,

    /// List tools, resources, resource templates and prompts.
    #[arg(long, conflicts_with_all = ["resources", "prompts"])]
    all: bool,

    #[command(flatten)]
    connect: ConnectArgs,

    /// A stdio server to spawn: the command and its arguments, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

/// `toolwire call`.
#[derive(Debug, Args)]
pub struct CallArgs {
    /// The server's URL (left out when a stdio command follows `--`), the
    /// tool's name, then its arguments as KEY=VALUE pairs. A value is read
    /// as JSON when it parses (42, true, [1,2], {"a":1}) and as a string
    /// otherwise; when the tool's inputSchema types the property, its type
    /// decides (text=42 sends the string "42" to a string property).
    #[arg(value_name = "SERVER TOOL KEY=VALUE")]
    words: Vec<String>,

    /// The arguments as one JSON object (or @FILE to read it from a file);
    /// KEY=VALUE pairs are applied on top.
    #[arg(long, value_name = "JSON")]
    args: Option<String>,

    /// Call without asking for confirmation (the tool and its arguments are
    /// still shown unless --json).
    #[arg(long, short = 'y')]
    yes: bool,

    /// Do not wait for a long-running call: when the server makes it a task
    /// (the Tasks extension), print the task's id and exit 0; follow it
    /// later with `toolwire task wait SERVER ID`. A call the server answers
    /// at once prints its result as usual.
    #[arg(long)]
    detach: bool,

    #[command(flatten)]
    connect: ConnectArgs,

    /// A stdio server to spawn: the command and its arguments, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

/// `toolwire task`.
#[derive(Debug, Args)]
pub struct TaskArgs {
    #[command(subcommand)]
    action: TaskAction,
}

/// What `toolwire task` does.
#[derive(Debug, clap::Subcommand)]
enum TaskAction {
    /// Show a task's status (and its result once it has one).
    #[command(override_usage = "toolwire task get [OPTIONS] <SERVER> <ID>\n       \
                                toolwire task get [OPTIONS] <ID> -- <COMMAND>...")]
    Get(TaskIdArgs),
    /// Wait for a task to end, answering its questions, and print its result
    /// as `toolwire call` would.
    #[command(override_usage = "toolwire task wait [OPTIONS] <SERVER> <ID>\n       \
                                toolwire task wait [OPTIONS] <ID> -- <COMMAND>...")]
    Wait(TaskIdArgs),
    /// Ask the server to cancel a task.
    #[command(
        override_usage = "toolwire task cancel [OPTIONS] <SERVER> <ID>\n       \
                                toolwire task cancel [OPTIONS] <ID> -- <COMMAND>..."
    )]
    Cancel(TaskIdArgs),
}

/// The server and the task's id.
#[derive(Debug, Args)]
struct TaskIdArgs {
    /// The server's URL (left out when a stdio command follows `--`), then
    /// the task's id (as `toolwire call --detach` printed it).
    #[arg(value_name = "SERVER ID")]
    words: Vec<String>,

    #[command(flatten)]
    connect: ConnectArgs,

    /// A stdio server to spawn: the command and its arguments, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

/// `toolwire read`.
#[derive(Debug, Args)]
pub struct ReadArgs {
    /// The server's URL (left out when a stdio command follows `--`), then
    /// the resource's URI (see `toolwire list --resources`).
    #[arg(value_name = "SERVER URI")]
    words: Vec<String>,

    #[command(flatten)]
    connect: ConnectArgs,

    /// A stdio server to spawn: the command and its arguments, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

/// `toolwire prompt`.
#[derive(Debug, Args)]
pub struct PromptArgs {
    /// The server's URL (left out when a stdio command follows `--`), the
    /// prompt's name (see `toolwire list --prompts`), then its arguments as
    /// KEY=VALUE pairs (prompt arguments are strings).
    #[arg(value_name = "SERVER NAME KEY=VALUE")]
    words: Vec<String>,

    #[command(flatten)]
    connect: ConnectArgs,

    /// A stdio server to spawn: the command and its arguments, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

/// Runs `body` with a connection, then closes it whatever happened.
/// Runs `body` on a connection to `target`, then closes it. In auto mode
/// the era found is remembered for the next command; when `body` fails in a
/// way that suggests the remembered era is wrong, it is forgotten and
/// `body` runs once more on a connection that finds out afresh.
async fn with_connection<F, Fut>(
    target: Target,
    args: &ConnectArgs,
    confirm: Option<ConfirmSettings>,
    body: F,
) -> Result<(), Failure>
where
    F: Fn(Arc<Connection>) -> Fut,
    Fut: std::future::Future<Output = Result<(), Failure>>,
{
    let store = (args.protocol == ProtocolMode::Auto)
        .then(EraStore::in_config_dir)
        .flatten();
    let hint = store.as_ref().and_then(|s| s.get(&target));
    let ui = Arc::new(Ui::new());
    let open = |hint| {
        let approval = confirm.map(|settings| Confirm {
            ui: Arc::clone(&ui),
            settings,
        });
        Connection::open(target.clone(), args, Arc::clone(&ui), approval, hint).map(Arc::new)
    };
    let connection = open(hint)?;
    let mut outcome = body(Arc::clone(&connection)).await;
    connection.close().await;
    let mut era = connection.client.era();
    if outcome.is_err() && connection.era_suspect.load(Ordering::SeqCst) {
        tracing::info!(server = %target.describe(), "failed under the remembered era; finding out again");
        let fresh = open(None)?;
        outcome = body(Arc::clone(&fresh)).await;
        fresh.close().await;
        era = fresh.client.era();
    }
    if let Some(store) = &store {
        if era.is_some() {
            store.set(&target, era);
        }
    }
    outcome
}

pub async fn discover(args: DiscoverArgs) -> Result<(), Failure> {
    let (target, rest) = Target::split(args.words, args.command)?;
    no_more_words(&rest, "discover")?;
    let json = args.connect.json;
    with_connection(target, &args.connect, None, |conn| async move {
        let discovered = match conn.client.discover().await {
            Ok(d) => d.value,
            Err(e) => return Err(conn.failure(e).await),
        };
        if json {
            render::print_json(&discovered);
        } else {
            let era = conn.client.era();
            let version = conn.client.protocol_version();
            render::discover(&conn.target.describe(), &discovered, era, &version);
        }
        Ok(())
    })
    .await
}

pub async fn list(args: ListArgs) -> Result<(), Failure> {
    let (target, rest) = Target::split(args.words, args.command)?;
    no_more_words(&rest, "list")?;
    let json = args.connect.json;
    let want_tools = args.all || !(args.resources || args.prompts);
    let want_resources = args.all || args.resources;
    let want_prompts = args.all || args.prompts;
    with_connection(target, &args.connect, None, |conn| async move {
        let server = conn.target.describe();
        let mut out = Map::new();
        if want_tools {
            let list = match conn.client.list_tools().await {
                Ok(list) => list,
                Err(e) => return Err(conn.failure(e).await),
            };
            for rejected in &list.rejected {
                conn.ui.say(&conn.ui.warn(&format!(
                    "warning: left out tool `{}`: {}",
                    rejected.name, rejected.reason
                )));
            }
            if json {
                let tools: Vec<_> = list.tools.iter().map(|t| &t.tool).collect();
                out.insert("tools".into(), json!(tools));
            } else {
                render::tools(&conn.ui, &server, &list.tools);
            }
        }
        if want_resources {
            let resources = match conn.client.list_resources().await {
                Ok(r) => r.value,
                Err(e) => return Err(conn.failure(e).await),
            };
            let templates = match conn.client.list_resource_templates().await {
                Ok(t) => t.value,
                Err(e) => return Err(conn.failure(e).await),
            };
            if json {
                out.insert("resources".into(), json!(resources));
                out.insert("resourceTemplates".into(), json!(templates));
            } else {
                render::resources(&server, &resources, &templates);
            }
        }
        if want_prompts {
            let prompts = match conn.client.list_prompts().await {
                Ok(p) => p.value,
                Err(e) => return Err(conn.failure(e).await),
            };
            if json {
                out.insert("prompts".into(), json!(prompts));
            } else {
                render::prompts(&server, &prompts);
            }
        }
        if json {
            render::print_json(&out);
        }
        Ok(())
    })
    .await
}

pub async fn call(args: CallArgs) -> Result<(), Failure> {
    let (target, mut rest) = Target::split(args.words, args.command)?;
    if rest.is_empty() {
        return Err(Failure::usage(
            "no tool given: `toolwire call SERVER TOOL [KEY=VALUE]...` \
             (see the tools with `toolwire list SERVER`)",
        ));
    }
    let tool = rest.remove(0);
    let pairs = rest;
    let json = args.connect.json;
    let confirm = ConfirmSettings {
        yes: args.yes,
        quiet: json,
    };
    let base = args.args;
    let detach = args.detach;
    with_connection(target, &args.connect, Some(confirm), |conn| {
        let (tool, pairs, base) = (tool.clone(), pairs.clone(), base.clone());
        async move {
            let list = match conn.client.list_tools().await {
                Ok(list) => list,
                Err(e) => return Err(conn.failure(e).await),
            };
            if let Some(rejected) = list.rejected.iter().find(|r| r.name == tool) {
                return Err(Failure::protocol(format!(
                    "tool `{tool}` cannot be called: its definition breaks a rule ({})",
                    rejected.reason
                )));
            }
            let Some(info) = list.tools.iter().find(|t| t.tool.name == tool) else {
                return Err(unknown_tool(&conn.target, &tool, &list));
            };
            let arguments =
                crate::kv::arguments(base.as_deref(), &pairs, Some(&info.tool.input_schema))
                    .map_err(Failure::usage)?;
            let arguments = Value::Object(arguments);
            let outcome = if detach {
                let started = conn
                    .client
                    .start_tool_task_with(&tool, arguments, &conn.options())
                    .await;
                match started {
                    Ok(ToolCallStart::Task(task)) => {
                        conn.ui.clear_progress();
                        if json {
                            render::print_json(&json!({"taskId": task.id()}));
                        } else {
                            render::task_started(&conn.ui, task.id(), &conn.target.describe());
                        }
                        return Ok(());
                    }
                    Ok(ToolCallStart::Done(result)) if result.is_error() => {
                        Err(Error::ToolExecution {
                            tool: tool.clone(),
                            result: Box::new(result),
                        })
                    }
                    Ok(ToolCallStart::Done(result)) => Ok(result),
                    Err(e) => Err(e),
                }
            } else {
                let stop = StopTaskOnCtrlC::arm(&conn.ui);
                let options = conn.options().cancel_on(stop.token.clone());
                let outcome = conn.client.call_tool_with(&tool, arguments, &options).await;
                if stop.token.is_cancelled() {
                    conn.ui.clear_progress();
                    return Err(Failure::new(
                        INTERRUPTED,
                        "interrupted: the server was asked to cancel the task",
                    ));
                }
                outcome
            };
            show_call_outcome(&conn, outcome, json).await
        }
    })
    .await
}

/// The exit status after Ctrl-C: 128 + SIGINT.
const INTERRUPTED: u8 = 130;

/// Ctrl-C during `toolwire call`: while the call waits on a task, the first
/// one cancels the task (`tasks/cancel`) and the call ends with status 130
/// (a second one, or 10 s without an answer, exits at once); otherwise it
/// exits at once, as without this. Disarmed when dropped.
struct StopTaskOnCtrlC {
    token: tokio_util::sync::CancellationToken,
    watcher: tokio::task::JoinHandle<()>,
}

impl StopTaskOnCtrlC {
    fn arm(ui: &Arc<Ui>) -> Self {
        let token = tokio_util::sync::CancellationToken::new();
        let (cancel, ui) = (token.clone(), Arc::clone(ui));
        let watcher = tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_err() {
                return;
            }
            if ui.following_task() {
                ui.say("cancelling the task (Ctrl-C again to quit at once)");
                cancel.cancel();
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    () = tokio::time::sleep(std::time::Duration::from_secs(10)) => {}
                }
            }
            ui.clear_progress();
            std::process::exit(i32::from(INTERRUPTED));
        });
        StopTaskOnCtrlC { token, watcher }
    }
}

impl Drop for StopTaskOnCtrlC {
    fn drop(&mut self) {
        self.watcher.abort();
    }
}

/// Prints a call's result (or its error) as `toolwire call` does.
async fn show_call_outcome(
    conn: &Connection,
    outcome: Result<toolwire::protocol::CallToolResult, Error>,
    json: bool,
) -> Result<(), Failure> {
    conn.ui.clear_progress();
    match outcome {
        Ok(result) => {
            if json {
                render::print_result_json(&result, conn.client.era());
            } else {
                render::call_result(&result);
            }
            Ok(())
        }
        Err(Error::ToolExecution { tool, result }) => {
            if json {
                render::print_result_json(&result, conn.client.era());
            }
            let text = crate::connect::text_of(&result.content);
            let tool = if tool.is_empty() {
                "the task's tool".to_owned()
            } else {
                format!("tool `{tool}`")
            };
            Err(Failure::new(
                Failure::TOOL,
                format!("{tool} reported an error: {text}"),
            ))
        }
        Err(e) => Err(conn.failure(e).await),
    }
}

/// `toolwire task get|wait|cancel`.
pub async fn task(args: TaskArgs) -> Result<(), Failure> {
    let (verb, ids) = match args.action {
        TaskAction::Get(ids) => ("get", ids),
        TaskAction::Wait(ids) => ("wait", ids),
        TaskAction::Cancel(ids) => ("cancel", ids),
    };
    let (target, mut rest) = Target::split(ids.words, ids.command)?;
    if rest.is_empty() {
        return Err(Failure::usage(format!(
            "no task id given: `toolwire task {verb} SERVER ID` \
             (`toolwire call --detach` prints a task's id)"
        )));
    }
    let id = rest.remove(0);
    no_more_words(&rest, &format!("task {verb}"))?;
    let json = ids.connect.json;
    with_connection(target, &ids.connect, None, |conn| {
        let id = id.clone();
        async move {
            let task = conn.client.task(&id);
            match verb {
                "get" => {
                    let seen = match task.get().await {
                        Ok(seen) => seen,
                        Err(e) => return Err(conn.failure(e).await),
                    };
                    if json {
                        render::print_json(&seen);
                    } else {
                        render::task(&conn.ui, &seen);
                    }
                    Ok(())
                }
                "wait" => match task.wait_with(&conn.options()).await {
                    Err(Error::Cancelled) => {
                        conn.ui.clear_progress();
                        Err(Failure::protocol(format!(
                            "task {} was cancelled",
                            safe_text::line(&id)
                        )))
                    }
                    outcome => show_call_outcome(&conn, outcome, json).await,
                },
                _ => {
                    if let Err(e) = task.cancel().await {
                        return Err(conn.failure(e).await);
                    }
                    if json {
                        render::print_json(&json!({"taskId": id, "cancelRequested": true}));
                    } else {
                        conn.ui.say(&format!(
                            "asked the server to cancel task {}",
                            safe_text::line(&id)
                        ));
                    }
                    Ok(())
                }
            }
        }
    })
    .await
}

fn unknown_tool(target: &Target, tool: &str, list: &toolwire::client::ToolList) -> Failure {
    let names: Vec<String> = list.tools.iter().map(|t| t.tool.name.clone()).collect();
    let server = target.describe();
    if names.is_empty() {
        return Failure::protocol(format!("{server} has no tool `{tool}`: it offers no tools"));
    }
    let near: Vec<String> = closest(tool, &names, 3)
        .iter()
        .map(|n| format!("`{n}`"))
        .collect();
    Failure::protocol(format!(
        "{server} has no tool `{tool}`; did you mean {}?",
        near.join(", ")
    ))
    .hint(format!(
        "`toolwire list` shows all {} tools; names are case-sensitive",
        names.len()
    ))
}

pub async fn read(args: ReadArgs) -> Result<(), Failure> {
    let (target, mut rest) = Target::split(args.words, args.command)?;
    if rest.is_empty() {
        return Err(Failure::usage(
            "no resource URI given: `toolwire read SERVER URI` \
             (see the resources with `toolwire list SERVER --resources`)",
        ));
    }
    let uri = rest.remove(0);
    no_more_words(&rest, "read")?;
    let json = args.connect.json;
    with_connection(target, &args.connect, None, |conn| {
        let uri = uri.clone();
        async move {
            let result = match conn.client.read_resource_with(&uri, &conn.options()).await {
                Ok(r) => r.value,
                Err(e) => return Err(conn.failure(e).await),
            };
            conn.ui.clear_progress();
            if json {
                render::print_result_json(&result, conn.client.era());
            } else {
                render::read_result(&result);
            }
            Ok(())
        }
    })
    .await
}

pub async fn prompt(args: PromptArgs) -> Result<(), Failure> {
    let (target, mut rest) = Target::split(args.words, args.command)?;
    if rest.is_empty() {
        return Err(Failure::usage(
            "no prompt name given: `toolwire prompt SERVER NAME [KEY=VALUE]...` \
             (see the prompts with `toolwire list SERVER --prompts`)",
        ));
    }
    let name = rest.remove(0);
    let mut arguments = BTreeMap::new();
    for pair in rest {
        let Some((key, value)) = pair.split_once('=') else {
            return Err(Failure::usage(format!("{pair:?} is not a KEY=VALUE pair")));
        };
        arguments.insert(key.to_owned(), value.to_owned());
    }
    let json = args.connect.json;
    with_connection(target, &args.connect, None, |conn| {
        let (name, arguments) = (name.clone(), arguments.clone());
        async move {
            let result = match conn
                .client
                .get_prompt_with(&name, arguments, &conn.options())
                .await
            {
                Ok(r) => r,
                Err(e) => return Err(conn.failure(e).await),
            };
            conn.ui.clear_progress();
            if json {
                render::print_result_json(&result, conn.client.era());
            } else {
                render::prompt_result(&result);
            }
            Ok(())
        }
    })
    .await
}

fn no_more_words(rest: &[String], command: &str) -> Result<(), Failure> {
    match rest.first() {
        None => Ok(()),
        Some(extra) => Err(Failure::usage(format!(
            "unexpected {extra:?}: `toolwire {command}` takes only the server \
             (a URL, or a command after `--`)"
        ))),
    }
}

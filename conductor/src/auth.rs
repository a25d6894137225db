//! The agent's authentication methods through the conductor.
//!
//! The editor sees the agent's `authMethods` in the conductor's `initialize` answer, as the
//! agent gave them, and its `authenticate` reaches the agent like any request. One kind needs
//! the conductor: a `terminal` method is run by the editor itself, as "the configured agent
//! program" with the method's `args` appended and its `env` set — and the program the editor
//! has configured is the conductor. So the conductor's answer carries each terminal method with
//! `args` of its own, `["--terminal-auth", ID]` (its `env` as the agent gave it: the conductor
//! passes its environment on), and `conductor agent … --terminal-auth ID` ([`terminal`]) asks
//! the chain's agent for its methods, then runs the agent with that method's `args` and `env`
//! in the editor's terminal, and exits with its status. Not in proxy mode: there the outer
//! conductor is the editor's program.

use std::process::Stdio;

use sacp::jsonrpc::{Message, RawJson, ResponseBody};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::chain::Chain;

/// The conductor's own flag for a terminal method (see the module docs).
pub(crate) const FLAG: &str = "--terminal-auth";

/// Gives each `terminal` auth method of an `initialize` answer the conductor's own `args`.
pub(crate) fn offer_terminal(message: &mut Message) {
    let Message::Response(response) = message else {
        return;
    };
    let ResponseBody::Result(result) = &response.body else {
        return;
    };
    if !result.as_str().contains("\"terminal\"") {
        return;
    }
    let Ok(mut answer) = result.parse::<Value>() else {
        return;
    };
    let Some(methods) = answer.get_mut("authMethods").and_then(Value::as_array_mut) else {
        return;
    };
    let mut changed = false;
    for method in methods {
        if method["type"] == "terminal"
            && let Some(id) = method["id"].as_str().map(str::to_owned)
        {
            method["args"] = json!([FLAG, id]);
            changed = true;
        }
    }
    if changed && let Ok(raw) = RawJson::to_raw(&answer) {
        response.body = ResponseBody::Result(raw);
    }
}

/// Runs the terminal auth method `id` of `chain`'s agent here (see the module docs): its exit
/// status.
pub(crate) async fn terminal(mut chain: Chain, id: &str) -> Result<u8, String> {
    crate::registry::resolve_chain(&mut chain)
        .await
        .map_err(|e| e.to_string())?;
    let agent = chain.components.last().ok_or("the chain has no agent")?;
    if agent.remote.is_some() || agent.wasm.is_some() || agent.in_process.is_some() {
        return Err(format!(
            "the agent {:?} is not a program this terminal can run",
            agent.name
        ));
    }
    let method = method_of(agent, id).await?;
    let mut command = tokio::process::Command::new(&agent.program);
    command.args(&agent.args);
    if let Some(args) = method["args"].as_array() {
        command.args(args.iter().filter_map(Value::as_str));
    }
    command.envs(&agent.env);
    if let Some(env) = method["env"].as_object() {
        command.envs(env.iter().filter_map(|(k, v)| Some((k, v.as_str()?))));
    }
    if let Some(cwd) = &agent.cwd {
        command.current_dir(cwd);
    }
    let status = command
        .stdin(Stdio::inherit())
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .status()
        .await
        .map_err(|e| format!("cannot run {}: {e}", agent.program))?;
    Ok(status.code().map_or(1, |c| u8::try_from(c).unwrap_or(1)))
}

/// The agent's terminal auth method `id`, from its answer to an `initialize` of a client that
/// takes terminal auth.
async fn method_of(agent: &crate::chain::Component, id: &str) -> Result<Value, String> {
    let mut child = tokio::process::Command::new(&agent.program)
        .args(&agent.args)
        .envs(&agent.env)
        .current_dir(agent.cwd.clone().unwrap_or_else(|| ".".into()))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", agent.program))?;
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities": {"auth": {"terminal": true}}},
    });
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    stdin
        .write_all(format!("{initialize}\n").as_bytes())
        .await
        .map_err(|e| format!("cannot ask the agent for its auth methods: {e}"))?;
    let mut lines = BufReader::new(child.stdout.take().ok_or("no stdout")?).lines();
    let answer = tokio::time::timeout(std::time::Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.ok().flatten() {
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if message["id"] == 1 {
                return Some(message);
            }
        }
        None
    })
    .await
    .ok()
    .flatten()
    .ok_or("the agent did not answer initialize")?;
    let _ = child.kill().await;
    let methods = answer["result"]["authMethods"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    methods
        .into_iter()
        .find(|m| m["id"] == id && m["type"] == "terminal")
        .ok_or_else(|| {
            format!(
                "the agent {:?} offers no terminal auth method {id:?}",
                agent.name
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_methods_take_the_conductors_args_and_others_stay() {
        let answer = json!({"protocolVersion": 1, "authMethods": [
            {"id": "login", "name": "Log in"},
            {"id": "setup", "name": "Set up", "type": "terminal", "args": ["--setup"], "env": {"A": "1"}},
        ]});
        let mut message = Message::Response(sacp::jsonrpc::Response::ok(
            sacp::jsonrpc::Id::Number(1),
            RawJson::to_raw(&answer).unwrap(),
        ));
        offer_terminal(&mut message);
        let Message::Response(response) = message else {
            unreachable!()
        };
        let ResponseBody::Result(result) = response.body else {
            unreachable!()
        };
        let offered: Value = result.parse().unwrap();
        assert_eq!(offered["authMethods"][0], answer["authMethods"][0]);
        assert_eq!(
            offered["authMethods"][1]["args"],
            json!(["--terminal-auth", "setup"])
        );
        assert_eq!(offered["authMethods"][1]["env"], json!({"A": "1"}));
    }
}

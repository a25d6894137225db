//! The chain's parsing: command lines, chain files, names, sizes.

use super::*;

#[test]
fn command_lines_split_like_a_shell() {
    let c = Component::parse(r#"/opt/bin/my-agent --model "big one" 'x y' a\ b"#, 1).unwrap();
    assert_eq!(c.name, "my-agent");
    assert_eq!(c.program, "/opt/bin/my-agent");
    assert_eq!(c.args, ["--model", "big one", "x y", "a b"]);
    assert_eq!(Component::parse(&c.command_line(), 1).unwrap(), c);
    let err = Component::parse("agent 'open", 2).unwrap_err().to_string();
    assert!(
        err.contains("component 2") && err.contains("quotes"),
        "{err}"
    );
    assert!(
        Component::parse("   ", 1)
            .unwrap_err()
            .to_string()
            .contains("no program")
    );
}

#[test]
fn interpreters_are_named_after_what_they_run() {
    let name = |line: &str| Component::parse(line, 1).unwrap().name;
    assert_eq!(name("node /opt/agents/agent.mjs --acp"), "agent.mjs");
    assert_eq!(name("node --inspect agent.js"), "agent.js");
    assert_eq!(
        name("npx -y @zed-industries/claude-code-acp"),
        "claude-code-acp"
    );
    assert_eq!(name("python3.12 -m my_agent --acp"), "my_agent");
    assert_eq!(name("uvx fast-agent-acp"), "fast-agent-acp");
    assert_eq!(name("bash -c 'exec gemini --experimental-acp'"), "gemini");
    assert_eq!(name("java -jar /opt/goose.jar"), "goose.jar");
    assert_eq!(name("bun run ./src/agent.ts"), "agent.ts");
    assert_eq!(name("env FOO=1 opencode acp"), "opencode");
    assert_eq!(name("/usr/bin/my-agent --acp"), "my-agent");
    assert_eq!(name("node"), "node");
    assert_eq!(name("node2cobol x"), "node2cobol");
    assert_eq!(name("sh -c 'exec >&-; sleep 30 & wait'"), "sh");
}

#[test]
fn argv_groups_are_separated_by_double_dashes() {
    let mut chain = Chain::default();
    let words = ["p", "--flag", "--", "agent", "--acp", "--", "--"];
    chain.push_argv_groups(words.iter().map(|w| w.to_string()).collect());
    let argvs: Vec<_> = chain
        .components
        .iter()
        .map(|c| (c.program.as_str(), c.args.clone()))
        .collect();
    assert_eq!(
        argvs,
        [
            ("p", vec!["--flag".to_owned()]),
            ("agent", vec!["--acp".to_owned()])
        ]
    );
}

#[test]
fn chain_files_name_components_with_env_and_cwd() {
    let mut chain = Chain::from_command_lines(&["first"]).unwrap();
    chain
        .push_toml(
            r#"
            [[component]]
            name = "sparkle"
            command = "sparkle-proxy -v"
            args = ["two words"]
            env = { K = "v" }
            cwd = "/tmp"

            [[component]]
            command = "agent"
            "#,
        )
        .unwrap();
    let sparkle = &chain.components[1];
    assert_eq!(sparkle.name, "sparkle");
    assert_eq!(sparkle.args, ["-v", "two words"]);
    assert_eq!(sparkle.env.get("K").map(String::as_str), Some("v"));
    assert_eq!(sparkle.cwd.as_deref(), Some(Path::new("/tmp")));
    assert_eq!(chain.components[2].name, "agent");

    let err = Chain::default()
        .push_toml("[[component]]\nname = 1\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("name"), "{err}");
    let err = Chain::default()
        .push_toml("[[component]]\ncommand = \"a\"\nbogus = 2\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("bogus"), "{err}");
    let err = Chain::default()
        .push_toml("[[component]]\ncommand = \"'\"\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("quotes"), "{err}");
    // The cause is a variant a caller can match, not only a message.
    assert!(matches!(
        Chain::default().push_toml("[[component]]\nname = 1\n"),
        Err(ChainError::Text { .. })
    ));
}

#[test]
fn a_dialect_declaration_that_cannot_apply_says_which_and_why() {
    let mut chain = Chain::default();
    chain
        .push_toml("[[component]]\ncommand = \"agent\"\n")
        .unwrap();
    for (declaration, says) in [
        ("1", "POSITION=DIALECT"),
        ("x=rfd", "not a position"),
        ("2=rfd", "no component 2 (it has 1)"),
        ("1=carrier-pigeon", "unknown proxy dialect"),
    ] {
        match chain.declare_dialects(&[declaration]) {
            Err(ChainError::Dialect {
                declaration: given,
                why,
            }) => {
                assert_eq!(given, declaration);
                assert!(why.contains(says), "{why}");
            }
            other => panic!("{declaration}: {other:?}"),
        }
    }
    chain.declare_dialects(&["1=rfd"]).unwrap();
}

#[test]
fn a_chain_file_may_choose_the_mcp_bridge() {
    let mut chain = Chain::default();
    chain
        .push_toml("mcp_bridge = \"stdio\"\n[[component]]\ncommand = \"agent\"\n")
        .unwrap();
    assert_eq!(chain.mcp_bridge, Some(BridgeMode::Stdio));
    let err = Chain::default()
        .push_toml("mcp_bridge = \"carrier-pigeon\"\n")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("carrier-pigeon") || err.contains("unknown variant"),
        "{err}"
    );
}

#[test]
fn a_webassembly_component_is_granted_what_its_entry_says_and_nothing_else() {
    let c = Component::parse("wasm:/opt/p.wasm '>> '", 1).unwrap();
    assert_eq!(
        (c.name.as_str(), c.args.as_slice()),
        ("p", [">> ".to_owned()].as_slice())
    );
    assert_eq!(Component::parse(&c.command_line(), 1).unwrap(), c);
    assert_eq!(c.grants().as_deref(), Some("nothing granted"));
    let wasm = c.wasm.as_ref().unwrap();
    assert_eq!(wasm.path, PathBuf::from("/opt/p.wasm"));
    assert_eq!(
        (wasm.memory, wasm.busy_timeout),
        (wasm::DEFAULT_MEMORY, wasm::DEFAULT_BUSY_TIMEOUT)
    );
    let mut chain = Chain::default();
    chain
        .push_toml(
            "[[component]]\nwasm = \"/opt/s.wasm\"\nargs = [\"-v\"]\nenv = { A = \"1\" }\n\
             dirs = [\"/home/me/notes:/notes:ro\"]\nnetwork = true\nmemory = \"64MiB\"\n\
             busy_timeout = \"2s\"\n",
        )
        .unwrap();
    let c = &chain.components[0];
    assert_eq!(
        (c.name.as_str(), c.args.as_slice()),
        ("s", ["-v".to_owned()].as_slice())
    );
    assert_eq!(
        c.grants().as_deref(),
        Some("/home/me/notes:/notes:ro, network")
    );
    let wasm = c.wasm.as_ref().unwrap();
    assert_eq!(
        (wasm.memory, wasm.busy_timeout),
        (64 << 20, std::time::Duration::from_secs(2))
    );
    for (entry, says) in [
        ("wasm = \"/s.wasm\"\ncwd = \"/x\"", "no working directory"),
        (
            "command = \"agent\"\ndirs = [\"/x\"]",
            "are for a `wasm` component",
        ),
        ("wasm = \"/s.wasm\"\nmemory = \"lots\"", "memory"),
        ("wasm = \"/s.wasm\"\ncommand = \"agent\"", "give one of"),
    ] {
        let err = Chain::default()
            .push_toml(&format!("[[component]]\n{entry}\n"))
            .unwrap_err()
            .to_string();
        assert!(err.contains(says), "{entry}: {err}");
    }
}

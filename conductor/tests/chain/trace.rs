//! `--trace FILE`: one JSON line per message per hop.

use serde_json::Value;

use crate::common::*;

#[tokio::test]
async fn the_trace_has_a_line_per_message_per_hop() {
    let dir = std::env::temp_dir().join(format!("sacp-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for payloads in [false, true] {
        let file = dir.join(format!("trace-{payloads}.jsonl"));
        let mut args = vec![
            "agent".to_owned(),
            "--trace".to_owned(),
            file.to_string_lossy().into_owned(),
        ];
        if payloads {
            args.push("--trace-payloads".to_owned());
        }
        args.extend([passthrough(), agent()]);
        let mut editor = Editor::start(conductor(), &args);
        let session = editor.open_session().await;
        editor.prompt(&session, "stream 3").await;
        editor.close_stdin();
        assert_eq!(editor.exit().await.0, Some(0), "{}", editor.stderr());

        let text = std::fs::read_to_string(&file).unwrap();
        let records: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        // initialize, session/new and the prompt cross 2 hops each way (4 messages each); each
        // of the 3 updates crosses 2 hops.
        assert_eq!(records.len(), 3 * 4 + 3 * 2, "{text}");
        for r in &records {
            for key in ["time", "from", "to", "direction", "kind", "method"] {
                assert!(r.get(key).is_some(), "{key} missing in {r}");
            }
            assert_eq!(r.get("payload").is_some(), payloads, "{r}");
        }
        let first = &records[0];
        assert_eq!(first["from"], "editor");
        assert_eq!(first["to"], "1:passthrough-proxy");
        assert_eq!(first["direction"], "down");
        assert_eq!(first["method"], "initialize");
        let update = records
            .iter()
            .find(|r| r["from"] == "2:test-agent" && r["kind"] == "notification")
            .unwrap();
        assert_eq!(update["to"], "1:passthrough-proxy");
        assert_eq!(update["method"], "_proxy/successor/notification");
        assert_eq!(update["direction"], "up");
        let answer = records.iter().rev().find(|r| r["to"] == "editor").unwrap();
        assert_eq!(answer["kind"], "response");
        assert_eq!(answer["method"], "session/prompt");
    }
    let _ = std::fs::remove_dir_all(dir);
}

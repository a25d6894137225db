//! What the server refuses, each time serving others on: no or a wrong token, a foreign
//! origin, an unknown connection, an oversize body, malformed JSON, a second reader.

use sacp::testing::ScriptedAgent;

use crate::serve;

#[tokio::test]
async fn bad_requests_are_refused_with_their_status_and_the_server_goes_on() {
    let (url, token, shutdown) = serve(ScriptedAgent::new(), |b| b.max_message(1024)).await;
    let http = reqwest_client();
    let auth = format!("Bearer {token}");
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#;
    let post = |body: &'static str, headers: Vec<(&'static str, String)>| {
        let mut request = http
            .post(&url)
            .header("content-type", "application/json")
            .body(body);
        for (name, value) in headers {
            request = request.header(name, value);
        }
        request.send()
    };
    // No token, a wrong one.
    assert_eq!(post(init, vec![]).await.unwrap().status(), 401);
    let wrong = vec![("authorization", "Bearer nope".to_owned())];
    assert_eq!(post(init, wrong).await.unwrap().status(), 401);
    // A page of another site.
    let foreign = vec![
        ("authorization", auth.clone()),
        ("origin", "https://evil.example".to_owned()),
    ];
    assert_eq!(post(init, foreign).await.unwrap().status(), 403);
    // A Host that is not this machine's (DNS rebinding).
    let rebound = vec![
        ("authorization", auth.clone()),
        ("host", "evil.example".to_owned()),
    ];
    assert_eq!(post(init, rebound).await.unwrap().status(), 403);
    // An unknown connection.
    let unknown = vec![
        ("authorization", auth.clone()),
        ("acp-connection-id", "nope".to_owned()),
    ];
    let response = post(r#"{"jsonrpc":"2.0","method":"x"}"#, unknown)
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
    // Too large a body.
    let big: &'static str = Box::leak(
        format!(
            r#"{{"jsonrpc":"2.0","method":"x","params":{{"p":"{}"}}}}"#,
            "x".repeat(2000)
        )
        .into_boxed_str(),
    );
    assert_eq!(
        post(big, vec![("authorization", auth.clone())])
            .await
            .unwrap()
            .status(),
        413
    );
    // Malformed JSON, a batch.
    assert_eq!(
        post("{nope", vec![("authorization", auth.clone())])
            .await
            .unwrap()
            .status(),
        400
    );
    let batch = post("[]", vec![("authorization", auth.clone())])
        .await
        .unwrap();
    assert_eq!(batch.status(), 400);
    let body: serde_json::Value = batch.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32600);
    // And a proper connection still works: initialize, then a second reader of its stream.
    let response = post(init, vec![("authorization", auth.clone())])
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let connection = response.headers()["acp-connection-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["id"], 0);
    assert_eq!(body["result"]["protocolVersion"], 1);
    let get = || {
        http.get(&url)
            .header("authorization", &auth)
            .header("accept", "text/event-stream")
            .header("acp-connection-id", &connection)
            .send()
    };
    let first = get().await.unwrap();
    assert_eq!(first.status(), 200);
    assert_eq!(get().await.unwrap().status(), 409);
    drop(first);
    shutdown.shutdown();
}

/// A plain HTTP client (reqwest here has no TLS provider of its own: the one it would use is
/// installed first).
fn reqwest_client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().build().unwrap()
}

#[tokio::test]
async fn a_websocket_answers_bad_frames_and_ignores_binary_ones_and_closes_for_a_missing_initialize()
 {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
    use tokio_tungstenite::tungstenite::{Bytes, Message};

    let (url, token, shutdown) = serve(ScriptedAgent::new(), |b| b.max_message(4096)).await;
    let ws_url = crate::ws(&url);
    let open = || async {
        let mut request = ws_url.as_str().into_client_request().unwrap();
        request
            .headers_mut()
            .insert("authorization", format!("Bearer {token}").parse().unwrap());
        let (socket, response) = tokio_tungstenite::connect_async(request).await.unwrap();
        assert!(response.headers().contains_key("acp-connection-id"));
        socket
    };
    // Not initialize first: closed with 1002.
    let mut socket = open().await;
    socket
        .send(Message::text(
            r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}"#,
        ))
        .await
        .unwrap();
    match sacp::testing::within("the close", socket.next()).await {
        Some(Ok(Message::Close(Some(frame)))) => {
            assert_eq!(frame.code, CloseCode::Protocol);
            assert_eq!(frame.reason, "First message must be initialize");
        }
        other => panic!("expected a close frame, got {other:?}"),
    }

    // Malformed JSON: -32700, id null; a binary frame: ignored; the socket goes on.
    let mut socket = open().await;
    socket.send(Message::text("{nope")).await.unwrap();
    let answer = next_text(&mut socket).await;
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
    assert_eq!(answer["id"], serde_json::Value::Null);
    socket
        .send(Message::Binary(Bytes::from_static(b"\x00\x01")))
        .await
        .unwrap();
    socket
        .send(Message::text(r#"{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#))
        .await
        .unwrap();
    let answer = next_text(&mut socket).await;
    assert_eq!(answer["id"], "i", "{answer}");
    assert_eq!(answer["result"]["protocolVersion"], 1);
    // A second initialize is refused, and the socket stays open.
    socket
        .send(Message::text(r#"{"jsonrpc":"2.0","id":"j","method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#))
        .await
        .unwrap();
    let answer = next_text(&mut socket).await;
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    // A message over the limit: closed with 1008.
    let big = format!(
        r#"{{"jsonrpc":"2.0","method":"x","params":{{"p":"{}"}}}}"#,
        "x".repeat(8000)
    );
    socket.send(Message::text(big)).await.unwrap();
    match sacp::testing::within("the close", socket.next()).await {
        Some(Ok(Message::Close(Some(frame)))) => assert_eq!(frame.code, CloseCode::Policy),
        other => panic!("expected a close frame, got {other:?}"),
    }
    // The server serves others.
    let transport = crate::connect(&ws_url, &token).await;
    let editor = sacp::testing::ScriptedEditor::new().connect(transport);
    sacp::testing::within("initialize", editor.initialize())
        .await
        .unwrap();
    shutdown.shutdown();
}

/// The next frame of `socket`, which must be a text frame of JSON.
async fn next_text<S>(socket: &mut tokio_tungstenite::WebSocketStream<S>) -> serde_json::Value
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    use futures_util::StreamExt;
    use tokio_tungstenite::tungstenite::Message;
    match sacp::testing::within("a frame", socket.next()).await {
        Some(Ok(Message::Text(text))) => serde_json::from_str(&text).unwrap(),
        other => panic!("expected a text frame, got {other:?}"),
    }
}

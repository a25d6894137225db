//! Cases, decoders by type name, and the checks every case goes through.

use std::fmt::Debug;

use heck::ToUpperCamelCase;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// One example message.
#[derive(Debug, Clone)]
pub struct Case {
    /// Where it comes from (fixture file, or the doc page).
    pub source: String,
    /// The name of the type it is an instance of.
    pub ty: String,
    pub json: Value,
    /// Names that must appear in the decoded value's `Debug` output (variants).
    pub variants: Vec<String>,
    /// Whether it holds a kind or value the schema does not know (it must land in a catch-all).
    pub unknown: bool,
}

/// A decoded and re-serialized message.
#[derive(Debug)]
pub struct Decoded {
    pub json: Value,
    pub debug: String,
}

pub type Decoder = fn(&Value) -> Result<Decoded, String>;

pub fn roundtrip<T: DeserializeOwned + Serialize + Debug>(v: &Value) -> Result<Decoded, String> {
    let t: T =
        serde_json::from_value(v.clone()).map_err(|e| format!("does not deserialize: {e}"))?;
    let json = serde_json::to_value(&t).map_err(|e| format!("does not serialize: {e}"))?;
    Ok(Decoded {
        json,
        debug: format!("{t:?}"),
    })
}

/// The last segment of a stringified path: `:: sacp_schema :: acp :: v1 :: X` → `X`.
pub fn last_segment(path: &'static str) -> &'static str {
    path.rsplit("::").next().unwrap_or(path).trim()
}

/// Builds `vec![(name, decoder)]` from a request table macro's rows.
#[macro_export]
macro_rules! request_decoders {
    ($(($req:path, $resp:path, $method:literal, $side:ident)),* $(,)?) => {
        vec![$(
            ($crate::harness::last_segment(stringify!($req)), $crate::harness::roundtrip::<$req> as $crate::harness::Decoder),
            ($crate::harness::last_segment(stringify!($resp)), $crate::harness::roundtrip::<$resp> as $crate::harness::Decoder),
        )*]
    };
}

/// Builds `vec![(name, decoder)]` from a notification table macro's rows.
#[macro_export]
macro_rules! notification_decoders {
    ($(($params:path, $method:literal, $side:ident)),* $(,)?) => {
        vec![$(
            ($crate::harness::last_segment(stringify!($params)), $crate::harness::roundtrip::<$params> as $crate::harness::Decoder),
        )*]
    };
}

/// Decoders of a module by type name.
pub struct Registry(pub Vec<(&'static str, Decoder)>);

impl Registry {
    pub fn get(&self, ty: &str) -> Option<Decoder> {
        self.0.iter().find(|(n, _)| *n == ty).map(|(_, d)| *d)
    }
}

pub fn acp_v1() -> Registry {
    use sacp_schema::acp::v1 as m;
    let mut all: Vec<(&'static str, Decoder)> =
        sacp_schema::for_each_acp_v1_request!(request_decoders);
    all.extend(sacp_schema::for_each_acp_v1_notification!(
        notification_decoders
    ));
    all.extend([
        ("SessionUpdate", roundtrip::<m::SessionUpdate> as Decoder),
        ("ContentBlock", roundtrip::<m::ContentBlock>),
        ("ToolCall", roundtrip::<m::ToolCall>),
        ("ToolCallUpdate", roundtrip::<m::ToolCallUpdate>),
        ("McpServer", roundtrip::<m::McpServer>),
    ]);
    Registry(all)
}

pub fn acp_v2() -> Registry {
    use sacp_schema::acp::v2 as m;
    let mut all: Vec<(&'static str, Decoder)> =
        sacp_schema::for_each_acp_v2_request!(request_decoders);
    all.extend(sacp_schema::for_each_acp_v2_notification!(
        notification_decoders
    ));
    all.extend([
        ("SessionUpdate", roundtrip::<m::SessionUpdate> as Decoder),
        ("ContentBlock", roundtrip::<m::ContentBlock>),
        ("McpServer", roundtrip::<m::McpServer>),
    ]);
    Registry(all)
}

pub fn mcp() -> Registry {
    use sacp_schema::mcp as m;
    // The tables give params and result types; the corpus also names envelope types.
    let mut all: Vec<(&'static str, Decoder)> =
        sacp_schema::for_each_mcp_request!(request_decoders);
    all.extend(sacp_schema::for_each_mcp_notification!(
        notification_decoders
    ));
    all.extend(mcp_types!(m;
        InitializeRequest, InitializeResult, InitializedNotification, PingRequest, EmptyResult, Result,
        ListToolsRequest, ListToolsResult, CallToolRequest, CallToolResult, ProgressNotification,
        CancelledNotification, ListResourcesRequest, ListResourcesResult, ListResourceTemplatesRequest,
        ListResourceTemplatesResult, ReadResourceRequest, ReadResourceResult, SubscribeRequest,
        UnsubscribeRequest, ResourceUpdatedNotification, ResourceListChangedNotification,
        ListPromptsRequest, ListPromptsResult, GetPromptRequest, GetPromptResult,
        PromptListChangedNotification, ToolListChangedNotification, CompleteRequest, CompleteResult,
        SetLevelRequest, LoggingMessageNotification, CreateMessageRequest, CreateMessageResult,
        ListRootsRequest, ListRootsResult, RootsListChangedNotification, ElicitRequest, ElicitResult,
        ElicitationCompleteNotification, GetTaskRequest, GetTaskResult, GetTaskPayloadRequest,
        GetTaskPayloadResult, CancelTaskRequest, CancelTaskResult, ListTasksRequest, ListTasksResult,
        TaskStatusNotification, CreateTaskResult, JsonrpcErrorResponse, ContentBlock, Tool
    ));
    Registry(all)
}

macro_rules! mcp_types {
    ($m:ident; $($t:ident),* $(,)?) => {
        vec![$((stringify!($t), roundtrip::<$m::$t> as Decoder)),*]
    };
}
use mcp_types;

/// JSON names of discriminators, whose values name the variant they select.
const TAG_KEYS: &[&str] = &["sessionUpdate", "outcome", "action"];

/// Runs one case: decode, re-serialize, compare, check variants. `Err` says what is wrong.
pub fn check(case: &Case, decoder: Decoder) -> Result<(), String> {
    let decoded = decoder(&case.json)?;
    if decoded.json != without_null_members(&case.json) {
        return Err(format!(
            "re-serialized differently:\n      in:  {}\n      out: {}",
            case.json, decoded.json
        ));
    }
    for v in &case.variants {
        if !decoded.debug.contains(v.as_str()) {
            return Err(format!("decoded without variant {v}: {}", decoded.debug));
        }
    }
    let mut tags = Vec::new();
    collect_tags(&case.json, &mut tags);
    for tag in tags {
        // Named as the generator names variants.
        let variant = tag.to_upper_camel_case();
        if !case.unknown && !decoded.debug.contains(&variant) {
            return Err(format!(
                "tag {tag:?} decoded without variant {variant}: {}",
                decoded.debug
            ));
        }
    }
    // `Custom` where the schema has a value named `unknown` (`AuthState`).
    let fell_back = decoded.debug.contains("Other({")
        || decoded.debug.contains("Unknown(\"")
        || decoded.debug.contains("Custom(\"");
    if fell_back && !case.unknown {
        return Err(format!(
            "decoded into a catch-all variant: {}",
            decoded.debug
        ));
    }
    if case.unknown && !fell_back {
        return Err(format!(
            "unknown kind was not kept in a catch-all variant: {}",
            decoded.debug
        ));
    }
    Ok(())
}

/// `"x": null` on an optional field means the same as leaving `x` out ("Omitted and `null` are
/// equivalent", in both ACP schemas); the generated types read both as `None` and write neither.
/// Nothing else is normalized.
pub fn without_null_members(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(_, x)| !x.is_null())
                .map(|(k, x)| (k.clone(), without_null_members(x)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(without_null_members).collect()),
        other => other.clone(),
    }
}

fn collect_tags(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if TAG_KEYS.contains(&k.as_str())
                    && let Value::String(s) = x
                {
                    out.push(s.clone());
                }
                collect_tags(x, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| collect_tags(x, out)),
        _ => {}
    }
}

/// Loads a cases file: `[{"type", "json", "variants"?, "unknown"?, "src"?}]`.
pub fn load_cases(text: &str, source: &str) -> Vec<Case> {
    let cases: Vec<Value> = serde_json::from_str(text).unwrap_or_else(|e| panic!("{source}: {e}"));
    cases
        .into_iter()
        .map(|c| Case {
            source: c
                .get("src")
                .and_then(Value::as_str)
                .map_or_else(|| source.to_owned(), str::to_owned),
            ty: c["type"].as_str().unwrap_or_default().to_owned(),
            json: c["json"].clone(),
            variants: c
                .get("variants")
                .and_then(Value::as_array)
                .map(|v| {
                    v.iter()
                        .filter_map(|x| x.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default(),
            unknown: c.get("unknown") == Some(&Value::Bool(true)),
        })
        .collect()
}

/// Runs every case, returns the failures as `(case, why)`.
pub fn run_all(cases: &[Case], registry: &Registry) -> Vec<(Case, String)> {
    cases
        .iter()
        .filter_map(|c| {
            let result = match registry.get(&c.ty) {
                Some(decoder) => check(c, decoder),
                None => Err(format!("no decoder for type {}", c.ty)),
            };
            result.err().map(|why| (c.clone(), why))
        })
        .collect()
}

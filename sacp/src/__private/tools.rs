//! What the code `#[tool]` generates calls (through `sacp::__private`): a tool's definition
//! from its input type, its arguments from the call, and its result from whatever it returned.

#![allow(missing_debug_implementations)]

use std::cell::Cell;

use serde_json::{Map, Value};

use crate::jsonrpc::Error;
use crate::schema::mcp::{CallToolResult, ContentBlock, TextContent, Tool, ToolInputSchema};

/// A tool's definition: its input schema from schemars (JSON Schema 2020-12).
pub fn tool_definition<I: crate::mcp::ToolInput>(name: &str, description: &str) -> Tool {
    let schema = serde_json::to_value(schemars::schema_for!(I)).unwrap_or_default();
    definition(name, description, schema)
}

/// The definition of a tool that takes no input: an empty object.
pub fn tool_definition_without_input(name: &str, description: &str) -> Tool {
    definition(
        name,
        description,
        serde_json::json!({"type": "object", "properties": {}}),
    )
}

fn definition(name: &str, description: &str, schema: Value) -> Tool {
    let input = serde_json::from_value::<ToolInputSchema>(schema).unwrap_or_else(|e| {
        tracing::error!(
            tool = name,
            "a tool's input must be an object (a struct); its schema is not one ({e})"
        );
        serde_json::from_value(serde_json::json!({"type": "object"}))
            .unwrap_or_else(|_| unreachable_schema())
    });
    let tool = Tool::new(input, name);
    if description.is_empty() {
        tool
    } else {
        tool.description(description.to_owned())
    }
}

/// `{"type":"object"}` always deserializes; this keeps the code free of a panic path anyway.
fn unreachable_schema() -> ToolInputSchema {
    ToolInputSchema {
        properties: None,
        required: None,
        schema: None,
        type_: crate::schema::mcp::ToolInputSchemaType::Object,
        extra: Map::new(),
    }
}

/// A tool's input from a call's arguments: `-32602` with the reason when they do not fit.
pub fn tool_input<I: serde::de::DeserializeOwned>(
    tool: &str,
    arguments: Option<Map<String, Value>>,
) -> Result<I, Error> {
    serde_json::from_value(Value::Object(arguments.unwrap_or_default())).map_err(|e| {
        Error::invalid_params(format!(
            "the arguments of tool {tool} do not fit its input schema: {e}"
        ))
    })
}

/// A tool's error: an `isError` result carrying the message.
pub fn tool_error<E: Into<Error>>(error: E) -> CallToolResult {
    let error: Error = error.into();
    CallToolResult::new(vec![text(error.message)]).is_error(true)
}

fn text(text: impl Into<String>) -> ContentBlock {
    ContentBlock::TextContent(TextContent::new(
        text,
        crate::schema::mcp::TextContentType::Text,
    ))
}

/// A tool's return value, on its way to a `CallToolResult`. Which conversion applies is
/// chosen by the value's type (`(&&&output).take_tool_result()`): a `CallToolResult` as it is
/// ([`AsIs`]), text as text ([`AsText`]), anything else that serializes as structured content
/// with its JSON text ([`AsStructured`]).
pub struct ToolOutput<T>(Cell<Option<T>>);

impl<T> ToolOutput<T> {
    /// Holds `value`.
    pub fn new(value: T) -> ToolOutput<T> {
        ToolOutput(Cell::new(Some(value)))
    }

    fn take(&self) -> Result<T, Error> {
        self.0
            .take()
            .ok_or_else(|| Error::internal_error("a tool's output was taken twice"))
    }
}

/// A `CallToolResult`, as it is.
pub trait AsIs {
    /// The result.
    fn take_tool_result(&self) -> Result<CallToolResult, Error>;
}

impl AsIs for &&ToolOutput<CallToolResult> {
    fn take_tool_result(&self) -> Result<CallToolResult, Error> {
        self.take()
    }
}

/// Text: one text block (`()`: no content).
pub trait AsText {
    /// The result.
    fn take_tool_result(&self) -> Result<CallToolResult, Error>;
}

impl AsText for &ToolOutput<String> {
    fn take_tool_result(&self) -> Result<CallToolResult, Error> {
        Ok(CallToolResult::new(vec![text(self.take()?)]))
    }
}

impl AsText for &ToolOutput<&str> {
    fn take_tool_result(&self) -> Result<CallToolResult, Error> {
        Ok(CallToolResult::new(vec![text(self.take()?)]))
    }
}

impl AsText for &ToolOutput<()> {
    fn take_tool_result(&self) -> Result<CallToolResult, Error> {
        self.take()?;
        Ok(CallToolResult::new(Vec::new()))
    }
}

/// Any serializable value: `structuredContent` when it is an object, and its JSON text as a
/// text block (for clients that read only text).
pub trait AsStructured {
    /// The result.
    fn take_tool_result(&self) -> Result<CallToolResult, Error>;
}

impl<T: serde::Serialize> AsStructured for ToolOutput<T> {
    fn take_tool_result(&self) -> Result<CallToolResult, Error> {
        let value = serde_json::to_value(self.take()?).map_err(|e| {
            Error::internal_error(format!("a tool's output does not serialize: {e}"))
        })?;
        let result = CallToolResult::new(vec![text(value.to_string())]);
        Ok(match value {
            Value::Object(map) => result.structured_content(map),
            _ => result,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[allow(unused_imports)]
    use super::{AsIs as _, AsStructured as _, AsText as _};

    #[derive(Debug, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    struct Insight {
        /// What it is about.
        topic: String,
        tags: Vec<Tag>,
    }

    #[derive(Debug, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    struct Tag {
        name: String,
    }

    #[test]
    fn the_definition_keeps_the_whole_schema() {
        let tool = tool_definition::<Insight>("save", "Saves an insight.");
        let json = serde_json::to_value(&tool).unwrap();
        assert_eq!(json["name"], "save");
        assert_eq!(json["description"], "Saves an insight.");
        let schema = &json["inputSchema"];
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["required"], serde_json::json!(["topic", "tags"]));
        assert_eq!(
            schema["properties"]["topic"]["description"],
            "What it is about."
        );
        assert!(schema["$defs"]["Tag"].is_object(), "{schema}");
        assert_eq!(
            schema["$schema"],
            "https://json-schema.org/draft/2020-12/schema"
        );
    }

    #[test]
    // The references choose the conversion (autoref specialization): not needless.
    #[allow(clippy::needless_borrow)]
    fn outputs_take_the_form_their_type_calls_for() {
        let text = (&&&ToolOutput::new("hi".to_owned()))
            .take_tool_result()
            .unwrap();
        assert_eq!(
            serde_json::to_value(&text).unwrap()["content"][0]["text"],
            "hi"
        );
        let structured = (&&&ToolOutput::new(Tag { name: "x".into() }))
            .take_tool_result()
            .unwrap();
        let json = serde_json::to_value(&structured).unwrap();
        assert_eq!(json["structuredContent"], serde_json::json!({"name": "x"}));
        assert_eq!(json["content"][0]["text"], r#"{"name":"x"}"#);
        let as_is = CallToolResult::new(Vec::new()).is_error(true);
        let same = (&&&ToolOutput::new(as_is.clone()))
            .take_tool_result()
            .unwrap();
        assert_eq!(same, as_is);
        let bad = tool_input::<Insight>("save", Some(Map::new())).unwrap_err();
        assert_eq!(bad.code, -32602);
        assert!(bad.message.contains("topic"), "{bad}");
    }
}

use sacp::mcp::ToolCx;
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Note {
    text: String,
}
struct Notes;
impl Notes {
    /// Keeps a note.
    async fn keep(&self, note: Note, _cx: &ToolCx) -> sacp::Result<String> {
        Ok(note.text)
    }
    /// Counts the notes.
    async fn count(&self, _cx: &ToolCx) -> sacp::Result<String> {
        Ok(String::new())
    }
}
#[automatically_derived]
impl ::sacp::proxy::Proxy for Notes {
    fn takes(method: &str, from: ::sacp::acp::Side) -> bool {
        let _ = (method, from);
        false
    }
    async fn dispatch(&self, message: ::sacp::proxy::Incoming, cx: &::sacp::proxy::Cx) {
        ::sacp::__private::unhandled(message, cx).await
    }
    fn mcp_servers(
        this: &::std::sync::Arc<Self>,
    ) -> ::std::vec::Vec<::std::sync::Arc<dyn ::sacp::mcp::McpServer>> {
        let mut servers: ::std::vec::Vec<::std::sync::Arc<dyn ::sacp::mcp::McpServer>> = ::std::vec::Vec::new();
        servers
            .push(
                ::std::sync::Arc::new(
                    ::sacp::mcp::ToolServer::new(::std::sync::Arc::clone(this)),
                ),
            );
        servers
    }
}
#[automatically_derived]
impl ::sacp::mcp::ToolSet for Notes {
    fn server_name(&self) -> ::std::string::String {
        ::std::string::ToString::to_string("notes")
    }
    fn server_version(&self) -> ::std::string::String {
        ::std::string::ToString::to_string(::core::env!("CARGO_PKG_VERSION"))
    }
    fn tools() -> ::std::vec::Vec<::sacp::schema::mcp::Tool> {
        ::std::vec![
            ::sacp::__private::tool_definition:: < Note > ("keep_note", "Keeps a note."),
            ::sacp::__private::tool_definition_without_input("count",
            "Counts the notes.")
        ]
    }
    async fn call_tool(
        &self,
        name: &str,
        arguments: ::core::option::Option<::sacp::__private::JsonObject>,
        cx: &::sacp::mcp::ToolCx,
    ) -> ::core::option::Option<
        ::core::result::Result<::sacp::schema::mcp::CallToolResult, ::sacp::Error>,
    > {
        #[allow(unused_imports)]
        use ::sacp::__private::{AsIs as _, AsStructured as _, AsText as _};
        match name {
            "keep_note" => {
                let result = {
                    let input = match ::sacp::__private::tool_input::<
                        Note,
                    >("keep_note", arguments) {
                        ::core::result::Result::Ok(input) => input,
                        ::core::result::Result::Err(e) => {
                            return ::core::option::Option::Some(
                                ::core::result::Result::Err(e),
                            );
                        }
                    };
                    Self::keep(self, input, cx).await
                };
                ::core::option::Option::Some(
                    match result {
                        ::core::result::Result::Ok(output) => {
                            (&&&::sacp::__private::ToolOutput::new(output))
                                .take_tool_result()
                        }
                        ::core::result::Result::Err(error) => {
                            ::core::result::Result::Ok(
                                ::sacp::__private::tool_error(error),
                            )
                        }
                    },
                )
            }
            "count" => {
                let result = { Self::count(self, cx).await };
                ::core::option::Option::Some(
                    match result {
                        ::core::result::Result::Ok(output) => {
                            (&&&::sacp::__private::ToolOutput::new(output))
                                .take_tool_result()
                        }
                        ::core::result::Result::Err(error) => {
                            ::core::result::Result::Ok(
                                ::sacp::__private::tool_error(error),
                            )
                        }
                    },
                )
            }
            _ => ::core::option::Option::None,
        }
    }
}

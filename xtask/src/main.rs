//! `cargo xtask layers [--graph]` checks the import graph of the workspace's crates (see
//! [`layers`]).
//!
//! `cargo xtask public-api [--check]` lists the published libraries' public API (see
//! [`public_api`]).
//!
//! `cargo xtask regen-schema [--check]`: generates `sacp-schema`'s protocol types and method
//! tables from the pinned JSON Schemas.
//!
//! Pipeline, per schema: load and verify the pin ([`sources`]) → take the unions typify cannot
//! model and write them ourselves ([`emit_unions`]) → schema passes ([`passes`]) → typify 0.8 →
//! syn post-passes ([`post`]) → method tables ([`tables`]) → prettyplease → a file with an
//! `@generated` header, written only when it changed. An unstable schema's output is checked
//! against its stable twin's ([`twins`]) and merged into the same files ([`merge`]): one file
//! of types and one of method tables per protocol version. `--check` writes nothing and fails,
//! naming each stale file, when the committed output differs from what would be generated.

mod emit_unions;
mod layers;
mod merge;
mod passes;
mod patches;
mod post;
mod public_api;
mod sources;
mod tables;
mod twins;
mod wrapped;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use proc_macro2::TokenStream;
use serde_json::Value;

use crate::passes::Defs;
use crate::sources::Pinned;

/// One generated module.
struct Target {
    pin: Pinned,
    /// The module's path in `sacp-schema` (`acp::v1`).
    module: &'static str,
    /// File of the types, below `sacp-schema/src/`.
    types_file: &'static str,
    /// File of the method tables, below `sacp-schema/src/`.
    methods_file: &'static str,
    protocol: Protocol,
    /// For an unstable schema: the types file of its stable twin, which its output must be a
    /// superset of (see [`twins`]), and is merged into ([`merge`]); its own files are never
    /// written.
    twin_of: Option<&'static str>,
}

#[derive(Clone, Copy, PartialEq)]
enum Protocol {
    Acp,
    Mcp,
}

const TARGETS: &[Target] = &[
    Target {
        pin: sources::ACP_V1,
        module: "acp::v1",
        types_file: "generated/acp_v1.rs",
        methods_file: "generated/acp_v1_methods.rs",
        protocol: Protocol::Acp,
        twin_of: None,
    },
    Target {
        pin: sources::ACP_V2,
        module: "acp::v2",
        types_file: "generated/acp_v2.rs",
        methods_file: "generated/acp_v2_methods.rs",
        protocol: Protocol::Acp,
        twin_of: None,
    },
    Target {
        pin: sources::ACP_V1_UNSTABLE,
        module: "acp::v1",
        types_file: "generated/acp_v1_unstable.rs",
        methods_file: "generated/acp_v1_unstable_methods.rs",
        protocol: Protocol::Acp,
        twin_of: Some("generated/acp_v1.rs"),
    },
    Target {
        pin: sources::ACP_V2_UNSTABLE,
        module: "acp::v2",
        types_file: "generated/acp_v2_unstable.rs",
        methods_file: "generated/acp_v2_unstable_methods.rs",
        protocol: Protocol::Acp,
        twin_of: Some("generated/acp_v2.rs"),
    },
    Target {
        pin: sources::MCP_2025_11_25,
        module: "mcp",
        types_file: "generated/mcp.rs",
        methods_file: "generated/mcp_methods.rs",
        protocol: Protocol::Mcp,
        twin_of: None,
    },
];

/// What the `unstable` feature adds, below `sacp-schema/src/` (see [`twins`]).
const UNSTABLE_DOC: &str = "generated/unstable.md";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["regen-schema"] => regen(false),
        ["regen-schema", "--check"] => regen(true),
        ["layers"] => layers::run(&workspace_root(), false),
        ["layers", "--graph"] => layers::run(&workspace_root(), true),
        ["public-api"] => public_api::run(&workspace_root(), false),
        ["public-api", "--check"] => public_api::run(&workspace_root(), true),
        _ => Err("usage: cargo xtask regen-schema [--check] | cargo xtask layers [--graph] | \
                  cargo xtask public-api [--check]\n\n  \
                  regen-schema: generates sacp-schema/src/generated/ from the pinned schemas in \
                  $SACP_SCHEMA_DIR (or fetches them when it is unset).\n    --check  write nothing; \
                  fail if a generated file is stale\n  \
                  layers: fails on an import circle between the modules of one layer, or an import of a higher layer\n    \
                  --graph  print the module graphs too\n  \
                  public-api: lists each published library's public API in <crate>/public-api.txt\n    \
                  --check  write nothing; fail if a listing is stale"
            .to_owned()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

fn regen(check: bool) -> Result<(), String> {
    let root = workspace_root();
    let schema_dir = schema_dir_from_env();
    regen_into(
        check,
        schema_dir.as_deref(),
        &root.join("sacp-schema/src"),
        &root.join("target/schema-cache"),
    )
}

/// `$SACP_SCHEMA_DIR`; a relative path is taken from the workspace root, wherever the command
/// (or a test, which runs in the package directory) was started.
fn schema_dir_from_env() -> Option<PathBuf> {
    let dir = PathBuf::from(std::env::var_os("SACP_SCHEMA_DIR")?);
    Some(if dir.is_relative() {
        workspace_root().join(dir)
    } else {
        dir
    })
}

/// Generates (or checks) every target's files below `out_dir`.
fn regen_into(
    check: bool,
    schema_dir: Option<&Path>,
    out_dir: &Path,
    cache: &Path,
) -> Result<(), String> {
    let mut stale = Vec::new();
    let mut problems = Vec::new();
    let mut emit = |rel: &str, text: &str| -> Result<(), String> {
        let path = out_dir.join(rel);
        let current = std::fs::read_to_string(&path).ok();
        if current.as_deref() == Some(text) {
            return Ok(());
        }
        if check {
            stale.push(path);
        } else {
            std::fs::create_dir_all(path.parent().unwrap_or(out_dir))
                .map_err(|e| format!("cannot create the output directory: {e}"))?;
            std::fs::write(&path, text)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            eprintln!("wrote {}", path.display());
        }
        Ok(())
    };
    // Every file, by its path, until all are generated and merged.
    let mut generated: Vec<(String, String)> = Vec::new();
    let mut additions = Vec::new();
    for target in TARGETS {
        let started = Instant::now();
        let loaded = sources::load(&target.pin, schema_dir, cache)?;
        let files = generate(target, &loaded)?;
        let mut committed_methods = target.methods_file;
        if let Some(stable) = target.twin_of {
            let twin = TARGETS
                .iter()
                .find(|t| t.types_file == stable)
                .ok_or_else(|| format!("no target generates {stable}"))?;
            committed_methods = twin.methods_file;
            match merge_into_twin(target, twin, &files, &mut generated)? {
                Ok(added) => additions.push((target.module, target.pin.rel_path, added)),
                Err(problem) => problems.push(problem),
            }
        } else {
            generated.extend(files);
        }
        if check && target.protocol == Protocol::Acp {
            let committed =
                std::fs::read_to_string(out_dir.join(committed_methods)).unwrap_or_default();
            problems.extend(
                missing_methods(&loaded.text, &committed)
                    .into_iter()
                    .map(|m| {
                        format!(
                            "{}: {m} is missing from the method tables in {committed_methods}",
                            target.pin.rel_path
                        )
                    }),
            );
        }
        eprintln!(
            "{}: {} ms",
            target.pin.rel_path,
            started.elapsed().as_millis()
        );
    }
    for (rel, text) in &generated {
        emit(rel, text)?;
    }
    emit(UNSTABLE_DOC, &twins::render(&additions))?;
    if !stale.is_empty() {
        let list: Vec<String> = stale.iter().map(|p| format!("  {}", p.display())).collect();
        problems.push(format!(
            "generated files are stale (edited by hand, or the generator changed):\n{}\n  \
             Run `cargo xtask regen-schema` (with SACP_SCHEMA_DIR at the pinned schemas) and commit the result.",
            list.join("\n")
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// The `x-method`s of an ACP schema that the committed method tables do not list, as
/// `method "…" (Definition)`.
fn missing_methods(schema_text: &str, committed: &str) -> Vec<String> {
    let Ok(schema) = serde_json::from_str::<Value>(schema_text) else {
        return vec!["the schema itself (unreadable)".into()];
    };
    let Some(defs) = defs_of(&schema) else {
        return vec![];
    };
    tables::acp_methods(defs)
        .into_iter()
        .filter(|(method, name)| {
            !(committed.contains(&format!("method: {method:?}"))
                && committed.contains(&format!("{name:?}")))
        })
        .map(|(method, name)| format!("method {method:?} ({name})"))
        .collect()
}

fn defs_of(schema: &Value) -> Option<&Defs> {
    schema
        .get("$defs")
        .or_else(|| schema.get("definitions"))?
        .as_object()
}

/// Generates the files of one target: `(path below sacp-schema/src, contents)`.
fn generate(target: &Target, loaded: &sources::Loaded) -> Result<Vec<(String, String)>, String> {
    let schema: Value = serde_json::from_str(&loaded.text)
        .map_err(|e| format!("{}: {e}", loaded.path.display()))?;
    let defs_key = if schema.get("$defs").is_some() {
        "$defs"
    } else {
        "definitions"
    };
    let mut defs = defs_of(&schema)
        .cloned()
        .ok_or_else(|| format!("{}: no definitions", loaded.path.display()))?;
    let original = defs.clone();

    let emitted = emit_unions::take_unions(&mut defs);
    passes::ref_siblings_to_all_of(&mut defs);
    passes::const_to_enum(&mut defs);
    passes::drop_not_catch_alls(&mut defs);
    passes::close_open_string_enums(&mut defs);
    let (_, integer_consts) = passes::integer_const_unions(&mut defs);
    passes::plain_date_times(&mut defs);
    passes::any_of_to_one_of(&mut defs);
    passes::titles_from_tags(&mut defs);
    passes::order_untagged_by_required(&mut defs);
    passes::keep_optional_free_form_objects(&mut defs);
    passes::keep_json_schema_keywords(&mut defs);

    let annotated = defs.clone();
    let typified = run_typify(target, defs_key, defs, &emitted)?;
    let mut file: syn::File =
        syn::parse2(typified).map_err(|e| format!("typify output does not parse: {e}"))?;
    let extra: syn::File =
        syn::parse2(emitted.items).map_err(|e| format!("emitted unions do not parse: {e}"))?;
    file.items.extend(extra.items);

    let tables = match target.protocol {
        Protocol::Acp => tables::acp_tables(&original)?,
        Protocol::Mcp => tables::mcp_tables(&original)?,
    };
    let responses = tables.requests.iter().map(|r| r.response.clone()).collect();
    // ACP's messages keep the JSON they were read from (MCP's travel inside `_mcp/*` as they
    // are).
    let messages = match target.protocol {
        Protocol::Acp => tables
            .requests
            .iter()
            .flat_map(|r| [r.params.clone(), r.response.clone()])
            .chain(tables.notifications.iter().map(|n| n.params.clone()))
            .collect(),
        Protocol::Mcp => std::collections::BTreeSet::new(),
    };
    let stats = post::run(
        &mut file,
        &annotated,
        &responses,
        &messages,
        &integer_consts,
    );
    eprintln!(
        "  {}: {} unions emitted, {} optional defaults, {} lenient fields, {} patch fields, {} messages keeping their origin, {} null-tolerant responses, {} constructors",
        target.module,
        emitted.replaced.len(),
        stats.optional_defaults,
        stats.lenient,
        stats.patches,
        stats.origins,
        stats.null_results,
        stats.constructors
    );
    let (side, stem, protocol) = match (target.protocol, target.module) {
        (Protocol::Acp, "acp::v1") => ("AcpSide", "acp_v1", "ACP v1"),
        (Protocol::Acp, _) => ("AcpSide", "acp_v2", "ACP v2"),
        (Protocol::Mcp, _) => ("McpSide", "mcp", "MCP 2025-11-25"),
    };
    let methods: syn::File =
        syn::parse2(tables::render(&tables, target.module, side, stem, protocol))
            .map_err(|e| format!("method tables do not parse: {e}"))?;

    let header = header(&target.pin);
    Ok(vec![
        (
            target.types_file.to_owned(),
            format!("{header}{}", prettyplease::unparse(&file)),
        ),
        (
            target.methods_file.to_owned(),
            format!("{header}{}", prettyplease::unparse(&methods)),
        ),
    ])
}

/// Checks an unstable target's output (`files`) against its stable `twin`'s, already in
/// `generated`, and merges it into the twin's files there: what it adds to the stable
/// surface, or why it is not a superset of it.
fn merge_into_twin(
    target: &Target,
    twin: &Target,
    files: &[(String, String)],
    generated: &mut [(String, String)],
) -> Result<Result<twins::Additions, String>, String> {
    let parse = |rel: &str, list: &[(String, String)]| {
        let text = list
            .iter()
            .find(|(r, _)| r == rel)
            .map(|(_, t)| t.as_str())
            .ok_or_else(|| format!("{rel} must be generated before {}", target.types_file))?;
        syn::parse_file(text).map_err(|e| format!("{rel} does not parse: {e}"))
    };
    let compared = twins::compare(
        &parse(twin.types_file, generated)?,
        &parse(target.types_file, files)?,
    )
    .map_err(|differences| {
        format!(
            "{} is not a superset of {}, so the `unstable` feature would break code written \
             without it:\n  {}",
            target.types_file,
            twin.types_file,
            differences.join("\n  ")
        )
    });
    for (stable_rel, unstable_rel) in [
        (twin.types_file, target.types_file),
        (twin.methods_file, target.methods_file),
    ] {
        let (merged, stats) =
            merge::merge(&parse(stable_rel, generated)?, &parse(unstable_rel, files)?)
                .map_err(|e| format!("{stable_rel} and {unstable_rel}: {e}"))?;
        eprintln!(
            "  {stable_rel} + {unstable_rel}: {} items the same, {} merged, {} twice, {} unstable only",
            stats.same, stats.merged, stats.twice, stats.added
        );
        let text = format!(
            "{}{}",
            merged_header(&twin.pin, &target.pin),
            prettyplease::unparse(&merged)
        );
        if let Some(entry) = generated.iter_mut().find(|(r, _)| r == stable_rel) {
            entry.1 = text;
        }
    }
    Ok(compared)
}

/// The header of a file merged from a stable and an unstable schema.
fn merged_header(stable: &Pinned, unstable: &Pinned) -> String {
    format!(
        "// @generated by cargo xtask regen-schema from {} (sha256 {}) and, under the feature\n\
         // `unstable`, {} (sha256 {}). Do not edit.\n\n",
        stable.rel_path, stable.sha256, unstable.rel_path, unstable.sha256
    )
}

fn header(pin: &Pinned) -> String {
    format!(
        "// @generated by cargo xtask regen-schema from {} (sha256 {}). Do not edit.\n\n",
        pin.rel_path, pin.sha256
    )
}

fn run_typify(
    target: &Target,
    defs_key: &str,
    defs: Defs,
    emitted: &emit_unions::Emitted,
) -> Result<TokenStream, String> {
    let mut settings = typify::TypeSpaceSettings::default();
    settings.with_derive("PartialEq".into());
    settings.with_struct_builder(false);
    // Maps keep their keys in the order they came in, as everything else here does.
    settings.with_map_type("::indexmap::IndexMap");
    for (name, impls) in &emitted.replaced {
        // typify matches replacements by its own spelling of the name (`JSONRPCResponse` is
        // `JsonrpcResponse` to it), so register both.
        let rust_name = emit_unions::ident(name).to_string();
        let path = format!("crate::{}::{rust_name}", target.module);
        settings.with_replacement(name, &path, impls.iter().cloned());
        if rust_name != *name {
            settings.with_replacement(&rust_name, &path, impls.iter().cloned());
        }
    }
    let mut root = serde_json::Map::new();
    root.insert(
        "$schema".into(),
        Value::String("https://json-schema.org/draft/2020-12/schema".into()),
    );
    root.insert(defs_key.into(), Value::Object(defs));
    let root: schemars::schema::RootSchema = serde_json::from_value(Value::Object(root))
        .map_err(|e| format!("schema is not readable by schemars: {e}"))?;
    let produced = catch_unwind(AssertUnwindSafe(|| {
        let mut space = typify::TypeSpace::new(&settings);
        space
            .add_root_schema(root)
            .map_err(|e| format!("typify: {e}"))?;
        Ok::<_, String>(space.to_stream())
    }));
    match produced {
        Ok(result) => result,
        Err(panic) => {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default();
            Err(format!("typify panicked on {}: {msg}", target.pin.rel_path))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_method_missing_from_the_tables_is_named() {
        let schema = r#"{"$defs": {
            "PromptRequest": {"x-method": "session/prompt", "x-side": "agent"},
            "CancelNotification": {"x-method": "session/cancel", "x-side": "agent"}}}"#;
        let committed =
            r#"RequestEntry { method: "session/prompt", params_type: "PromptRequest", .. }"#;
        assert_eq!(
            missing_methods(schema, committed),
            ["method \"session/cancel\" (CancelNotification)"]
        );
    }

    /// The drift check on real output: generate into a scratch directory, edit a file by hand,
    /// and `--check` must name it and the command to run. Needs the pinned schemas.
    #[test]
    fn a_hand_edited_file_fails_the_check() {
        let Some(schemas) = schema_dir_from_env() else {
            let why = "SACP_SCHEMA_DIR is not set: the drift check on real output is not exercised";
            assert!(
                std::env::var_os("CI").is_none(),
                "{why} (under CI it must be)"
            );
            eprintln!("{why}");
            return;
        };
        let out = std::env::temp_dir().join(format!("sacp-xtask-drift-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        regen_into(false, Some(&schemas), &out, &out.join("cache")).unwrap();
        regen_into(true, Some(&schemas), &out, &out.join("cache"))
            .expect("fresh output is up to date");

        let edited = out.join("generated/acp_v1.rs");
        let text = std::fs::read_to_string(&edited).unwrap();
        std::fs::write(&edited, text.replacen("pub struct", "pub(crate) struct", 1)).unwrap();
        let err = regen_into(true, Some(&schemas), &out, &out.join("cache")).unwrap_err();
        assert!(
            err.contains("generated/acp_v1.rs") && err.contains("cargo xtask regen-schema"),
            "{err}"
        );
        assert!(
            !err.contains("acp_v2.rs"),
            "only the edited file is stale: {err}"
        );

        let methods = out.join("generated/acp_v2_methods.rs");
        let text = std::fs::read_to_string(&methods).unwrap();
        std::fs::write(
            &methods,
            text.replace("method: \"session/prompt\"", "method: \"session/prompted\""),
        )
        .unwrap();
        let err = regen_into(true, Some(&schemas), &out, &out.join("cache")).unwrap_err();
        assert!(
            err.contains("method \"session/prompt\" (PromptRequest) is missing"),
            "{err}"
        );
        assert!(
            err.contains("generated/acp_v2_methods.rs") && err.contains("are stale"),
            "{err}"
        );
        let _ = std::fs::remove_dir_all(&out);
    }
}

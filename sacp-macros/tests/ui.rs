//! Compile tests: every `ui/pass` file builds, every `ui/fail` file fails with exactly the
//! checked-in `.stderr` (the toolchain is pinned in `rust-toolchain.toml`; after changing a
//! message, refresh them with `TRYBUILD=overwrite cargo test -p sacp-macros --test ui`).

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}

//! Mistakes in `#[tool]` and `#[tools]` fail to compile with a message that
//! points at the user's code (the `.stderr` files beside each case).

#[test]
fn misuse_is_a_clear_compile_error() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
}

//! Property tests of the `*/list` methods: cursors round-trip, anything else
//! is refused with the documented error, and a walk visits every entry once
//! under any page size, also while tools are added and removed (issue 21).
//!
//! Cursors are stateless (`features/pagination.rs`): `base64url("tw2:" n)`,
//! where n numbers the last entry sent (entries are numbered as they are
//! registered). So under changes between pages, every tool present for the
//! whole walk is listed exactly once, and none twice: tools added, removed,
//! enabled or disabled meanwhile do not shift the rest. (With the earlier
//! offset cursors a removal skipped a tool and a re-enable listed one
//! twice: the two plain tests at the end keep those minimal cases.)

mod common;

use std::collections::{BTreeMap, BTreeSet};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use common::*;
use proptest::prelude::*;
use serde_json::{Value, json};
use toolwire_protocol::{PromptMessage, Role};
use toolwire_server::{NoArgs, PromptBuilder, ResourceBuilder, Server, ToolBuilder, text_contents};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn tool(name: &str) -> ToolBuilder {
    ToolBuilder::new(name).handler(|_: NoArgs| async { "ok" })
}

/// A server with `tools`, and as many prompts and resources, in that order.
fn server(page_size: usize, tools: &[String]) -> Server {
    let mut builder = Server::builder("props", "1").page_size(page_size);
    for name in tools {
        builder = builder
            .tool(tool(name))
            .prompt(
                PromptBuilder::new(name.clone())
                    .handler(|_, _cx| async { Ok(vec![PromptMessage::text(Role::User, "hi")]) }),
            )
            .resource(
                ResourceBuilder::new(format!("test://{name}"), name.clone()).handler(
                    |req, _cx| async move { Ok(vec![text_contents(req.uri, "text/plain", "x")]) },
                ),
            );
    }
    builder.build().unwrap()
}

/// The list and the field naming each entry, per list method.
const LISTS: [(&str, &str, &str); 3] = [
    ("tools/list", "tools", "name"),
    ("prompts/list", "prompts", "name"),
    ("resources/list", "resources", "name"),
];

fn params(cursor: Option<&str>) -> Value {
    match cursor {
        Some(cursor) => json!({"cursor": cursor}),
        None => json!({}),
    }
}

/// One page: the names on it and the next cursor.
async fn page(
    server: &Server,
    method: &str,
    cursor: Option<&str>,
) -> (Vec<String>, Option<String>) {
    let (_, field, key) = LISTS.iter().find(|(m, _, _)| *m == method).unwrap();
    let r = result(server, request(1, method, params(cursor))).await;
    let names = r[*field]
        .as_array()
        .unwrap_or_else(|| panic!("{method}: no {field} in {r}"))
        .iter()
        .map(|t| t[*key].as_str().unwrap().to_owned())
        .collect();
    (names, r["nextCursor"].as_str().map(str::to_owned))
}

/// What the server's cursor decoder accepts, and where the page it names
/// starts in a list registered in order (numbered 0, 1, ...): after entry n.
fn decodes_to(cursor: &str) -> Option<usize> {
    let bytes = URL_SAFE_NO_PAD.decode(cursor).ok()?;
    let digits = std::str::from_utf8(&bytes).ok()?.strip_prefix("tw2:")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let after: u64 = digits.parse().ok()?;
    Some(
        usize::try_from(after)
            .unwrap_or(usize::MAX)
            .saturating_add(1),
    )
}

fn invalid_cursor(cursor: &str) -> Value {
    json!({"code": -32602, "message": format!("Invalid cursor: {cursor:?}")})
}

/// Distinct names in random order, at least `min` of them.
fn names(min: usize) -> impl Strategy<Value = Vec<String>> {
    prop::collection::btree_set("[a-z][a-z0-9_]{0,8}", min..24)
        .prop_map(|set| set.into_iter().collect::<Vec<_>>())
        .prop_shuffle()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, failure_persistence: None, ..ProptestConfig::default() })]

    /// Every cursor a list issues is accepted back, by this server and by
    /// another instance with the same entries, and yields the next page:
    /// pages of `page_size` that put together are the list in
    /// registration order.
    #[test]
    fn issued_cursors_round_trip(entries in names(1), page_size in 1usize..9) {
        runtime().block_on(async {
            let s = server(page_size, &entries);
            let other = server(page_size, &entries);
            for (method, _, _) in LISTS {
                let mut walked = Vec::new();
                let mut cursor: Option<String> = None;
                for _ in 0..=entries.len() {
                    let (names, next) = page(&s, method, cursor.as_deref()).await;
                    let again = page(&other, method, cursor.as_deref()).await;
                    prop_assert_eq!(&again, &(names.clone(), next.clone()), "{} on another instance", method);
                    let expected = &entries[walked.len()..(walked.len() + page_size).min(entries.len())];
                    prop_assert_eq!(&names[..], expected, "{} page after {:?}", method, cursor);
                    walked.extend(names);
                    match next {
                        Some(next) => {
                            prop_assert_eq!(decodes_to(&next), Some(walked.len()));
                            cursor = Some(next);
                        }
                        None => break,
                    }
                }
                prop_assert_eq!(&walked, &entries, "{}", method);
            }
            Ok(())
        })?;
    }

    /// Any string that is not a cursor's encoding is refused with exactly
    /// `-32602 Invalid cursor: "<cursor>"`; one that is (cursors are plain
    /// positions, not authenticated) is read as its position.
    #[test]
    fn random_cursors_are_refused_exactly(
        cursor in prop_oneof![
            "[ -~]{0,24}",
            "[A-Za-z0-9_-]{0,16}",
            // Well-formed encodings of "tw2:" and digits (or not), also
            // padded or with the standard alphabet, which are refused.
            ("tw2:(\\+|-)?[0-9]{0,22}|tw2:[0-9a-z+/ ]{0,6}|tw[0-9]:[0-9]{1,3}", 0u8..3)
                .prop_map(|(text, how)| match how {
                    0 => URL_SAFE_NO_PAD.encode(text),
                    1 => base64::engine::general_purpose::URL_SAFE.encode(text),
                    _ => base64::engine::general_purpose::STANDARD.encode(text),
                }),
        ],
        entries in names(1),
    ) {
        runtime().block_on(async {
            let s = server(3, &entries);
            for (method, _, _) in LISTS {
                let response = call(&s, request(1, method, params(Some(&cursor)))).await;
                match decodes_to(&cursor) {
                    None => prop_assert_eq!(&response["error"], &invalid_cursor(&cursor), "{}", method),
                    Some(offset) => {
                        let (names, _) = page(&s, method, Some(&cursor)).await;
                        let start = offset.min(entries.len());
                        prop_assert_eq!(&names[..], &entries[start..(start + 3).min(entries.len())]);
                    }
                }
            }
            Ok(())
        })?;
    }

    /// An issued cursor with one character changed, dropped or added is
    /// refused exactly, unless the result still encodes a position.
    #[test]
    fn tampered_cursors_are_refused_exactly(
        entries in prop::collection::btree_set("[a-z]{1,6}", 4..40)
            .prop_map(|s| s.into_iter().collect::<Vec<_>>()),
        page_size in 1usize..4,
        at in any::<prop::sample::Index>(),
        replacement in "[ -~]",
        how in 0u8..3,
    ) {
        runtime().block_on(async {
            let s = server(page_size, &entries);
            let (_, next) = page(&s, "tools/list", None).await;
            let issued = next.expect("more than one page");
            let mut chars: Vec<char> = issued.chars().collect();
            let i = at.index(chars.len());
            match how {
                0 => chars[i] = replacement.chars().next().unwrap(),
                1 => { chars.remove(i); }
                _ => chars.insert(i, replacement.chars().next().unwrap()),
            }
            let tampered: String = chars.into_iter().collect();
            prop_assume!(tampered != issued);
            let response = call(&s, request(1, "tools/list", params(Some(&tampered)))).await;
            match decodes_to(&tampered) {
                None => prop_assert_eq!(&response["error"], &invalid_cursor(&tampered)),
                Some(offset) => {
                    let start = offset.min(entries.len());
                    let (names, _) = page(&s, "tools/list", Some(&tampered)).await;
                    prop_assert_eq!(&names[..], &entries[start..(start + page_size).min(entries.len())]);
                }
            }
            Ok(())
        })?;
    }
}

/// A change made to the registry between two page fetches.
#[derive(Debug, Clone)]
enum Change {
    /// Registers a new tool (at the end of the list).
    Add(String),
    /// Removes the tool at this index of the current list.
    Remove(prop::sample::Index),
}

fn changes(removals: bool) -> impl Strategy<Value = Vec<Vec<Change>>> {
    let add = "[a-z]{1,6}".prop_map(|n| Change::Add(format!("new_{n}")));
    let change = if removals {
        prop_oneof![add, any::<prop::sample::Index>().prop_map(Change::Remove)].boxed()
    } else {
        add.boxed()
    };
    prop::collection::vec(prop::collection::vec(change, 0..4), 0..12)
}

/// What a walk saw, and which tools were there from its start to its end.
#[derive(Debug)]
struct Walk {
    seen: Vec<String>,
    throughout: BTreeSet<String>,
    ever: BTreeSet<String>,
}

/// Walks `tools/list`, applying `changes[i]` after page `i`.
async fn walk_with_changes(page_size: usize, initial: &[String], changes: &[Vec<Change>]) -> Walk {
    let s = Server::builder("props", "1")
        .page_size(page_size)
        .build()
        .unwrap();
    for name in initial {
        s.add_tool(tool(name)).unwrap();
    }
    let mut current: Vec<String> = initial.to_vec();
    let mut throughout: BTreeSet<String> = initial.iter().cloned().collect();
    let mut ever = throughout.clone();
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut round = 0;
    loop {
        let (names, next) = page(&s, "tools/list", cursor.as_deref()).await;
        seen.extend(names);
        let Some(next) = next else { break };
        cursor = Some(next);
        for change in changes.get(round).into_iter().flatten() {
            match change {
                // A name used before is not used again: a tool removed and
                // registered again is a new tool, listed again at the end.
                Change::Add(name) if !ever.contains(name) => {
                    if s.add_tool(tool(name)).is_ok() {
                        current.push(name.clone());
                        ever.insert(name.clone());
                    }
                }
                Change::Remove(index) if !current.is_empty() => {
                    let name = current.remove(index.index(current.len()));
                    s.remove_tool(&name).unwrap();
                    throughout.remove(&name);
                }
                Change::Add(_) | Change::Remove(_) => {}
            }
        }
        round += 1;
        assert!(round < 10_000, "the walk does not end");
    }
    Walk {
        seen,
        throughout,
        ever,
    }
}

fn counts(seen: &[String]) -> BTreeMap<&str, usize> {
    let mut counts = BTreeMap::new();
    for name in seen {
        *counts.entry(name.as_str()).or_insert(0) += 1;
    }
    counts
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    /// Without changes, a walk under any page size lists every tool exactly
    /// once, in registration order.
    #[test]
    fn walk_visits_every_tool_once(initial in names(0), page_size in 1usize..30) {
        let walk = runtime().block_on(walk_with_changes(page_size, &initial, &[]));
        prop_assert_eq!(walk.seen, initial);
    }

    /// Tools added during the walk: every tool there from start to end is
    /// listed exactly once, and no tool more than once.
    #[test]
    fn walk_with_additions_visits_every_tool_once(
        initial in names(0),
        page_size in 1usize..8,
        changes in changes(false),
    ) {
        let walk = runtime().block_on(walk_with_changes(page_size, &initial, &changes));
        let counts = counts(&walk.seen);
        for name in &walk.throughout {
            prop_assert_eq!(counts.get(name.as_str()), Some(&1), "{} in {:?}", name, walk);
        }
        for (name, n) in &counts {
            prop_assert_eq!(*n, 1, "{} listed {} times: {:?}", name, n, walk);
            prop_assert!(walk.ever.contains(*name));
        }
    }

    /// Tools added and removed during the walk: no tool is listed twice,
    /// and only tools that existed are listed.
    #[test]
    fn walk_with_additions_and_removals_lists_no_tool_twice(
        initial in names(0),
        page_size in 1usize..8,
        changes in changes(true),
    ) {
        let walk = runtime().block_on(walk_with_changes(page_size, &initial, &changes));
        for (name, n) in counts(&walk.seen) {
            prop_assert_eq!(n, 1, "{} listed {} times: {:?}", name, n, walk);
            prop_assert!(walk.ever.contains(name));
        }
    }

    /// The full property of issue 21 under removals: every tool there from
    /// start to end is listed exactly once.
    #[test]
    fn walk_with_removals_visits_every_remaining_tool_once(
        initial in names(0),
        page_size in 1usize..8,
        changes in changes(true),
    ) {
        let walk = runtime().block_on(walk_with_changes(page_size, &initial, &changes));
        let counts = counts(&walk.seen);
        for name in &walk.throughout {
            prop_assert_eq!(counts.get(name.as_str()), Some(&1), "{} in {:?}", name, walk);
        }
    }
}

/// Tools [a, b], page size 1: after page 1 ([a]) a is removed; page 2 is
/// [b] (offset cursors made it empty, and b was never listed).
#[test]
fn removing_a_listed_tool_mid_walk_skips_nothing() {
    runtime().block_on(async {
        let s = Server::builder("props", "1")
            .page_size(1)
            .tool(tool("a"))
            .tool(tool("b"))
            .build()
            .unwrap();
        let (first, next) = page(&s, "tools/list", None).await;
        assert_eq!(first, ["a"]);
        s.remove_tool("a").unwrap();
        let (second, _) = page(&s, "tools/list", next.as_deref()).await;
        assert_eq!(second, ["b"], "b was registered throughout the walk");
    });
}

/// Re-enabling a disabled tool mid-walk puts it back at its old place,
/// before the cursor's: the walk goes on after b (offset cursors listed b
/// again).
#[test]
fn enabling_a_tool_mid_walk_lists_nothing_twice() {
    runtime().block_on(async {
        let s = Server::builder("props", "1")
            .page_size(1)
            .tool(tool("a"))
            .tool(tool("b"))
            .tool(tool("c"))
            .build()
            .unwrap();
        s.disable_tool("a").unwrap();
        let (first, next) = page(&s, "tools/list", None).await;
        assert_eq!(first, ["b"]);
        s.enable_tool("a").unwrap();
        let (second, _) = page(&s, "tools/list", next.as_deref()).await;
        assert_eq!(second, ["c"], "b listed twice");
    });
}

//! `#[tool]` and `#[tools]`: MCP tools for [toolwire](https://docs.rs/toolwire)
//! from `async` functions and `impl` blocks.
//!
//! The attributes write only what you could write with `ToolBuilder`: the
//! function's name becomes the tool's name, its doc comment the
//! description, its parameters (typed arguments, `RequestContext`,
//! `State<S>`, in any order) the handler's. Use them through the facade,
//! `toolwire::tool` and `toolwire::tools`.
//!
//! ```
//! use toolwire::server::{Server, Structured};
//! use toolwire::{tool, tools};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Echo {
//!     /// What to echo.
//!     text: String,
//! }
//!
//! /// Echoes the text back.
//! #[tool(read_only)]
//! async fn echo(args: Echo) -> String {
//!     args.text
//! }
//!
//! struct Greeter {
//!     greeting: String,
//! }
//!
//! #[tools]
//! impl Greeter {
//!     /// Greets someone by name.
//!     #[tool(title = "Greet")]
//!     async fn greet(&self, args: Echo) -> String {
//!         format!("{}, {}!", self.greeting, args.text)
//!     }
//! }
//!
//! let server = Server::builder("demo", "1.0.0")
//!     .tool(echo_tool())
//!     .tools(Greeter { greeting: "Hello".into() }.tools())
//!     .build()
//!     .unwrap();
//! # drop(server);
//! ```
//!
//! The description is the doc comment as a reader sees it: the lines of a
//! paragraph joined by spaces, paragraphs apart by a blank line, the line
//! breaks of lists, tables, headings and fenced code kept.
//!
//! Arguments of `#[tool(..)]`, all optional: `name = "..."` (default: the
//! function's name), `title = "..."`, `description = "..."` (default: the
//! doc comment; one of the two is required), the annotation hints
//! `read_only`, `destructive`, `idempotent` and `open_world` (each a flag,
//! or `= false`), `task_support = "never" | "optional" | "always"` (whether
//! a call may run as a task of the Tasks extension:
//! `ToolBuilder::task_support`), and `header(param = "Header-Name")` to
//! mirror a parameter into an HTTP header (`x-mcp-header`).
#![warn(missing_docs)]

mod args;
mod expand;

use proc_macro::TokenStream;
use syn::parse_macro_input;

/// Makes an `async fn` a tool: beside it, `<name>_tool()` returns its
/// `ToolBuilder`. Inside a `#[tools]` block, marks a method as a tool.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut args = args::ToolArgs::default();
    let parser = syn::meta::parser(|meta| args.parse_one(meta));
    parse_macro_input!(attr with parser);
    let item = parse_macro_input!(item as syn::ItemFn);
    expand::free_tool(args, item)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// On an `impl` block: its `#[tool]` methods (taking `&self`) become the
/// tools that `tools(self)` returns, all sharing the one value.
#[proc_macro_attribute]
pub fn tools(attr: TokenStream, item: TokenStream) -> TokenStream {
    if !attr.is_empty() {
        let attr = proc_macro2::TokenStream::from(attr);
        return syn::Error::new_spanned(attr, "#[tools] takes no arguments")
            .into_compile_error()
            .into();
    }
    let block = parse_macro_input!(item as syn::ItemImpl);
    expand::impl_tools(block)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

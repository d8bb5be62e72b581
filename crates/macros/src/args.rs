//! The arguments of `#[tool(..)]` and the doc comment that describes a tool.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::meta::ParseNestedMeta;
use syn::{Attribute, Expr, ExprLit, Lit, LitBool, LitStr, Meta, Token};

const KNOWN: &str = "name, title, description, read_only, destructive, idempotent, open_world, \
     task_support or header";

/// What `#[tool(..)]` says about one tool.
#[derive(Default)]
pub(crate) struct ToolArgs {
    name: Option<LitStr>,
    title: Option<LitStr>,
    description: Option<LitStr>,
    read_only: Option<LitBool>,
    destructive: Option<LitBool>,
    idempotent: Option<LitBool>,
    open_world: Option<LitBool>,
    /// `header(param = "Header-Name")`: `x-mcp-header` on a parameter.
    headers: Vec<(LitStr, LitStr)>,
    /// `task_support = "never" | "optional" | "always"`: the variant.
    task_support: Option<syn::Ident>,
}

impl ToolArgs {
    /// Parses one `name = value` or flag of the attribute.
    pub(crate) fn parse_one(&mut self, meta: ParseNestedMeta<'_>) -> syn::Result<()> {
        let text = |meta: &ParseNestedMeta<'_>| -> syn::Result<Option<LitStr>> {
            Ok(Some(meta.value()?.parse()?))
        };
        let flag = |meta: &ParseNestedMeta<'_>| -> syn::Result<Option<LitBool>> {
            if meta.input.peek(Token![=]) {
                Ok(Some(meta.value()?.parse()?))
            } else {
                Ok(Some(LitBool::new(true, meta.path.segments[0].ident.span())))
            }
        };
        let path = &meta.path;
        if path.is_ident("name") {
            self.name = text(&meta)?;
        } else if path.is_ident("title") {
            self.title = text(&meta)?;
        } else if path.is_ident("description") {
            self.description = text(&meta)?;
        } else if path.is_ident("read_only") {
            self.read_only = flag(&meta)?;
        } else if path.is_ident("destructive") {
            self.destructive = flag(&meta)?;
        } else if path.is_ident("idempotent") {
            self.idempotent = flag(&meta)?;
        } else if path.is_ident("open_world") {
            self.open_world = flag(&meta)?;
        } else if path.is_ident("task_support") {
            self.task_support = Some(task_support(&meta)?);
        } else if path.is_ident("header") {
            meta.parse_nested_meta(|param| {
                let name = param
                    .path
                    .get_ident()
                    .ok_or_else(|| param.error("expected `parameter = \"Header-Name\"`"))?;
                let header: LitStr = param.value()?.parse()?;
                self.headers
                    .push((LitStr::new(&name.to_string(), name.span()), header));
                Ok(())
            })?;
        } else {
            return Err(meta.error(format!("unknown #[tool] argument: expected {KNOWN}")));
        }
        Ok(())
    }

    /// The arguments of an attribute `#[tool]` or `#[tool(..)]`.
    pub(crate) fn from_attribute(attr: &Attribute) -> syn::Result<Self> {
        let mut args = ToolArgs::default();
        if let Meta::List(_) = attr.meta {
            attr.parse_nested_meta(|meta| args.parse_one(meta))?;
        }
        Ok(args)
    }

    /// `ToolBuilder::new(..)` with everything but the handler; `fallback`
    /// names the tool when `name` does not, `docs` describe it when
    /// `description` does not.
    pub(crate) fn builder(
        &self,
        fallback: &syn::Ident,
        docs: Option<String>,
    ) -> syn::Result<TokenStream> {
        let name = match &self.name {
            Some(name) => name.clone(),
            None => LitStr::new(
                fallback.to_string().trim_start_matches("r#"),
                fallback.span(),
            ),
        };
        let description = match (&self.description, docs) {
            (Some(text), _) => text.clone(),
            (None, Some(docs)) => LitStr::new(&docs, Span::call_site()),
            (None, None) => {
                return Err(syn::Error::new(
                    fallback.span(),
                    "a tool needs a description for the model: write a doc comment (`/// ...`) \
                     or #[tool(description = \"...\")]",
                ));
            }
        };
        let title = self.title.iter();
        let annotations = self.annotations();
        let task_support = self.task_support.iter();
        Ok(quote! {
            ::toolwire::server::ToolBuilder::new(#name)
                .description(#description)
                #(.title(#title))*
                #annotations
                #(.task_support(::toolwire::server::TaskSupport::#task_support))*
        })
    }

    /// The `.header(..)` calls, which go after `.handler(..)` (it sets the
    /// input schema they annotate).
    pub(crate) fn headers(&self) -> TokenStream {
        let headers = self
            .headers
            .iter()
            .map(|(param, header)| quote!(.header(#param, #header)));
        quote!(#(#headers)*)
    }

    /// `.annotations(..)` when any hint is given.
    fn annotations(&self) -> TokenStream {
        let hints = [
            &self.read_only,
            &self.destructive,
            &self.idempotent,
            &self.open_world,
        ];
        if hints.iter().all(|h| h.is_none()) {
            return TokenStream::new();
        }
        let [read_only, destructive, idempotent, open_world] = hints.map(|hint| match hint {
            Some(value) => quote!(::core::option::Option::Some(#value)),
            None => quote!(::core::option::Option::None),
        });
        quote! {
            .annotations(::toolwire::protocol::ToolAnnotations {
                read_only_hint: #read_only,
                destructive_hint: #destructive,
                idempotent_hint: #idempotent,
                open_world_hint: #open_world,
                ..::core::default::Default::default()
            })
        }
    }
}

/// The `TaskSupport` variant `task_support = ".."` names.
fn task_support(meta: &ParseNestedMeta<'_>) -> syn::Result<syn::Ident> {
    let value: LitStr = meta.value()?.parse()?;
    let variant = match value.value().as_str() {
        "never" => "Never",
        "optional" => "Optional",
        "always" => "Always",
        _ => {
            return Err(syn::Error::new(
                value.span(),
                "expected \"never\", \"optional\" or \"always\" (whether a call may run as a \
                 task of the Tasks extension)",
            ));
        }
    };
    Ok(syn::Ident::new(variant, value.span()))
}

/// The doc comment of an item as one text, as a reader sees it: the lines
/// of a paragraph joined by spaces (a comment wrapped at 100 columns is one
/// sentence), paragraphs apart by a blank line, and the line breaks of
/// lists, tables, headings and fenced code kept.
pub(crate) fn doc_text(attrs: &[Attribute]) -> Option<String> {
    let mut text = String::new();
    let mut fenced = false;
    let mut after_blank = true;
    for line in doc_lines(attrs) {
        let line = line.strip_prefix(' ').unwrap_or(&line).trim_end();
        let fence = line.trim_start().starts_with("```");
        if line.is_empty() && !fenced {
            after_blank = true;
            continue;
        }
        let joined = !after_blank && !fenced && !fence && !starts_block(line);
        if !text.is_empty() {
            text.push_str(match (after_blank, joined) {
                (true, _) => "\n\n",
                (false, true) => " ",
                (false, false) => "\n",
            });
        }
        text.push_str(if joined { line.trim_start() } else { line });
        fenced ^= fence;
        after_blank = false;
    }
    (!text.is_empty()).then_some(text)
}

/// The raw lines of the `#[doc = ".."]` attributes (`///` lines); `split`,
/// not `lines`, so that an empty `///` is one empty line.
fn doc_lines(attrs: &[Attribute]) -> Vec<String> {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            Meta::NameValue(nv) => match &nv.value {
                Expr::Lit(ExprLit {
                    lit: Lit::Str(s), ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        .flat_map(|text| text.split('\n').map(str::to_owned).collect::<Vec<_>>())
        .collect()
}

/// A line that starts a list item, table row or heading: kept on its own.
fn starts_block(line: &str) -> bool {
    let line = line.trim_start();
    let numbered = line
        .split_once(". ")
        .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    numbered
        || ["- ", "* ", "+ ", "|", "#"]
            .iter()
            .any(|m| line.starts_with(m))
}

#[cfg(test)]
mod tests {
    use super::doc_text;

    fn doc(source: &str) -> Option<String> {
        let item: syn::ItemFn = syn::parse_str(&format!("{source}\nfn f() {{}}")).unwrap();
        doc_text(&item.attrs)
    }

    #[test]
    fn wrapped_lines_are_one_paragraph() {
        assert_eq!(
            doc("/// Adds the tool, or removes it\n/// when it is there."),
            Some("Adds the tool, or removes it when it is there.".to_owned())
        );
    }

    #[test]
    fn paragraphs_lists_and_code_keep_their_breaks() {
        let text = doc(concat!(
            "/// Looks things up.\n///\n/// Modes:\n/// - fast\n/// - exact,\n///   slower\n",
            "/// 1. first\n///\n/// ```\n/// let a = 1;\n///\n/// let b = 2;\n/// ```\n///\n",
        ));
        assert_eq!(
            text.as_deref(),
            Some(
                "Looks things up.\n\nModes:\n- fast\n- exact, slower\n1. first\n\n```\n\
                 let a = 1;\n\nlet b = 2;\n```"
            )
        );
    }

    #[test]
    fn no_doc_is_none() {
        assert_eq!(doc("///\n///   "), None);
        assert_eq!(doc("#[inline]"), None);
    }
}

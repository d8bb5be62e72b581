//! The arguments of `#[tool(..)]` and the doc comment that describes a tool.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::meta::ParseNestedMeta;
use syn::{Attribute, Expr, ExprLit, Lit, LitBool, LitStr, Meta, Token};

const KNOWN: &str =
    "name, title, description, read_only, destructive, idempotent, open_world or header";

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
        Ok(quote! {
            ::toolwire::server::ToolBuilder::new(#name)
                .description(#description)
                #(.title(#title))*
                #annotations
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

/// The doc comment of an item as one text: each line without the space
/// after `///`, blank lines kept between paragraphs, trimmed.
pub(crate) fn doc_text(attrs: &[Attribute]) -> Option<String> {
    let lines: Vec<String> = attrs
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
        .flat_map(|text| {
            // `split`, not `lines`: an empty `///` line is one empty line.
            text.split('\n')
                .map(|line| line.strip_prefix(' ').unwrap_or(line).trim_end().to_owned())
                .collect::<Vec<_>>()
        })
        .collect();
    let text = lines.join("\n").trim().to_owned();
    (!text.is_empty()).then_some(text)
}

//! What `#[tool]` and `#[tools]` write: the builder calls a user would.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{FnArg, ImplItem, ItemFn, ItemImpl, ReturnType, Signature};

use crate::args::{ToolArgs, doc_text};

/// `#[tool]` on a free `async fn`: the function as written, and beside it
/// `<name>_tool()`, its [`ToolBuilder`].
pub(crate) fn free_tool(args: ToolArgs, item: ItemFn) -> syn::Result<TokenStream> {
    check_signature(&item.sig)?;
    if let Some(receiver) = item.sig.receiver() {
        return Err(syn::Error::new_spanned(
            receiver,
            "#[tool] on a method needs #[tools] on its impl block",
        ));
    }
    let name = &item.sig.ident;
    let builder = args.builder(name, doc_text(&item.attrs))?;
    let headers = args.headers();
    let vis = &item.vis;
    let maker = format_ident!("{}_tool", name.to_string().trim_start_matches("r#"));
    let doc = format!("The tool that [`{name}`] handles, ready for `ServerBuilder::tool`.");
    let checks = type_checks(&item.sig);
    Ok(quote! {
        #item

        #[doc = #doc]
        #vis fn #maker() -> ::toolwire::server::ToolBuilder {
            #checks
            #builder.handler(#name) #headers
        }
    })
}

/// `#[tools]` on an `impl` block: the block without its `#[tool]`
/// attributes, and `tools(self)`, one builder per `#[tool]` method, each
/// calling it on one shared `Arc<Self>`.
pub(crate) fn impl_tools(mut block: ItemImpl) -> syn::Result<TokenStream> {
    if !block.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(
            &block.generics,
            "#[tools] does not support a generic impl block",
        ));
    }
    let mut builders = Vec::new();
    for item in &mut block.items {
        let ImplItem::Fn(method) = item else { continue };
        let Some(at) = method.attrs.iter().position(is_tool_attribute) else {
            continue;
        };
        let attr = method.attrs.remove(at);
        let args = ToolArgs::from_attribute(&attr)?;
        builders.push(method_tool(&args, method)?);
    }
    if builders.is_empty() {
        return Err(syn::Error::new_spanned(
            &block.self_ty,
            "#[tools] found no #[tool] method in this impl block",
        ));
    }
    let self_ty = &block.self_ty;
    Ok(quote! {
        #block

        impl #self_ty {
            /// The `#[tool]` methods of this block as tools, each calling
            /// its method on `self` (shared by all of them).
            pub fn tools(self) -> ::std::vec::Vec<::toolwire::server::ToolBuilder> {
                let this = ::std::sync::Arc::new(self);
                ::std::vec![#(#builders),*]
            }
        }
    })
}

/// The builder of one `#[tool]` method taking `&self`.
fn method_tool(args: &ToolArgs, method: &syn::ImplItemFn) -> syn::Result<TokenStream> {
    let sig = &method.sig;
    check_signature(sig)?;
    match sig.receiver() {
        Some(receiver) if receiver.reference.is_some() && receiver.mutability.is_none() => {}
        Some(receiver) => {
            return Err(syn::Error::new_spanned(
                receiver,
                "a #[tool] method takes `&self` (tools share one value: keep mutable state \
                 behind a Mutex or a store)",
            ));
        }
        None => {
            return Err(syn::Error::new_spanned(
                &sig.ident,
                "a #[tool] method in #[tools] takes `&self`; write a free #[tool] fn otherwise",
            ));
        }
    }
    let types: Vec<_> = sig
        .inputs
        .iter()
        .filter_map(|input| match input {
            FnArg::Typed(typed) => Some(&typed.ty),
            FnArg::Receiver(_) => None,
        })
        .collect();
    let params: Vec<_> = (0..types.len()).map(|i| format_ident!("p{i}")).collect();
    let name = &sig.ident;
    let builder = args.builder(name, doc_text(&method.attrs))?;
    let headers = args.headers();
    let checks = type_checks(sig);
    Ok(quote! {{
        #checks
        let this = ::std::sync::Arc::clone(&this);
        #builder
            .handler(move |#(#params: #types),*| {
                let this = ::std::sync::Arc::clone(&this);
                async move { this.#name(#(#params),*).await }
            })
            #headers
    }})
}

/// Checks, each spanned at the user's type, that every parameter is a
/// `ToolParam` and the result an `IntoToolOutput`: a mistake is reported
/// at the type that is wrong, not only as "not a tool handler".
fn type_checks(sig: &Signature) -> TokenStream {
    let params = sig.inputs.iter().filter_map(|input| match input {
        FnArg::Typed(typed) => {
            let ty = &typed.ty;
            Some(quote_spanned!(ty.span()=> param::<_, #ty>();))
        }
        FnArg::Receiver(_) => None,
    });
    let output = match &sig.output {
        ReturnType::Default => quote_spanned!(sig.ident.span()=> output::<()>();),
        ReturnType::Type(_, ty) => quote_spanned!(ty.span()=> output::<#ty>();),
    };
    quote! {
        fn param<M, T: ::toolwire::server::ToolParam<M>>() {}
        fn output<T: ::toolwire::server::IntoToolOutput>() {}
        let _ = || {
            #(#params)*
            #output
        };
    }
}

/// `#[tool]` or `#[toolwire::tool]` (any path ending in `tool`).
fn is_tool_attribute(attr: &syn::Attribute) -> bool {
    attr.path()
        .segments
        .last()
        .is_some_and(|segment| segment.ident == "tool")
}

/// A tool function is `async` and not generic.
fn check_signature(sig: &Signature) -> syn::Result<()> {
    if sig.asyncness.is_none() {
        return Err(syn::Error::new_spanned(
            sig.fn_token,
            "#[tool] needs an `async fn`",
        ));
    }
    if !sig.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(
            &sig.generics,
            "a #[tool] function cannot be generic: its parameter types make the tool's schema",
        ));
    }
    Ok(())
}

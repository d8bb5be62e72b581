//! Resources, prompts and completion.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde_json::Value;
use toolwire_protocol::{
    CompleteResult, CompletionArgument, CompletionContext, CompletionReference, GetPromptResult,
    JsonObject, Prompt, ReadResourceResult, Resource, ResourceTemplate, ResultType,
};

use crate::cache::{CacheHints, Freshness};
use crate::client::{Client, Fetched, parse, result_type};
use crate::error::Error;
use crate::options::RequestOptions;

impl Client {
    /// Lists every resource, walking all pages (each cached on its own).
    pub async fn list_resources(&self) -> Result<Fetched<Vec<Resource>>, Error> {
        self.list_all("resources/list", "resources").await
    }

    /// Lists every resource template, walking all pages.
    pub async fn list_resource_templates(&self) -> Result<Fetched<Vec<ResourceTemplate>>, Error> {
        self.list_all("resources/templates/list", "resourceTemplates")
            .await
    }

    /// Lists every prompt, walking all pages.
    pub async fn list_prompts(&self) -> Result<Fetched<Vec<Prompt>>, Error> {
        self.list_all("prompts/list", "prompts").await
    }

    /// Reads a resource. A complete first answer is cached under its `uri`;
    /// input rounds are run with the handlers and never cached.
    pub async fn read_resource(&self, uri: &str) -> Result<Fetched<ReadResourceResult>, Error> {
        self.read_resource_with(uri, &RequestOptions::new()).await
    }

    /// [`Client::read_resource`] with per-request options.
    pub async fn read_resource_with(
        &self,
        uri: &str,
        options: &RequestOptions,
    ) -> Result<Fetched<ReadResourceResult>, Error> {
        let mut params = JsonObject::new();
        params.insert("uri".into(), Value::String(uri.to_owned()));
        let (first, freshness) = self
            .cached("resources/read", params.clone(), options)
            .await?;
        if result_type(&first)? == ResultType::Complete {
            return Ok(Fetched {
                hints: CacheHints::of(&first),
                value: parse(first)?,
                freshness,
            });
        }
        let origin = self.origin("resources/read", uri);
        let result = self
            .run_rounds(&origin, &params, options, &[], Some(first.into()))
            .await?
            .result
            .into_object()
            .map_err(|e| Error::InvalidReply(e.to_string()))?;
        Ok(Fetched {
            hints: CacheHints::of(&result),
            value: parse(result)?,
            freshness: Freshness::Fetched,
        })
    }

    /// Gets a prompt with its arguments, running any input rounds.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: BTreeMap<String, String>,
    ) -> Result<GetPromptResult, Error> {
        self.get_prompt_with(name, arguments, &RequestOptions::new())
            .await
    }

    /// [`Client::get_prompt`] with per-request options.
    pub async fn get_prompt_with(
        &self,
        name: &str,
        arguments: BTreeMap<String, String>,
        options: &RequestOptions,
    ) -> Result<GetPromptResult, Error> {
        let mut params = JsonObject::new();
        params.insert("name".into(), Value::String(name.to_owned()));
        if !arguments.is_empty() {
            let arguments = serde_json::to_value(arguments).unwrap_or_default();
            params.insert("arguments".into(), arguments);
        }
        let origin = self.origin("prompts/get", name);
        let rounds = self
            .run_rounds(&origin, &params, options, &[], None)
            .await?;
        parse(rounds.result)
    }

    /// Asks for completions of a prompt or resource-template argument.
    pub async fn complete(
        &self,
        reference: CompletionReference,
        argument: CompletionArgument,
        context: Option<CompletionContext>,
    ) -> Result<CompleteResult, Error> {
        let mut params = JsonObject::new();
        params.insert("ref".into(), to_value(&reference)?);
        params.insert("argument".into(), to_value(&argument)?);
        if let Some(context) = context {
            params.insert("context".into(), to_value(&context)?);
        }
        let result = self
            .request("completion/complete", &params, &RequestOptions::new(), &[])
            .await?;
        parse(result)
    }

    /// Walks every page of a list and collects the items under `field`.
    async fn list_all<T: DeserializeOwned>(
        &self,
        method: &str,
        field: &str,
    ) -> Result<Fetched<Vec<T>>, Error> {
        let (pages, freshness) = self.walk_pages(method, &RequestOptions::new()).await?;
        let hints = pages_hints(&pages);
        let mut items = Vec::new();
        for page in pages {
            result_type(&page)?;
            let page_items = page.get(field).cloned().unwrap_or(Value::Null);
            let page_items: Vec<T> = serde_json::from_value(page_items)
                .map_err(|e| Error::InvalidReply(format!("{method}: malformed {field}: {e}")))?;
            items.extend(page_items);
        }
        Ok(Fetched {
            value: items,
            freshness,
            hints,
        })
    }
}

/// The most cautious hints of a list's pages.
pub(crate) fn pages_hints(pages: &[JsonObject]) -> CacheHints {
    pages
        .iter()
        .map(CacheHints::of)
        .reduce(CacheHints::strictest)
        .unwrap_or(CacheHints {
            ttl_ms: 0,
            scope: toolwire_protocol::CacheScope::Private,
        })
}

fn to_value(value: &impl serde::Serialize) -> Result<Value, Error> {
    serde_json::to_value(value).map_err(|e| Error::InvalidArguments(e.to_string()))
}

//! Elicitation requests as terminal prompts: one question per form field,
//! checked by type (string, number, integer, boolean, enum), read from stdin
//! line by line. `!decline` and `!cancel` answer the whole request; EOF
//! cancels it.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;
use toolwire::client::handlers::{BoxError, ElicitationHandler, InputContext};
use toolwire::client::transport::BoxFuture;
use toolwire::protocol::{
    ElicitRequestFormParams, ElicitRequestParams, ElicitRequestUrlParams, ElicitResult,
    ElicitValue, NumberType, PrimitiveSchemaDefinition, StringFormat,
};

use crate::safe_text::{line as one_line, text as lines};
use crate::terminal::{Ui, echo_piped, read_line};

/// Answers `elicitation/create` by asking the person at the terminal.
#[derive(Debug, Clone)]
pub struct TerminalForms {
    pub ui: Arc<Ui>,
}

impl ElicitationHandler for TerminalForms {
    fn elicit(
        &self,
        params: ElicitRequestParams,
        cx: InputContext,
    ) -> BoxFuture<'static, Result<ElicitResult, BoxError>> {
        let ui = Arc::clone(&self.ui);
        Box::pin(async move {
            ui.clear_progress();
            let during = match (cx.method.as_str(), cx.target.as_str()) {
                ("", _) => String::new(),
                (method, "") => format!(" (during {})", one_line(method)),
                (method, target) => {
                    format!(" (during {} {})", one_line(method), one_line(target))
                }
            };
            let header = format!("── The server {} asks you{during} ──", one_line(&cx.server));
            ui.say(&ui.bold(&header));
            match params {
                ElicitRequestParams::Form(form) => fill_form(&ui, &form).await,
                ElicitRequestParams::Url(url) => visit_url(&ui, &url).await,
            }
        })
    }
}

/// What the person typed instead of a value.
enum Escape {
    Decline,
    Cancel,
}

async fn fill_form(ui: &Ui, form: &ElicitRequestFormParams) -> Result<ElicitResult, BoxError> {
    ui.say(&lines(&form.message));
    let fields = match fields_of(form) {
        Ok(fields) => fields,
        Err(reason) => {
            ui.say(&ui.warn(&format!(
                "The form cannot be shown ({reason}); declining it."
            )));
            return Ok(ElicitResult::decline());
        }
    };
    let required = form.required_fields();
    let whole = serde_json::Value::Object(form.requested_schema.clone());
    let compiled = toolwire::schema::CompiledSchema::compile(&whole).ok();
    ui.say(&ui.dim(
        "Answer each field (an empty line keeps the default or skips an optional field; \
         type !decline to decline or !cancel to cancel).",
    ));
    loop {
        let mut content = BTreeMap::new();
        for (name, schema) in &fields {
            let is_required = required.contains(&name.as_str());
            match ask_field(ui, name, schema, is_required).await {
                Ok(Some(value)) => {
                    content.insert(name.clone(), value);
                }
                Ok(None) => {}
                Err(Escape::Decline) => return Ok(ElicitResult::decline()),
                Err(Escape::Cancel) => return Ok(ElicitResult::cancel()),
            }
        }
        let as_json = serde_json::to_value(&content).unwrap_or(Value::Null);
        match compiled.as_ref().map(|c| c.validate(&as_json)) {
            Some(Err(errors)) => {
                ui.say(&ui.warn(&format!(
                    "These answers do not match the form's schema:\n{errors}\nPlease answer again."
                )));
            }
            _ => return Ok(ElicitResult::accept(content)),
        }
    }
}

/// The fields in the order the server listed them.
fn fields_of(
    form: &ElicitRequestFormParams,
) -> Result<Vec<(String, PrimitiveSchemaDefinition)>, String> {
    let Some(properties) = form.requested_schema.get("properties") else {
        return Ok(Vec::new());
    };
    let Value::Object(properties) = properties else {
        return Err("its properties are not an object".into());
    };
    properties
        .iter()
        .map(|(name, schema)| {
            serde_json::from_value(schema.clone())
                .map(|s| (name.clone(), s))
                .map_err(|e| format!("field {}: {e}", one_line(&format!("{name:?}"))))
        })
        .collect()
}

/// Asks one field until the answer is valid. `Ok(None)` leaves it out.
async fn ask_field(
    ui: &Ui,
    name: &str,
    schema: &PrimitiveSchemaDefinition,
    required: bool,
) -> Result<Option<ElicitValue>, Escape> {
    let (label, description) = label_of(name, schema);
    if let Some(description) = description {
        ui.say(&ui.dim(&format!("  {}", lines(description))));
    }
    let choices = choices_of(schema);
    for (i, (value, title)) in choices.iter().enumerate() {
        let shown = if title == value {
            one_line(value).into_owned()
        } else {
            format!("{} ({})", one_line(title), one_line(value))
        };
        ui.say(&format!("    {}) {shown}", i + 1));
    }
    let hint = hint_of(schema, required);
    loop {
        ui.ask(&format!("  {label} {}: ", ui.dim(&hint)));
        let line = read_line().await;
        echo_piped(line.as_deref());
        let Some(line) = line else {
            ui.say("(end of input: cancelling)");
            return Err(Escape::Cancel);
        };
        let answer = line.trim();
        match answer {
            "!decline" => return Err(Escape::Decline),
            "!cancel" => return Err(Escape::Cancel),
            _ => {}
        }
        if answer.is_empty() {
            if let Some(default) = default_of(schema) {
                return Ok(Some(default));
            }
            if !required {
                return Ok(None);
            }
            ui.say(&ui.warn("    a value is required"));
            continue;
        }
        match parse_answer(answer, schema, &choices) {
            Ok(value) => return Ok(Some(value)),
            Err(problem) => ui.say(&ui.warn(&format!("    {problem}"))),
        }
    }
}

fn label_of<'a>(name: &'a str, schema: &'a PrimitiveSchemaDefinition) -> (String, Option<&'a str>) {
    use PrimitiveSchemaDefinition as P;
    let (title, description) = match schema {
        P::String(s) => (&s.title, &s.description),
        P::Number(s) => (&s.title, &s.description),
        P::Boolean(s) => (&s.title, &s.description),
        P::UntitledSingleSelectEnum(s) => (&s.title, &s.description),
        P::TitledSingleSelectEnum(s) => (&s.title, &s.description),
        P::UntitledMultiSelectEnum(s) => (&s.title, &s.description),
        P::TitledMultiSelectEnum(s) => (&s.title, &s.description),
        P::LegacyTitledEnum(s) => (&s.title, &s.description),
    };
    let label = match title {
        Some(title) if title != name => format!("{} [{}]", one_line(title), one_line(name)),
        _ => one_line(name).into_owned(),
    };
    (label, description.as_deref())
}

/// `(value, title)` of each choice of an enum field.
fn choices_of(schema: &PrimitiveSchemaDefinition) -> Vec<(String, String)> {
    use PrimitiveSchemaDefinition as P;
    let same = |values: &[String]| values.iter().map(|v| (v.clone(), v.clone())).collect();
    match schema {
        P::UntitledSingleSelectEnum(s) => same(&s.r#enum),
        P::UntitledMultiSelectEnum(s) => same(&s.items.r#enum),
        P::TitledSingleSelectEnum(s) => s
            .one_of
            .iter()
            .map(|o| (o.r#const.clone(), o.title.clone()))
            .collect(),
        P::TitledMultiSelectEnum(s) => s
            .items
            .any_of
            .iter()
            .map(|o| (o.r#const.clone(), o.title.clone()))
            .collect(),
        P::LegacyTitledEnum(s) => {
            let names = s.enum_names.clone().unwrap_or_default();
            s.r#enum
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    (
                        v.clone(),
                        names.get(i).cloned().unwrap_or_else(|| v.clone()),
                    )
                })
                .collect()
        }
        _ => Vec::new(),
    }
}

fn hint_of(schema: &PrimitiveSchemaDefinition, required: bool) -> String {
    use PrimitiveSchemaDefinition as P;
    let mut parts: Vec<String> = Vec::new();
    match schema {
        P::String(s) => {
            parts.push(match s.format {
                Some(StringFormat::Email) => "email".into(),
                Some(StringFormat::Uri) => "URI".into(),
                Some(StringFormat::Date) => "date YYYY-MM-DD".into(),
                Some(StringFormat::DateTime) => "date-time, RFC 3339".into(),
                None => "text".into(),
            });
            match (s.min_length, s.max_length) {
                (Some(min), Some(max)) => parts.push(format!("{min}-{max} characters")),
                (Some(min), None) => parts.push(format!("at least {min} characters")),
                (None, Some(max)) => parts.push(format!("at most {max} characters")),
                (None, None) => {}
            }
        }
        P::Number(n) => {
            parts.push(match n.r#type {
                NumberType::Integer => "integer".into(),
                NumberType::Number => "number".into(),
            });
            match (n.minimum, n.maximum) {
                (Some(min), Some(max)) => parts.push(format!("{min} to {max}")),
                (Some(min), None) => parts.push(format!("at least {min}")),
                (None, Some(max)) => parts.push(format!("at most {max}")),
                (None, None) => {}
            }
        }
        P::Boolean(_) => parts.push("y/n".into()),
        P::UntitledMultiSelectEnum(_) | P::TitledMultiSelectEnum(_) => {
            parts.push("numbers or values, comma-separated".into())
        }
        _ => parts.push("a number or a value from the list".into()),
    }
    if let Some(default) = default_of(schema) {
        let shown = match default {
            ElicitValue::String(s) => s,
            ElicitValue::Boolean(b) => if b { "yes" } else { "no" }.to_owned(),
            ElicitValue::Number(n) => n.to_string(),
            ElicitValue::StringArray(a) => a.join(","),
        };
        parts.push(format!("default {}", one_line(&shown)));
    } else if required {
        parts.push("required".into());
    } else {
        parts.push("optional".into());
    }
    format!("({})", parts.join(", "))
}

fn default_of(schema: &PrimitiveSchemaDefinition) -> Option<ElicitValue> {
    use PrimitiveSchemaDefinition as P;
    match schema {
        P::String(s) => s.default.clone().map(ElicitValue::String),
        P::Number(n) => n.default.and_then(|d| {
            if n.r#type == NumberType::Integer && d.fract() == 0.0 {
                Some(ElicitValue::Number((d as i64).into()))
            } else {
                serde_json::Number::from_f64(d).map(ElicitValue::Number)
            }
        }),
        P::Boolean(b) => b.default.map(ElicitValue::Boolean),
        P::UntitledSingleSelectEnum(s) => s.default.clone().map(ElicitValue::String),
        P::TitledSingleSelectEnum(s) => s.default.clone().map(ElicitValue::String),
        P::LegacyTitledEnum(s) => s.default.clone().map(ElicitValue::String),
        P::UntitledMultiSelectEnum(s) => s.default.clone().map(ElicitValue::StringArray),
        P::TitledMultiSelectEnum(s) => s.default.clone().map(ElicitValue::StringArray),
    }
}

/// Checks and converts one typed answer.
fn parse_answer(
    answer: &str,
    schema: &PrimitiveSchemaDefinition,
    choices: &[(String, String)],
) -> Result<ElicitValue, String> {
    use PrimitiveSchemaDefinition as P;
    match schema {
        P::String(s) => {
            let length = answer.chars().count() as u64;
            if s.min_length.is_some_and(|min| length < min) {
                return Err(format!(
                    "too short: at least {} characters",
                    s.min_length.unwrap_or_default()
                ));
            }
            if s.max_length.is_some_and(|max| length > max) {
                return Err(format!(
                    "too long: at most {} characters",
                    s.max_length.unwrap_or_default()
                ));
            }
            if let Some(format) = s.format {
                check_format(answer, format)?;
            }
            Ok(ElicitValue::String(answer.to_owned()))
        }
        P::Number(n) => {
            let number: f64 = answer
                .parse()
                .ok()
                .filter(|x: &f64| x.is_finite())
                .ok_or_else(|| format!("{answer:?} is not a number"))?;
            if n.minimum.is_some_and(|min| number < min)
                || n.maximum.is_some_and(|max| number > max)
            {
                return Err(format!("{answer} is out of range"));
            }
            if n.r#type == NumberType::Integer {
                let integer: i64 = answer
                    .parse()
                    .map_err(|_| format!("{answer:?} is not a whole number"))?;
                return Ok(ElicitValue::Number(integer.into()));
            }
            serde_json::from_str::<serde_json::Number>(answer)
                .ok()
                .or_else(|| serde_json::Number::from_f64(number))
                .map(ElicitValue::Number)
                .ok_or_else(|| format!("{answer:?} is not a number"))
        }
        P::Boolean(_) => match answer.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" | "1" => Ok(ElicitValue::Boolean(true)),
            "n" | "no" | "false" | "0" => Ok(ElicitValue::Boolean(false)),
            _ => Err("answer y or n".into()),
        },
        P::UntitledMultiSelectEnum(_) | P::TitledMultiSelectEnum(_) => {
            let (min, max) = match schema {
                P::UntitledMultiSelectEnum(s) => (s.min_items, s.max_items),
                P::TitledMultiSelectEnum(s) => (s.min_items, s.max_items),
                _ => (None, None),
            };
            let mut picked = Vec::new();
            for part in answer.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                let value = pick(part, choices)?;
                if !picked.contains(&value) {
                    picked.push(value);
                }
            }
            let count = picked.len() as u64;
            if min.is_some_and(|m| count < m) || max.is_some_and(|m| count > m) {
                return Err(format!(
                    "choose between {} and {} items",
                    min.unwrap_or(0),
                    max.map(|m| m.to_string()).unwrap_or_else(|| "any".into())
                ));
            }
            Ok(ElicitValue::StringArray(picked))
        }
        _ => pick(answer, choices).map(ElicitValue::String),
    }
}

/// A choice by its number in the list or by its value (or title).
fn pick(answer: &str, choices: &[(String, String)]) -> Result<String, String> {
    if let Ok(n) = answer.parse::<usize>() {
        if let Some((value, _)) = n.checked_sub(1).and_then(|i| choices.get(i)) {
            return Ok(value.clone());
        }
    }
    choices
        .iter()
        .find(|(value, title)| value == answer || title.eq_ignore_ascii_case(answer))
        .map(|(value, _)| value.clone())
        .ok_or_else(|| format!("{answer:?} is not one of the choices"))
}

fn check_format(answer: &str, format: StringFormat) -> Result<(), String> {
    let ok = match format {
        StringFormat::Email => {
            let mut parts = answer.splitn(2, '@');
            let local = parts.next().unwrap_or("");
            let domain = parts.next().unwrap_or("");
            !local.is_empty() && domain.contains('.') && !answer.contains(char::is_whitespace)
        }
        StringFormat::Uri => answer.split_once(':').is_some_and(|(scheme, rest)| {
            !rest.is_empty()
                && scheme
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        }),
        StringFormat::Date => is_date(answer),
        StringFormat::DateTime => answer
            .split_once(['T', 't', ' '])
            .is_some_and(|(date, time)| {
                is_date(date) && time.len() >= 8 && time.as_bytes()[2] == b':'
            }),
    };
    if ok {
        Ok(())
    } else {
        let expected = match format {
            StringFormat::Email => "an email address",
            StringFormat::Uri => "a URI like https://example.com",
            StringFormat::Date => "a date like 2026-07-28",
            StringFormat::DateTime => "a date-time like 2026-07-28T12:00:00Z",
        };
        Err(format!("expected {expected}"))
    }
}

fn is_date(text: &str) -> bool {
    let parts: Vec<&str> = text.split('-').collect();
    let [y, m, d] = parts.as_slice() else {
        return false;
    };
    let number = |s: &str, len: usize| s.len() == len && s.chars().all(|c| c.is_ascii_digit());
    number(y, 4)
        && number(m, 2)
        && number(d, 2)
        && (1..=12).contains(&m.parse::<u32>().unwrap_or(0))
        && (1..=31).contains(&d.parse::<u32>().unwrap_or(0))
}

/// URL mode: show the whole URL, never open it; the person visits it
/// themselves and says when done.
async fn visit_url(ui: &Ui, params: &ElicitRequestUrlParams) -> Result<ElicitResult, BoxError> {
    ui.say(&lines(&params.message));
    let host = params
        .url
        .split_once("://")
        .map(|(_, rest)| rest.split(['/', '?', '#']).next().unwrap_or(rest))
        .unwrap_or("");
    ui.say(&format!("  URL: {}", one_line(&params.url)));
    ui.say(&format!("  host: {}", ui.bold(&one_line(host))));
    for warning in url_warnings(&params.url, host) {
        ui.say(&ui.warn(&format!("  {warning}")));
    }
    ui.say(
        &ui.dim("  toolwire does not open it. Open it yourself if you trust it, then answer here."),
    );
    if ui.confirm("Did you complete it?").await {
        Ok(ElicitResult {
            action: toolwire::protocol::ElicitAction::Accept,
            content: None,
        })
    } else {
        Ok(ElicitResult::decline())
    }
}

/// What to warn about in a URL a server asks the person to visit.
fn url_warnings(url: &str, host: &str) -> Vec<&'static str> {
    let mut warnings = Vec::new();
    if !url.to_ascii_lowercase().starts_with("https://") {
        warnings.push("this is not an https:// URL: do not open it unless you know why");
    }
    if host.contains("xn--") || !host.is_ascii() {
        warnings.push("the host name uses Punycode or non-ASCII characters: check it carefully");
    }
    if host.contains('@') {
        warnings.push("the URL names a user before the host (user@host): the host is after the @");
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn suspicious_urls_are_warned_about() {
        assert!(url_warnings("https://auth.example.com/x", "auth.example.com").is_empty());
        assert_eq!(
            url_warnings("javascript:alert(1)", ""),
            ["this is not an https:// URL: do not open it unless you know why"]
        );
        assert_eq!(url_warnings("http://example.com/", "example.com").len(), 1);
        assert_eq!(
            url_warnings("https://xn--pple-43d.com/", "xn--pple-43d.com"),
            ["the host name uses Punycode or non-ASCII characters: check it carefully"]
        );
        assert_eq!(
            url_warnings("https://bank.com@evil.example/", "bank.com@evil.example"),
            ["the URL names a user before the host (user@host): the host is after the @"]
        );
    }

    fn schema(value: Value) -> PrimitiveSchemaDefinition {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn answers_are_checked_by_type() {
        let boolean = schema(json!({"type": "boolean"}));
        assert_eq!(
            parse_answer("yes", &boolean, &[]).unwrap(),
            ElicitValue::Boolean(true)
        );
        assert!(parse_answer("maybe", &boolean, &[]).is_err());

        let integer = schema(json!({"type": "integer", "minimum": 1, "maximum": 10}));
        assert_eq!(parse_answer("7", &integer, &[]).unwrap().as_i64(), Some(7));
        assert!(parse_answer("7.5", &integer, &[]).is_err());
        assert!(parse_answer("11", &integer, &[]).is_err());

        let number = schema(json!({"type": "number"}));
        assert_eq!(
            parse_answer("2.5", &number, &[]).unwrap().as_f64(),
            Some(2.5)
        );
        assert!(parse_answer("abc", &number, &[]).is_err());

        let email = schema(json!({"type": "string", "format": "email"}));
        assert!(parse_answer("a@example.com", &email, &[]).is_ok());
        assert!(parse_answer("nope", &email, &[]).is_err());

        let short = schema(json!({"type": "string", "maxLength": 3}));
        assert!(parse_answer("abcd", &short, &[]).is_err());
    }

    #[test]
    fn enums_take_a_number_or_a_value() {
        let single = schema(json!({"type": "string", "enum": ["red", "green"]}));
        let choices = choices_of(&single);
        assert_eq!(
            parse_answer("2", &single, &choices).unwrap(),
            ElicitValue::String("green".into())
        );
        assert_eq!(
            parse_answer("red", &single, &choices).unwrap(),
            ElicitValue::String("red".into())
        );
        assert!(parse_answer("blue", &single, &choices).is_err());

        let multi = schema(json!({"type": "array", "items": {"anyOf": [
            {"const": "a", "title": "Apple"}, {"const": "b", "title": "Banana"}
        ]}, "maxItems": 1}));
        let choices = choices_of(&multi);
        assert_eq!(
            parse_answer("banana", &multi, &choices).unwrap(),
            ElicitValue::StringArray(vec!["b".into()])
        );
        assert!(parse_answer("1,2", &multi, &choices).is_err());
    }

    #[test]
    fn dates_are_checked() {
        assert!(check_format("2026-07-28", StringFormat::Date).is_ok());
        assert!(check_format("2026-13-01", StringFormat::Date).is_err());
        assert!(check_format("2026-07-28T10:00:00Z", StringFormat::DateTime).is_ok());
        assert!(check_format("https://x.org", StringFormat::Uri).is_ok());
        assert!(check_format("not a uri", StringFormat::Uri).is_err());
    }
}

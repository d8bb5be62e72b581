// toolwire gateway console: the one script, served from the console's own
// origin (no inline script anywhere). It adds the audit rows of calls that
// end while the audit page is open, read from its Server-Sent Events stream.
"use strict";

const MAX_ROWS = 200;

function cell(text, className) {
  const td = document.createElement("td");
  td.textContent = text;
  if (className) td.className = className;
  return td;
}

function utc(ms) {
  return new Date(ms).toISOString().slice(0, 19).replace("T", " ");
}

function outcomeClass(outcome) {
  if (outcome === "ok") return "ok";
  if (outcome === "tool_error" || outcome === "cancelled") return "warn";
  return "bad";
}

function row(record) {
  const tr = document.createElement("tr");
  tr.className = "call fresh";
  tr.dataset.principal = record.principal;
  tr.dataset.upstream = record.upstream;
  tr.dataset.tool = record.tool;
  tr.dataset.outcome = record.outcome;
  tr.append(cell(utc(record.time_ms)), cell(record.principal), cell(record.tool));
  const origin = cell(record.upstream + " / ");
  const code = document.createElement("code");
  code.textContent = record.upstream_tool;
  origin.append(code);
  tr.append(origin, cell(record.outcome, outcomeClass(record.outcome)),
    cell(String(record.duration_ms), "num"));
  const digest = document.createElement("code");
  digest.textContent = record.arguments_sha256.slice(0, 12);
  digest.title = record.arguments_sha256;
  const last = cell("");
  last.append(digest);
  tr.append(last);
  return tr;
}

function followAudit(table) {
  const body = table.tBodies[0];
  const events = new EventSource(table.dataset.live + window.location.search);
  events.addEventListener("call", (event) => {
    body.prepend(row(JSON.parse(event.data)));
    while (body.rows.length > MAX_ROWS) body.deleteRow(-1);
  });
  table.classList.add("live");
}

document.addEventListener("DOMContentLoaded", () => {
  const audit = document.querySelector("table#audit[data-live]");
  if (audit) followAudit(audit);
});

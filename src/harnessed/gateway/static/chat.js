// The harnessed web chat: talks to the HTTP channel of the same server. No build step.
"use strict";

const $ = (id) => document.getElementById(id);
// every text from the server (model replies, tool names, arguments and results, errors) is
// set as textContent on elements built here, never parsed as markup; tool boxes are kept in a
// Map, so a call id the model chose ("__proto__", "constructor") is only a key
const state = {
  session: null, busy: false, bubble: null, tools: new Map(), replay: false,
  declined: new Set(),  // tool call ids the user declined here
  usage: { input: 0, output: 0, estimated: false }, context: null,
};

function headers() {
  return { "Authorization": "Bearer " + $("token").value, "Content-Type": "application/json" };
}

async function api(method, path, body) {
  const response = await fetch(path, { method, headers: headers(), body: body ? JSON.stringify(body) : undefined });
  if (!response.ok && response.status !== 204) {
    let detail = response.statusText;
    try { detail = describe((await response.json()).detail) || detail; } catch (e) { /* not JSON */ }
    throw new Error(response.status + ": " + detail);
  }
  return response;
}

function describe(detail) {
  // FastAPI's validation errors are a list of problems; anything else is shown as text
  if (Array.isArray(detail)) return detail.map((d) => (d && d.msg) || JSON.stringify(d)).join("; ");
  return typeof detail === "string" ? detail : (detail ? JSON.stringify(detail) : "");
}

function agentQuery() {
  const agent = $("agent").value;
  return agent ? "?agent=" + encodeURIComponent(agent) : "";
}

function sessionPath(suffix) {
  return "/v1/sessions/" + encodeURIComponent(state.session) + (suffix || "") + agentQuery();
}

function add(kind, text, cls) {
  const node = document.createElement("div");
  node.className = kind + (cls ? " " + cls : "");
  node.textContent = text;
  $("log").appendChild(node);
  $("log").scrollTop = $("log").scrollHeight;
  return node;
}

function status(text, error) { return add("status", text, error ? "error" : ""); }

function assistant(text) {
  // a reply, rendered as Markdown (built from DOM nodes, never parsed as HTML)
  const node = add("msg", "", "assistant");
  node.dataset.raw = text;
  node.replaceChildren(MD.render(text));
  return node;
}

function activity(text, retry) {
  $("activity").textContent = text || "";
  $("activity").classList.toggle("retry", !!retry);
}

function meter() {
  const u = state.usage;
  const mark = u.estimated ? "~" : "";
  let text = u.input || u.output ? mark + u.input.toLocaleString() + " in / " + mark + u.output.toLocaleString() + " out tokens" : "";
  if (u.estimated) text += " (estimated)";
  const c = state.context;
  if (c && c.estimated_input_tokens >= 0 && c.input_limit > 0) {
    const share = Math.round(100 * c.estimated_input_tokens / c.input_limit);
    text += (text ? " · " : "") + "context " + c.estimated_input_tokens.toLocaleString() + " / " + c.input_limit.toLocaleString() + " (" + share + "%)";
  }
  $("meter").textContent = text;
}

function diffLines(call) {
  // what a file-changing call would do, as - and + lines
  const input = call.input || {};
  const lines = [];
  const path = input.path || input.file_path;
  if (path) lines.push(["file", (call.name === "write_file" ? "write " : "edit ") + path]);
  if (typeof input.old === "string" || typeof input.new === "string") {
    for (const l of String(input.old ?? "").split("\n")) lines.push(["del", "- " + l]);
    for (const l of String(input.new ?? "").split("\n")) lines.push(["add", "+ " + l]);
  } else if (typeof input.content === "string") {
    for (const l of input.content.split("\n")) lines.push(["add", "+ " + l]);
  } else if (Array.isArray(input.edits)) {
    for (const e of input.edits) {
      for (const l of String(e.old ?? "").split("\n")) lines.push(["del", "- " + l]);
      for (const l of String(e.new ?? "").split("\n")) lines.push(["add", "+ " + l]);
    }
  } else {
    return null;
  }
  const pre = document.createElement("pre");
  pre.className = "diff";
  for (const [kind, text] of lines) {
    const span = document.createElement("span");
    span.className = kind;
    span.textContent = text;
    pre.appendChild(span);
  }
  return pre;
}

function setBusy(busy) {
  state.busy = busy;
  document.body.classList.toggle("busy", busy);
  $("send").textContent = busy ? "Steer" : "Send";
  $("input").placeholder = busy ? "Steer the running turn" : "Message the agent";
}

function toolCall(call) {
  const box = document.createElement("details");
  box.className = "tool";
  box.dataset.callId = call.id;
  const summary = document.createElement("summary");
  summary.textContent = "tool " + call.name + " " + JSON.stringify(call.input);
  const pre = document.createElement("pre");
  pre.textContent = "running...";
  box.append(summary, pre);
  $("log").appendChild(box);
  state.tools.set(call.id, box);
  state.bubble = null;
}

function toolResult(result) {
  let box = state.tools.get(result.tool_use_id);
  if (!box) { toolCall({ id: result.tool_use_id, name: result.name || "tool", input: {} }); box = state.tools.get(result.tool_use_id); }
  box.querySelector("pre").textContent = result.content;
  const text = typeof result.content === "string" ? result.content : "";
  const declined = state.declined.has(result.tool_use_id) || text.startsWith("The user declined");
  if (declined) {
    box.querySelector("summary").textContent += "  (declined)";
    box.classList.add("declined");
  } else if (text.startsWith("Interrupted:")) {
    box.querySelector("summary").textContent += "  (interrupted)";
    box.classList.add("declined");
  } else {
    box.querySelector("summary").textContent += result.is_error ? "  (error)" : "  (done)";
    if (result.is_error) box.classList.add("error");
  }
}

function fromSubagent(box, event) {
  // a sub-agent's request, forwarded: say which one asks (answering it lets it go on)
  if (!event.source) return;
  const line = document.createElement("div");
  line.className = "source";
  line.textContent = "asked by sub-agent " + event.source;
  box.appendChild(line);
}

function question(event) {
  // the model asks the user (ask_user): pick a choice, or type an answer (JSON for a schema)
  const details = event.details || {};
  const box = add("confirm question", "");
  box.dataset.requestId = event.request_id;
  fromSubagent(box, event);
  box.append(details.question + " ");
  const path = sessionPath("/confirmations/" + encodeURIComponent(event.request_id));
  const answer = async (body, said) => {
    box.querySelectorAll("button, input").forEach((b) => { b.disabled = true; });
    try {
      await api("POST", path, body);
      box.append(" " + said);
      if (event.parked) resumable("answered; the turn can go on");
    } catch (e) {
      status(e.message, true);
      box.querySelectorAll("button, input").forEach((b) => { b.disabled = false; });
    }
  };
  const choices = Array.isArray(details.choices) ? details.choices : [];
  for (const choice of choices) {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "choice";
    button.textContent = String(choice);
    button.onclick = () => answer({ approved: true, answer: choice }, "answered: " + choice);
    box.appendChild(button);
  }
  if (!choices.length || details.schema) {
    const field = document.createElement("input");
    field.className = "answer";
    field.placeholder = details.schema ? "answer as JSON" : "your answer";
    const submit = document.createElement("button");
    submit.type = "button";
    submit.className = "approve";
    submit.textContent = "Answer";
    submit.onclick = () => {
      let value = field.value;
      if (details.schema) {
        try { value = JSON.parse(field.value); } catch (e) { /* a string schema takes the text */ }
      }
      answer({ approved: true, answer: value }, "answered");
    };
    box.append(field, submit);
  }
  const skip = document.createElement("button");
  skip.type = "button";
  skip.className = "decline";
  skip.textContent = "Skip";
  skip.onclick = () => answer({ approved: false }, "skipped");
  box.appendChild(skip);
  state.bubble = null;
}

function confirmation(event) {
  if (event.details && event.details.kind === "question") return question(event);
  const box = add("confirm", "");
  box.dataset.requestId = event.request_id;
  fromSubagent(box, event);
  const asks = document.createElement("div");
  const name = document.createElement("strong");
  name.textContent = event.call.name;
  asks.append("Allow ", name, "?");
  const why = document.createElement("div");
  why.className = "why";
  why.textContent = event.reason || "";
  box.append(asks, why);
  const diff = diffLines(event.call);
  if (diff) box.append(diff);
  else {
    const args = document.createElement("pre");
    args.className = "diff";
    args.textContent = JSON.stringify(event.call.input, null, 2);
    box.append(args);
  }
  for (const [label, approved] of [["Approve", true], ["Decline", false]]) {
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = label;
    button.className = approved ? "approve" : "decline";
    button.onclick = async () => {
      box.querySelectorAll("button").forEach((b) => { b.disabled = true; });
      try {
        if (!approved) state.declined.add(event.call.id);
        await api("POST", sessionPath("/confirmations/" + encodeURIComponent(event.request_id)), { approved });
        const answer = document.createElement("span");
        answer.className = "answer";
        answer.textContent = approved ? "approved" : "declined";
        box.append(answer);
        if (event.parked) resumable("answered; the turn can go on");
      } catch (e) { status(e.message, true); }
    };
    box.appendChild(button);
  }
  state.bubble = null;
}

let waitingCheck = null;

function showWaiting(quiet) {
  // one look at a time: two at once could both add the same card
  if (!waitingCheck) waitingCheck = lookForWaiting(quiet).finally(() => { waitingCheck = null; });
  return waitingCheck;
}

// A background sub-agent can ask after its turn ended, while nobody sends anything: look for
// such requests every few seconds while a session is open, idle and in view.
const WAITING_POLL_MS = 4000;
setInterval(() => {
  if (state.session && !state.busy && document.visibilityState === "visible") showWaiting(true);
}, WAITING_POLL_MS);

async function lookForWaiting(quiet) {
  // requests waiting without a turn to stream them: a step left waiting, or a background
  // sub-agent that asked after the turn ended
  const session = state.session;
  try {
    const waiting = await (await api("GET", sessionPath("/confirmations"))).json();
    if (state.session !== session) return;  // another session was opened meanwhile
    for (const c of waiting) {
      const shown = [...document.querySelectorAll("#log [data-request-id]")].some((n) => n.dataset.requestId === c.request_id);
      if (shown) continue;
      const details = c.details || {};
      confirmation({
        request_id: c.request_id,
        call: { id: "", name: c.tool, input: c.arguments || {} },
        reason: c.reason,
        details,
        source: details.source || null,
        parked: !details.source,  // the agent's own step: answered, it goes on when resumed
      });
    }
  } catch (e) { if (!quiet) status(e.message, true); }
}

function handle(type, data) {
  if (type === "text_delta") {
    if (data.source) return; // a sub-agent's text: its result reaches the reply through the parent
    if (!state.bubble) state.bubble = assistant("");
    state.bubble.dataset.raw += data.text;
    state.bubble.replaceChildren(MD.render(state.bubble.dataset.raw));
    $("log").scrollTop = $("log").scrollHeight;
    activity("the agent is writing…");
  } else if (type === "tool_call") {
    toolCall(data.call);
    activity("running " + data.call.name + "…");
  } else if (type === "tool_result") {
    toolResult(data.result);
  } else if (type === "confirmation_request") {
    confirmation(data);
    activity("waiting for your answer");
  } else if (type === "custom" && data.name === "model_retry") {
    const d = data.data || {};
    const wait = Number(d.wait_seconds || 0).toFixed(1);
    activity("the model did not answer (" + (d.status_code ? "HTTP " + d.status_code : "no answer") + "); retrying in " + wait + " s, attempt " + (Number(d.attempt || 0) + 1) + " of " + (d.max_attempts || "?"), true);
  } else if (type === "custom" && data.name === "context_build") {
    state.context = (data.data || {}).context_manifest || null;
    meter();
  } else if (type === "custom" && data.name === "steer") {
    state.bubble = null;
  } else if (type === "agent_start") {
    if (state.replay && data.input) render(data.input);
    state.replay = false;
  } else if (type === "model_call_start") {
    state.bubble = null;
    if (!data.source) activity("waiting for the model…");
  } else if (type === "model_call_end") {
    if (data.usage) { state.usage.input += data.usage.input_tokens || 0; state.usage.output += data.usage.output_tokens || 0; }
    else if (!data.source) {
      // the server reported no usage: estimate (about 4 characters a token)
      state.usage.estimated = true;
      state.usage.input += (state.context && state.context.estimated_input_tokens > 0) ? state.context.estimated_input_tokens : 0;
      state.usage.output += state.bubble ? Math.ceil(state.bubble.dataset.raw.length / 4) : 0;
    }
    meter();
  } else if (type === "agent_end") {
    if (data.source) return;
    activity("");
    if (data.status === "interrupted") resumable("turn interrupted");
    else if (data.status !== "completed") status("turn " + data.status);
    else status("done");
    showWaiting();
  } else if (type === "error") {
    activity("");
    status((data.error_type || "error") + ": " + data.message, true);
  }
}

function resumable(text) {
  const line = status(text);
  const button = document.createElement("button");
  button.type = "button";
  button.className = "resume";
  button.textContent = "Resume";
  button.onclick = () => { button.disabled = true; runTurn("/resume", {}); };
  line.appendChild(button);
}

async function follow(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const frame = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let type = "message";
      const data = [];
      for (const line of frame.split("\n")) {
        if (line.startsWith("event: ")) type = line.slice(7);
        else if (line.startsWith("data: ")) data.push(line.slice(6));
      }
      if (data.length) handle(type, JSON.parse(data.join("\n")));
    }
  }
}

async function runTurn(path, body, method) {
  setBusy(true);
  state.bubble = null;
  try {
    await follow(await api(method || "POST", sessionPath(path), body));
  } catch (e) {
    status(e.message, true);
  } finally {
    setBusy(false);
    activity("");
    loadSessions();  // its title and time
  }
}

function rememberTitle(text) {
  const key = "harnessed-title:" + $("agent").value + ":" + state.session;
  if (!localStorage.getItem(key)) localStorage.setItem(key, text.slice(0, 80));
}

async function send(text) {
  if (creating) await creating;  // typed right after "New": it belongs to the new session
  else if (!state.session) await newSession();
  rememberTitle(text);
  if (state.busy) {
    add("msg", text, "user steer");
    state.bubble = null;
    try { await api("POST", sessionPath("/steer"), { text }); } catch (e) { status(e.message, true); }
    return;
  }
  add("msg", text, "user");
  await runTurn("/messages", { text, idempotency_key: crypto.randomUUID ? crypto.randomUUID() : String(Date.now()) + Math.random() });
}

function render(message) {
  if (message.role === "user") {
    const text = message.content.filter((b) => b.type === "text").map((b) => b.text).join("");
    add("msg", text, "user" + (message.metadata && message.metadata.steer ? " steer" : ""));
  } else if (message.role === "assistant") {
    const text = message.content.filter((b) => b.type === "text").map((b) => b.text).join("");
    if (text) assistant(text);
    message.content.filter((b) => b.type === "tool_use").forEach(toolCall);
  } else if (message.role === "tool") {
    message.content.filter((b) => b.type === "tool_result").forEach(toolResult);
  }
  state.bubble = null;
}

async function openSession(id) {
  state.session = id;
  state.tools = new Map();
  state.usage = { input: 0, output: 0, estimated: false };
  state.context = null;
  meter();
  $("log").textContent = "";
  for (const li of $("sessions").children) li.classList.toggle("current", li.dataset.id === id);
  try {
    const info = await (await api("GET", sessionPath(""))).json();
    const running = state.busy ? null : info.running_turn;
    const history = await (await api("GET", sessionPath("/messages"))).json();
    history.messages.filter((m) => !running || m.run_id !== running).forEach(render);
    if (running) {
      // a turn is running (sent from another tab, or before a reload): follow it from its start
      state.replay = true;
      await runTurn("/turns/" + encodeURIComponent(running) + "/events", undefined, "GET");
    } else await showWaiting();
  } catch (e) { status(e.message, true); }
}

async function loadSessions() {
  try {
    const data = await (await api("GET", "/v1/sessions" + agentQuery())).json();
    const items = data.sessions.map((s) => {
      const li = document.createElement("li");
      const title = document.createElement("span");
      title.className = "title";
      title.textContent = localStorage.getItem("harnessed-title:" + $("agent").value + ":" + s.session_id) || s.session_id;
      title.title = s.session_id;
      const when = document.createElement("span");
      when.className = "when";
      when.textContent = s.updated_at ? new Date(s.updated_at * 1000).toLocaleString() : "new";
      li.append(title, when);
      li.dataset.id = s.session_id;
      li.classList.toggle("current", s.session_id === state.session);
      li.onclick = () => { document.body.classList.remove("menu-open"); openSession(s.session_id); };
      return li;
    });
    $("sessions").replaceChildren(...items);  // one swap: overlapping reloads never mix
  } catch (e) { status(e.message, true); }
}

let creating = null;  // a session being made: a message sent meanwhile waits for it

function newSession() {
  if (!creating) {
    creating = (async () => {
      const created = await (await api("POST", "/v1/sessions" + agentQuery(), {})).json();
      state.session = created.session_id;
      await loadSessions();
      await openSession(created.session_id);
    })().finally(() => { creating = null; });
  }
  return creating;
}

async function loadAgents() {
  try {
    const data = await (await api("GET", "/v1/agents")).json();
    $("agent").textContent = "";
    const remembered = localStorage.getItem("harnessed-agent");
    const chosen = data.agents.includes(remembered) ? remembered : data.default;
    for (const name of data.agents) {
      const option = document.createElement("option");
      option.value = option.textContent = name;
      option.selected = name === chosen;
      $("agent").appendChild(option);
    }
    // the token works: earlier "401" lines are stale now
    for (const node of document.querySelectorAll(".status.error")) node.remove();
    await loadSessions();
  } catch (e) { status(e.message, true); }
}

$("token").value = localStorage.getItem("harnessed-token") || "";
$("token").addEventListener("change", () => { localStorage.setItem("harnessed-token", $("token").value); loadAgents(); });
$("agent").addEventListener("change", () => {
  localStorage.setItem("harnessed-agent", $("agent").value);
  state.session = null; $("log").textContent = ""; loadSessions();
});
$("menu").addEventListener("click", () => document.body.classList.toggle("menu-open"));
$("new").addEventListener("click", () => newSession().catch((e) => status(e.message, true)));
$("stop").addEventListener("click", async () => {
  try { await api("POST", sessionPath("/interrupt")); } catch (e) { status(e.message, true); }
});
$("composer").addEventListener("submit", (event) => {
  event.preventDefault();
  const text = $("input").value.trim();
  if (!text) return;
  if (!$("token").value) {
    // nothing is sent without a token: keep what was typed and say what is missing
    status("enter your token first (☰ on a narrow screen); your message is kept", true);
    document.body.classList.add("menu-open");
    $("token").focus();
    return;
  }
  $("input").value = "";
  send(text);
});
if ($("token").value) loadAgents();

// JobView (anywidget ESM): one Ray job, live. A state badge, the run time (ticking while it
// runs), Ray's message, the failure (message and last log lines), the log as it streams in
// (kept scrolled to the end unless the reader scrolled up), and Stop while it runs.
// The badge's colours are tones.js's (job_view.py puts it before this file).
const TERMINAL = new Set(["SUCCEEDED", "FAILED", "STOPPED"]);

const duration = (ms) => durationText(ms / 1000); // clock.js, the sidebar's too

function render({ model, el: root }) {
  const badge = el("span", { class: "dw-job-status", style: "color:#fff;border-radius:3px;padding:1px 6px;font-weight:600" });
  const title = el("code", { class: "dw-job-entrypoint", style: "white-space:pre-wrap" });
  const id = el("span", { class: "dw-job-id", style: "color:#718096" });
  const time = el("span", { class: "dw-job-duration", style: "color:#4a5568" });
  const stop = el("button", { class: "dw-job-stop", type: "button", onclick: () => model.send({ action: "stop" }) }, "Stop");
  const message = el("div", { class: "dw-job-message", style: "color:#4a5568;margin:4px 0" });
  const failure = el("pre", { class: "dw-job-failure", style: "color:#c53030;white-space:pre-wrap;margin:4px 0" });
  const error = el("div", { class: "dw-job-error", role: "alert", style: "color:#c53030;margin:4px 0" });
  const log = el("pre", { class: "dw-job-log", style: "max-height:18em;overflow:auto;background:#f7fafc;border:1px solid #e2e8f0;padding:4px;margin:4px 0;white-space:pre-wrap" });
  const head = el("div", { style: "display:flex;gap:8px;align-items:center;flex-wrap:wrap" }, badge, title, id, time, stop);
  root.append(el("div", { class: "dw-job-view" }, head, message, error, failure, log));

  function showTime() {
    const start = model.get("start_time");
    const end = model.get("end_time");
    time.textContent = start ? duration((end || Date.now()) - start) : "";
  }
  function show() {
    const status = model.get("status");
    badge.textContent = status;
    badge.dataset.status = status;
    badge.style.background = colorOf("job", status);
    // As the user wrote it; the shell command Ray runs (with its quoting) on hover.
    title.textContent = model.get("command") || model.get("entrypoint");
    title.title = model.get("entrypoint");
    id.textContent = `${model.get("submission_id")} on ${model.get("cluster")}`;
    stop.style.display = TERMINAL.has(status) ? "none" : "";
    message.textContent = model.get("message") || "";
    failure.textContent = model.get("failure") || "";
    const err = model.get("error");
    error.textContent = err ? [err.error, err.reason, err.hint].filter(Boolean).join(": ") : "";
    showTime();
  }
  function showLog() {
    const atEnd = log.scrollHeight - log.scrollTop - log.clientHeight < 8;
    const cut = model.get("log_truncated") ? "… (the start is cut: job.logs() has all of it)\n" : "";
    log.textContent = cut + model.get("log");
    if (atEnd) log.scrollTop = log.scrollHeight;
  }
  show();
  showLog();
  const timer = setInterval(showTime, 1000);
  const traits = ["status", "message", "start_time", "end_time", "failure", "error", "entrypoint", "command"];
  for (const trait of traits) model.on(`change:${trait}`, show);
  model.on("change:log", showLog);
  model.on("change:log_truncated", showLog);
  return () => {
    clearInterval(timer);
    for (const trait of traits) model.off(`change:${trait}`, show);
    model.off("change:log", showLog);
    model.off("change:log_truncated", showLog);
  };
}

export default { render };

// ClusterStatus view (anywidget ESM): state badge, Kueue's reason (in one line, the whole
// message on expand) and position, workers bar, the timeline as one bar of spans, the dashboard link and Delete with a confirmation step. An elastic
// cluster's bar shows ready / admitted / waiting for quota / being removed, with a scale
// stepper (a dry run in the kernel first, the change on confirm).
// widgets.py puts workers_bar.js before this file: workersBar, barWidths, stepperStart,
// canScale, proposalText, appliedText and workersText come from there; usageRows, idleText,
// ruleText and rayText from usage_bar.js (the usage's words, one source with the sidebar),
// timelineBar from timeline_bar.js and durationText from clock.js.
// Colours are tones.js's, one table with the sidebar (widgets.py puts it first).
// The bar's segments in the state colours: ready, admitted (starting), waiting for quota
// (queued), being removed (deleting).
const SEGMENTS = [
  ["ready", colorOf("state", "ready"), "ready"], ["starting", colorOf("state", "starting"), "admitted, starting"],
  ["waiting", colorOf("state", "queued"), "waiting for quota"], ["removing", colorOf("state", "deleting"), "being removed"],
];
const DRY_RUN_DELAY = 250; // ms, as the sidebar's stepper
const SCALE_TRAITS = ["workers_admitted", "min_workers", "max_workers", "elastic", "pinned_workers", "scale", "cluster_queue"];

// The Jupyter server's base URL as the page knows it (JupyterLab and Notebook 7 write it in
// their page config); null where there is none (VS Code renders widgets without a server).
function pageBaseUrl() {
  const config = document.getElementById("jupyter-config-data");
  if (!config) return null;
  try {
    return JSON.parse(config.textContent).baseUrl || null;
  } catch {
    return null;
  }
}

async function serverExtension(base) {
  try {
    const response = await fetch(`${base}dw/api/version`, { credentials: "same-origin" });
    return response.ok;
  } catch {
    return false;
  }
}

function render({ model, el: root }) {
  const box = el("div", { class: "jp-dw-status", style: "font-family:var(--jp-ui-font-family,sans-serif);font-size:13px;color:var(--jp-ui-font-color1,inherit);line-height:1.5" });
  root.append(box);
  let confirming = false;
  let proxied = null;
  // The stepper: its number, what it is doing, and the id of the kernel request it waits for
  // (an answer to an older request is dropped).
  let target = null;
  let step = { kind: "idle" };
  let requestId = 0;
  let timer = null; // a chosen number's dry run, not sent yet
  let unanswered = 0; // requests sent, answers not received (the kernel answers in order)
  const base = pageBaseUrl();
  if (base) serverExtension(base).then((ok) => { proxied = ok; draw(); });

  function fields() {
    const out = { state: model.get("state"), workers_ready: model.get("workers_ready"), workers_desired: model.get("workers_desired") };
    for (const trait of SCALE_TRAITS) out[trait] = model.get(trait) ?? null;
    return out;
  }

  function elasticWorkers() {
    const c = fields();
    const bar = workersBar(c);
    const widths = barWidths(bar);
    const track = el("div", { class: "jp-dw-bar", role: "progressbar", "aria-label": "workers", "aria-valuemin": "0", "aria-valuemax": String(Math.max(1, bar.total)), "aria-valuenow": String(bar.segments.ready), "aria-valuetext": bar.summary, style: "display:inline-flex;width:160px;height:10px;border-radius:5px;overflow:hidden;background:#e2e8f0;vertical-align:middle" });
    for (const [kind, color, title] of SEGMENTS) {
      const count = bar.segments[kind];
      if (count > 0) track.append(el("span", { "data-segment": kind, "data-count": String(count), title: `${count} ${title}`, style: `width:${widths[kind]}%;background:${color}${kind === "waiting" ? ";background-image:repeating-linear-gradient(45deg,transparent 0 3px,rgba(255,255,255,.45) 3px 6px)" : ""}` }));
    }
    const box = el("div", { class: "jp-dw-workers", "data-elastic": "true", "data-scale": c.scale ? c.scale.state : "none" },
      el("div", {}, track, " ", el("span", { class: "jp-dw-workers-summary", "data-workers-ready": String(c.workers_ready) }, bar.summary)));
    if (bar.request) {
      const request = el("div", { class: "jp-dw-scale-request", "data-requested-by": c.scale.requested_by }, bar.request);
      if (bar.position) request.append(", ", el("span", { class: "jp-dw-scale-position", "data-position": String(c.scale.position_in_local_queue) }, bar.position));
      box.append(request);
    }
    if (bar.pending) box.append(el("div", { class: "jp-dw-scale-pending", style: "color:#975a16" }, bar.pending));
    box.append(el("div", { class: "jp-dw-scale-owner", style: "opacity:.7" }, bar.owner));
    return box;
  }

  function ask(workers, dryRun) {
    clearTimeout(timer);
    timer = null;
    requestId += 1;
    unanswered += 1;
    step = { kind: dryRun ? "checking" : "applying", workers };
    // Cleared first, so that an answer equal to the last one still arrives as a change.
    model.set("scale_result", null);
    model.save_changes();
    model.send({ action: "scale", workers, dry_run: dryRun, request: requestId });
    draw();
  }

  // A step shows "checking" at once; its dry run goes to the kernel once the clicks pause.
  function choose(workers) {
    const start = stepperStart(fields());
    target = Math.min(start.max, Math.max(start.min, workers));
    clearTimeout(timer);
    timer = null;
    requestId += 1; // an answer on its way is no longer wanted
    if (target === start.value) {
      step = { kind: "idle" };
    } else {
      step = { kind: "checking", workers: target };
      const chosen = target;
      timer = setTimeout(() => ask(chosen, true), DRY_RUN_DELAY);
    }
    draw();
  }

  // The kernel's answer: REST's ScaleResult (the cluster itself arrives through the traits),
  // or {"error": {error, reason, hint, code, errors}}. `request` echoes the request's id
  // when the kernel sends it; an answer to an older request is dropped.
  function onResult() {
    const result = model.get("scale_result");
    if (!result) return; // our own reset
    unanswered = Math.max(0, unanswered - 1);
    if (unanswered > 0 || timer !== null) return; // an older request's answer
    if (step.kind !== "checking" && step.kind !== "applying") return; // cancelled meanwhile
    if (result.request !== undefined && result.request !== requestId) return;
    if (result.error) {
      const error = typeof result.error === "object" ? result.error : result;
      const detail = (error.errors && error.errors.workers) || error.reason;
      step = { kind: "error", workers: step.workers, code: error.code || "", message: `${error.error}${detail ? ": " + detail : ""}` };
    } else {
      const answer = { fit: result.fit, cluster: result.cluster || fields() };
      const text = result.dry_run ? proposalText(answer, step.workers) : appliedText(answer, step.workers);
      step = { kind: result.dry_run ? "proposed" : "applied", workers: step.workers, text, verdict: result.fit ? result.fit.verdict : null };
    }
    draw();
  }

  function button(label, attrs, onclick, disabled) {
    const node = el("button", { class: "jp-Button", ...attrs, onclick }, label);
    node.disabled = !!disabled;
    return node;
  }

  function stepperView() {
    const c = fields();
    const start = stepperStart(c);
    // The cluster's size, unless the user's choice is checked, proposed, being made or refused.
    if (target === null || step.kind === "idle" || step.kind === "applied") target = start.value;
    const busy = step.kind === "applying";
    const row = el("div", { class: "jp-dw-scale", role: "group", "aria-label": `Scale ${model.get("name")}`, "data-step": step.kind, style: "display:flex;gap:6px;align-items:center;margin:2px 0" },
      "scale",
      button("−", { "aria-label": "One worker fewer", class: "jp-Button jp-dw-step" }, () => choose(target - 1), busy || target <= start.min),
      el("output", { class: "jp-dw-scale-target", "data-target": String(target), "aria-live": "polite", style: "min-width:2ch;text-align:center;font-weight:600" }, String(target)),
      button("+", { "aria-label": "One worker more", class: "jp-Button jp-dw-step" }, () => choose(target + 1), busy || target >= start.max),
      el("span", { style: "opacity:.7", title: `from ${start.min} to ${start.max}` }, "workers"));
    if (c.pinned_workers !== null) {
      row.append(button("Auto", { "aria-label": "Give the size back to the Ray autoscaler", title: `The Ray autoscaler sizes it within ${start.min}–${start.max}` }, () => ask(null, false), busy));
    }
    const out = [row];
    const note = { "data-step": step.kind, class: "jp-dw-scale-proposal" };
    if (step.kind === "checking") out.push(el("div", { ...note, style: "opacity:.7" }, `${workersText(step.workers)}: checking…`));
    else if (step.kind === "applying") out.push(el("div", { ...note, style: "opacity:.7" }, step.workers === null ? "Giving the size back to the Ray autoscaler…" : `Scaling to ${workersText(step.workers)}…`));
    else if (step.kind === "proposed") {
      const badge = step.verdict ? el("span", { "data-verdict": step.verdict, style: `background:${colorOf("verdict", step.verdict)};color:#fff;border-radius:9px;padding:1px 8px;font-size:12px;font-weight:600;margin-right:4px` }, step.verdict) : "";
      out.push(el("div", { ...note, "data-workers": String(step.workers) }, badge, el("span", { class: "jp-dw-scale-fit" }, step.text), " ",
        button(`Scale to ${step.workers}`, { class: "jp-Button jp-mod-accept jp-dw-scale-confirm" }, () => ask(step.workers, false)),
        " ", button("Cancel", { class: "jp-Button jp-dw-scale-cancel" }, () => { clearTimeout(timer); timer = null; requestId += 1; step = { kind: "idle" }; target = null; draw(); })));
    } else if (step.kind === "applied") {
      out.push(el("div", { ...note, role: "status", style: `color:${colorOf("state", "ready")}` }, step.text));
    } else if (step.kind === "error") {
      out.push(el("div", { ...note, role: "alert", "data-code": step.code, style: "color:#c53030" }, step.message));
    }
    return out;
  }

  // The cluster's life as one bar (the server's spans; timeline_bar.js's widths and words, as
  // in the sidebar), what ended it, and every milestone in words with its time on expand.
  function timelineView() {
    const bar = timelineBar(model.get("timeline"));
    const view = el("div", { class: "jp-dw-timeline-view", style: "margin:4px 0" });
    const row = el("div", { class: "jp-dw-timeline-bar", role: "list", "aria-label": "timeline", style: "display:flex;gap:1px;max-width:520px;height:20px;border-radius:4px;overflow:hidden;font-size:11px;line-height:20px" });
    for (const s of bar.segments) {
      row.append(el("div", { role: "listitem", class: `jp-dw-span${s.current ? " jp-dw-span-current" : ""}`, "data-step": s.step, "data-seconds": s.seconds === null ? "" : String(Math.round(s.seconds)), "data-current": String(s.current), title: s.label, "aria-label": s.label,
        style: `flex:${s.width} 1 0;min-width:0;background:${s.color};color:#fff;padding:0 4px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis${s.current ? ";animation:jp-dw-pulse 1.6s ease-in-out infinite" : ""}` }, s.label));
    }
    view.append(el("style", {}, "@keyframes jp-dw-pulse{50%{opacity:.65}}@media (prefers-reduced-motion:reduce){.jp-dw-span-current{animation:none!important}}"), row);
    if (bar.ending) view.append(el("div", { class: "jp-dw-timeline-ending", style: "opacity:.8" }, bar.ending));
    const list = el("ol", { class: "jp-dw-timeline", style: "margin:4px 0;padding-left:2.2em" });
    let previous = null;
    for (const milestone of model.get("milestones") || []) {
      const at = milestone.time ? new Date(milestone.time) : null;
      const step = at && previous ? ` (+${durationText((at - previous) / 1000)})` : "";
      const words = milestone.words || milestone.name;
      list.append(el("li", { "data-milestone": milestone.name }, words.charAt(0).toUpperCase() + words.slice(1), el("span", { style: "opacity:.7" }, ` ${at ? clockTime(at) : "—"}${step}`)));
      if (at) previous = at;
    }
    view.append(el("details", { class: "jp-dw-milestones" }, el("summary", {}, `${(model.get("milestones") || []).length} milestones`), list));
    return view;
  }

  function draw() {
    const state = model.get("state");
    const name = model.get("name");
    box.replaceChildren();
    const error = model.get("error");
    if (error && error.error) {
      box.append(el("div", { role: "alert", style: "color:#c53030" },
        `${error.error}${error.reason ? ": " + error.reason : ""}`),
        el("div", { style: "opacity:.8" }, error.hint || ""));
    }
    const freshness = model.get("freshness") || {};
    if (freshness.state && freshness.state !== "live") {
      // The state below is the last one known: say so, never show it as current.
      const since = freshness.since ? ` since ${clockTime(freshness.since)}` : "";
      box.append(el("div", { class: "jp-dw-freshness", role: "status", "data-freshness": freshness.state, style: "background:#fefcbf;color:#744210;border-radius:4px;padding:2px 6px" },
        `${freshness.state === "reconnecting" ? "Reconnecting…" : "Stale"}${since}: ${freshness.reason || ""} — last known state shown`));
    }
    const auth = model.get("ray_auth") || {};
    if (auth.warning) {
      // An open cluster (Ray authentication disabled or unavailable): say it every time.
      box.append(el("div", { class: "jp-dw-auth-warning", role: "alert", "data-ray-auth": auth.mode || "", style: "background:#fed7d7;color:#742a2a;border-radius:4px;padding:2px 6px" },
        `\u26a0 ${auth.warning}`));
    }
    const badge = el("span", { class: "jp-dw-state", "data-state": state || "", style: `background:${colorOf("state", state)};color:#fff;border-radius:9px;padding:1px 8px;font-size:12px;font-weight:600` }, state || "…");
    box.append(el("div", {}, el("b", {}, name), " ", badge,
      el("span", { style: "opacity:.7" }, ` queue ${model.get("queue") || "?"}`)));
    const placement = model.get("placement");
    // Sent by MultiKueue: the worker cluster it runs on (its pods are there), or those offered.
    if (placement) {
      box.append(el("div", { class: "jp-dw-placement", "data-worker": placement.worker_cluster || "" }, `\u21d2 ${placement.sentence}`));
    }
    const reason = model.get("reason"), message = model.get("message"), summary = model.get("summary");
    // Kueue's message in one line (the server's summary), the whole of it on expand.
    const said = summary ? [summary, el("details", { class: "jp-dw-message" }, el("summary", {}, "Kueue's message"), message)]
      : [message || ""];
    if (state === "queued") {
      const position = model.get("position_in_local_queue");
      const where = position === null || position === undefined ? "" : `position ${position + 1} in the queue · `;
      box.append(el("div", { class: "jp-dw-reason" }, `${where}${reason || ""}${summary || message ? ": " : ""}`, ...said));
    } else if (reason || message) {
      box.append(el("div", { class: "jp-dw-reason" }, `${reason || ""} `, ...said));
    }
    const stopped = model.get("stopped");
    if (state === "stopped" && stopped) {
      // Who stopped it and why: a person, or a rule with its figures.
      box.append(el("div", { class: "jp-dw-stopped" }, stoppedWords(stopped)));
    }
    const preemptor = model.get("preempted_by");
    if (preemptor) {
      // A Ray cluster of this namespace by name; any other workload by its UIDs.
      const who = preemptor.name ? `Ray cluster ${preemptor.name}`
        : `workload ${preemptor.workload_uid || "unknown"}${preemptor.job_uid ? ` (job ${preemptor.job_uid})` : ""}`;
      box.append(el("div", { class: "jp-dw-preempted-by" }, el("b", {}, "preempted by"), ` ${who}`));
    }
    const checks = model.get("admission_checks") || [];
    if (checks.length) {
      // Each admission check (e.g. the ProvisioningRequest asking the autoscaler for nodes).
      const items = checks.map((c) => el("li", { "data-check": c.name, "data-check-state": c.state },
        "admission check ", el("b", {}, c.name), `: ${c.state}${c.message ? " — " + c.message : ""}`));
      box.append(el("ul", { class: "jp-dw-checks", style: "margin:2px 0;padding-left:20px" }, ...items));
    }
    if (model.get("elastic") === true) {
      box.append(elasticWorkers());
      if (canScale(fields()) && !model.get("deleted")) box.append(...stepperView());
    } else {
      const ready = model.get("workers_ready"), desired = model.get("workers_desired");
      const progress = el("progress", { max: String(Math.max(desired, 1)), value: String(ready), "aria-label": "workers ready", style: "width:160px" });
      // On a MultiKueue worker: KubeRay's counts there, copied back (no pod of it is here).
      const on = placement && placement.worker_cluster ? ` on worker cluster ${placement.worker_cluster}` : "";
      box.append(el("div", {}, progress, ` ${ready}/${desired} workers ready${on}`));
    }
    const usage = usageView(model.get("usage"));
    if (usage) box.append(usage);
    box.append(timelineView());
    const actions = el("div", { style: "display:flex;gap:8px;align-items:center" });
    // dashboard_url is null once the kernel knows the cluster and the proxy is turned off.
    const proxyOff = state && model.get("dashboard_url") === null;
    // The head Service and port as the kernel read them (before that: no names to give).
    const head = model.get("dashboard");
    const forward = head ? `kubectl port-forward svc/${head.service} ${head.port}` : "kubectl port-forward to its head Service";
    const elsewhere = model.get("dashboard_note");
    if (elsewhere) {
      // Runs on a worker cluster whose dashboards are not reachable from here: no link.
      actions.append(el("span", { class: "jp-dw-dashboard-elsewhere", style: "opacity:.7" }, `Dashboard: ${elsewhere}`));
    } else if (proxyOff) {
      actions.append(el("span", { class: "jp-dw-dashboard-off", style: "opacity:.7" }, `Dashboard: the proxy is turned off on this server (JupyterDW.ray_dashboard_proxy); use ${forward}`));
    } else if (base && proxied) {
      actions.append(el("a", { href: `${base}dw/ray/${encodeURIComponent(name)}/`, target: "_blank", rel: "noopener", class: "jp-dw-dashboard" }, "Ray dashboard"));
    } else if (proxied === false || !base) {
      actions.append(el("span", { style: "opacity:.7" }, `Dashboard: the jupyter_dw server extension is not reachable here; use ${forward}`));
    }
    if (state === "stopped" && !model.get("deleted")) {
      actions.append(el("button", { class: "jp-Button jp-mod-accept jp-dw-resume", title: "Queue it again, at the size it had", onclick: () => model.send({ action: "resume" }) }, "Resume"));
    } else if (model.get("admitted") === true && state !== "deleting" && !model.get("deleted")) {
      actions.append(el("button", { class: "jp-Button jp-dw-stop", title: "Free its quota and remove its pods; the cluster and its spec are kept", onclick: () => model.send({ action: "stop" }) }, "Stop"));
    }
    if (state && state !== "deleting" && !model.get("deleted")) {
      if (!confirming) {
        actions.append(el("button", { class: "jp-Button jp-dw-delete", onclick: () => { confirming = true; draw(); } }, "Delete"));
      } else {
        actions.append(el("span", {}, `Delete ${name}?`),
          el("button", { class: "jp-Button jp-mod-warn jp-dw-confirm", onclick: () => { confirming = false; model.send({ action: "delete" }); draw(); } }, "Yes, delete"),
          el("button", { class: "jp-Button jp-dw-cancel", onclick: () => { confirming = false; draw(); } }, "Cancel"));
      }
    }
    box.append(actions);
  }
  for (const trait of ["state", "reason", "message", "summary", "position_in_local_queue", "admitted", "stopped", "preempted_by", "admission_checks", "workers_ready", "workers_desired", "milestones", "timeline", "error", "deleted", "queue", "freshness", "ray_auth", "usage", "placement", "dashboard_note", ...SCALE_TRAITS]) {
    model.on(`change:${trait}`, draw);
  }
  model.on("change:scale_result", onResult);
  // The idle minutes count up between samples (a local timer; nothing is asked).
  const minute = setInterval(() => { if ((model.get("usage") || {}).idle === true) draw(); }, 60000);
  // The span under way counts up between messages: its bar alone is drawn again each second.
  const second = setInterval(() => {
    const current = box.querySelector(".jp-dw-timeline-view");
    if (current && ((model.get("timeline") || {}).spans || []).some((s) => s.current)) current.replaceWith(timelineView());
  }, 1000);
  draw();
  return () => { clearInterval(minute); clearInterval(second); };
}

/** The usage rows, the idle line and Ray's load (usage_bar.js's words, as in the sidebar). */
function usageView(usage) {
  if (!usage) return null;
  const box = el("div", { class: "jp-dw-usage", style: "margin:4px 0" });
  const rows = usageRows(usage);
  // Nothing held here, and the server says why (a cluster on a MultiKueue worker).
  if (!rows.length && usage.reason) box.append(el("div", { class: "jp-dw-usage-unknown", style: "opacity:.7" }, `use unknown: ${usage.reason}`));
  for (const row of rows) {
    const line = el("div", { class: "jp-dw-usage-row", "data-resource": row.resource, "data-held": row.held, "data-used": row.used ?? "" });
    if (row.share !== null) {
      const fill = el("span", { style: `display:block;height:100%;width:${row.share * 100}%;background:${colorOf("state", "admitted")}` });
      line.append(el("div", { class: "jp-dw-bar", role: "meter", "aria-label": `${row.label} used of held`, "aria-valuemin": "0", "aria-valuemax": "1", "aria-valuenow": String(row.share), "aria-valuetext": row.text, style: "display:inline-block;width:160px;height:8px;border-radius:4px;overflow:hidden;background:#e2e8f0;vertical-align:middle;margin-right:6px" }, fill));
    }
    line.append(el("span", { class: "jp-dw-usage-text" }, row.text));
    if (row.unknown) line.append(el("span", { class: "jp-dw-usage-unknown", style: "opacity:.7" }, ` — use unknown: ${row.unknown}`));
    box.append(line);
  }
  const idle = idleText(usage);
  if (idle) box.append(el("div", { class: "jp-dw-idle", "data-idle-basis": usage.idle_basis || "", style: `color:${colorOf("state", "queued")}` }, idle));
  const rule = ruleText(usage);
  if (rule) {
    const warned = Boolean(usage.idle_action && usage.idle_action.warning);
    const attrs = warned
      ? { class: "jp-dw-idle-rule", role: "alert", style: `font-weight:600;color:${colorOf("state", "preempted")}` }
      : { class: "jp-dw-idle-rule", style: "opacity:.8" };
    box.append(el("div", attrs, rule));
  }
  const ray = rayText(usage);
  if (ray) box.append(el("div", { class: "jp-dw-ray-load", style: "opacity:.7" }, ray));
  return box.childNodes.length ? box : null;
}

/** "stopped by <who> at <time>", and the rule with its figures when a rule decided. */
function stoppedWords(stopped) {
  const reason = stopped.reason || {};
  const at = stopped.at ? ` at ${new Date(stopped.at).toLocaleString()}` : "";
  if (reason.by && reason.by !== "person") {
    const figures = Object.entries(reason).filter(([key]) => key !== "by").map(([key, value]) => `${key} ${value}`).join(", ");
    return `stopped by the ${reason.by}${figures ? ` (${figures})` : ""}${at}`;
  }
  return `stopped by ${stopped.by || "someone"}${at}`;
}

export default { render };

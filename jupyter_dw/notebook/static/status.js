// ClusterStatus view (anywidget ESM): state badge, Kueue's reason and position, workers bar,
// timeline with durations, the dashboard link and Delete with a confirmation step.
const COLORS = {
  queued: "#b7791f", "waiting-for-capacity": "#b7791f", admitted: "#2b6cb0", starting: "#2b6cb0", stalled: "#c05621", ready: "#2f855a",
  evicted: "#c53030", preempted: "#c53030", failed: "#c53030", rejected: "#c53030", suspended: "#718096",
  deleting: "#718096",
};

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "style") node.style.cssText = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children) node.append(child);
  return node;
}

function duration(seconds) {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
}

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
  const base = pageBaseUrl();
  if (base) serverExtension(base).then((ok) => { proxied = ok; draw(); });

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
      const since = freshness.since ? ` since ${new Date(freshness.since).toLocaleTimeString()}` : "";
      box.append(el("div", { class: "jp-dw-freshness", role: "status", "data-freshness": freshness.state, style: "background:#fefcbf;color:#744210;border-radius:4px;padding:2px 6px" },
        `${freshness.state === "reconnecting" ? "Reconnecting…" : "Stale"}${since}: ${freshness.reason || ""} — last known state shown`));
    }
    const auth = model.get("ray_auth") || {};
    if (auth.warning) {
      // An open cluster (Ray authentication disabled or unavailable): say it every time.
      box.append(el("div", { class: "jp-dw-auth-warning", role: "alert", "data-ray-auth": auth.mode || "", style: "background:#fed7d7;color:#742a2a;border-radius:4px;padding:2px 6px" },
        `\u26a0 ${auth.warning}`));
    }
    const badge = el("span", { class: "jp-dw-state", "data-state": state || "", style: `background:${COLORS[state] || "#718096"};color:#fff;border-radius:9px;padding:1px 8px;font-size:12px;font-weight:600` }, state || "…");
    box.append(el("div", {}, el("b", {}, name), " ", badge,
      el("span", { style: "opacity:.7" }, ` queue ${model.get("queue") || "?"}`)));
    const reason = model.get("reason"), message = model.get("message");
    if (state === "queued") {
      const position = model.get("position_in_local_queue");
      const where = position === null || position === undefined ? "" : `position ${position + 1} in the queue · `;
      box.append(el("div", { class: "jp-dw-reason" }, `${where}${reason || ""}${message ? ": " + message : ""}`));
    } else if (reason || message) {
      box.append(el("div", { class: "jp-dw-reason" }, `${reason || ""} ${message || ""}`));
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
    const ready = model.get("workers_ready"), desired = model.get("workers_desired");
    const progress = el("progress", { max: String(Math.max(desired, 1)), value: String(ready), "aria-label": "workers ready", style: "width:160px" });
    box.append(el("div", {}, progress, ` ${ready}/${desired} workers ready`));
    const list = el("ol", { class: "jp-dw-timeline", style: "margin:4px 0;padding-left:20px" });
    let previous = null;
    for (const milestone of model.get("milestones") || []) {
      const at = milestone.time ? new Date(milestone.time) : null;
      const step = at && previous ? ` (+${duration((at - previous) / 1000)})` : "";
      list.append(el("li", {}, milestone.name, el("span", { style: "opacity:.7" }, ` ${at ? at.toLocaleTimeString() : "—"}${step}`)));
      if (at) previous = at;
    }
    box.append(list);
    const actions = el("div", { style: "display:flex;gap:8px;align-items:center" });
    // dashboard_url is null once the kernel knows the cluster and the proxy is turned off.
    const proxyOff = state && model.get("dashboard_url") === null;
    if (proxyOff) {
      actions.append(el("span", { class: "jp-dw-dashboard-off", style: "opacity:.7" }, `Dashboard: the proxy is turned off on this server (JupyterDW.ray_dashboard_proxy); use kubectl port-forward svc/${name}-head-svc 8265`));
    } else if (base && proxied) {
      actions.append(el("a", { href: `${base}dw/ray/${encodeURIComponent(name)}/`, target: "_blank", rel: "noopener", class: "jp-dw-dashboard" }, "Ray dashboard"));
    } else if (proxied === false || !base) {
      actions.append(el("span", { style: "opacity:.7" }, `Dashboard: the jupyter_dw server extension is not reachable here; use kubectl port-forward svc/${name}-head-svc 8265`));
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
  for (const trait of ["state", "reason", "message", "position_in_local_queue", "preempted_by", "admission_checks", "workers_ready", "workers_desired", "milestones", "error", "deleted", "queue", "freshness", "ray_auth"]) {
    model.on(`change:${trait}`, draw);
  }
  draw();
}

export default { render };

// QueueBoard view (anywidget ESM): every LocalQueue with a headroom bar per resource and the
// Workloads in it (any kind of job), each with its state, position while waiting and Kueue's words;
// a long queue's first rows and yours until "Show all".
// parseQuantity is resources.js's (widgets.py puts it first), holdingText usage_bar.js's:
// one source with the sidebar.
function amount(text) {
  const n = parseQuantity(text);
  return Number.isNaN(n) ? null : n;
}

// The owner as kubectl names a kind (`Job`, `RayCluster`), or the Workload when it has none.
function ownerText(w) {
  return w.owner ? `${w.owner.kind} ${w.owner.name}` : `Workload ${w.name}`;
}

function workloadRow(w) {
  const row = document.createElement("div");
  row.className = "jp-dw-workload";
  row.dataset.workload = w.name;
  row.dataset.state = w.state;
  row.style.cssText = "padding-left:12px";
  const who = document.createElement("span");
  who.textContent = ownerText(w);
  const state = document.createElement("span");
  state.className = "jp-dw-workload-state";
  state.textContent = w.state;
  state.style.cssText = `border-radius:9px;padding:0 6px;margin:0 6px;font-size:12px;color:#fff;background:${colorOf("state", w.state)}`;
  row.append(who, state);
  const words = [];
  if (w.position_in_local_queue !== null && w.position_in_local_queue !== undefined) {
    const position = document.createElement("span");
    position.className = "jp-dw-workload-position";
    position.dataset.position = w.position_in_local_queue;
    position.textContent = `position ${w.position_in_local_queue + 1}`;
    row.append(position);
  }
  if (["queued", "evicted", "preempted", "rejected", "suspended"].includes(w.state)) {
    words.push([w.reason, w.message].filter(Boolean).join(": "));
  }
  const held = Object.entries(w.resources || {}).map(
    ([flavor, amounts]) => Object.entries(amounts).map(([r, q]) => `${q} ${r}`).join(", ") + ` (${flavor})`
  );
  if (held.length) words.push(`holds ${held.join("; ")}`);
  const rest = words.filter(Boolean).join(" · ");
  if (rest) {
    const detail = document.createElement("span");
    detail.style.opacity = ".75";
    detail.textContent = ` ${rest}`;
    row.append(detail);
  }
  return row;
}

// The kernel sends a long queue's first rows and yours; "Show all" asks it for every row.
function expanderOf(model) {
  return function expander(queue, shown) {
    const total = (model.get("workload_counts") || {})[queue] ?? shown;
    const expanded = (model.get("expanded") || []).includes(queue);
    if (!expanded && total <= shown) return [];
    const button = document.createElement("button");
    button.className = "jp-dw-workloads-more";
    button.dataset.queue = queue;
    button.style.cssText = "margin-left:12px;font-size:12px";
    button.textContent = expanded ? "Show fewer" : `Show all ${total} (${total - shown} more)`;
    button.addEventListener("click", () => {
      const others = (model.get("expanded") || []).filter((q) => q !== queue);
      model.set("expanded", expanded ? others : [...others, queue]);
      model.save_changes();
    });
    return [button];
  };
}

function render({ model, el: root }) {
  const expander = expanderOf(model);
  const box = document.createElement("div");
  box.className = "jp-dw-queues";
  box.style.cssText = "font-family:var(--jp-ui-font-family,sans-serif);font-size:13px;color:var(--jp-ui-font-color1,inherit)";
  root.append(box);
  function draw() {
    box.replaceChildren();
    const error = model.get("error");
    if (error && error.error) {
      const alert = document.createElement("div");
      alert.setAttribute("role", "alert");
      alert.style.color = "#c53030";
      alert.textContent = `${error.error}${error.reason ? ": " + error.reason : ""} ${error.hint || ""}`;
      box.append(alert);
    }
    const freshness = model.get("freshness") || {};
    if (freshness.state && freshness.state !== "live") {
      // The queues below are the last ones known: say so, never show them as current.
      const banner = document.createElement("div");
      banner.className = "jp-dw-freshness";
      banner.setAttribute("role", "status");
      banner.dataset.freshness = freshness.state;
      banner.style.cssText = "background:#fefcbf;color:#744210;border-radius:4px;padding:2px 6px";
      const since = freshness.since ? ` since ${clockTime(freshness.since)}` : "";
      banner.textContent = `${freshness.state === "reconnecting" ? "Reconnecting…" : "Stale"}${since}: ${freshness.reason || ""} — last known queues shown`;
      box.append(banner);
    }
    for (const queue of model.get("queues") || []) {
      const title = document.createElement("div");
      title.className = "jp-dw-queue";
      title.dataset.queue = queue.name;
      title.innerHTML = "";
      const name = document.createElement("b");
      name.textContent = queue.name + (queue.default ? " (default)" : "");
      title.append(name, ` → ${queue.cluster_queue} · ${queue.pending} pending · ${queue.admitted} admitted`);
      box.append(title);
      // What my clusters hold and use here, as the kernel's core summed it.
      const holds = holdingText(queue.name, (model.get("holdings") || {})[queue.name]);
      if (holds) {
        const line = document.createElement("div");
        line.className = "jp-dw-holding";
        line.textContent = holds;
        box.append(line);
      }
      if (!queue.quota_visible) {
        const hidden = document.createElement("div");
        hidden.style.opacity = ".7";
        hidden.textContent = `quota hidden: ${queue.hint || ""}`;
        box.append(hidden);
      }
      for (const r of queue.resources) {
        const most = amount(r.max_obtainable) ?? amount(r.nominal);
        const free = amount(r.headroom);
        const row = document.createElement("div");
        row.style.cssText = "display:flex;align-items:center;gap:8px";
        if (most === null || free === null) {
          row.textContent = `${r.resource} (${r.flavor}): ${r.used} in use`;
        } else {
          const meter = document.createElement("meter");
          meter.min = 0; meter.max = most || 1; meter.value = Math.max(0, most - free);
          meter.style.width = "160px";
          meter.setAttribute("aria-label", `${queue.name} ${r.resource} in use`);
          row.append(meter, `${r.resource} (${r.flavor}): ${r.headroom} free of ${r.max_obtainable ?? r.nominal}`);
        }
        box.append(row);
      }
      const rows = (model.get("workloads") || []).filter((w) => w.queue === queue.name);
      for (const w of rows) {
        box.append(workloadRow(w));
      }
      box.append(...expander(queue.name, rows.length));
    }
    const problem = model.get("workloads_error");
    if (problem && problem.error) {
      const alert = document.createElement("div");
      alert.className = "jp-dw-workloads-error";
      alert.textContent = `Workloads: ${problem.error}${problem.reason ? ": " + problem.reason : ""}`;
      box.append(alert);
    }
  }
  model.on("change:queues", draw);
  model.on("change:holdings", draw);
  model.on("change:error", draw);
  model.on("change:freshness", draw);
  model.on("change:workloads", draw);
  model.on("change:workload_counts", draw);
  model.on("change:workloads_error", draw);
  draw();
}

export default { render };

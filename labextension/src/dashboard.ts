/**
 * A Ray cluster's dashboard in a JupyterLab main-area tab: an IFrame on the server's proxy
 * (`dashboard_url`), one tab per cluster, and a link beside it to the same page in a plain
 * browser tab.
 *
 * The isolation is the proxy's: every answer under `dw/ray/` carries `Content-Security-Policy:
 * sandbox` without `allow-same-origin`, so the page has an opaque origin whether it is framed
 * or a tab of its own (docs/explanation/security.md). The iframe's own sandbox repeats that
 * policy: never `allow-same-origin`, `allow-top-navigation*` or `allow-popups-to-escape-sandbox`.
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import { IFrame, MainAreaWidget } from '@jupyterlab/apputils';
import { Widget } from '@lumino/widgets';

import type { Cluster } from './api';
import { dwIcon } from './components/sidebar';
import { dwTrans } from './i18n';

/** `allow-same-origin` is never granted: the proxied dashboard must not act as the user. */
export const DASHBOARD_SANDBOX: IFrame.SandboxExceptions[] = [
  'allow-scripts',
  'allow-forms',
  'allow-popups'
];

/** The main-area id of cluster `name`'s dashboard tab. */
export function dashboardTabId(name: string): string {
  return `jp-dw-dashboard-${name}`;
}

/**
 * A link that opens `url` in a new browser tab, without an opener or a referrer (the proxy
 * sandboxes the page there too).
 */
function browserTabLink(url: string, name: string): Widget {
  const trans = dwTrans();
  const link = document.createElement('a');
  link.href = url;
  link.target = '_blank';
  link.rel = 'noopener noreferrer';
  link.className = 'jp-dw-browser-tab-link';
  link.textContent = trans.__('Open in a browser tab ↗');
  link.title = trans.__('The Ray dashboard of %1 in a browser tab of its own', name);
  const widget = new Widget({ node: document.createElement('div') });
  widget.addClass('jp-dw-dashboard-toolbar-item');
  widget.node.appendChild(link);
  return widget;
}

/**
 * Show cluster `cluster`'s dashboard in a main-area tab (the one already open, if any);
 * `cluster.dashboard_url` must be set.
 */
export function openDashboardTab(
  app: JupyterFrontEnd,
  cluster: Cluster & { dashboard_url: string }
): void {
  const trans = dwTrans();
  const id = dashboardTabId(cluster.name);
  for (const widget of app.shell.widgets('main')) {
    if (widget.id === id) {
      app.shell.activateById(id);
      return;
    }
  }
  const frame = new IFrame({ sandbox: DASHBOARD_SANDBOX, referrerPolicy: 'no-referrer' });
  frame.url = cluster.dashboard_url;
  frame.addClass('jp-dw-dashboard');
  // The frame's accessible name (screen readers announce it).
  frame.node
    .querySelector('iframe')
    ?.setAttribute('title', trans.__('Ray dashboard of %1', cluster.name));
  const widget = new MainAreaWidget({ content: frame });
  widget.id = id;
  widget.title.label = trans.__('Ray: %1', cluster.name);
  widget.title.caption = trans.__('Ray dashboard of %1', cluster.name);
  widget.title.icon = dwIcon;
  widget.title.closable = true;
  widget.toolbar.addItem('browser-tab', browserTabLink(cluster.dashboard_url, cluster.name));
  app.shell.add(widget, 'main');
  app.shell.activateById(id);
}

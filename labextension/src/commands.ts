/**
 * The panel's JupyterLab commands: open it, a new cluster or RayJob (the form, focused), a
 * cluster's dashboard (in a main-area tab or a browser tab) and its connect code into the
 * active notebook; in the command palette (when there is one), the panel's toolbar and a
 * cluster card's context menu. The keyboard shortcut is declared in `schema/plugin.json`, so
 * JupyterLab's shortcut editor can change it.
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import { ICommandPalette, InputDialog, showErrorMessage } from '@jupyterlab/apputils';
import { INotebookTracker, NotebookActions } from '@jupyterlab/notebook';
import { addIcon, launchIcon, notebookIcon, runIcon } from '@jupyterlab/ui-components';
import { ReadonlyPartialJSONObject } from '@lumino/coreutils';

import type { Cluster } from './api';
import { DWSidebar, dwIcon } from './components/sidebar';
import { openDashboardTab } from './dashboard';
import { dwTrans } from './i18n';
import { DWModel, connectionCode, dashboardOffHint } from './model';

export const CommandIDs = {
  open: 'jupyter-dw:open',
  newCluster: 'jupyter-dw:new-cluster',
  newRayJob: 'jupyter-dw:new-rayjob',
  openDashboard: 'jupyter-dw:open-dashboard',
  openDashboardInBrowser: 'jupyter-dw:open-dashboard-in-browser-tab',
  insertConnection: 'jupyter-dw:insert-connect-code'
} as const;

/** The commands of the panel's toolbar, in order. */
export const TOOLBAR_COMMANDS = [CommandIDs.newCluster, CommandIDs.newRayJob] as const;

/** The commands of a cluster card's context menu, in order. */
const CARD_COMMANDS = [
  CommandIDs.openDashboard,
  CommandIDs.openDashboardInBrowser,
  CommandIDs.insertConnection
] as const;

/** The selector of a cluster card (its `data-cluster` names it). */
const CARD_SELECTOR = '.jp-dw-card[data-cluster]';

export interface ICommandsOptions {
  app: JupyterFrontEnd;
  sidebar: DWSidebar;
  model: DWModel;
  notebooks: INotebookTracker | null;
  palette: ICommandPalette | null;
}

/** A cluster with a dashboard URL (the proxy is on). */
type WithDashboard = Cluster & { dashboard_url: string };

function hasDashboard(cluster: Cluster): cluster is WithDashboard {
  return cluster.dashboard_url !== null;
}

/**
 * Register the commands, add them to the palette, the panel's toolbar and the cards' context
 * menu, and keep their enabled state current. The plugin calls it once.
 */
export function addCommands(options: ICommandsOptions): void {
  const { app, sidebar, model, notebooks, palette } = options;
  const { commands } = app;
  const trans = dwTrans();

  const ready = (): boolean => model.handshake.kind === 'ok' && model.connection !== 'connecting';

  /**
   * The cluster a command is about: its `name` argument, else (run from a card's context menu,
   * `card` true) the card right-clicked.
   */
  const named = (args: ReadonlyPartialJSONObject): string | null => {
    if (typeof args.name === 'string' && args.name) {
      return args.name;
    }
    if (args.card !== true) {
      return null;
    }
    const card = app.contextMenuHitTest(node => node.matches(CARD_SELECTOR));
    return card?.dataset.cluster ?? null;
  };

  /** `forName` with the cluster's name when the command has one, else `generic`. */
  const labelled =
    (forName: (name: string) => string, generic: string) =>
    (args: ReadonlyPartialJSONObject): string => {
      const name = named(args);
      return name !== null ? forName(name) : generic;
    };

  /** The clusters a command without a name chooses from: those the panel shows. */
  const candidates = (dashboard: boolean): Cluster[] =>
    model.visibleClusters(sidebar.settings.clusterScope).filter(c => !dashboard || hasDashboard(c));

  const available = (args: ReadonlyPartialJSONObject, dashboard: boolean): boolean => {
    const name = named(args);
    if (name !== null) {
      const cluster = model.cluster(name);
      return cluster !== undefined && (!dashboard || hasDashboard(cluster));
    }
    return candidates(dashboard).length > 0;
  };

  /**
   * The cluster named, or the only candidate, or the one the user picks from a list; null
   * (after saying why) when there is none.
   */
  const resolve = async (args: ReadonlyPartialJSONObject, dashboard: boolean) => {
    const name = named(args);
    if (name !== null) {
      const cluster = model.cluster(name);
      if (cluster === undefined) {
        void showErrorMessage(
          trans.__('No Ray cluster %1', name),
          trans.__('There is no Ray cluster named %1 in this namespace.', name)
        );
        return null;
      }
      return cluster;
    }
    const choices = candidates(dashboard);
    if (choices.length <= 1) {
      if (choices.length === 0) {
        void showErrorMessage(
          trans.__('No Ray cluster'),
          trans.__('Create a Ray cluster first (Distributed Workloads: New Ray Cluster).')
        );
      }
      return choices[0] ?? null;
    }
    const answer = await InputDialog.getItem({
      title: trans.__('Which Ray cluster?'),
      items: choices.map(c => c.name),
      okLabel: trans.__('Choose')
    });
    return answer.button.accept && answer.value ? (model.cluster(answer.value) ?? null) : null;
  };

  /** `cluster`'s dashboard, or null after saying how to reach it when the proxy is off. */
  const dashboardOf = (cluster: Cluster | null): WithDashboard | null => {
    if (cluster === null) {
      return null;
    }
    if (!hasDashboard(cluster)) {
      void showErrorMessage(trans.__('No dashboard proxy'), dashboardOffHint(cluster));
      return null;
    }
    return cluster;
  };

  commands.addCommand(CommandIDs.open, {
    label: trans.__('Open the Distributed Workloads Panel'),
    caption: trans.__('Kueue queues, Ray clusters and jobs in the left sidebar'),
    icon: args => (args.isPalette ? undefined : dwIcon),
    execute: () => {
      app.shell.activateById(sidebar.id);
    }
  });

  commands.addCommand(CommandIDs.newCluster, {
    label: trans.__('New Ray Cluster'),
    caption: trans.__('Open the form for a new Ray cluster'),
    icon: args => (args.isPalette ? undefined : addIcon),
    isEnabled: ready,
    execute: () => {
      app.shell.activateById(sidebar.id);
      sidebar.showForm('cluster');
    }
  });

  commands.addCommand(CommandIDs.newRayJob, {
    label: trans.__('New RayJob'),
    caption: trans.__('Open the form for a new RayJob (a command run on a Ray cluster of its own)'),
    icon: args => (args.isPalette ? undefined : runIcon),
    isEnabled: () => ready() && model.rayjobsServed,
    execute: () => {
      app.shell.activateById(sidebar.id);
      sidebar.showForm('rayjob');
    }
  });

  commands.addCommand(CommandIDs.openDashboard, {
    label: labelled(
      name => trans.__('Open the Ray Dashboard of %1', name),
      trans.__('Open a Ray Dashboard')
    ),
    caption: trans.__("A Ray cluster's dashboard in a JupyterLab tab, through the server's proxy"),
    icon: args => (args.isPalette ? undefined : dwIcon),
    isEnabled: args => available(args, true),
    execute: async args => {
      const cluster = dashboardOf(await resolve(args, true));
      if (cluster !== null) {
        openDashboardTab(app, cluster);
      }
    }
  });

  commands.addCommand(CommandIDs.openDashboardInBrowser, {
    label: labelled(
      name => trans.__('Open the Ray Dashboard of %1 in a Browser Tab', name),
      trans.__('Open a Ray Dashboard in a Browser Tab')
    ),
    caption: trans.__("A Ray cluster's dashboard in a browser tab of its own"),
    icon: args => (args.isPalette ? undefined : launchIcon),
    isEnabled: args => available(args, true),
    execute: async args => {
      const cluster = dashboardOf(await resolve(args, true));
      if (cluster !== null) {
        window.open(cluster.dashboard_url, '_blank', 'noopener,noreferrer');
      }
    }
  });

  commands.addCommand(CommandIDs.insertConnection, {
    label: labelled(
      name => trans.__('Insert the Connect Code of %1', name),
      trans.__('Insert the Connect Code of a Ray Cluster')
    ),
    caption: trans.__(
      'Code that connects the active notebook to a Ray cluster (h.ray_init()), in its active cell if empty, else below it'
    ),
    icon: args => (args.isPalette ? undefined : notebookIcon),
    isEnabled: args => (notebooks?.currentWidget ?? null) !== null && available(args, false),
    execute: async args => {
      const cluster = await resolve(args, false);
      if (cluster !== null) {
        await insertConnection(app, notebooks, cluster);
      }
    }
  });

  if (palette) {
    const category = trans.__('Distributed Workloads');
    for (const command of [
      CommandIDs.open,
      CommandIDs.newCluster,
      CommandIDs.newRayJob,
      CommandIDs.openDashboard,
      CommandIDs.openDashboardInBrowser,
      CommandIDs.insertConnection
    ]) {
      palette.addItem({ command, category });
    }
  }

  CARD_COMMANDS.forEach((command, i) =>
    app.contextMenu.addItem({
      command,
      selector: CARD_SELECTOR,
      rank: 10 + i,
      args: { card: true }
    })
  );

  sidebar.toolbar = { commands, ids: TOOLBAR_COMMANDS };

  // Enabled states follow the model; tell the palette and the toolbar only when they change.
  let state = '';
  const refresh = (): void => {
    const next = [
      ready(),
      model.rayjobsServed,
      notebooks?.currentWidget ? 'nb' : '',
      model.clusters.map(c => `${c.name}${hasDashboard(c) ? '+' : ''}`).join(',')
    ].join('|');
    if (next !== state) {
      state = next;
      commands.notifyCommandChanged();
    }
  };
  model.changed.connect(refresh);
  notebooks?.currentChanged.connect(refresh);
}

/**
 * `cluster`'s connect code into the current notebook: in its active cell when that is an
 * empty code cell, else in a new cell below it.
 */
export async function insertConnection(
  app: JupyterFrontEnd,
  notebooks: INotebookTracker | null,
  cluster: Cluster
): Promise<void> {
  const trans = dwTrans();
  const panel = notebooks?.currentWidget;
  if (!panel) {
    void showErrorMessage(
      trans.__('No notebook open'),
      trans.__('Open a notebook, then insert the connection code for %1.', cluster.name)
    );
    return;
  }
  // A notebook opened a moment ago is shown before its file is loaded; a cell inserted
  // then would be replaced by the file's contents when it arrives.
  await panel.context.ready;
  const notebook = panel.content;
  const active = notebook.activeCell;
  if (!active || active.model.type !== 'code' || active.model.sharedModel.getSource().trim()) {
    NotebookActions.insertBelow(notebook);
  }
  notebook.activeCell?.model.sharedModel.setSource(connectionCode(cluster));
  app.shell.activateById(panel.id);
}

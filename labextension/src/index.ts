/**
 * The jupyter_dw JupyterLab plugin: registers the Distributed Workloads sidebar (left area),
 * its settings and its commands. Everything else lives in api.ts, model.ts and components/.
 */
import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { Dialog, IFrame, MainAreaWidget, showDialog, showErrorMessage } from '@jupyterlab/apputils';
import { INotebookTracker, NotebookActions } from '@jupyterlab/notebook';
import { ISettingRegistry } from '@jupyterlab/settingregistry';

import { Cluster, DWApi, WorkloadKind } from './api';
import { viewOf } from './components/jobkinds';
import {
  DEFAULT_SETTINGS,
  DWSidebar,
  ISidebarActions,
  ISidebarSettings,
  SIDEBAR_ID,
  dwIcon
} from './components/sidebar';
import { DWModel, connectionCode, dashboardOffHint } from './model';
import { notifyChanges } from './notifier';
import { IKindJob } from './podjobs';

const PLUGIN_ID = 'jupyter-dw:plugin';

declare const require: (id: string) => unknown;
/** The frontend's version (webpack bundles package.json's); must equal the server's. */
const FRONTEND_VERSION = (require('../package.json') as { version: string }).version;

/** `allow-same-origin` is never granted: the proxied dashboard must not act as the user. */
export const DASHBOARD_SANDBOX: IFrame.SandboxExceptions[] = [
  'allow-scripts',
  'allow-forms',
  'allow-popups'
];

function readSettings(settings: ISettingRegistry.ISettings): ISidebarSettings {
  const composite = settings.composite as Partial<ISidebarSettings>;
  return {
    defaultQueue: String(composite.defaultQueue ?? DEFAULT_SETTINGS.defaultQueue),
    confirmDelete: composite.confirmDelete ?? DEFAULT_SETTINGS.confirmDelete,
    clusterScope: composite.clusterScope === 'all' ? 'all' : 'mine'
  };
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description: 'Kueue queues, quota and Ray clusters in a sidebar.',
  autoStart: true,
  optional: [ILayoutRestorer, ISettingRegistry, INotebookTracker],
  activate: (
    app: JupyterFrontEnd,
    restorer: ILayoutRestorer | null,
    settingRegistry: ISettingRegistry | null,
    notebooks: INotebookTracker | null
  ) => {
    const model = new DWModel(new DWApi(), FRONTEND_VERSION);
    const actions: ISidebarActions = {
      openDashboard: (cluster: Cluster) => {
        if (cluster.dashboard_url === null) {
          void showErrorMessage('No dashboard proxy', dashboardOffHint(cluster));
          return;
        }
        const id = `jp-dw-dashboard-${cluster.name}`;
        for (const widget of app.shell.widgets('main')) {
          if (widget.id === id) {
            app.shell.activateById(id);
            return;
          }
        }
        const frame = new IFrame({ sandbox: DASHBOARD_SANDBOX, referrerPolicy: 'no-referrer' });
        frame.url = cluster.dashboard_url;
        frame.addClass('jp-dw-dashboard');
        const widget = new MainAreaWidget({ content: frame });
        widget.id = id;
        widget.title.label = `Ray: ${cluster.name}`;
        widget.title.caption = `Ray dashboard of ${cluster.name}`;
        widget.title.icon = dwIcon;
        widget.title.closable = true;
        app.shell.add(widget, 'main');
        app.shell.activateById(id);
      },
      insertConnection: async (cluster: Cluster) => {
        const panel = notebooks?.currentWidget;
        if (!panel) {
          void showErrorMessage(
            'No notebook open',
            `Open a notebook, then insert the connection code for ${cluster.name}.`
          );
          return;
        }
        // A notebook opened a moment ago is shown before its file is loaded; a cell inserted
        // then would be replaced by the file's contents when it arrives.
        await panel.context.ready;
        const notebook = panel.content;
        NotebookActions.insertBelow(notebook);
        const cell = notebook.activeCell;
        cell?.model.sharedModel.setSource(connectionCode(cluster));
        app.shell.activateById(panel.id);
      },
      remove: (cluster: Cluster) =>
        confirmedDelete(
          cluster.name,
          `The Ray cluster ${cluster.name}, its pods and its place in queue ${
            cluster.queue ?? ''
          } are removed. Work running on it is lost.`,
          () => model.remove(cluster.name)
        ),
      removeJob: (kind: WorkloadKind, job: IKindJob) =>
        confirmedDelete(job.name, viewOf(kind).removes(job), () =>
          model.removeJob(kind.plural, job.name)
        )
    };

    /** Delete `name` after the user confirms (when the setting asks for it). */
    async function confirmedDelete(
      name: string,
      body: string,
      remove: () => Promise<void>
    ): Promise<void> {
      if (sidebar.settings.confirmDelete) {
        const answer = await showDialog({
          title: `Delete ${name}?`,
          body,
          buttons: [Dialog.cancelButton(), Dialog.warnButton({ label: 'Delete' })]
        });
        if (!answer.button.accept) {
          return;
        }
      }
      try {
        await remove();
      } catch (error) {
        void showErrorMessage(`Could not delete ${name}`, String(error));
      }
    }

    const sidebar = new DWSidebar(model, actions);
    app.shell.add(sidebar, 'left', { rank: 850, type: 'Distributed Workloads' });
    // What the user waits for (admitted, ready, a job's end, the idle rule's warning...)
    // reaches them wherever they work, not only on the card: notifier.ts.
    notifyChanges(
      model,
      { showPanel: () => app.shell.activateById(sidebar.id), openDashboard: actions.openDashboard },
      settingRegistry,
      PLUGIN_ID
    );
    restorer?.add(sidebar, SIDEBAR_ID);

    if (settingRegistry) {
      settingRegistry
        .load(PLUGIN_ID)
        .then(settings => {
          sidebar.settings = readSettings(settings);
          if (settings.composite.openOnStartup === true) {
            // After the saved layout is restored, so it is not overridden by it.
            void app.restored.then(() => app.shell.activateById(sidebar.id));
          }
          settings.changed.connect(() => {
            sidebar.settings = readSettings(settings);
          });
        })
        .catch(reason => console.warn('jupyter-dw: settings not loaded', reason));
    }

    void model.start();
  }
};

export default plugin;

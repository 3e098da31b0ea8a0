/**
 * The jupyter_dw JupyterLab plugin: registers the Distributed Workloads sidebar (left area),
 * its settings and its commands. Everything else lives in api.ts, model.ts and components/.
 */
import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { Dialog, ICommandPalette, showDialog, showErrorMessage } from '@jupyterlab/apputils';
import { INotebookTracker } from '@jupyterlab/notebook';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { ITranslator } from '@jupyterlab/translation';

import { Cluster, DWApi, WorkloadKind } from './api';
import { CommandIDs, addCommands, insertConnection } from './commands';
import { viewOf } from './components/jobkinds';
import {
  DEFAULT_SETTINGS,
  DWSidebar,
  ISidebarActions,
  ISidebarSettings,
  SIDEBAR_ID
} from './components/sidebar';
import { dwTrans, setTranslator } from './i18n';
import { DWModel } from './model';
import { notifyChanges } from './notifier';
import { IKindJob } from './podjobs';

const PLUGIN_ID = 'jupyter-dw:plugin';

declare const require: (id: string) => unknown;
/** The frontend's version (webpack bundles package.json's); must equal the server's. */
const FRONTEND_VERSION = (require('../package.json') as { version: string }).version;

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
  optional: [ILayoutRestorer, ISettingRegistry, INotebookTracker, ICommandPalette, ITranslator],
  activate: (
    app: JupyterFrontEnd,
    restorer: ILayoutRestorer | null,
    settingRegistry: ISettingRegistry | null,
    notebooks: INotebookTracker | null,
    palette: ICommandPalette | null,
    translator: ITranslator | null
  ) => {
    setTranslator(translator);
    const trans = dwTrans();
    const model = new DWModel(new DWApi(), FRONTEND_VERSION);
    const actions: ISidebarActions = {
      openDashboard: (cluster: Cluster) =>
        void app.commands.execute(CommandIDs.openDashboard, { name: cluster.name }),
      insertConnection: (cluster: Cluster) => insertConnection(app, notebooks, cluster),
      remove: (cluster: Cluster) =>
        confirmedDelete(
          cluster.name,
          trans.__(
            'The Ray cluster %1, its pods and its place in queue %2 are removed. Work running on it is lost.',
            cluster.name,
            cluster.queue ?? ''
          ),
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
          title: trans.__('Delete %1?', name),
          body,
          buttons: [Dialog.cancelButton(), Dialog.warnButton({ label: trans.__('Delete') })]
        });
        if (!answer.button.accept) {
          return;
        }
      }
      try {
        await remove();
      } catch (error) {
        void showErrorMessage(trans.__('Could not delete %1', name), String(error));
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
    addCommands({ app, sidebar, model, notebooks, palette });

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

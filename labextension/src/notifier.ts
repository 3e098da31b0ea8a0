/**
 * The notices of notices.ts shown as JupyterLab notifications (`Notification` of
 * `@jupyterlab/apputils`: a toast, then the notification centre; JupyterLab ≥ 4 and
 * Notebook 7 alike): those of the kinds the `notifications` setting turns on, about this
 * identity's own clusters and jobs, not following from what the user just did in this tab,
 * each event once. The plugin calls `notifyChanges` once.
 */
import { Notification } from '@jupyterlab/apputils';
import { ISettingRegistry } from '@jupyterlab/settingregistry';

import type { Cluster } from './api';
import { dwTrans } from './i18n';
import type { DWModel } from './model';
import { INotice, NoticeAction, Transition, enabledKinds, noticesOf } from './notices';

/** What the notifications' buttons do (the plugin provides them). */
export interface INoticeHandlers {
  /** Show the Distributed Workloads panel. */
  showPanel(): void;
  openDashboard(cluster: Cluster): void;
}

/** The events told already (a bounded memory: the oldest are forgotten first). */
const REMEMBERED = 500;

/** Whose record a transition is about: its owner (null: unknown). */
function ownerOf(model: DWModel, t: Transition): string | null | undefined {
  switch (t.subject) {
    case 'cluster':
      return (t.after ?? t.before)?.owner;
    case 'kind':
      return (t.after ?? t.before)?.owner;
    case 'job':
      return model.cluster(t.cluster)?.owner;
  }
}

function actionsOf(
  model: DWModel,
  notice: INotice,
  handlers: INoticeHandlers
): Notification.IAction[] {
  const cluster = notice.subject === 'cluster' ? model.cluster(notice.name) : undefined;
  const trans = dwTrans();
  const make: Record<NoticeAction, () => Notification.IAction | null> = {
    dashboard: () =>
      cluster && cluster.dashboard_url
        ? { label: trans.__('Open dashboard'), callback: () => handlers.openDashboard(cluster) }
        : null,
    resume: () => ({
      label: trans.__('Resume'),
      callback: () => {
        model
          .stopOrResume(notice.name, 'resume')
          .catch(error =>
            Notification.error(trans.__('Could not resume %1: %2', notice.name, String(error)))
          );
      }
    }),
    log: () => ({
      label: trans.__('Show log'),
      callback: () => {
        model.selectJob(notice.name, notice.job ?? null);
        handlers.showPanel();
      }
    }),
    show: () => ({
      label: notice.subject === 'cluster' ? trans.__('Show cluster') : trans.__('Show job'),
      displayType: 'link',
      callback: () => handlers.showPanel()
    })
  };
  return notice.actions.map(a => make[a]()).filter((a): a is Notification.IAction => a !== null);
}

/**
 * Tell the user of their clusters' and jobs' events as notifications, from now on. `registry`
 * and `pluginId`: where the `notifications` setting is read (its defaults without them).
 */
export function notifyChanges(
  model: DWModel,
  handlers: INoticeHandlers,
  registry: ISettingRegistry | null,
  pluginId: string
): void {
  let enabled = enabledKinds(undefined);
  registry
    ?.load(pluginId)
    .then(settings => {
      enabled = enabledKinds(settings.composite.notifications);
      settings.changed.connect(() => {
        enabled = enabledKinds(settings.composite.notifications);
      });
    })
    .catch(reason => console.warn('jupyter-dw: notification settings not loaded', reason));
  const told = new Set<string>();
  model.transitions.connect((_, transition) => {
    const owner = ownerOf(model, transition);
    if (model.username !== null && owner !== model.username) {
      return;
    }
    const now = model.clock.now();
    for (const notice of noticesOf(transition, now)) {
      if (!enabled[notice.kind] || told.has(notice.key) || model.recent.quiets(notice, now)) {
        continue;
      }
      told.add(notice.key);
      if (told.size > REMEMBERED) {
        told.delete(told.values().next().value as string);
      }
      const lasting = notice.level === 'warning' || notice.level === 'error';
      Notification.emit(notice.text, notice.level, {
        autoClose: lasting ? false : 10_000,
        actions: actionsOf(model, notice, handlers)
      });
    }
  });
}

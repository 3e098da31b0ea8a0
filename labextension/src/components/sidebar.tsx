import { CommandToolbarButtonComponent, LabIcon, ReactWidget } from '@jupyterlab/ui-components';
import { CommandRegistry } from '@lumino/commands';
import { Message } from '@lumino/messaging';
import * as React from 'react';

import { dwTrans } from '../i18n';
import { DWModel, FitChecker, RenderGate } from '../model';
import { ClustersSection, IClusterActions } from './clusters';
import { IFormRequest, NewClusterForm } from './form';
import { QueuesSection } from './queues';
import { IJobActions, PodSetJobsSections } from './jobkinds';
import { ConnectionStatus, FreshnessBanner, HandshakeMessage } from './status';
import { WorkloadsSection } from './workloads';

import iconSvg from '../../style/icon.svg';

export const dwIcon = new LabIcon({ name: 'jupyter-dw:icon', svgstr: iconSvg });

export const SIDEBAR_ID = 'jp-dw-sidebar';
export const SIDEBAR_TITLE = 'Distributed Workloads';

/** The commands the panel's toolbar shows (the plugin registers them; see `commands.ts`). */
export interface ISidebarToolbar {
  commands: CommandRegistry;
  ids: readonly string[];
}

/** The panel's toolbar: a button per command, enabled as the command says. */
function SidebarToolbar(props: { toolbar: ISidebarToolbar | null }): JSX.Element | null {
  const { toolbar } = props;
  if (toolbar === null) {
    return null;
  }
  return (
    <div
      className="jp-Toolbar jp-dw-toolbar"
      role="toolbar"
      aria-label={dwTrans().__('Distributed Workloads actions')}
    >
      {toolbar.ids
        .filter(id => toolbar.commands.isVisible(id))
        .map(id => (
          <CommandToolbarButtonComponent key={id} commands={toolbar.commands} id={id} />
        ))}
    </div>
  );
}

/** User preferences (`schema/plugin.json`). */
export interface ISidebarSettings {
  defaultQueue: string;
  confirmDelete: boolean;
  clusterScope: 'mine' | 'all';
}

/** What the cards' buttons do (the plugin provides them). */
export type ISidebarActions = IClusterActions & IJobActions;

export const DEFAULT_SETTINGS: ISidebarSettings = {
  defaultQueue: '',
  confirmDelete: true,
  clusterScope: 'mine'
};

function SidebarView(props: {
  model: DWModel;
  fitChecker: FitChecker;
  settings: ISidebarSettings;
  actions: ISidebarActions;
  toolbar: ISidebarToolbar | null;
  formRequest: IFormRequest | null;
}): JSX.Element {
  const { model, settings } = props;
  const trans = dwTrans();
  const ready = model.handshake.kind === 'ok';
  return (
    <div className="jp-dw-panel">
      <header className="jp-dw-header">
        <h2 className="jp-dw-title">{trans.__('Distributed Workloads')}</h2>
        {ready ? <ConnectionStatus model={model} /> : null}
      </header>
      <SidebarToolbar toolbar={props.toolbar} />
      {model.namespace ? (
        <div className="jp-dw-muted jp-dw-namespace">
          {trans.__('namespace %1', model.namespace)}
        </div>
      ) : null}
      <HandshakeMessage model={model} />
      {ready ? <FreshnessBanner model={model} /> : null}
      {ready && model.connection !== 'connecting' ? (
        <>
          <QueuesSection model={model} />
          <WorkloadsSection model={model} />
          <ClustersSection model={model} scope={settings.clusterScope} actions={props.actions} />
          <PodSetJobsSections model={model} scope={settings.clusterScope} actions={props.actions} />
          <NewClusterForm
            model={model}
            fitChecker={props.fitChecker}
            preferredQueue={settings.defaultQueue}
            request={props.formRequest}
          />
        </>
      ) : null}
    </div>
  );
}

/**
 * The left-sidebar panel. It listens to the model all the time (the socket stays open) but
 * renders only while shown; when shown again it renders once from the latest state.
 */
export class DWSidebar extends ReactWidget {
  constructor(
    readonly model: DWModel,
    readonly actions: ISidebarActions
  ) {
    super();
    this.id = SIDEBAR_ID;
    this.addClass('jp-dw-sidebar');
    this.title.icon = dwIcon;
    this.title.caption = dwTrans().__('Distributed Workloads');
    this.node.setAttribute('role', 'region');
    this.node.setAttribute('aria-label', this.title.caption);
    this.fitChecker = new FitChecker(model.api);
    model.changed.connect(this._onModelChanged, this);
  }

  readonly fitChecker: FitChecker;

  /** Renders so far (to tell that hidden panels do not render). */
  get renders(): number {
    return this._renders;
  }

  get settings(): ISidebarSettings {
    return this._settings;
  }

  set settings(value: ISidebarSettings) {
    this._settings = value;
    this._gate.changed();
  }

  /** The commands of the panel's toolbar (none until the plugin sets them). */
  get toolbar(): ISidebarToolbar | null {
    return this._toolbar;
  }

  set toolbar(value: ISidebarToolbar | null) {
    this._toolbar = value;
    this._gate.changed();
  }

  /**
   * Show the "New" form for `kind` with its first field focused (a command asks; the form
   * takes the request when it is next rendered, then marks it done).
   */
  showForm(kind: IFormRequest['kind']): void {
    this._formRequest = { kind, done: false };
    this._gate.changed();
  }

  protected render(): JSX.Element {
    this._renders += 1;
    this.node.dataset.renders = String(this._renders);
    return (
      <SidebarView
        model={this.model}
        fitChecker={this.fitChecker}
        settings={this._settings}
        actions={this.actions}
        toolbar={this._toolbar}
        formRequest={this._formRequest}
      />
    );
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    this._gate.show();
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    if (this.isVisible) {
      this._gate.show();
    }
  }

  protected onBeforeHide(msg: Message): void {
    super.onBeforeHide(msg);
    this._gate.hide();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this.fitChecker.dispose();
    this.model.changed.disconnect(this._onModelChanged, this);
    super.dispose();
  }

  private _onModelChanged(): void {
    this._gate.changed();
  }

  private _gate = new RenderGate(() => this.update());
  private _renders = 0;
  private _settings: ISidebarSettings = DEFAULT_SETTINGS;
  private _toolbar: ISidebarToolbar | null = null;
  private _formRequest: IFormRequest | null = null;
}

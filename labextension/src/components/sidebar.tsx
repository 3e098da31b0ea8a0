import { LabIcon, ReactWidget } from '@jupyterlab/ui-components';
import { Message } from '@lumino/messaging';
import * as React from 'react';

import { DWModel, FitChecker, RenderGate } from '../model';
import { ClustersSection, IClusterActions } from './clusters';
import { NewClusterForm } from './form';
import { QueuesSection } from './queues';
import { IJobActions, PodSetJobsSections } from './jobkinds';
import { ConnectionStatus, FreshnessBanner, HandshakeMessage } from './status';
import { WorkloadsSection } from './workloads';

import iconSvg from '../../style/icon.svg';

export const dwIcon = new LabIcon({ name: 'jupyter-dw:icon', svgstr: iconSvg });

export const SIDEBAR_ID = 'jp-dw-sidebar';
export const SIDEBAR_TITLE = 'Distributed Workloads';

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
}): JSX.Element {
  const { model, settings } = props;
  const ready = model.handshake.kind === 'ok';
  return (
    <div className="jp-dw-panel">
      <header className="jp-dw-header">
        <h2 className="jp-dw-title">{SIDEBAR_TITLE}</h2>
        {ready ? <ConnectionStatus model={model} /> : null}
      </header>
      {model.namespace ? (
        <div className="jp-dw-muted jp-dw-namespace">namespace {model.namespace}</div>
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
    this.title.caption = SIDEBAR_TITLE;
    this.node.setAttribute('role', 'region');
    this.node.setAttribute('aria-label', SIDEBAR_TITLE);
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

  protected render(): JSX.Element {
    this._renders += 1;
    this.node.dataset.renders = String(this._renders);
    return (
      <SidebarView
        model={this.model}
        fitChecker={this.fitChecker}
        settings={this._settings}
        actions={this.actions}
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
}

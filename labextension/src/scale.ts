/**
 * The card's scale stepper: − N + within `[min_workers, max_workers]`. A step first asks the
 * server for a dry run (debounced, stale answers dropped) and shows what it says; the change
 * is made only on confirm. "Auto" gives the size back to the Ray autoscaler.
 */
import { ISignal, Signal } from '@lumino/signaling';

import { Cluster, DWRequestError, ScaleResult } from './api';
import { dwTrans } from './i18n';
import { IClock, browserClock } from './model';
import { appliedText, proposalText, stepperStart } from './shared/workers_bar.js';

/** What scales a cluster: `DWModel.scale` (the REST API). */
export interface IScaler {
  scale(name: string, workers: number | null, dryRun?: boolean): Promise<ScaleResult>;
}

/** `workers` null: the size given back to the Ray autoscaler. */
export type ScaleStep =
  | { kind: 'idle' }
  | { kind: 'checking'; workers: number }
  | { kind: 'proposed'; workers: number; result: ScaleResult; text: string }
  | { kind: 'applying'; workers: number | null }
  | { kind: 'applied'; workers: number | null; result: ScaleResult; text: string }
  | { kind: 'error'; workers: number | null; message: string; code: string | null };

/** A failed scale request as one sentence: the field's message for `invalid_scale`. */
export function scaleErrorText(error: unknown): { message: string; code: string | null } {
  if (error instanceof DWRequestError) {
    const field = error.fieldErrors.workers;
    const reason = error.body?.reason;
    // The server's words (its error, the field's message, its reason), joined.
    const words = field || reason;
    const message = words ? dwTrans().__('%1: %2', error.message, words) : error.message;
    return { message, code: error.code };
  }
  return { message: String((error as Error)?.message ?? error), code: null };
}

export class ScaleStepper {
  constructor(
    private readonly scaler: IScaler,
    readonly name: string,
    readonly delay = 250,
    private readonly clock: IClock = browserClock
  ) {}

  get changed(): ISignal<this, ScaleStep> {
    return this._changed;
  }

  get step(): ScaleStep {
    return this._step;
  }

  /** The stepper's number; null before the first `sync`. */
  get target(): number | null {
    return this._target;
  }

  get min(): number {
    return this._min;
  }

  get max(): number {
    return this._max;
  }

  /** Dry runs sent so far (the debounce keeps this low while clicking). */
  get dryRuns(): number {
    return this._dryRuns;
  }

  /**
   * Follow the cluster's size: bounds always; the number while nothing is chosen (idle, or
   * once a change is made), never while the user's choice is checked, proposed, being made
   * or refused (the cluster's next message does not overwrite it).
   */
  sync(cluster: Cluster): void {
    const start = stepperStart(cluster);
    this._min = start.min;
    this._max = start.max;
    this._current = start.value;
    if (this._target === null || this._step.kind === 'idle' || this._step.kind === 'applied') {
      this._target = start.value;
    }
  }

  increment(): void {
    this.setTarget((this._target ?? this._current) + 1);
  }

  decrement(): void {
    this.setTarget((this._target ?? this._current) - 1);
  }

  /** Choose `workers` (clamped to the range); its dry run follows after `delay`. */
  setTarget(workers: number): void {
    const target = Math.min(this._max, Math.max(this._min, Math.round(workers)));
    this._target = target;
    this._cancelTimer();
    this._sequence += 1;
    if (target === this._current) {
      this._set({ kind: 'idle' });
      return;
    }
    this._set({ kind: 'checking', workers: target });
    this._timer = this.clock.setTimeout(() => {
      this._timer = null;
      void this._dryRun(target);
    }, this.delay);
  }

  /** Make the proposed change. */
  async confirm(): Promise<void> {
    if (this._step.kind !== 'proposed') {
      return;
    }
    await this._apply(this._step.workers);
  }

  /** Give the size back to the Ray autoscaler (`{"workers": null}`), at once. */
  async release(): Promise<void> {
    await this._apply(null);
  }

  /** Drop a proposal or a message; the number goes back to the cluster's size. */
  cancel(): void {
    this._cancelTimer();
    this._sequence += 1;
    this._target = this._current;
    this._set({ kind: 'idle' });
  }

  dispose(): void {
    this._cancelTimer();
    this._sequence += 1;
    Signal.clearData(this);
  }

  private async _dryRun(workers: number): Promise<void> {
    const sequence = this._sequence;
    this._dryRuns += 1;
    try {
      const result = await this.scaler.scale(this.name, workers, true);
      if (sequence === this._sequence) {
        this._set({ kind: 'proposed', workers, result, text: proposalText(result, workers) });
      }
    } catch (error) {
      if (sequence === this._sequence) {
        this._set({ kind: 'error', workers, ...scaleErrorText(error) });
      }
    }
  }

  private async _apply(workers: number | null): Promise<void> {
    this._cancelTimer();
    const sequence = ++this._sequence;
    this._set({ kind: 'applying', workers });
    try {
      const result = await this.scaler.scale(this.name, workers, false);
      if (sequence === this._sequence) {
        this._set({ kind: 'applied', workers, result, text: appliedText(result, workers) });
      }
    } catch (error) {
      if (sequence === this._sequence) {
        this._set({ kind: 'error', workers, ...scaleErrorText(error) });
      }
    }
  }

  private _cancelTimer(): void {
    if (this._timer !== null) {
      this.clock.clearTimeout(this._timer);
      this._timer = null;
    }
  }

  private _set(step: ScaleStep): void {
    this._step = step;
    this._changed.emit(step);
  }

  private _changed = new Signal<this, ScaleStep>(this);
  private _step: ScaleStep = { kind: 'idle' };
  private _target: number | null = null;
  private _current = 0;
  private _min = 0;
  private _max = 0;
  private _timer: unknown = null;
  private _sequence = 0;
  private _dryRuns = 0;
}

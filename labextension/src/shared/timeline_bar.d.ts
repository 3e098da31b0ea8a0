// Types of timeline_bar.js for the sidebar (labextension/src), which imports it.
import type { components } from '../openapi';
import type { Tone } from './tones';

type Timeline = components['schemas']['Timeline'];

export const MIN_SHARE: number;

export interface ITimelineSegment {
  step: string;
  words: string;
  detail: string | null;
  /** How long it took, or has taken so far (the span under way); null when unknown. */
  seconds: number | null;
  current: boolean;
  done: boolean;
  /** Its share of the bar, 0 to 1 (the shares add up to 1). */
  width: number;
  /** The tone it is drawn in (`spanTone`). */
  tone: Tone;
  /** Its words, detail and duration: `waiting in the queue 40s`. */
  label: string;
  /** Its tone's CSS colour (`toneColor(tone)`): the words on it say the same. */
  color: string;
}

export interface ITimelineBar {
  segments: ITimelineSegment[];
  total: number;
  ending: string | null;
}

export function spanTone(span: { step: string; current?: boolean; done?: boolean }): Tone;

export function timelineBar(timeline: Timeline | null | undefined, now?: Date): ITimelineBar;
